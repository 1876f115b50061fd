#!/usr/bin/env bash
# delta.sh - delta backups against fulls and pgBackRest's incremental backup (issue 10), in one run:
#   1. pgbench -i at --scale N; a pgdirect full and a pgBackRest full (lz4 both, process-max 2);
#   2. a contiguous 1 % of pgbench_accounts updated (an aid range), CHECKPOINT;
#   3. each timed with the cluster's files evicted first (per file, POSIX_FADV_DONTNEED through
#      pgd-pagecache: never the global drop_caches, which would disturb whoever else runs here):
#      pgdirect backup --delta, pgbackrest --type=incr, and a pgdirect full again;
#      bytes stored, the cluster's page-cache residency after each, peak RSS (/usr/bin/time);
#   4. two more deltas after two more contiguous 1 % updates (a chain of 3), then a restore
#      of the newest delta (the whole chain) vs a restore of the full, each followed by sync.
#      A build whose restore cannot assemble deltas says so in the report instead of a number.
# The report (ratios; raw numbers under raw/) goes to bench/results/<stamp>-delta/.
#
#   bash bench/delta.sh [--scale N]      (as root; `make` first; default scale 100)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
. "$HERE/lib.sh"
SCALE=100
while [ $# -gt 0 ]; do
    case $1 in
    --scale) SCALE=$2; shift 2 ;;
    *) echo "usage: bench/delta.sh [--scale N]" >&2; exit 2 ;;
    esac
done
case $SCALE in '' | *[!0-9]*) echo "delta.sh: --scale must be a positive integer" >&2; exit 2 ;; esac
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
BUILD=${BUILD:-$ROOT/build}
bench_require delta.sh "servers run as postgres" pgdirect pgd-pagecache -- pgbackrest /usr/bin/time jq

STAMP=$(date -u +%Y-%m-%dT%H%M%SZ)
OUT=${OUT:-$ROOT/bench/results/$STAMP-delta}
mkdir -p "$OUT/raw"
D=$(mktemp -d /tmp/pgdirect-delta.XXXXXX)
chmod 755 "$D"
mkdir -p "$D/bin"
cp "$BUILD/pgdirect" "$BUILD/pgd-pagecache" "$D/bin/"
chown -R postgres:postgres "$D"
PORT=$((20000 + RANDOM % 20000))
PGD="$D/bin/pgdirect"
PC="$D/bin/pgd-pagecache"
log() { printf '[%s] %s\n' "$(date -u +%T)" "$*" >&2; }
pg() { runuser -u postgres -- env PGHOST="$D" PGPORT="$PORT" PGUSER=postgres PGDATABASE=postgres "$@"; }
q() { pg "$PG_BIN/psql" -X -Atq -v ON_ERROR_STOP=1 -c "$1"; }
cleanup() {
    local d
    for d in "$D/data" "$D"/r_*; do
        [ -f "$d/postmaster.pid" ] && pg "$PG_BIN/pg_ctl" -D "$d" -m immediate stop >/dev/null 2>&1
    done
    rm -rf "$D"
}
trap cleanup EXIT

# every file of the cluster out of the page cache, one by one (after fdatasync)
evict() { find "$D/data" -type f -print0 | xargs -0 -n 200 sh -c 'for f; do "$0" evict "$f" >/dev/null 2>&1 || true; done' "$PC"; }
# percent of the cluster's data files (base/, global/; not the WAL the server writes meanwhile) in the page cache
resident() { find "$D/data/base" "$D/data/global" -type f -print0 | xargs -0 "$PC" total | awk '{print $3}'; }
# timed NAME CMD...: evict, run as postgres under /usr/bin/time; raw/NAME gets "wall user sys maxrss_kib
# resident_after_%"; a failed command ends the run (no silent zeros)
timed() {
    local name=$1
    shift
    evict
    if ! pg /usr/bin/time -f '%e %U %S %M' -o "$D/time.$name" "$@" >"$OUT/raw/$name.log" 2>&1; then
        echo "delta.sh: $name failed:" >&2
        tail -5 "$OUT/raw/$name.log" >&2
        exit 1
    fi
    echo "$(cat "$D/time.$name") $(resident)" >"$OUT/raw/$name"
}
field() { awk -v i="$2" '{print $i}' "$OUT/raw/$1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a ~ /^[0-9.]+$/ && b > 0) printf "%.3f", a / b; else print "n/a" }'; }
update_1pct() { # update_1pct K: the K-th contiguous 1 % of pgbench_accounts
    local rows=$((SCALE * 100000)) lo hi
    lo=$((rows / 100 * $1 + 1))
    hi=$((rows / 100 * ($1 + 1)))
    q "UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid BETWEEN $lo AND $hi"
    q "CHECKPOINT"
}

log "cluster: pgbench scale $SCALE"
pg "$PG_BIN/initdb" -D "$D/data" -U postgres -A trust --data-checksums >/dev/null
bench_pgbackrest_conf
bench_server_conf "$PGD wal-push --repo $D/repo_pgdirect %p && $PGBR archive-push %p"
pg "$PG_BIN/pg_ctl" -D "$D/data" -l "$D/server.log" -w start >/dev/null
pg $PGBR stanza-create >/dev/null
pg "$PG_BIN/pgbench" -i -s "$SCALE" -q >/dev/null 2>&1
q "VACUUM (FREEZE, ANALYZE)"
q "CHECKPOINT"

BACKUP="$PGD backup --repo $D/repo_pgdirect --pgdata $D/data --checkpoint fast"
log "fulls"
timed full $BACKUP
timed pgbr_full $PGBR --type=full backup
FULL_ID=$(pg "$PGD" list --repo "$D/repo_pgdirect" --json | jq -r '.[-1].id')
update_1pct 10
log "delta, pgBackRest incr, full again"
timed delta $BACKUP --delta
timed pgbr_incr $PGBR --type=incr backup
timed full2 $BACKUP
# (the second full is not a parent: the chain below is built on the first)
DELTA_ID=$(pg "$PGD" list --repo "$D/repo_pgdirect" --json | jq -r '[.[] | select(.type == "delta")][-1].id')
stored() { pg "$PGD" list --repo "$D/repo_pgdirect" --json | jq -r --arg i "$1" '.[] | select(.id == $i) | .compressed_size'; }
FULL_STORED=$(stored "$FULL_ID")
DELTA_STORED=$(stored "$DELTA_ID")
PGBR_INCR_STORED=$(pg $PGBR info --output=json | jq -r '[.[0].backup[] | select(.type == "incr")][-1].info.repository.delta')
log "a chain of 3 deltas"
update_1pct 20
pg $BACKUP --delta --delta-from "$DELTA_ID" >"$OUT/raw/delta2.log" 2>&1
D2=$(pg "$PGD" list --repo "$D/repo_pgdirect" --json | jq -r '.[-1].id')
update_1pct 30
pg $BACKUP --delta --delta-from "$D2" >"$OUT/raw/delta3.log" 2>&1
D3=$(pg "$PGD" list --repo "$D/repo_pgdirect" --json | jq -r '.[-1].id')
DEPTH3=$(pg "$PGD" list --repo "$D/repo_pgdirect" --json | jq -r '.[-1].depth')
log "restores: the full, then the chain ($D3, depth $DEPTH3)"
restore_to() { mkdir -p "$D/$1" && chown postgres "$D/$1" && chmod 700 "$D/$1"; }
restore_to r_full
timed restore_full sh -c "'$PGD' restore $FULL_ID --repo '$D/repo_pgdirect' --target-dir '$D/r_full' && sync"
rm -rf "$D/r_full"
CHAIN_NOTE=""
restore_to r_chain
if ! pg /usr/bin/time -f '%e %U %S %M' -o "$D/time.restore_chain" sh -c \
    "'$PGD' restore $D3 --repo '$D/repo_pgdirect' --target-dir '$D/r_chain' && sync" >"$OUT/raw/restore_chain.log" 2>&1; then
    CHAIN_NOTE="this build could not restore the delta chain: $(tail -1 "$OUT/raw/restore_chain.log")"
    echo "n/a n/a n/a n/a" >"$OUT/raw/restore_chain"
else
    echo "$(cat "$D/time.restore_chain")" >"$OUT/raw/restore_chain"
fi
rm -rf "$D/r_chain"

{
    echo "# Delta backups, pgbench scale $SCALE, a contiguous 1 % of pgbench_accounts changed ($STAMP)"
    echo
    echo "Each backup timed with the cluster's files evicted first (per file, not drop_caches); lz4 everywhere."
    echo
    echo "| | wall s | peak RSS MiB | stored bytes | data files resident after % |"
    echo "|---|---|---|---|---|"
    echo "| pgdirect full | $(field full 1) | $(($(field full 4) / 1024)) | $FULL_STORED | $(field full 5) |"
    echo "| pgdirect --delta | $(field delta 1) | $(($(field delta 4) / 1024)) | $DELTA_STORED | $(field delta 5) |"
    echo "| pgdirect full, again | $(field full2 1) | $(($(field full2 4) / 1024)) | | $(field full2 5) |"
    echo "| pgbackrest --type=full | $(field pgbr_full 1) | $(($(field pgbr_full 4) / 1024)) | | $(field pgbr_full 5) |"
    echo "| pgbackrest --type=incr | $(field pgbr_incr 1) | $(($(field pgbr_incr 4) / 1024)) | $PGBR_INCR_STORED | $(field pgbr_incr 5) |"
    echo
    echo "- delta time / full time: $(ratio "$(field delta 1)" "$(field full2 1)")"
    echo "- delta time / pgBackRest incr time: $(ratio "$(field delta 1)" "$(field pgbr_incr 1)")"
    echo "- delta stored / full stored: $(ratio "$DELTA_STORED" "$FULL_STORED")"
    echo "- delta stored / pgBackRest incr stored: $(ratio "$DELTA_STORED" "$PGBR_INCR_STORED")"
    echo "- restore of the 3-delta chain / restore of the full: $(ratio "$(field restore_chain 1)" "$(field restore_full 1)")" \
        "(${CHAIN_NOTE:-$(field restore_chain 1) s vs $(field restore_full 1) s})"
} >"$OUT/report.md"
cat "$OUT/report.md"
