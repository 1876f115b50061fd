#!/usr/bin/env bash
# s3.sh - backup to S3 (s3rver on 127.0.0.1) against the same backup to a
# local repository, in one run: MB/s, peak RSS with 64 MiB and 8 MiB parts,
# and HTTP requests per GB backed up and restored (counted in s3rver's log).
#
#   bash bench/s3.sh [SCALE]      (as root; `make bench-s3`)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
SCALE=${1:-50}
BUILD=${BUILD:-$ROOT/build}
PG_BIN=/usr/lib/postgresql/15/bin
S3RVER=$ROOT/tests/s3/s3rver_atomic.js  # s3rver, read-after-write consistent (see there)
OUT=${OUT:-$ROOT/bench/results/$(date -u +%F)-s3.md}
[ "$(id -u)" -eq 0 ] || { echo "s3.sh: run as root" >&2; exit 1; }
[ -x "$S3RVER" ] || { echo "s3.sh: run scripts/setup.sh first (s3rver)" >&2; exit 1; }

D=$(mktemp -d /tmp/pgdirect-s3bench.XXXXXX)
chmod 755 "$D"; mkdir -p "$D/bin"; cp "$BUILD/pgdirect" "$D/bin/"; chown -R postgres:postgres "$D"
PORT=$((20000 + RANDOM % 10000)); S3PORT=$((30000 + RANDOM % 10000))
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_ENDPOINT_URL=http://127.0.0.1:$S3PORT
pg() { runuser -u postgres -- env PGHOST="$D" PGPORT="$PORT" PGUSER=postgres AWS_ACCESS_KEY_ID=S3RVER \
        AWS_SECRET_ACCESS_KEY=S3RVER AWS_ENDPOINT_URL="$AWS_ENDPOINT_URL" "$@"; }
cleanup() { pg "$PG_BIN/pg_ctl" -D "$D/data" -m immediate stop >/dev/null 2>&1 || true; kill $S3PID 2>/dev/null || true; rm -rf "$D"; }
NODE_OPTIONS=--openssl-legacy-provider "$S3RVER" -d "$D/s3" -a 127.0.0.1 -p $S3PORT --configure-bucket bench >"$D/s3rver.log" 2>&1 &
S3PID=$!
trap cleanup EXIT
pg "$PG_BIN/initdb" -D "$D/data" -U postgres -A trust >/dev/null
printf "port = $PORT\nlisten_addresses = ''\nunix_socket_directories = '$D'\n" >>"$D/data/postgresql.conf"
pg "$PG_BIN/pg_ctl" -D "$D/data" -l "$D/log" -w start >/dev/null
pg "$PG_BIN/pgbench" -i -s "$SCALE" -q >/dev/null 2>&1
pg "$PG_BIN/psql" -Atqc CHECKPOINT

requests() { grep -cE ' [0-9]{3} [0-9]+ms' "$D/s3rver.log" || true; }
run() { # run LABEL REPO [options]: prints "label seconds MBps rss_mib requests gb"
    local label=$1 repo=$2 out r0 r1 t0 t1
    shift 2
    sync; echo 3 >/proc/sys/vm/drop_caches
    r0=$(requests); t0=$(date +%s.%N)
    out=$(pg "$D/bin/pgdirect" backup --repo "$repo" --pgdata "$D/data" --checkpoint fast --archive-check=off "$@" 2>&1)
    t1=$(date +%s.%N); r1=$(requests)
    local bytes rss
    bytes=$(du -sb --exclude=pg_wal "$D/data" | cut -f1)
    rss=$(echo "$out" | sed -n 's/.*peak RSS \([0-9]*\) MiB.*/\1/p')
    echo "$label $(echo "$t1 - $t0" | bc) $(echo "$bytes / ($t1 - $t0) / 1000000" | bc -l) $rss $((r1 - r0)) $(echo "$bytes / 1000000000" | bc -l)"
}
L=$(run "local" "$D/repo")
A=$(run "s3-64MiB" "s3://bench/a" --s3-part-size 64MiB)
B=$(run "s3-8MiB" "s3://bench/b" --s3-part-size 8MiB)
r0=$(requests); rm -rf "$D/r"
pg "$D/bin/pgdirect" restore LATEST --repo s3://bench/a --target-dir "$D/r" >/dev/null 2>&1
RREQ=$(( $(requests) - r0 ))
GB=$(echo "$L" | awk '{print $6}')
{
    echo "# Backup to S3 (s3rver on 127.0.0.1) against a local repository, $(date -u +%F)"
    echo
    echo "Command: \`bash bench/s3.sh $SCALE\`. pgbench scale $SCALE, lz4, auto tuning, page cache dropped before each backup; s3rver is a single Node.js process writing to the same disk."
    echo
    echo "| repository | seconds | MB/s | speed vs local | peak RSS | HTTP requests | requests per GB |"
    echo "|---|---|---|---|---|---|---|"
    lsec=$(echo "$L" | awk '{print $2}')
    for row in "$L" "$A" "$B"; do
        set -- $row
        printf '| %s | %.1f | %.0f | %.2f | %s MiB | %s | %.0f |\n' "$1" "$2" "$3" "$(echo "$lsec / $2" | bc -l)" "$4" "$5" "$(echo "$5 / $GB" | bc -l)"
    done
    echo
    echo "Restore of the 64 MiB-part backup from S3: $RREQ HTTP requests ($(printf '%.0f' "$(echo "$RREQ / $GB" | bc -l)") per GB; ranged GETs of 8 MiB)."
} >"$OUT"
cat "$OUT"
