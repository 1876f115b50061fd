#!/usr/bin/env bash
# stores.sh - the store column: backup and restore of the bench cluster to
# each store on loopback, side by side in one run, as ratios to the local
# repository: a local directory, S3 (s3rver), Azure Blob Storage (Azurite,
# Shared Key checked) and SFTP (a sshd of its own, as the tests start it,
# host key checked). Peak RSS of each backup against --max-memory: the
# bounded-memory rule must hold for every driver.
#
#   bash bench/stores.sh [SCALE]      (as root; `make bench-stores`)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
SCALE=${1:-50}
MAXMEM=${MAXMEM:-256MiB}
BUILD=${BUILD:-$ROOT/build}
PG_BIN=/usr/lib/postgresql/15/bin
S3RVER=$ROOT/tests/s3/s3rver_atomic.js  # s3rver, read-after-write consistent (see there)
AZURITE=$ROOT/tests/azure/node_modules/.bin/azurite-blob
OUT=${OUT:-$ROOT/bench/results/$(date -u +%F)-stores.md}
[ "$(id -u)" -eq 0 ] || { echo "stores.sh: run as root" >&2; exit 1; }
[ -x "$S3RVER" ] && [ -x "$AZURITE" ] || { echo "stores.sh: run scripts/setup.sh first (s3rver, Azurite)" >&2; exit 1; }

D=$(mktemp -d /tmp/pgdirect-storesbench.XXXXXX)
chmod 755 "$D"; mkdir -p "$D/bin"; cp "$BUILD/pgdirect" "$D/bin/"; chown -R postgres:postgres "$D"
PORT=$((20000 + RANDOM % 10000)); S3PORT=$((30000 + RANDOM % 5000)); AZPORT=$((35000 + RANDOM % 5000))
AZKEY=$(head -c 64 /dev/urandom | base64 -w0)
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_ENDPOINT_URL=http://127.0.0.1:$S3PORT
export AZURE_STORAGE_ACCOUNT=bench AZURE_STORAGE_KEY=$AZKEY PGDIRECT_AZURE_ENDPOINT=http://127.0.0.1:$AZPORT/bench
# the tests' sshd (tests/integration/lib_sftp.sh): its helpers, with this script's directory as T
T=$D
bail() { echo "stores.sh: $*" >&2; exit 1; }
free_port() { echo $((40000 + RANDOM % 5000)); }
# shellcheck source=tests/integration/lib_sftp.sh
. "$ROOT/tests/integration/lib_sftp.sh"
pg() { runuser -u postgres -- env PGHOST="$D" PGPORT="$PORT" PGUSER=postgres "$@"; }
S3PID="" AZPID=""
cleanup() {
    pg "$PG_BIN/pg_ctl" -D "$D/data" -m immediate stop >/dev/null 2>&1 || true
    [ -n "$S3PID" ] && kill "$S3PID" 2>/dev/null || true
    [ -n "$AZPID" ] && kill "$AZPID" 2>/dev/null || true
    sftp_kill || true
    rm -rf "$D"
}
trap cleanup EXIT
NODE_OPTIONS=--openssl-legacy-provider "$S3RVER" -d "$D/s3" -a 127.0.0.1 -p $S3PORT --configure-bucket bench >"$D/s3rver.log" 2>&1 &
S3PID=$!
mkdir -p "$D/az"
AZURITE_ACCOUNTS="bench:$AZKEY" "$AZURITE" --blobHost 127.0.0.1 --blobPort $AZPORT --location "$D/az" --silent \
    --disableTelemetry >"$D/azurite.log" 2>&1 &
AZPID=$!
for _ in $(seq 1 300); do
    (exec 3<>"/dev/tcp/127.0.0.1/$AZPORT") 2>/dev/null && (exec 3<>"/dev/tcp/127.0.0.1/$S3PORT") 2>/dev/null && break
    sleep 0.2
done
sftp_start
python3 "$ROOT/tests/azure/azurite_admin.py" "$PGDIRECT_AZURE_ENDPOINT" bench "$AZKEY" create-container bench
pg "$PG_BIN/initdb" -D "$D/data" -U postgres -A trust >/dev/null
printf "port = $PORT\nlisten_addresses = ''\nunix_socket_directories = '$D'\n" >>"$D/data/postgresql.conf"
pg "$PG_BIN/pg_ctl" -D "$D/data" -l "$D/log" -w start >/dev/null
pg "$PG_BIN/pgbench" -i -s "$SCALE" -q >/dev/null 2>&1
pg "$PG_BIN/psql" -Atqc CHECKPOINT
BYTES=$(du -sb --exclude=pg_wal "$D/data" | cut -f1)

now() { date +%s.%N; }
# run LABEL REPO: prints "label backup_s restore_s rss_mib"
run() {
    local label=$1 repo=$2 out t0 t1 t2 rss
    shift 2
    sync; echo 3 >/proc/sys/vm/drop_caches
    t0=$(now)
    out=$(pg "$D/bin/pgdirect" backup --repo "$repo" --pgdata "$D/data" --checkpoint fast --archive-check=off \
          --max-memory "$MAXMEM" "$@" 2>&1) || { echo "stores.sh: backup to $repo failed: $out" >&2; exit 1; }
    t1=$(now)
    rss=$(echo "$out" | sed -n 's/.*peak RSS \([0-9]*\) MiB.*/\1/p')
    rm -rf "$D/r"
    sync; echo 3 >/proc/sys/vm/drop_caches
    t2=$(now)
    pg "$D/bin/pgdirect" restore LATEST --repo "$repo" --target-dir "$D/r" "$@" >/dev/null 2>&1 ||
        { echo "stores.sh: restore from $repo failed" >&2; exit 1; }
    echo "$label $(echo "$t1 - $t0" | bc) $(echo "$(now) - $t2" | bc) $rss"
}
L=$(run local "$D/repo")
S=$(run s3 "s3://bench/b")
A=$(run azure "azure://bench/b")
F=$(run sftp "$SFTP_URI" "${SFTP_OPTS[@]}")
{
    echo "# Backup and restore to each store on loopback, $(date -u +%F)"
    echo
    echo "Command: \`bash bench/stores.sh $SCALE\`. pgbench scale $SCALE ($((BYTES / 1000000)) MB without pg_wal), lz4, auto tuning,"
    echo "--max-memory $MAXMEM, page cache dropped before each backup and each restore. s3rver and Azurite are"
    echo "single Node.js processes writing to the same disk: the ratios measure pgdirect and the emulator together;"
    echo "sshd (internal-sftp) also writes to the same disk, through one SSH connection per process."
    echo
    echo "| store | backup s | backup vs local | restore s | restore vs local | peak RSS (cap $MAXMEM) |"
    echo "|---|---|---|---|---|---|"
    lb=$(echo "$L" | awk '{print $2}') lr=$(echo "$L" | awk '{print $3}')
    for row in "$L" "$S" "$A" "$F"; do
        set -- $row
        printf '| %s | %.1f | %.2fx | %.1f | %.2fx | %s MiB |\n' "$1" "$2" "$(echo "$2 / $lb" | bc -l)" "$3" \
            "$(echo "$3 / $lr" | bc -l)" "$4"
    done
} >"$OUT"
cat "$OUT"
