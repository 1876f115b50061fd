#!/usr/bin/env bash
# polite.sh - politeness is two numbers, never one (../shared/BENCH.md): the query p99 during a
# backup against the same queries just before it, AND the backup's wall time against
# pgBackRest's, measured side by side in one run, for three loads:
#
#   saturated  2 clients of primary-key lookups flat out on the warmed range (they want both
#              vCPUs all the time)
#   half       the same lookups at half the saturated rate (about one vCPU busy)
#   idle       no queries: only the wall time counts (defaults must cost nothing)
#
# The cluster (pgbench scale --scale, about 16 MB a unit) and every backup run inside one memory
# cgroup smaller than the database (--limit-mb). Each trial restarts PostgreSQL inside it on an
# empty page cache, warms the front of pgbench_accounts and its index once, starts the load,
# measures a baseline window, runs one backup, and stops. Trials alternate kinds within a
# round, so slow drifts of this shared machine fall on every kind alike.
#
# Kinds (--kinds; each a politeness candidate, run as postgres unless said; all but default and
# deadline with the reading threads' own idle CPU class off, so that each measures what it names):
#   pgbackrest     pgBackRest, lz4, 2 processes, unthrottled: the wall time to match
#   fast           pgdirect with nothing polite: --cpu-class normal --io-class best-effort
#   default        pgdirect with its defaults
#   idle           fast under SCHED_IDLE (chrt --idle 0): unprivileged
#   batch          fast under SCHED_BATCH (chrt --batch 0): unprivileged
#   nice19         fast at nice 19: unprivileged
#   weight25       fast in a cgroup of CPU weight 25 (--cpu-weight 25, as root)
#   deadline       the defaults with --deadline (--deadline-s seconds)
# and two controls that are not backups, each running --control-s seconds, to tell what of a
# backup's cost to the queries is CPU time and what is reading:
#   spinidle       two threads of pure computation under SCHED_IDLE (stress-ng), no I/O
#   ddread         the data directory read with O_DIRECT in the idle I/O class by one
#                  process, 1 MiB at a time, no compression: the reads alone
#   nullrepo       the defaults into --repo null: (nothing stored): the backup without its
#                  writes
#   fio1, fio16    the data directory read by fio with O_DIRECT and io_uring, 1 MiB reads, 1 or
#                  16 in flight, SCHED_IDLE and the idle I/O class: the reads' depth alone
#                  (fio1@4M, fio16@256k: reads of that size; fio1f, fio16f@4M: into buffers
#                  registered with the ring once, fio's --fixedbufs)
#   fio16r         fio16 held to --fio-rate bytes a second (fio's --rate, e.g. 950m): the reads
#                  alone at a lower speed
#   streamidle     one SCHED_IDLE thread streaming through memory (stress-ng --stream), no I/O:
#                  what touching many bytes costs the queries' caches
# and any KIND=COMMAND given with --kind (the backup options that follow "pgdirect backup"; with
# a --repo of their own, e.g. --repo null:, that repository instead of the default one; beginning
# with bin=PATH, that build of pgdirect: a copy the postgres user can run).
#
#   bash bench/polite.sh [--scale N] [--limit-mb N] [--rounds N] [--loads "saturated half idle"]
#                        [--kinds "..."] [--kind NAME=OPTIONS] [--deadline-s N] [--control-s N]
#                        [--fio-rate R] [--out DIR]
#
# With QUERY_CPUS=LIST in the environment (taskset's list, e.g. 0), PostgreSQL and the load's
# clients run on those vCPUs only (the backups and controls anywhere): with the disk's interrupts
# on one vCPU (/proc/irq/N/effective_affinity_list), queries kept on it or off it tell whether
# what the reading costs them is its interrupts.
#
# With PERF_SCHED=1 in the environment, the scheduler's switches and wakeups are recorded during
# each backup (perf, as root) and DIR/raw/LOAD.KIND.N/sched.txt says how long the queries' tasks
# waited for a CPU once woken, and which task held it (bench/tools/sched_delay.py), and
# sched_before.txt the same over the baseline window before the backup; with
# PERF_SCHED=2 the kernel call chains are recorded too and sched.data is kept.
#
# DIR/raw/LOAD.KIND.N/times holds the load's start and the backup's start and end (Unix seconds):
# `python3 bench/tools/slow_timeline.py DIR/raw/LOAD.KIND.N 220` says, second by second, what share
# of the lookups took over 220 us, before, during and after the backup.
#
# Output: DIR/report.md (per load: wall, ratio to pgBackRest, CPU s, p99 before and during and
# their ratio, CPU pressure), DIR/raw/trials.txt (one line per trial).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
. "$HERE/lib.sh"
. "$ROOT/scripts/cgroup.sh"

SCALE=200
LIMIT_MB=1536
ROUNDS=2
LOADS="saturated half idle"
KINDS="pgbackrest fast default idle nice19 weight25"
DEADLINE_S=""
FIO_RATE=""
CONTROL_S=5
OUT=""
BASELINE=10     # seconds of load measured before each backup
# Every trial's queries are also judged over the same WINDOW seconds from its backup's start
# (longer than the slowest backup): a p99 taken over the backup alone favours a slow backup,
# whose fixed costs (the checkpoint, the WAL switch) are diluted in a long window, and judges a
# fast one on its first, busiest seconds. The load runs on to the end of the window.
WINDOW=40
TRIAL_MAX=900   # a backup still running after this long is stopped and reported as such
declare -A EXTRA=()
while [ $# -gt 0 ]; do
    case $1 in
    --scale) SCALE=$2; shift ;;
    --limit-mb) LIMIT_MB=$2; shift ;;
    --rounds) ROUNDS=$2; shift ;;
    --loads) LOADS=$2; shift ;;
    --kinds) KINDS=$2; shift ;;
    --kind) EXTRA[${2%%=*}]=${2#*=}; KINDS="$KINDS ${2%%=*}"; shift ;;
    --deadline-s) DEADLINE_S=$2; shift ;;
    --control-s) CONTROL_S=$2; shift ;;
    --fio-rate) FIO_RATE=$2; shift ;;
    --window) WINDOW=$2; shift ;;
    --out) OUT=$2; shift ;;
    *) echo "polite.sh: unknown argument \"$1\"" >&2; exit 2 ;;
    esac
    shift
done

PG_BIN=/usr/lib/postgresql/15/bin
BUILD=${BUILD:-$ROOT/build}
bench_require polite.sh "cgroups, drop_caches, servers as postgres" pgdirect pgd-latency -- \
    pgbackrest chrt bc /usr/bin/time
STAMP=$(date -u +%Y-%m-%dT%H%M%SZ)
OUT=${OUT:-$ROOT/bench/results/$STAMP-polite}
mkdir -p "$OUT/raw"

D=$(mktemp -d /tmp/pgdirect-polite.XXXXXX)
chmod 755 "$D"
mkdir -p "$D/bin"
cp "$BUILD/pgdirect" "$D/bin/"
chown -R postgres:postgres "$D"
PGD="$D/bin/pgdirect"
# the ddread control: every file of the data directory read once with O_DIRECT, 1 MiB at a
# time, by one process in the idle I/O class (no process per file: starting one costs CPU)
cat >"$D/bin/ddread" <<'PY'
#!/usr/bin/python3
import mmap, os, sys
os.system("ionice -c 3 -p %d" % os.getpid())
buf = mmap.mmap(-1, 1 << 20)
for top, _, names in os.walk(sys.argv[1]):
    for name in names:
        try:
            fd = os.open(os.path.join(top, name), os.O_RDONLY | os.O_DIRECT)
        except OSError:
            continue
        while os.readv(fd, [buf]) > 0:
            pass
        os.close(fd)
PY
chmod 755 "$D/bin/ddread"
PORT=$((20000 + RANDOM % 20000))
PIN=() # QUERY_CPUS: the server and the load's clients on those vCPUs
[ -z "${QUERY_CPUS:-}" ] || PIN=(taskset -c "$QUERY_CPUS")
pg_pinned() { "${PIN[@]}" runuser -u postgres -- env PGHOST="$D" PGPORT="$PORT" PGUSER=postgres \
    PGDATABASE=postgres "$@"; }
cleanup() {
    touch "$D/stop_probe" 2>/dev/null || true
    stop_pg
    cgroup_destroy
    rm -rf "$D"
}
trap cleanup EXIT

# ---- the cluster ----
log "cluster: pgbench scale $SCALE, in a ${LIMIT_MB} MiB memory cgroup"
pg "$PG_BIN/initdb" -D "$D/data" -U postgres -A trust --data-checksums >/dev/null
bench_server_conf "$PGD wal-push --repo $D/repo_pgdirect %p"
pg "$PG_BIN/pg_ctl" -D "$D/data" -l "$D/server.log" -w start >/dev/null
q "CREATE EXTENSION pg_prewarm"
pg "$PG_BIN/pgbench" -i -s "$SCALE" -q >/dev/null 2>&1
q "VACUUM (FREEZE, ANALYZE)"
q "CHECKPOINT"
DATA_BYTES=$(du -sb --exclude=pg_wal "$D/data" | cut -f1)
HOT_ROWS=$((SCALE * 100000 / 10)) # the first tenth of pgbench_accounts
HOT_BLOCKS=$(q "SELECT (pg_relation_size('pgbench_accounts') / 8192 / 10)::int")
HOT_INDEX_BLOCKS=$(q "SELECT (pg_relation_size('pgbench_accounts_pkey') / 8192 / 10)::int")
cat >"$D/pk_select.sql" <<SQL
\set aid random(1, $HOT_ROWS)
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
SQL
chown postgres "$D/pk_select.sql"
bench_pgbackrest_conf
pg $PGBR stanza-create >/dev/null
log "data directory: $((DATA_BYTES / 1048576)) MiB"

backup_cmd() { # backup_cmd KIND: the command, and whether it runs as root (2nd word "root")
    local pd="$PGD backup --repo $D/repo_pgdirect --pgdata $D/data --checkpoint fast"
    case $1 in
    pgbackrest) echo "postgres $PGBR --type=full backup" ;;
    fast) echo "postgres $pd --cpu-class normal --io-class best-effort" ;;
    default) echo "postgres $pd" ;;
    idle) echo "postgres chrt --idle 0 $pd --cpu-class normal" ;;
    batch) echo "postgres chrt --batch 0 $pd --cpu-class normal" ;;
    nice19) echo "postgres nice -n 19 $pd --cpu-class normal" ;;
    weight25) echo "root $pd --cpu-class normal --cpu-weight 25" ;;
    spinidle) echo "postgres chrt --idle 0 stress-ng --temp-path $D --cpu 2 --timeout ${CONTROL_S}s --quiet" ;;
    ddread) echo "postgres $D/bin/ddread $D/data" ;;
    fio1 | fio16 | fio1@* | fio16@* | fio1f | fio16f | fio1f@* | fio16f@*) local depth=${1#fio} bs=1M fixed=""
        case $1 in *@*) depth=${depth%@*}; bs=${1#*@} ;; esac
        case $depth in *f) depth=${depth%f}; fixed="--fixedbufs" ;; esac
        echo "postgres chrt --idle 0 fio --name=read --opendir=$D/data --rw=read --bs=$bs --direct=1 \
        --ioengine=io_uring --iodepth=$depth $fixed --invalidate=0 --prioclass=3 --thread --numjobs=1 --output=/dev/null" ;;
    fio16r) echo "postgres chrt --idle 0 fio --name=read --opendir=$D/data --rw=read --bs=1M --direct=1 \
        --ioengine=io_uring --iodepth=16 --invalidate=0 --prioclass=3 --thread --numjobs=1 --output=/dev/null \
        --rate=${FIO_RATE:?--fio-rate is needed for the fio16r kind}" ;;
    streamidle) echo "postgres chrt --idle 0 stress-ng --temp-path $D --stream 1 --stream-l3-size 16M --timeout ${CONTROL_S}s --quiet" ;;
    nullrepo) echo "postgres $PGD backup --repo null: --archive-check=off --pgdata $D/data --checkpoint fast" ;;
    deadline) echo "postgres $pd --deadline ${DEADLINE_S:?--deadline-s is needed for the deadline kind}s" ;;
    *) [ -n "${EXTRA[$1]:-}" ] || { echo "polite.sh: unknown kind \"$1\"" >&2; exit 2; }
       # options naming a repository replace the default one (--repo null: measures no storing)
       # and bin=PATH first runs another build of pgdirect (two builds side by side in one run)
       local opts=${EXTRA[$1]} bin=$PGD
       case $opts in bin=*\ *) bin=${opts%% *}; opts=${opts#* } ;; bin=*) bin=$opts; opts="" ;; esac
       bin=${bin#bin=}
       case " $opts " in
       *" --repo "*) echo "postgres $bin backup --pgdata $D/data --checkpoint fast --archive-check=off $opts" ;;
       *) echo "postgres ${pd/$PGD/$bin} $opts" ;;
       esac ;;
    esac
}

# the machine's CPU time stolen by the hypervisor, and all CPU time, in jiffies (/proc/stat)
cpu_steal() { awk '/^cpu /{print $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9}' /proc/stat; }
steal_pct() { # steal_pct "STEAL0 TOTAL0" "STEAL1 TOTAL1"
    echo "$1 $2" | awk '{d = $4 - $2; printf "%.2f", (d > 0 ? 100 * ($3 - $1) / d : 0)}'
}
# the completion interrupts of the data directory's disk (virtioN-req.M, nvmeNqM in
# /proc/interrupts), counted on each vCPU: "N0 N1 ..."
disk_irqs() {
    local src disk drv
    src=$(findmnt -no SOURCE -T "$D" 2>/dev/null) || return 0
    disk=$(lsblk -no PKNAME "$src" 2>/dev/null | head -1)
    [ -n "$disk" ] || disk=$(basename "$src")
    drv=$(basename "$(readlink -f "/sys/block/$disk/device" 2>/dev/null)")
    [ -n "$drv" ] || return 0
    awk -v pat="^ *[0-9]+: .* ($drv-req|${drv}q[0-9])" 'NR == 1 { n = NF } $0 ~ pat {
        for (i = 1; i <= n; i++) c[i] += $(i + 1) } END { for (i = 1; i <= n; i++) printf "%d ", c[i] }' \
        /proc/interrupts
}
irq_delta() { # irq_delta "A0 A1" "B0 B1": "vCPU 0: N, vCPU 1: M"
    awk -v a="$1" -v b="$2" 'BEGIN { n = split(a, x); split(b, y)
        for (i = 1; i <= n; i++) printf "%svCPU %d: %d", (i > 1 ? ", " : ""), i - 1, y[i] - x[i] }'
}
# cumulative "some" CPU stall of the machine (PSI), microseconds; 0 where the kernel has none
psi_cpu() { sed -n 's/^some .*total=\([0-9]*\)/\1/p' /proc/pressure/cpu 2>/dev/null || echo 0; }

start_load() { # start_load LOAD: the probe: back-to-back one-second pgbench runs, each logged
    local rate=""
    rm -f "$D/stop_probe" "$D"/lat.*
    [ "$1" = idle ] && return 0
    [ "$1" = half ] && rate="-R $HALF_TPS"
    (i=0; while [ ! -f "$D/stop_probe" ]; do
        pg_pinned "$PG_BIN/pgbench" -n -c 2 -j 2 -T 1 $rate -f "$D/pk_select.sql" --log \
            --log-prefix="$D/lat.$i" >/dev/null 2>&1 || true
        i=$((i + 1)); done) &
    PROBE=$!
}
# blocks PostgreSQL read from the kernel (page cache or disk), all databases (stats flush at
# each one-second probe run's end)
blocks_read() { q "SELECT sum(blks_read) FROM pg_stat_database" 2>/dev/null || echo 0; }
stop_load() { touch "$D/stop_probe"; [ -z "${PROBE:-}" ] || wait "$PROBE" 2>/dev/null || true; PROBE=""; }

restart_in_cgroup() {
    stop_pg
    cgroup_destroy
    cgroup_create "pgdirect-polite-$$" $((LIMIT_MB * 1024 * 1024)) || { echo "polite.sh: $CG_WHY" >&2; exit 1; }
    sync; echo 3 >/proc/sys/vm/drop_caches
    cgroup_exec "${PIN[@]}" runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$D/data" -o "-p $PORT" -l "$D/server.log" -w start >/dev/null
    q "SELECT pg_prewarm('pgbench_accounts', 'read', 'main', 0, $HOT_BLOCKS - 1)" >/dev/null
    q "SELECT pg_prewarm('pgbench_accounts_pkey', 'read', 'main', 0, $HOT_INDEX_BLOCKS - 1)" >/dev/null
}

# ---- the half load's rate: half of what 2 clients do flat out here ----
restart_in_cgroup
SAT_TPS=$(pg_pinned "$PG_BIN/pgbench" -n -c 2 -j 2 -T 10 -f "$D/pk_select.sql" 2>/dev/null |
    sed -n 's/^tps = \([0-9.]*\).*/\1/p' | head -1)
HALF_TPS=$(printf '%.0f' "$(echo "$SAT_TPS / 2" | bc -l)")
log "2 clients flat out: $SAT_TPS lookups/s; the half load runs at $HALF_TPS/s"

run_trial() { # run_trial LOAD KIND ROUND
    local load=$1 kind=$2 n=$3 dir="$OUT/raw/$1.$2.$3" who cmd tp t0 t1 psi0 psi1 rc=0
    mkdir -p "$dir"
    rm -rf "$D/repo_pgdirect/backups" # (pgBackRest keeps its backups: its backup.info must stay)
    sed -i "/^archive_command/d" "$D/data/postgresql.conf"
    if [ "$kind" = pgbackrest ]; then
        echo "archive_command = '$PGBR archive-push %p'" >>"$D/data/postgresql.conf"
    else
        echo "archive_command = '$PGD wal-push --repo $D/repo_pgdirect %p'" >>"$D/data/postgresql.conf"
    fi
    restart_in_cgroup
    read -r who cmd <<<"$(backup_cmd "$kind")"
    start_load "$load"
    tp=$(date +%s.%N)
    local rd0 rd1 rd2 st0 st1 st2 irq1 irq2
    rd0=$(blocks_read)
    st0=$(cpu_steal)
    if [ "${PERF_SCHED:-0}" != 0 ] && [ "$load" != idle ]; then # the same trace without a backup
        perf record -q -e sched:sched_switch -e sched:sched_waking -a -o "$dir/sched_before.data" \
            -- sleep "$BASELINE" 2>/dev/null
        perf script -i "$dir/sched_before.data" 2>/dev/null |
            python3 "$HERE/tools/sched_delay.py" /dev/stdin >"$dir/sched_before.txt" || true
        rm -f "$dir/sched_before.data"
    else
        sleep "$BASELINE"
    fi
    psi0=$(psi_cpu)
    rd1=$(blocks_read)
    st1=$(cpu_steal)
    irq1=$(disk_irqs)
    local perf_pid=""
    if [ "${PERF_SCHED:-0}" != 0 ]; then
        perf record -q $([ "$PERF_SCHED" = 2 ] && echo -g) -e sched:sched_switch -e sched:sched_waking \
            -a -o "$dir/sched.data" 2>/dev/null &
        perf_pid=$!
    fi
    t0=$(date +%s.%N)
    if [ "$who" = root ]; then
        cgroup_exec env PGHOST="$D" PGPORT="$PORT" PGUSER=postgres \
            timeout "$TRIAL_MAX" /usr/bin/time -f "%e %U %S %M" -o "$D/time" $cmd >"$dir/backup.log" 2>&1 || rc=$?
    else
        cgroup_exec runuser -u postgres -- env PGHOST="$D" PGPORT="$PORT" PGUSER=postgres \
            timeout "$TRIAL_MAX" /usr/bin/time -f "%e %U %S %M" -o "$D/time" $cmd >"$dir/backup.log" 2>&1 || rc=$?
    fi
    mv "$D/time" "$dir/time" 2>/dev/null || true
    t1=$(date +%s.%N)
    psi1=$(psi_cpu)
    rd2=$(blocks_read)
    st2=$(cpu_steal)
    irq2=$(disk_irqs)
    if [ -n "$perf_pid" ]; then
        kill -INT "$perf_pid"; wait "$perf_pid" 2>/dev/null || true
        perf script -i "$dir/sched.data" 2>/dev/null | python3 "$HERE/tools/sched_delay.py" /dev/stdin \
            >"$dir/sched.txt" || true
        [ "$PERF_SCHED" = 2 ] || rm -f "$dir/sched.data"
    fi
    local rest
    rest=$(echo "r = $t0 + $WINDOW - $(date +%s.%N); if (r < 0) r = 0; r" | bc)
    [ "$load" = idle ] || sleep "$rest"
    stop_load
    mv "$D"/lat.* "$dir/" 2>/dev/null || true
    echo "$tp $t0 $t1" >"$dir/times" # the load's start, the backup's start and end (slow_timeline.py)
    local wall cpu nb p50b p99b nd p50d p99d nw p50w p99w psi
    wall=$(echo "$t1 - $t0" | bc)
    cpu=$(awk '{printf "%.2f", $2 + $3}' "$dir/time" 2>/dev/null || echo 0)
    psi=$(echo "scale=3; ($psi1 - $psi0) / 10000 / $wall" | bc) # % of the wall time stalled
    if [ "$load" = idle ]; then
        nb=0 p50b=0 p99b=0 nd=0 p50d=0 p99d=0 nw=0 p50w=0 p99w=0
    else
        read -r nb p50b p99b < <("$BUILD/pgd-latency" "$tp" "$t0" "$dir"/lat.*)
        read -r nd p50d p99d < <("$BUILD/pgd-latency" "$t0" "$t1" "$dir"/lat.*)
        read -r nw p50w p99w < <("$BUILD/pgd-latency" "$t0" "$(echo "$t0 + $WINDOW" | bc)" "$dir"/lat.*)
    fi
    [ "$rc" = 0 ] || { log "trial $load/$kind/$n: the backup exited $rc"; tail -3 "$dir/backup.log" >&2; }
    # load kind round rc wall cpu p50_before p99_before p50_during p99_during queries_during psi%
    #   queries_window p99_window blocks_read/s_before blocks_read/s_during (what PostgreSQL read
    #   from the kernel rather than shared buffers: a query that misses the page cache waits on the disk)
    #   steal%_before steal%_during (the machine's CPU time the hypervisor gave to others: the
    #   host's own work for our I/O competes with our vCPUs there)
    printf '%s %s %s %s %.2f %s %s %s %s %s %s %s %s %s %.0f %.0f %s %s\n' "$load" "$kind" "$n" "$rc" "$wall" \
        "$cpu" "$p50b" "$p99b" "$p50d" "$p99d" "$nd" "$psi" "$nw" "$p99w" \
        "$(echo "($rd1 - $rd0) / ($t0 - $tp)" | bc -l)" "$(echo "($rd2 - $rd1) / $wall" | bc -l)" \
        "$(steal_pct "$st0" "$st1")" "$(steal_pct "$st1" "$st2")" |
        tee -a "$OUT/raw/trials.txt"
    grep -E "politeness|deadline" "$dir/backup.log" >"$dir/notes" || true
    [ -z "$irq1" ] || echo "the disk's completion interrupts during the backup: $(irq_delta "$irq1" "$irq2")" >>"$dir/notes"
}

: >"$OUT/raw/trials.txt"
for n in $(seq 1 "$ROUNDS"); do
    for load in $LOADS; do
        for kind in $KINDS; do
            log "round $n/$ROUNDS, $load load: $kind"
            run_trial "$load" "$kind" "$n"
        done
    done
done
stop_pg
cgroup_destroy

python3 "$HERE/polite_report.py" "$OUT/raw/trials.txt" "$DATA_BYTES" "$SCALE" "$LIMIT_MB" "$SAT_TPS" \
    "$HALF_TPS" "$WINDOW" >"$OUT/report.md"
log "report: $OUT/report.md"
cat "$OUT/report.md"
