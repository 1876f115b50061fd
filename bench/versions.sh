#!/usr/bin/env bash
# versions.sh - the backup's read cost on every PostgreSQL version the tool
# supports (issue 14's per-version figure): for each of 14, 15, 16, 17 and
# 18, a pgbench cluster of scale SCALE, then TRIALS rounds of
#   read      bench/tools/pgd_dio_read.c: every file the backup reads, read
#             once with O_DIRECT (1 MiB reads, 2 threads), nothing else
#   backup    pgdirect backup --compression lz4 --checkpoint fast (release
#             build), WAL archived by pgdirect wal-push
# each with the cluster's files evicted first, one by one (pgd-pagecache:
# never the global drop_caches, which would disturb whoever else runs
# here). The report gives medians and the ratio backup / read per version,
# measured side by side in one run.
#
#   bash bench/versions.sh [--scale N] [--trials N] [--versions "14 15 16 17 18"]
#        (as root; `make` and scripts/setup.sh first; results in bench/results/<stamp>-versions/)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
. "$HERE/lib.sh"
SCALE=50
TRIALS=3
VERSIONS="14 15 16 17 18"
while [ $# -gt 0 ]; do
    case $1 in
    --scale) SCALE=$2; shift 2 ;;
    --trials) TRIALS=$2; shift 2 ;;
    --versions) VERSIONS=$2; shift 2 ;;
    *) echo "usage: bench/versions.sh [--scale N] [--trials N] [--versions LIST]" >&2; exit 2 ;;
    esac
done
case $SCALE$TRIALS in '' | *[!0-9]*) echo "versions.sh: --scale and --trials take positive integers" >&2; exit 2 ;; esac
BUILD=${BUILD:-$ROOT/build}
DEBIAN_BIN=/usr/lib/postgresql/15/bin
CACHE=/var/cache/pgdirect-tests/pg
bench_require versions.sh "servers run as postgres" pgdirect pgd-pagecache -- /usr/bin/time

# the server binaries of major version $1: Debian's 15, else the npm package scripts/setup.sh installed
server_bin() {
    local v
    if [ "$1" = 15 ]; then echo "$DEBIAN_BIN"; return; fi
    v=$(python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["packages"]["node_modules/pg" + sys.argv[2]]["version"])' \
        "$ROOT/tests/pg/package-lock.json" "$1") || return 1
    # the tests install a version's copy on first use: do the same here (a fresh machine has none)
    [ -x "$CACHE/$v/bin/postgres" ] ||
        PGDIRECT_TEST_PG=$1 PGDIRECT_BIN=$BUILD/pgdirect bash -c '. "$1" && pg_bin_install' _ \
            "$ROOT/tests/integration/lib.sh" >&2 || return 1
    [ -x "$CACHE/$v/bin/postgres" ] || return 1
    echo "$CACHE/$v/bin"
}

STAMP=$(date -u +%Y-%m-%dT%H%M%SZ)
OUT=${OUT:-$ROOT/bench/results/$STAMP-versions}
mkdir -p "$OUT/raw"
D=$(mktemp -d /tmp/pgdirect-versions.XXXXXX)
chmod 755 "$D"
mkdir -p "$D/bin"
cp "$BUILD/pgdirect" "$BUILD/pgd-pagecache" "$D/bin/"
cc -O2 -std=gnu11 -pthread -I"$ROOT/src" -o "$D/bin/dio_read" "$HERE/tools/pgd_dio_read.c" \
    "$ROOT/src/pg/datadir.c" "$ROOT/src/util/log.c" "$ROOT/src/util/error.c" "$ROOT/src/util/big_buffer.c"
chown -R postgres:postgres "$D"
PORT=$((20000 + RANDOM % 20000))
PGD="$D/bin/pgdirect"
PC="$D/bin/pgd-pagecache"
PG_BIN=""
log() { printf '[%s] %s\n' "$(date -u +%T)" "$*" >&2; }
pg() { runuser -u postgres -- env PGHOST="$D" PGPORT="$PORT" PGUSER=postgres PGDATABASE=postgres "$@"; }
q() { pg "$DEBIAN_BIN/psql" -X -Atq -v ON_ERROR_STOP=1 -c "$1"; }
stop_pg() { [ -n "$PG_BIN" ] && [ -f "$D/data/postmaster.pid" ] && pg "$PG_BIN/pg_ctl" -D "$D/data" -m fast -w stop >/dev/null 2>&1 || true; }
cleanup() { stop_pg; rm -rf "$D"; }
trap cleanup EXIT
evict() { find "$D/data" -type f -print0 | xargs -0 -n 200 sh -c 'for f; do "$0" evict "$f" >/dev/null 2>&1 || true; done' "$PC"; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
col() { awk -v c="$2" '{print $c}' "$OUT/raw/$1" | median; }
timed() { # timed NAME CMD...: evict, run as postgres; appends "wall user sys" to raw/NAME; a failure ends the run
    local name=$1
    shift
    evict
    if ! pg /usr/bin/time -f '%e %U %S' -o "$D/time" "$@" >>"$OUT/raw/$name.log" 2>&1; then
        echo "versions.sh: $name failed:" >&2
        tail -5 "$OUT/raw/$name.log" >&2
        exit 1
    fi
    cat "$D/time" >>"$OUT/raw/$name"
}

ROWS=""
for v in $VERSIONS; do
    PG_BIN=$(server_bin "$v") || { echo "versions.sh: no PostgreSQL $v here: run scripts/setup.sh" >&2; exit 1; }
    log "PostgreSQL $v ($PG_BIN): pgbench scale $SCALE"
    rm -rf "$D/data" "$D/repo"
    pg "$PG_BIN/initdb" -D "$D/data" -U postgres -A trust --data-checksums >/dev/null
    bench_server_conf "$PGD wal-push --repo $D/repo %p"
    pg "$PG_BIN/pg_ctl" -D "$D/data" -l "$D/server-$v.log" -w start >/dev/null
    pg "$DEBIAN_BIN/pgbench" -i -s "$SCALE" -q >/dev/null 2>&1
    q "VACUUM (FREEZE, ANALYZE)"
    q "CHECKPOINT"
    bytes=$(du -sb --exclude=pg_wal "$D/data" | cut -f1)
    for t in $(seq 1 "$TRIALS"); do
        log "PostgreSQL $v: trial $t/$TRIALS"
        timed "read-$v" "$D/bin/dio_read" "$D/data" 2
        rm -rf "$D/repo/backups"
        timed "backup-$v" "$PGD" backup --repo "$D/repo" --pgdata "$D/data" --checkpoint fast --compression lz4
    done
    stop_pg
    read_s=$(col "read-$v" 1)
    backup_s=$(col "backup-$v" 1)
    cpu_s=$(awk '{print $2 + $3}' "$OUT/raw/backup-$v" | median)
    ROWS+="| $v | $((bytes / 1048576)) | $read_s | $backup_s | $(awk -v a="$backup_s" -v b="$read_s" 'BEGIN { printf "%.2f", a / b }') | $(awk -v b="$bytes" -v s="$backup_s" 'BEGIN { printf "%.0f", b / s / 1e6 }') | $cpu_s |"$'\n'
done

{
    echo "# The backup's read cost per PostgreSQL version, pgbench scale $SCALE ($STAMP)"
    echo
    echo "Medians of $TRIALS trials per version, side by side in one run; the cluster's files evicted (per file)"
    echo "before each step. *read*: every file the backup reads, read once with O_DIRECT and thrown away"
    echo "(bench/tools/pgd_dio_read.c, 2 threads). *backup*: \`pgdirect backup --compression lz4 --checkpoint fast\`,"
    echo "checkpoint and WAL archive wait included. Load on the machine while it ran: $(cut -d' ' -f1-3 /proc/loadavg)."
    echo
    echo "| PostgreSQL | data MiB | read s | backup s | backup / read | backup MB/s | backup CPU s |"
    echo "|---|---|---|---|---|---|---|"
    printf '%s' "$ROWS"
} >"$OUT/report.md"
cat "$OUT/report.md"
