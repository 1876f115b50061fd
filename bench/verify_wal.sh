#!/usr/bin/env bash
# verify_wal.sh - how long `verify` takes to read a backup's point-in-time window (every archived
# segment after its stop, each read and checked as wal-fetch would), from a local repository and
# from the tests' S3 server (moto on 127.0.0.1), in one run:
#   a cluster with a backup and ~WAL_GB of WAL archived after it (pgbench), its repository copied
#   to S3 object by object; then `verify` of the backup, this build against OLD_BIN (a build
#   before the window was read in parallel) at each --concurrency in CONCURRENCIES, alternating
#   the builds, TRIALS times, the page cache dropped before each local run. Medians, and new/old.
#
#   OLD_BIN=/path/to/old/pgdirect bash bench/verify_wal.sh [WAL_GB] [TRIALS]   (as root; `make`)
#   defaults 1 GB, 3 trials; CONCURRENCIES="1 2 8" (verify's default is the number of vCPUs).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
WAL_GB=${1:-1}
TRIALS=${2:-3}
CONCURRENCIES=${CONCURRENCIES:-1 2 8}
OLD_BIN=${OLD_BIN:?set OLD_BIN to the build to compare with}
BUILD=${BUILD:-$ROOT/build}
PG_BIN=/usr/lib/postgresql/15/bin
OUT=${OUT:-$ROOT/bench/results/$(date -u +%F)-verify-wal.md}
SEG=$((16 * 1024 * 1024))
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"
bench_require verify_wal.sh "it runs PostgreSQL as postgres and drops the page cache" pgdirect pgd-storage

D=$(mktemp -d /tmp/pgdirect-verifywal.XXXXXX)
chmod 755 "$D"; mkdir -p "$D/bin"
cp "$BUILD/pgdirect" "$D/bin/pgdirect_new"; cp "$OLD_BIN" "$D/bin/pgdirect_old"
chown -R postgres:postgres "$D"
PORT=$((20000 + RANDOM % 10000))
T=$D
bail() { echo "verify_wal.sh: $*" >&2; exit 1; }
free_port() { echo $((30000 + RANDOM % 10000)); }
# shellcheck source=tests/integration/lib_s3.sh
. "$ROOT/tests/integration/lib_s3.sh"
pg() { runuser -u postgres -- env PGHOST="$D" PGPORT="$PORT" PGUSER=postgres PGDATABASE=postgres "$@"; }
q() { pg "$PG_BIN/psql" -XAtq -v ON_ERROR_STOP=1 -c "$1"; }
say() { echo "verify_wal: $*" >&2; }
cleanup() {
    pg "$PG_BIN/pg_ctl" -D "$D/data" -m immediate stop >/dev/null 2>&1 || true
    s3_stop
    rm -rf "$D"
}
trap cleanup EXIT
s3_start bench

pg "$PG_BIN/initdb" -D "$D/data" -U postgres -A trust >/dev/null
bench_server_conf "$D/bin/pgdirect_new wal-push --repo $D/repo %p"
echo "synchronous_commit = off" >>"$D/data/postgresql.conf"
pg "$PG_BIN/pg_ctl" -D "$D/data" -l "$D/log" -w start >/dev/null
pg "$PG_BIN/pgbench" -i -s 10 -q >/dev/null 2>&1
pg "$D/bin/pgdirect_new" backup --repo "$D/repo" --pgdata "$D/data" --checkpoint fast >/dev/null 2>&1 ||
    bail "the backup failed"
say "backup taken; making ${WAL_GB} GB of WAL after it"
q "CREATE TABLE bulk (v text)" >/dev/null
l0=$(q "SELECT pg_current_wal_lsn() - '0/0'")
while [ $(( $(q "SELECT pg_current_wal_lsn() - '0/0'") - l0 )) -lt $(( WAL_GB * 1024 * SEG / 16 )) ]; do
    q "INSERT INTO bulk SELECT md5(random()::text) || md5(random()::text) FROM generate_series(1, 200000)" >/dev/null
done
last=$(q "SELECT pg_walfile_name(pg_switch_wal())")
for _ in $(seq 1 1200); do
    [ -z "$(ls "$D/data/pg_wal/archive_status" | grep '\.ready$' || true)" ] && break
    sleep 0.2
done
pg "$PG_BIN/pg_ctl" -D "$D/data" -m fast stop >/dev/null
ID=$(ls "$D/repo/backups" | grep -E '^[0-9]{8}T[0-9]{6}F$' | tail -1)
STOP=$("$D/bin/pgdirect_new" list --repo "$D/repo" --json | python3 -c 'import json,sys
print(json.load(sys.stdin)[-1]["stop_wal"])')
segs=$(ls "$D/repo/wal/${STOP:0:8}" | grep -cE '^[0-9A-F]{24}(\.lz4|\.zst)?$')
wal_bytes=$(du -sb "$D/repo/wal" | cut -f1)
say "backup $ID, stop $STOP, last $last; $segs WAL objects ($((wal_bytes / 1024 / 1024)) MiB stored)"
(cd "$D/repo" && find . -type f ! -name '*.tmp.*' ! -path './lock/*' | sed 's|^\./||') | while read -r f; do
    "$BUILD/pgd-storage" "s3://$S3_BUCKET/v" put "$f" <"$D/repo/$f" || bail "could not upload $f"
done
say "repository copied to s3://$S3_BUCKET/v"

run() { # run BUILD REPO CONC: seconds (the window must reach $last, exit 0)
    local t0 t1 out
    [ "${2#s3://}" = "$2" ] && { sync; echo 3 >/proc/sys/vm/drop_caches; }
    t0=$(date +%s.%N)
    out=$(pg env AWS_ACCESS_KEY_ID="$AWS_ACCESS_KEY_ID" AWS_SECRET_ACCESS_KEY="$AWS_SECRET_ACCESS_KEY" \
        AWS_REGION="$AWS_REGION" AWS_ENDPOINT_URL="$AWS_ENDPOINT_URL" \
        "$D/bin/pgdirect_$1" verify --repo "$2" --concurrency "$3" "$ID" 2>&1) || bail "verify ($1, $2) failed: $out"
    t1=$(date +%s.%N)
    case $out in *"the end of segment $last"*) ;; *) bail "verify ($1, $2): the window does not reach $last: $out" ;; esac
    echo "$t1 - $t0" | bc -l
}
median() { sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
{
    echo "# verify: the point-in-time window read from a local repository and from S3 (moto), $(date -u +%F)"
    echo
    echo "Command: \`OLD_BIN=$OLD_BIN bash bench/verify_wal.sh $WAL_GB $TRIALS\` (CONCURRENCIES=\"$CONCURRENCIES\")."
    echo "One backup (pgbench scale 10) and $segs archived WAL objects after its stop ($((wal_bytes / 1024 / 1024)) MiB"
    echo "stored, lz4); \`verify --concurrency N $ID\`, the builds alternating, $TRIALS trials, medians in seconds;"
    echo "the page cache dropped before each local run. Both builds read and check every segment."
    echo
    echo "| repository | --concurrency | new | old | new/old | new trials | old trials |"
    echo "|---|---|---|---|---|---|---|"
    for repo in "$D/repo" "s3://$S3_BUCKET/v"; do
        for c in $CONCURRENCIES; do
            new=(); old=()
            for i in $(seq 1 "$TRIALS"); do
                if [ $((i % 2)) = 1 ]; then new+=("$(run new "$repo" "$c")"); old+=("$(run old "$repo" "$c")")
                else old+=("$(run old "$repo" "$c")"); new+=("$(run new "$repo" "$c")"); fi
            done
            mn=$(printf '%s\n' "${new[@]}" | median); mo=$(printf '%s\n' "${old[@]}" | median)
            label=local; [ "${repo#s3://}" != "$repo" ] && label=S3
            printf '| %s | %s | %.2f | %.2f | %.2fx | %s | %s |\n' "$label" "$c" "$mn" "$mo" \
                "$(echo "$mn / $mo" | bc -l)" "$(printf '%.2f ' "${new[@]}")" "$(printf '%.2f ' "${old[@]}")"
        done
    done
} | tee "$OUT"
say "written to $OUT"
