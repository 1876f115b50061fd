#!/usr/bin/env bash
# many_files.sh - a cluster of ~100,000 small relation files, and what each
# tool takes to back it up and restore it, measured side by side in one run.
#
# The cluster is real: TABLES tables (default 25,000), each with a primary
# key and a text column, so each has four files (heap, primary key, TOAST
# heap, TOAST index), 20 rows each: 100,000 relation files in one database
# directory, most of them 8-16 KiB, a quarter empty. Real tables rather than
# synthetic files because the walk's rules (unlogged forks, temp relations)
# and `pgdirect cache` (pg_relation_filepath, pg_buffercache) need the
# catalog to match the files.
#
# Each trial, page cache dropped before every step:
#   walk      the walk of the data directory alone (bench/tools/pgd_walk.c,
#             built against this tree's datadir.c and OLD's)
#   tar       tar cf - PGDATA | cat   (what reading every file costs)
#   pgdirect  backup, lz4 (this build), and OLD_BIN's backup when given
#   pgbackrest  backup, lz4, process-max 2 (Debian's pgbackrest)
#   restore   pgdirect restore vs pgbackrest restore, each followed by sync
#   cache     pgdirect cache --json (this build, and OLD_BIN's), caches
#             dropped, then once more right after (metadata cached)
# Wall and CPU seconds and peak RSS from /usr/bin/time. --perf FILE also
# records `perf record -g` of one pgdirect backup into FILE (perf.data) and
# writes its top symbols next to it.
#
# --pairs N (with --old-bin) then runs N more pairs of backups, OLD_BIN's
# and this build's in turn, caches dropped before each, and reports each
# pair's ratio and their median: the comparison that stays fair when the
# machine's speed drifts. --trials 0 --pairs N runs only those.
#
#   bash bench/many_files.sh [--tables N] [--trials N] [--old-bin PGDIRECT] [--old-commit C]
#                            [--pairs N] [--perf FILE] [--out DIR]          (as root; `make` first)
#
# Output: a Markdown table on stdout and in DIR/report.md (DIR defaults to
# bench/results/<stamp>-many-files), raw timings in DIR/raw.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
. "$HERE/lib.sh"
TABLES=25000
TRIALS=1
OLD_BIN=""
OLD_COMMIT=1aef9bd
PERF_OUT=""
OUT=""
PAIRS=0
while [ $# -gt 0 ]; do
    case $1 in
    --tables) TABLES=$2; shift ;;
    --trials) TRIALS=$2; shift ;;
    --old-bin) OLD_BIN=$2; shift ;;
    --old-commit) OLD_COMMIT=$2; shift ;;
    --perf) PERF_OUT=$2; shift ;;
    --pairs) PAIRS=$2; shift ;;
    --out) OUT=$2; shift ;;
    *) echo "many_files.sh: unknown argument \"$1\"" >&2; exit 2 ;;
    esac
    shift
done

PG_BIN=/usr/lib/postgresql/15/bin
BUILD=${BUILD:-$ROOT/build}
bench_require many_files.sh "drop_caches, servers as postgres" pgdirect -- pgbackrest bc /usr/bin/time
[ "$PAIRS" -eq 0 ] || [ -n "$OLD_BIN" ] || { echo "many_files.sh: --pairs needs --old-bin" >&2; exit 2; }
[ -z "$PERF_OUT" ] || command -v perf >/dev/null || { echo "many_files.sh: perf is missing" >&2; exit 1; }

STAMP=$(date -u +%Y-%m-%dT%H%M%SZ)
OUT=${OUT:-$ROOT/bench/results/$STAMP-many-files}
mkdir -p "$OUT/raw"
D=$(mktemp -d /tmp/pgdirect-many.XXXXXX)
chmod 755 "$D"
mkdir -p "$D/bin"
cp "$BUILD/pgdirect" "$D/bin/pgdirect"
[ -z "$OLD_BIN" ] || cp "$OLD_BIN" "$D/bin/pgdirect_old"
chown -R postgres:postgres "$D"
PORT=$((20000 + RANDOM % 20000))
cleanup() { stop_pg; rm -rf "$D"; }
trap cleanup EXIT
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

# ---- the walk tool, against this tree's datadir.c and the old one ----
mkdir -p "$D/walk/pg"
git -C "$ROOT" show "$OLD_COMMIT:src/pg/datadir.c" >"$D/walk/pg/datadir_old.c"
WALK_SRC="$HERE/tools/pgd_walk.c $ROOT/src/util/log.c $ROOT/src/util/error.c"
cc -O2 -std=gnu11 -pthread -I"$ROOT/src" -o "$D/bin/walk_new" $WALK_SRC "$ROOT/src/pg/datadir.c"
cc -O2 -std=gnu11 -pthread -I"$ROOT/src" -o "$D/bin/walk_old" $WALK_SRC "$D/walk/pg/datadir_old.c"

# ---- the cluster ----
log "cluster: $TABLES tables of 20 rows, each with a primary key and a TOAST table"
pg "$PG_BIN/initdb" -D "$D/data" -U postgres -A trust >/dev/null
bench_server_conf "$D/bin/pgdirect wal-push --repo $D/repo_pgdirect %p"
pg "$PG_BIN/pg_ctl" -D "$D/data" -l "$D/server.log" -w start >/dev/null
q "CREATE EXTENSION pg_buffercache"
# in transactions of 250 tables: one WAL flush per batch, not per table
awk -v n="$TABLES" 'BEGIN {
    for (i = 1; i <= n; i++) {
        if (i % 250 == 1) print "BEGIN;"
        printf "CREATE TABLE small_%d (id int PRIMARY KEY, v text); INSERT INTO small_%d SELECT g, md5(g::text) FROM generate_series(1, 20) g;\n", i, i
        if (i % 250 == 0 || i == n) print "COMMIT;"
    }
}' >"$D/create.sql"
chown postgres "$D/create.sql"
pg "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -f "$D/create.sql" >/dev/null
q "CHECKPOINT"
FILES=$(find "$D/data/base" -type f | wc -l)
BYTES=$(du -sb --exclude=pg_wal "$D/data" | cut -f1)
log "cluster: $FILES files under base/, $((BYTES / 1000000)) MB without pg_wal"

bench_pgbackrest_conf
pg $PGBR stanza-create >/dev/null

archive_to() { # archive_to pgdirect|pgbackrest
    local cmd="$D/bin/pgdirect wal-push --repo $D/repo_pgdirect %p"
    [ "$1" = pgbackrest ] && cmd="$PGBR archive-push %p"
    sed -i "/^archive_command/d" "$D/data/postgresql.conf"
    echo "archive_command = '$cmd'" >>"$D/data/postgresql.conf"
    q "SELECT pg_reload_conf()" >/dev/null
}

# timed NAME CMD...: drop caches, run CMD as postgres under /usr/bin/time; appends
# "wall user sys maxrss_kib" to raw/NAME; a failed command ends the run (no silent zeros)
timed() {
    local name=$1; shift
    [ "${WARM:-0}" = 1 ] || drop
    if ! pg /usr/bin/time -f '%e %U %S %M' -o "$D/time.$name" "$@" >"$OUT/raw/$name.log" 2>&1; then
        echo "many_files.sh: $name failed:" >&2
        tail -5 "$OUT/raw/$name.log" >&2
        exit 1
    fi
    cat "$D/time.$name" >>"$OUT/raw/$name"
}

for t in $(seq 1 "$TRIALS"); do
    log "trial $t/$TRIALS: walk"
    drop; pg "$D/bin/walk_new" "$D/data" 150000 | tee -a "$OUT/raw/walk_new.out" | awk '{print $1}' >>"$OUT/raw/walk_new_s"
    drop; pg "$D/bin/walk_old" "$D/data" 150000 | tee -a "$OUT/raw/walk_old.out" | awk '{print $1}' >>"$OUT/raw/walk_old_s"
    log "trial $t/$TRIALS: tar"
    timed tar sh -c "tar cf - -C '$D' data | cat >/dev/null"
    archive_to pgdirect
    # the old binary first, into the same repository (it waits for the WAL there), then removed
    if [ -n "$OLD_BIN" ]; then
        log "trial $t/$TRIALS: old pgdirect backup"
        rm -rf "$D/repo_pgdirect/backups"
        timed pgdirect_old "$D/bin/pgdirect_old" backup --repo "$D/repo_pgdirect" --pgdata "$D/data" --checkpoint fast
    fi
    log "trial $t/$TRIALS: pgdirect backup"
    rm -rf "$D/repo_pgdirect/backups"
    timed pgdirect "$D/bin/pgdirect" backup --repo "$D/repo_pgdirect" --pgdata "$D/data" --checkpoint fast
    log "trial $t/$TRIALS: pgbackrest backup"
    archive_to pgbackrest
    timed pgbackrest $PGBR --type=full backup
    archive_to pgdirect
    log "trial $t/$TRIALS: restores"
    rm -rf "$D/r_pgd" "$D/r_pgbr"
    timed restore_pgdirect sh -c "'$D/bin/pgdirect' restore LATEST --repo '$D/repo_pgdirect' --target-dir '$D/r_pgd' && sync"
    mkdir -p "$D/r_pgbr"; chown postgres "$D/r_pgbr"; chmod 700 "$D/r_pgbr"
    timed restore_pgbackrest sh -c "$PGBR --pg1-path='$D/r_pgbr' restore && sync"
    # what a backup keeps of base/ (pg_internal.init is rebuilt by the server, not backed up)
    want=$(find "$D/data/base" -type f ! -name pg_internal.init | wc -l)
    got_pgd=$(find "$D/r_pgd/base" -type f | wc -l); got_pgbr=$(find "$D/r_pgbr/base" -type f | wc -l)
    [ "$got_pgd" -eq "$want" ] || { echo "many_files.sh: pgdirect restored $got_pgd of $want files under base/" >&2; exit 1; }
    echo "$got_pgbr" >>"$OUT/raw/restore_pgbackrest_files"
    rm -rf "$D/r_pgd" "$D/r_pgbr"
    log "trial $t/$TRIALS: cache"
    # (the JSON of 100,000 forks is not kept: its size is the point, not its text)
    cache_cmd() { echo "exec '$D/bin/$1' cache --database postgres --json >/dev/null"; }
    timed cache sh -c "$(cache_cmd pgdirect)"
    WARM=1 timed cache_warm sh -c "$(cache_cmd pgdirect)"
    if [ -n "$OLD_BIN" ]; then
        timed cache_old sh -c "$(cache_cmd pgdirect_old)"
        WARM=1 timed cache_old_warm sh -c "$(cache_cmd pgdirect_old)"
    fi
    pg $PGBR expire --repo1-retention-full=1 >/dev/null 2>&1 || true
done

if [ "$PAIRS" -gt 0 ]; then
    archive_to pgdirect
    for p in $(seq 1 "$PAIRS"); do
        log "pair $p/$PAIRS: old pgdirect backup, then this build's"
        for b in pgdirect_old pgdirect; do
            rm -rf "$D/repo_pgdirect/backups"
            timed "pair_$b" "$D/bin/$b" backup --repo "$D/repo_pgdirect" --pgdata "$D/data" --checkpoint fast
        done
    done
    paste -d' ' "$OUT/raw/pair_pgdirect" "$OUT/raw/pair_pgdirect_old" |
        awk '{printf "%.3f\n", $1 / $5}' >"$OUT/raw/pair_ratio"
fi

if [ -n "$PERF_OUT" ]; then
    log "perf record -g of one pgdirect backup"
    archive_to pgdirect
    rm -rf "$D/repo_pgdirect/backups"
    drop
    perf record -g -o "$PERF_OUT" -- runuser -u postgres -- env PGHOST="$D" PGPORT="$PORT" \
        "$D/bin/pgdirect" backup --repo "$D/repo_pgdirect" --pgdata "$D/data" --checkpoint fast \
        >"$OUT/raw/perf_backup.log" 2>&1
    perf report -i "$PERF_OUT" --no-children -g none --sort dso,symbol --percent-limit 1 --stdio 2>/dev/null |
        grep -v '^$' | head -80 >"$PERF_OUT.top.txt" || true
fi

# ---- the table ----
col() { awk -v c="$2" '{print $c}' "$OUT/raw/$1" | median; }
KIB=1024
if [ "$PAIRS" -gt 0 ]; then
    {
        echo "many_files.sh: $TABLES tables, $FILES files under base/; $PAIRS pairs of backups (lz4), $OLD_COMMIT's then this build's, caches dropped before each; $(date -u +%F)"
        echo
        echo "| pair | this build wall s | CPU s | $OLD_COMMIT wall s | CPU s | ratio |"
        echo "|---|---|---|---|---|---|"
        paste -d' ' "$OUT/raw/pair_pgdirect" "$OUT/raw/pair_pgdirect_old" "$OUT/raw/pair_ratio" |
            awk '{printf "| %d | %.2f | %.2f | %.2f | %.2f | %.3f |\n", NR, $1, $2 + $3, $5, $6 + $7, $9}'
        printf '| median | %.2f | | %.2f | | **%.3f** |\n' "$(col pair_pgdirect 1)" "$(col pair_pgdirect_old 1)" \
            "$(median <"$OUT/raw/pair_ratio")"
        echo
    } | tee "$OUT/pairs.md"
fi
[ "$TRIALS" -gt 0 ] || exit 0
{
    echo "many_files.sh: $TABLES tables, $FILES files under base/, $((BYTES / 1000000)) MB without pg_wal; $TRIALS trial(s), medians, caches dropped before each step; $(date -u +%F)"
    echo
    echo "| step | wall s | CPU s | peak RSS MiB | ratio |"
    echo "|---|---|---|---|---|"
    tar_s=$(col tar 1); pgbr_s=$(col pgbackrest 1); rpgbr_s=$(col restore_pgbackrest 1)
    row() { # row LABEL NAME RATIO_LABEL RATIO_BASE
        local w u s m
        w=$(col "$2" 1); u=$(col "$2" 2); s=$(col "$2" 3); m=$(col "$2" 4)
        printf '| %s | %.2f | %.2f | %.0f | %s |\n' "$1" "$w" "$(echo "$u + $s" | bc -l)" \
            "$(echo "$m / $KIB" | bc -l)" "${3:+$(printf '%.2f x %s' "$(echo "$w / $4" | bc -l)" "$3")}"
    }
    printf '| walk alone (this tree) | %.2f | | | %.3f x old walk |\n' "$(median <"$OUT/raw/walk_new_s")" \
        "$(echo "$(median <"$OUT/raw/walk_new_s") / $(median <"$OUT/raw/walk_old_s")" | bc -l)"
    printf '| walk alone (%s) | %.2f | | | |\n' "$OLD_COMMIT" "$(median <"$OUT/raw/walk_old_s")"
    row "tar cf - PGDATA \\| cat" tar
    row "pgdirect backup lz4" pgdirect tar "$tar_s"
    printf '| | | | | %.2f x pgBackRest |\n' "$(echo "$(col pgdirect 1) / $pgbr_s" | bc -l)"
    [ -z "$OLD_BIN" ] || row "pgdirect backup lz4 (old binary)" pgdirect_old tar "$tar_s"
    row "pgBackRest backup lz4, process-max 2" pgbackrest tar "$tar_s"
    row "pgdirect restore + sync" restore_pgdirect pgBackRest "$rpgbr_s"
    row "pgBackRest restore + sync" restore_pgbackrest
    row "pgdirect cache --json, caches dropped" cache
    row "pgdirect cache --json, run again (metadata cached)" cache_warm
    [ -z "$OLD_BIN" ] || row "pgdirect cache --json (old binary), caches dropped" cache_old
    [ -z "$OLD_BIN" ] || row "pgdirect cache --json (old binary), run again" cache_old_warm
} | tee "$OUT/report.md"
