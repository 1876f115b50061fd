#!/usr/bin/env bash
# multi_repo.sh - what a second repository costs a backup (issue 36): the bench
# cluster backed up to one repository (local; S3 on loopback, s3rver) and to
# two (local + S3) in the same run, alternately, REPEAT times each. Reported:
# wall time, and the bytes read from the data directory two ways: the
# backup's own counter ("size" of --json) and the kernel's count of what the
# process read (rchar, with --io-engine threads: io_uring reads are not in
# it). The goal: two repositories at <= 1.15x the wall time of one, and 1.0x
# the bytes read.
#
#   bash bench/multi_repo.sh [SCALE] [REPEAT]      (as root; `make bench-multi-repo`)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
SCALE=${1:-50}
REPEAT=${2:-3}
MAXMEM=${MAXMEM:-256MiB}
BUILD=${BUILD:-$ROOT/build}
PG_BIN=/usr/lib/postgresql/15/bin
S3RVER=$ROOT/tests/s3/s3rver_atomic.js  # s3rver, read-after-write consistent (see there)
OUT=${OUT:-$ROOT/bench/results/$(date -u +%F)-multi-repo.md}
[ "$(id -u)" -eq 0 ] || { echo "multi_repo.sh: run as root (drop_caches, postgres)" >&2; exit 1; }
[ -x "$S3RVER" ] || { echo "multi_repo.sh: run scripts/setup.sh first (s3rver)" >&2; exit 1; }
[ -x "$BUILD/pgdirect" ] || { echo "multi_repo.sh: $BUILD/pgdirect is missing: run make first" >&2; exit 1; }

D=$(mktemp -d /tmp/pgdirect-multibench.XXXXXX)
chmod 755 "$D"; mkdir -p "$D/bin"; cp "$BUILD/pgdirect" "$D/bin/"; chown -R postgres:postgres "$D"
PORT=$((20000 + RANDOM % 10000)); S3PORT=$((30000 + RANDOM % 5000))
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_ENDPOINT_URL=http://127.0.0.1:$S3PORT
pg() {
    runuser -u postgres -- env PGHOST="$D" PGPORT="$PORT" PGUSER=postgres AWS_ACCESS_KEY_ID="$AWS_ACCESS_KEY_ID" \
        AWS_SECRET_ACCESS_KEY="$AWS_SECRET_ACCESS_KEY" AWS_ENDPOINT_URL="$AWS_ENDPOINT_URL" "$@"
}
S3PID=""
cleanup() {
    pg "$PG_BIN/pg_ctl" -D "$D/data" -m immediate stop >/dev/null 2>&1 || true
    [ -n "$S3PID" ] && kill "$S3PID" 2>/dev/null || true
    rm -rf "$D"
}
trap cleanup EXIT
NODE_OPTIONS=--openssl-legacy-provider "$S3RVER" -d "$D/s3" -a 127.0.0.1 -p $S3PORT --configure-bucket bench \
    >"$D/s3rver.log" 2>&1 &
S3PID=$!
for _ in $(seq 1 300); do
    (exec 3<>"/dev/tcp/127.0.0.1/$S3PORT") 2>/dev/null && break
    sleep 0.2
done
pg "$PG_BIN/initdb" -D "$D/data" -U postgres -A trust >/dev/null
printf "port = $PORT\nlisten_addresses = ''\nunix_socket_directories = '$D'\n" >>"$D/data/postgresql.conf"
pg "$PG_BIN/pg_ctl" -D "$D/data" -l "$D/log" -w start >/dev/null
pg "$PG_BIN/pgbench" -i -s "$SCALE" -q >/dev/null 2>&1
pg "$PG_BIN/psql" -Atqc CHECKPOINT
BYTES=$(du -sb --exclude=pg_wal "$D/data" | cut -f1)

now() { date +%s.%N; }
# run LABEL REPO...: prints "label seconds size rchar"
run() {
    local label=$1 t0 t1 args=()
    shift
    for r in "$@"; do args+=(--repo "$r"); done
    sync; echo 3 >/proc/sys/vm/drop_caches
    t0=$(now)
    # rchar of the shell includes what its reaped child read
    pg bash -c '"$0" "$@" >"'"$D"'/out.json" 2>"'"$D"'/out.err"; rc=$?
        awk "/^rchar:/ {print \$2}" /proc/$$/io >"'"$D"'/rchar"; exit $rc' \
        "$D/bin/pgdirect" backup "${args[@]}" --pgdata "$D/data" --checkpoint fast --archive-check=off \
        --max-memory "$MAXMEM" --io-engine threads --json ||
        { echo "multi_repo.sh: backup to $* failed: $(cat "$D/out.err")" >&2; exit 1; }
    t1=$(now)
    echo "$label $(echo "$t1 - $t0" | bc) $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["size"])' "$D/out.json") $(cat "$D/rchar")"
}
rows=()
for i in $(seq 1 "$REPEAT"); do
    rows+=("$(run local "$D/repo1_$i")")
    rows+=("$(run s3 "s3://bench/a$i")")
    rows+=("$(run local+s3 "$D/repo2_$i" "s3://bench/b$i")")
done
{
    echo "# One repository vs two in one backup run, $(date -u +%F)"
    echo
    echo "Command: \`bash bench/multi_repo.sh $SCALE $REPEAT\`. pgbench scale $SCALE ($((BYTES / 1000000)) MB without pg_wal), lz4,"
    echo "--max-memory $MAXMEM, --io-engine threads, page cache dropped before each backup; local and s3 = one repository,"
    echo "local+s3 = both (s3rver on loopback, one Node.js process writing to the same disk). Runs alternate."
    echo
    echo "| run | repositories | wall s | bytes read (own counter) | rchar |"
    echo "|---|---|---|---|---|"
    n=0
    for row in "${rows[@]}"; do
        set -- $row
        n=$((n + 1))
        printf '| %s | %s | %.2f | %s | %s |\n' "$(((n + 2) / 3))" "$1" "$2" "$3" "$4"
    done
    echo
    printf '%s\n' "${rows[@]}" | awk '
        $1 == "local" { tl += $2; nl++ }
        $1 == "s3" { t1 += $2; b1 += $3; r1 += $4; n1++ }
        $1 == "local+s3" { t2 += $2; b2 += $3; r2 += $4; n2++ }
        END { printf "Means: wall time local+s3 / s3 alone = %.2fx, local+s3 / local alone = %.2fx; bytes read (own counter) local+s3 / s3 = %.2fx; rchar local+s3 / s3 = %.2fx.\n",
              (t2 / n2) / (t1 / n1), (t2 / n2) / (tl / nl), (b2 / n2) / (b1 / n1), (r2 / n2) / (r1 / n1) }'
} >"$OUT"
cat "$OUT"
