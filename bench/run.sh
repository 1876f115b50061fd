#!/usr/bin/env bash
# run.sh - the experiment behind pgdirect, reproduced at small scale (see
# ../shared/BENCH.md for the method and its pitfalls).
#
# A throwaway PostgreSQL 15 cluster and every backup tool run inside one
# memory cgroup smaller than the database (a small machine on a big one).
# Each trial: restart PostgreSQL inside the cgroup on an empty page cache,
# warm an "unreferenced" table and the front of pgbench_accounts once
# (pg_prewarm 'read'), run primary-key lookups (the latency probe) and one
# backup, then measure what stayed in the cache and how the queries fared.
#
# The unreferenced table is UNLOGGED, so no tool backs it up (pg_basebackup's
# rules, which all three follow, leave out its main fork): its fate measures
# only the pressure each backup's reads put on the cache. A table the backup
# itself reads ends up cached after a buffered backup whatever happened to it
# on the way (promoted by the second read, or read back in), so it would
# measure each tool's read order instead. The hot set the probe queries (the
# front of pgbench_accounts and its index) is backed up like everything else.
#
# Trials: none | pgdirect | pgdirect --direct-io=off | pgBackRest (lz4, same
# parallelism, local repo, archiving on) | pg_basebackup (-Ft, client lz4,
# -X none, archiving on). Also measured in the same run: fio's O_DIRECT
# sequential read limit of the same disk.
#
#   bash bench/run.sh [--quick] [--trials N] [--out DIR]     (as root; `make bench`)
#
# Output: DIR/report.md (Markdown table), DIR/cache.png (page cache over
# time, one line per trial), DIR/raw/ (per-trial CSV and logs).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
. "$HERE/lib.sh"
. "$ROOT/scripts/cgroup.sh"

QUICK=0
TRIALS=""
OUT=""
while [ $# -gt 0 ]; do
    case $1 in
    --quick) QUICK=1 ;;
    --trials) TRIALS=$2; shift ;;
    --out) OUT=$2; shift ;;
    *) echo "run.sh: unknown argument \"$1\"" >&2; exit 2 ;;
    esac
    shift
done

PG_BIN=/usr/lib/postgresql/15/bin
BUILD=${BUILD:-$ROOT/build}
bench_require run.sh "cgroups, drop_caches, servers as postgres" pgdirect pgd-latency -- \
    pgbackrest fio gnuplot bc /usr/bin/time

if [ $QUICK = 1 ]; then
    SCALE=30 UNREF_ROWS=500000 SB=64MB LIMIT_MB=400 TRIALS=${TRIALS:-2} AFTER=5 BASELINE=3 WINDOW=8
else
    SCALE=100 UNREF_ROWS=2000000 SB=128MB LIMIT_MB=1100 TRIALS=${TRIALS:-3} AFTER=10 BASELINE=5 WINDOW=15
fi
# WINDOW: every trial's queries are also judged over the same WINDOW seconds from its backup's
# start (longer than the slowest tool's backup), so that a short backup is not judged on its
# first, busiest seconds alone and a long one on its whole length: the harm a backup does is
# what the queries of that window lost, whenever the backup ended in it.
# drill and restore (issue 37): a drill of the bench cluster's backup (as root: its server and
# checks in their own memory cgroup of DRILL_MEMORY, under the bench's) and a plain restore into
# another directory, while the warmed table is cached; it must stay as cached as after "none".
# KINDS="none drill restore" runs only those.
KINDS=${KINDS:-"none pgdirect pgdirect_fast pgdirect_buffered pgbackrest pg_basebackup drill restore"}
DRILL_MEMORY=${DRILL_MEMORY:-96MiB}
STAMP=$(date -u +%Y-%m-%dT%H%M%SZ)
OUT=${OUT:-$ROOT/bench/results/$STAMP-$([ $QUICK = 1 ] && echo quick || echo full)}
mkdir -p "$OUT/raw"

D=$(mktemp -d /tmp/pgdirect-bench.XXXXXX)
chmod 755 "$D"
mkdir -p "$D/bin"
cp "$BUILD/pgdirect" "$D/bin/"
chown -R postgres:postgres "$D"
PGD="$D/bin/pgdirect"
PORT=$((20000 + RANDOM % 20000))
cleanup() {
    [ -f "$D/stop_probe" ] || touch "$D/stop_probe"
    stop_pg
    cgroup_destroy
    rm -rf "$D"
}
trap cleanup EXIT

# ---- the cluster ----
log "cluster: pgbench scale $SCALE + unreferenced table of $UNREF_ROWS rows, shared_buffers $SB"
pg "$PG_BIN/initdb" -D "$D/data" -U postgres -A trust >/dev/null
cat >>"$D/data/postgresql.conf" <<CONF
port = $PORT
listen_addresses = ''
unix_socket_directories = '$D'
shared_buffers = $SB
wal_level = replica
archive_mode = on
archive_command = '$PGD wal-push --repo $D/repo_pgdirect %p'
max_wal_senders = 4
autovacuum = off
CONF
pg "$PG_BIN/pg_ctl" -D "$D/data" -l "$D/server.log" -w start >/dev/null
q "CREATE EXTENSION pg_prewarm"
pg "$PG_BIN/pgbench" -i -s "$SCALE" -q >/dev/null 2>&1
q "CREATE UNLOGGED TABLE unref WITH (autovacuum_enabled = off) AS SELECT g AS id, repeat('u', 200) AS pad FROM generate_series(1, $UNREF_ROWS) g"
q "VACUUM (FREEZE, ANALYZE)"
q "CHECKPOINT"
# what a backup reads: the data directory less pg_wal and the unlogged table
DATA_BYTES=$(( $(du -sb --exclude=pg_wal "$D/data" | cut -f1) - $(q "SELECT pg_relation_size('unref')") ))
ACCOUNTS_ROWS=$((SCALE * 100000))
HOT_ROWS=$((ACCOUNTS_ROWS / 10))   # the probe queries the first tenth of pgbench_accounts
HOT_BLOCKS=$(q "SELECT (pg_relation_size('pgbench_accounts') / 8192 / 10)::int")
HOT_INDEX_BLOCKS=$(q "SELECT (pg_relation_size('pgbench_accounts_pkey') / 8192 / 10)::int")
cat >"$D/pk_select.sql" <<SQL
\set aid random(1, $HOT_ROWS)
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
SQL
chown postgres "$D/pk_select.sql"

# pgBackRest: same parallelism as pgdirect's default, lz4, local repository
bench_pgbackrest_conf
pg $PGBR stanza-create >/dev/null
stop_pg

# ---- the device limit, measured now, on the same disk ----
log "fio: O_DIRECT sequential read limit of the disk under $D"
mkdir -p "$D/fio"
fio_bw() { # fio_bw BLOCKSIZE -> MB/s
    fio --name=limit --directory="$D/fio" --rw=read --direct=1 --ioengine=libaio --bs="$1" \
        --iodepth=4 --size=1G --output-format=json 2>/dev/null |
        python3 -c "import json,sys; print(round(json.load(sys.stdin)['jobs'][0]['read']['bw_bytes']/1e6))"
}
fio --name=limit --directory="$D/fio" --rw=write --bs=1M --size=1G --output-format=terse >/dev/null 2>&1
sync; echo 3 >/proc/sys/vm/drop_caches
FIO_1M=$(fio_bw 1M)
FIO_4M=$(fio_bw 4M)
rm -rf "$D/fio"
log "fio: $FIO_1M MB/s (1 MiB, QD4), $FIO_4M MB/s (4 MiB, QD4)"

# ---- one trial ----
backup_cmd() { # backup_cmd KIND
    case $1 in
    none) echo "sleep 10" ;;
    pgdirect) echo "$PGD backup --repo $D/repo_pgdirect --pgdata $D/data --checkpoint fast" ;;
    pgdirect_fast) echo "$PGD backup --repo $D/repo_pgdirect --pgdata $D/data --checkpoint fast --max-rate 0" ;;
    pgdirect_buffered) echo "$PGD backup --repo $D/repo_pgdirect --pgdata $D/data --checkpoint fast --direct-io=off --max-rate 0" ;;
    pgbackrest) echo "pgbackrest --config=$D/pgbackrest.conf --stanza=bench --type=full backup" ;;
    pg_basebackup) echo "$PG_BIN/pg_basebackup -D $D/bb -Ft --compress=client-lz4 -X none -c fast" ;;
    drill) echo "$PGD drill LATEST --repo $D/repo_pgdirect --pg-bin $PG_BIN --scratch-dir $D/scratch --drill-memory $DRILL_MEMORY" ;;
    restore) echo "$PGD restore LATEST --repo $D/repo_pgdirect --target-dir $D/restored" ;;
    esac
}

rel_json() { pg env PGPORT="$PORT" "$PGD" cache --database postgres --json; }
rel_figures() { # rel_figures JSON RELATION -> "os_cache size evicted" of its main fork
    python3 -c "
import json,sys
r=[x for x in json.loads(sys.argv[1])['relations'] if x['relation']==sys.argv[2] and x['fork']=='main'][0]
print(r['os_cache'], r['size'], r['evicted_pages'])" "$1" "$2"
}

run_trial() { # run_trial KIND N
    local kind=$1 n=$2 dir="$OUT/raw/$1.$2" archive t0 t1 before after
    mkdir -p "$dir"
    rm -rf "$D/bb" "$D/scratch" "$D/restored"
    # drill and restore read the backup the trial before left (or one taken below)
    case $kind in drill | restore) ;; *) rm -rf "$D/repo_pgdirect/backups" ;; esac
    [ "$kind" = pgbackrest ] && archive="pgbackrest --config=$D/pgbackrest.conf --stanza=bench archive-push %p" ||
        archive="$PGD wal-push --repo $D/repo_pgdirect %p"
    sed -i "/^archive_command/d" "$D/data/postgresql.conf"
    echo "archive_command = '$archive'" >>"$D/data/postgresql.conf"

    stop_pg
    cgroup_destroy
    cgroup_create "pgdirect-bench-$$" $((LIMIT_MB * 1024 * 1024)) || { echo "run.sh: $CG_WHY" >&2; exit 1; }
    sync; echo 3 >/proc/sys/vm/drop_caches
    cgroup_exec runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$D/data" -o "-p $PORT" -l "$D/server.log" -w start >/dev/null
    if [ "$kind" = drill ] || [ "$kind" = restore ]; then
        ls "$D/repo_pgdirect/backups" 2>/dev/null | grep -q . ||
            pg env PGHOST="$D" PGPORT="$PORT" "$PGD" backup --repo "$D/repo_pgdirect" --pgdata "$D/data" \
                --checkpoint fast >"$dir/setup.log" 2>&1 || { echo "run.sh: backup for $kind failed" >&2; exit 1; }
        q "SELECT pg_switch_wal()" >/dev/null
        q "CHECKPOINT" >/dev/null
    fi

    # warm once, then do not touch until the backup ends
    q "SELECT pg_prewarm('unref', 'read')" >/dev/null
    q "SELECT pg_prewarm('pgbench_accounts', 'read', 'main', 0, $HOT_BLOCKS - 1)" >/dev/null
    q "SELECT pg_prewarm('pgbench_accounts_pkey', 'read', 'main', 0, $HOT_INDEX_BLOCKS - 1)" >/dev/null
    before=$(rel_json)

    # page cache over time, from inside the cgroup
    rm -f "$D/stop_probe"
    cgroup_exec runuser -u postgres -- env PGHOST="$D" PGPORT="$PORT" "$PGD" cache --database postgres \
        --relation unref --watch 1 >"$dir/cache.csv" 2>/dev/null &
    local sampler=$!
    # latency probe: back-to-back one-second pgbench runs, each with its own log
    (i=0; while [ ! -f "$D/stop_probe" ]; do
        pg "$PG_BIN/pgbench" -n -c 2 -j 2 -T 1 -f "$D/pk_select.sql" --log --log-prefix="$D/lat.$i" >/dev/null 2>&1 || true
        i=$((i + 1)); done) &
    local probe=$!
    local tp=$(date +%s.%N)
    sleep "$BASELINE"

    t0=$(date +%s.%N)
    # a drill runs as root, so that it can make its memory cgroup (it runs its server as postgres)
    local as=(runuser -u postgres --)
    [ "$kind" = drill ] && as=()
    cgroup_exec "${as[@]}" env PGHOST="$D" PGPORT="$PORT" PGUSER=postgres \
        /usr/bin/time -f "%e %U %S %M" -o "$D/time" $(backup_cmd "$kind") >"$dir/backup.log" 2>&1 ||
        { echo "run.sh: trial $kind.$n failed:" >&2; tail -5 "$dir/backup.log" >&2; exit 1; }
    t1=$(date +%s.%N)
    mv "$D/time" "$dir/time"
    after=$(rel_json) # right at the end of the backup, before the probe refills anything
    # the probe runs AFTER seconds past the end, and at least to the end of the fixed window
    local rest
    rest=$(echo "r = $t0 + $WINDOW - $(date +%s.%N); if (r < $AFTER) r = $AFTER; r" | bc)
    sleep "$rest"
    touch "$D/stop_probe"
    wait "$probe" 2>/dev/null || true
    kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null || true
    mv "$D"/lat.* "$dir/" 2>/dev/null || true

    read -r u_os u_size u_ev0 < <(rel_figures "$before" public.unref)
    read -r u_os1 u_size1 u_ev1 < <(rel_figures "$after" public.unref)
    read -r a_os a_size a_ev0 < <(rel_figures "$before" public.pgbench_accounts)
    read -r a_os1 a_size1 a_ev1 < <(rel_figures "$after" public.pgbench_accounts)
    read -r el us sy rss < "$dir/time"
    # cgroup page cache: first sample vs the highest during the backup
    local growth
    growth=$(awk -F, -v t0="$t0" -v t1="$t1" 'NR==2 {first=$10} NR>1 && $1>=t0 && $1<=t1+1 && $10>max {max=$10}
        END {printf "%.0f", (max > first ? max - first : 0) / 1048576}' "$dir/cache.csv")
    read -r nb p50b p99b < <("$BUILD/pgd-latency" "$tp" "$t0" "$dir"/lat.*)
    read -r nd p50d p99d < <("$BUILD/pgd-latency" "$t0" "$t1" "$dir"/lat.*)
    read -r na p50a p99a < <("$BUILD/pgd-latency" "$t1" "$(echo "$t1 + $AFTER" | bc)" "$dir"/lat.*)
    read -r nw p50w p99w < <("$BUILD/pgd-latency" "$t0" "$(echo "$t0 + $WINDOW" | bc)" "$dir"/lat.*)
    local wall
    wall=$(echo "$t1 - $t0" | bc)
    # pages of the warmed relations that left the cache: fewer cached than before the backup
    local lost=$(( (u_os - u_os1 > 0 ? u_os - u_os1 : 0) / 4096 + (a_os - a_os1 > 0 ? a_os - a_os1 : 0) / 4096 ))
    # kind n wall cpu rss_kb unref_pct_before unref_pct_after lost_pages evicted growth_mib p50b p99b p50d p99d p50a p99a
    #   nw p99w (queries and p99 of the fixed window)
    printf '%s %s %.2f %.2f %s %.1f %.1f %s %s %s %s %s %s %s %s %s %s %s\n' "$kind" "$n" "$wall" \
        "$(echo "$us + $sy" | bc)" "$rss" \
        "$(echo "100 * $u_os / $u_size" | bc -l)" "$(echo "100 * $u_os1 / $u_size1" | bc -l)" "$lost" \
        "$(( (u_ev1 - u_ev0 > 0 ? u_ev1 - u_ev0 : 0) + (a_ev1 - a_ev0 > 0 ? a_ev1 - a_ev0 : 0) ))" "$growth" \
        "$p50b" "$p99b" "$p50d" "$p99d" "$p50a" "$p99a" "$nw" "$p99w" | tee -a "$OUT/raw/trials.txt"
    cp "$dir/cache.csv" "$OUT/raw/$kind.$n.cache.csv"
    echo "$t0" >"$dir/t0"
}

: >"$OUT/raw/trials.txt"
for n in $(seq 1 "$TRIALS"); do
    for kind in $KINDS; do
        log "trial $n/$TRIALS: $kind"
        run_trial "$kind" "$n"
    done
done
stop_pg
cgroup_destroy

# ---- report ----
python3 "$HERE/report.py" "$OUT" "$DATA_BYTES" "$FIO_1M" "$FIO_4M" "$SCALE" "$LIMIT_MB" "$TRIALS" \
    "$([ $QUICK = 1 ] && echo quick || echo full)" "$WINDOW" >"$OUT/report.md"

# page cache over time: trial 1 of each kind, seconds since its backup started
for kind in $KINDS; do cp "$OUT/raw/$kind.1/t0" "$OUT/raw/$kind.1.t0"; done
bash "$HERE/plot.sh" "$OUT" "$LIMIT_MB" $KINDS
# per-trial logs and latency files: large, summarised in the report (KEEP_RAW=1 keeps them)
[ "${KEEP_RAW:-0}" = 1 ] || rm -rf "$OUT"/raw/*.[0-9]
log "report: $OUT/report.md, plot: $OUT/cache.png"
cat "$OUT/report.md"
