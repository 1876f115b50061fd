#!/usr/bin/env bash
# wal_rate.sh - WAL at the rate it is made, against the tests' S3 server on 127.0.0.1 (moto by
# default, as tests/integration/lib_s3.sh starts it; S3_SERVER=s3rver for the other), in one run:
#   1. pgbench at full speed for DURATION seconds, archive_command synchronous, then the same
#      with --archive-async: segments archived per second while it runs, the .ready backlog
#      (largest, at the end) and how long the backlog takes to drain once pgbench stops;
#   2. a backlog of BACKLOG segments made with archiving paused (archive_command = ''), then
#      archived: segments per second, synchronous vs asynchronous;
#   3. recovery of ~WAL_GB of archived WAL: the same backup restored without and with
#      --prefetch (PGDIRECT_PREFETCH in the server's environment), and in the ways below; time
#      from start to the end of recovery, and the ratio (goal: prefetch <= 0.5x). Every
#      recovery must end with the source's rows, or the run fails.
#
#   bash bench/wal_rate.sh [DURATION_S] [WAL_GB] [BACKLOG]    (as root; `make` first)
#   defaults 60 s, 2 GB, 64 segments; small values keep a run short when others test.
#   PARTS=3 runs only part 3 (default 123: all three). DROP_CACHES=0 leaves the page cache alone
#   before each timed step (default 1: dropped, which a shared machine's other users feel).
#   LOG_DIR=DIR keeps the recoveries' server logs (log_line_prefix %m) and prefetch spool logs.
#   FETCH_ENV="VAR=VALUE ..." adds to both recoveries' environment (PGDIRECT_LOG_LEVEL=debug).
#   FLOOR=1 adds a recovery with restore_command = 'cp' from a local copy of the archived
#   segments: a cheap local restore_command (the page cache is dropped before it too, and
#   PostgreSQL fsyncs each file it gives); one with 'mv' from a copy on the same file system,
#   the least any restore_command does (a rename); and one with no restore_command at all: the same
#   segments copied into pg_wal and recovery.signal removed, so that PostgreSQL replays them
#   as crash recovery from the backup's label, with no process per segment (and no hot
#   standby, no new timeline): replay alone.
#   Each recovery also reports the CPU time of the whole machine and of the S3 server, and the
#   startup process's (replay's) time on a CPU, waiting for one, and off CPU (/proc schedstat).
#   S3_NICE=N runs the S3 server at nice N: a stand-in for one on another machine (default: 0).
#   OLD_BIN=PGDIRECT adds a recovery with that build's wal-fetch --prefetch, right after this
#   build's (before it with OLD_FIRST=1): two builds' prefetch side by side on the same WAL,
#   each reading objects it wrote (the archived segments pushed again by that build into a
#   repository of its own, which its recovery's restore_command names).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
DURATION=${1:-60}
WAL_GB=${2:-2}
BACKLOG=${3:-64}
PREFETCH=${PREFETCH:-8}
CONCURRENCY=${CONCURRENCY:-4}
CLIENTS=${CLIENTS:-4}
RESTORE_TIMEOUT=${RESTORE_TIMEOUT:-600}
PARTS=${PARTS:-123}
DROP_CACHES=${DROP_CACHES:-1}
LOG_DIR=${LOG_DIR:-}
FETCH_ENV=${FETCH_ENV:-}
FLOOR=${FLOOR:-0}
OLD_BIN=${OLD_BIN:-}
BUILD=${BUILD:-$ROOT/build}
PG_BIN=/usr/lib/postgresql/15/bin
OUT=${OUT:-$ROOT/bench/results/$(date -u +%F)-wal-rate.md}
SEG=$((16 * 1024 * 1024))
[ "$(id -u)" -eq 0 ] || { echo "wal_rate.sh: run as root" >&2; exit 1; }
[ -x "$BUILD/pgdirect" ] || { echo "wal_rate.sh: build first (make)" >&2; exit 1; }

D=$(mktemp -d /tmp/pgdirect-walrate.XXXXXX)
chmod 755 "$D"; mkdir -p "$D/bin"; cp "$BUILD/pgdirect" "$D/bin/"
[ -z "$OLD_BIN" ] || cp "$OLD_BIN" "$D/bin/pgdirect_old"
chown -R postgres:postgres "$D"
PGD="$D/bin/pgdirect"
PORT=$((20000 + RANDOM % 10000))
# the tests' S3 server (lib_s3.sh wants T, bail and free_port); it exports the AWS_* variables
T=$D
bail() { echo "wal_rate.sh: $*" >&2; exit 1; }
free_port() { echo $((30000 + RANDOM % 10000)); }
# shellcheck source=tests/integration/lib_s3.sh
. "$ROOT/tests/integration/lib_s3.sh"
pg() { runuser -u postgres -- env PGHOST="$D" PGPORT="${P:-$PORT}" PGUSER=postgres PGDATABASE=postgres \
        AWS_ACCESS_KEY_ID="$AWS_ACCESS_KEY_ID" AWS_SECRET_ACCESS_KEY="$AWS_SECRET_ACCESS_KEY" \
        AWS_REGION="$AWS_REGION" AWS_ENDPOINT_URL="$AWS_ENDPOINT_URL" "$@"; }
q() { pg "$PG_BIN/psql" -XAtq -v ON_ERROR_STOP=1 -c "$1"; }
stop_background() { # pushers and prefetchers outlive the commands that start them
    local l
    for l in "$D"/pgdirect-spool/*/lock; do [ -f "$l" ] && kill "$(cat "$l")" 2>/dev/null || true; done
    return 0
}
cleanup() {
    for d in "$D"/data "$D"/r_*; do pg "$PG_BIN/pg_ctl" -D "$d" -m immediate stop >/dev/null 2>&1 || true; done
    stop_background
    s3_stop
    rm -rf "$D"
}
trap cleanup EXIT
s3_start bench
# S3_NICE=N: the S3 server's threads at nice N (those it starts later inherit it). A stand-in for
# a server on another machine, whose CPU would not come out of the two replay runs on.
if [ -n "${S3_NICE:-}" ]; then
    for t in /proc/"$S3_PID"/task/*; do renice -n "$S3_NICE" -p "${t##*/}" >/dev/null; done
fi

now() { date +%s.%N; }
drop_caches() { sync; if [ "$DROP_CACHES" = 1 ]; then echo 3 >/proc/sys/vm/drop_caches; fi; }
part() { case "$PARTS" in *"$1"*) return 0 ;; *) return 1 ;; esac; }
say() { echo "wal_rate: $*" >&2; }
sync_cmd() { echo "$PGD wal-push --repo s3://bench/$1 %p"; }
async_cmd() { echo "$PGD wal-push --archive-async --archive-push-concurrency $CONCURRENCY --repo s3://bench/$1 %p"; }
set_archive_command() {
    q "ALTER SYSTEM SET archive_command = '$1'" >/dev/null
    q "SELECT pg_reload_conf()" >/dev/null
}
ready() { ls "$D/data/pg_wal/archive_status" | grep -c '\.ready$' || true; }
archived_count() { q "SELECT archived_count FROM pg_stat_archiver"; }
lsn_bytes() { q "SELECT pg_current_wal_lsn() - '0/0'"; }
wait_drained() { while [ "$(ready)" -gt 0 ]; do sleep 0.2; done; }
stop_load() { # stop_load PID: end the load's sessions, then wait for pgbench
    q "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'pgbench'" >/dev/null
    wait "$1" 2>/dev/null || true
}
switch_wal() { # a row committed (a statement of its own: psql -c "a; b" is one transaction), then a switch
    q "INSERT INTO pgbench_history SELECT 1, 1, 1, 1, now()" >/dev/null
    q "SELECT pg_switch_wal()" >/dev/null
}

pg "$PG_BIN/initdb" -D "$D/data" -U postgres -A trust >/dev/null
cat >>"$D/data/postgresql.conf" <<CONF
port = $PORT
listen_addresses = ''
unix_socket_directories = '$D'
wal_level = replica
archive_mode = on
archive_command = ''
max_wal_size = 8GB
checkpoint_timeout = 30min
shared_buffers = 256MB
autovacuum = off
# full speed: commits do not wait for their WAL flush, so the WAL rate is what the CPUs make
synchronous_commit = off
CONF
pg "$PG_BIN/pg_ctl" -D "$D/data" -l "$D/log" -w start >/dev/null
pg "$PG_BIN/pgbench" -i -s 20 -q >/dev/null 2>&1
# the load: pgbench's tpcb-like transactions, and as many that insert 500 rows of 64 random hex
# characters (~50 kB of WAL each): tpcb-like alone writes ~0.5 MB/s of WAL here once its
# full-page images are written, too little to find where archiving stops keeping up
q "CREATE TABLE bulk (v text)" >/dev/null
echo "INSERT INTO bulk SELECT md5(random()::text) || md5(random()::text) FROM generate_series(1, 500);" >"$D/bulk.sql"
chown postgres "$D/bulk.sql"
load() { # load SECONDS
    pg "$PG_BIN/pgbench" -n -c "$CLIENTS" -j 2 -b tpcb-like@1 -f "$D/bulk.sql@1" -T "$1"
}

# ---- 1. pgbench at full speed ----
full_speed() { # full_speed MODE PREFIX: "mode seg_made archived_per_s max_ready end_ready drain_s"
    local mode=$1 prefix=$2 a0 a1 l0 l1 t0 t1 t2 max=0 r
    set_archive_command "$($mode "$prefix")"
    switch_wal; wait_drained
    a0=$(archived_count); l0=$(lsn_bytes); t0=$(now)
    load "$DURATION" >/dev/null 2>&1 &
    local bench=$!
    while kill -0 "$bench" 2>/dev/null; do
        r=$(ready); [ "$r" -gt "$max" ] && max=$r
        sleep 1
    done
    wait "$bench" || true
    t1=$(now); a1=$(archived_count); l1=$(lsn_bytes); r=$(ready)
    switch_wal; wait_drained; t2=$(now)
    echo "$mode $(( (l1 - l0) / SEG )) $(echo "($a1 - $a0) / ($t1 - $t0)" | bc -l) $max $r $(echo "$t2 - $t1" | bc -l)"
}
if part 1; then
    say "1. pgbench at full speed for $DURATION s, synchronous then asynchronous archiving"
    F_SYNC=$(full_speed sync_cmd full-sync); say "   $F_SYNC"
    F_ASYNC=$(full_speed async_cmd full-async); say "   $F_ASYNC"
    stop_background
fi

# ---- 2. a backlog archived ----
drain() { # drain MODE PREFIX: "mode segments seconds per_s"
    local mode=$1 prefix=$2 l0 t0 t1 n
    set_archive_command ""
    l0=$(lsn_bytes)
    load 3600 >/dev/null 2>&1 &
    local bench=$!
    while [ $(( ($(lsn_bytes) - l0) / SEG )) -lt "$BACKLOG" ]; do sleep 0.5; done
    stop_load "$bench"
    switch_wal
    n=$(ready)
    drop_caches
    t0=$(now)
    set_archive_command "$($mode "$prefix")"
    wait_drained
    t1=$(now)
    echo "$mode $n $(echo "$t1 - $t0" | bc -l) $(echo "$n / ($t1 - $t0)" | bc -l)"
}
if part 2; then
    say "2. a backlog of $BACKLOG segments archived, synchronous then asynchronous"
    B_SYNC=$(drain sync_cmd drain-sync); say "   $B_SYNC"
    B_ASYNC=$(drain async_cmd drain-async); say "   $B_ASYNC"
    stop_background
fi

# ---- 3. recovery of ~WAL_GB with and without prefetch ----
say "3. $WAL_GB GB of WAL recovered, without then with --prefetch $PREFETCH"
R=s3://bench/recovery
set_archive_command "$(async_cmd recovery)"
pg "$PGD" backup --repo "$R" --pgdata "$D/data" --checkpoint fast >/dev/null 2>&1
l0=$(lsn_bytes)
load 36000 >/dev/null 2>&1 &
bench=$!
target=$(echo "$WAL_GB * 1000000000 / 1" | bc)
while [ $(( $(lsn_bytes) - l0 )) -lt "$target" ]; do sleep 1; done
stop_load "$bench"
switch_wal; wait_drained
WAL_BYTES=$(( $(lsn_bytes) - l0 ))
SRC_ROWS=$(q "SELECT count(*) FROM pgbench_history")/$(q "SELECT count(*) FROM bulk")
stop_background
# CPU time in seconds: the whole machine's (all CPUs, busy, iowait not counted), and one process's
machine_cpu() { awk -v hz="$(getconf CLK_TCK)" '/^cpu /{printf "%.2f\n", ($2 + $3 + $4 + $7 + $8) / hz}' /proc/stat; }
process_cpu() { sed 's/.*) //' "/proc/$1/stat" | awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f\n", ($12 + $13) / hz}'; }
# watch_replay DATADIR: until it exits, the server's startup process (replay) as
# "first-seen last-seen run-ns runqueue-wait-ns" in DATADIR.sched, every 0.2 s (/proc schedstat)
watch_replay() {
    local pm="" sp="" first="" deadline=$((SECONDS + 60)) st
    until [ -n "$sp" ] || [ $SECONDS -ge $deadline ]; do
        pm=$(head -1 "$1/postmaster.pid" 2>/dev/null || true)
        [ -z "$pm" ] || sp=$(pgrep -P "$pm" -f "startup" || true)
        sleep 0.05
    done
    [ -n "$sp" ] || return 0
    while st=$(cat "/proc/$sp/schedstat" 2>/dev/null); do
        first=${first:-$(now)}
        echo "$first $(now) $st" >"$1.sched.tmp" && mv "$1.sched.tmp" "$1.sched"
        sleep 0.2
    done
}
# replay_times DATADIR: "on-CPU waiting-for-a-CPU off-CPU" seconds of its startup process
replay_times() {
    [ -f "$1.sched" ] || { echo "- - -"; return; }
    awk '{life = $2 - $1; run = $3 / 1e9; wait = $4 / 1e9
          printf "%.1f %.1f %.1f\n", run, wait, (life > run + wait ? life - run - wait : 0)}' "$1.sched"
}
# recover LABEL [ENV=VALUE...]: "label seconds rows machine-cpu s3-server-cpu replay-on-cpu
# replay-waiting-for-cpu replay-off-cpu"; RBIN: the build that restores
recover() {
    local label=$1 dir="$D/r_$1" t0 t1 rows m0 m1 s0 s1 watcher replay
    shift
    # a slow test server (moto keeps objects in memory and copies them per ranged GET) needs time
    pg "${RBIN:-$PGD}" restore LATEST --repo "$R" --target-dir "$dir" --s3-timeout "$RESTORE_TIMEOUT" >"$dir.restore.log" 2>&1 ||
        { echo "wal_rate: restore failed: $(tail -1 "$dir.restore.log")" >&2; exit 1; }
    P=$((PORT + 1))
    printf "port = $P\narchive_mode = off\n" >>"$dir/postgresql.auto.conf"
    printf "log_line_prefix = '%%m [%%p] '\n" >>"$dir/postgresql.auto.conf"
    [ -z "${RECOVER_CONF:-}" ] || echo "$RECOVER_CONF" >>"$dir/postgresql.auto.conf"
    if [ -n "${RECOVER_REPO:-}" ]; then # restore_command reads another repository
        sed -i "/^restore_command/s#$R\([^-/a-z0-9]\)#$RECOVER_REPO\1#g" "$dir/postgresql.auto.conf"
        grep -q "^restore_command.*$RECOVER_REPO" "$dir/postgresql.auto.conf" ||
            { echo "wal_rate: no restore_command naming $R to point at $RECOVER_REPO" >&2; exit 1; }
    fi
    # (a function run in $(...): set -e does not hold here, each step is checked)
    if [ -n "${RECOVER_FROM_PG_WAL:-}" ]; then
        { cp "$RECOVER_FROM_PG_WAL"/* "$dir/pg_wal/" && chown postgres:postgres "$dir"/pg_wal/* &&
            rm "$dir/recovery.signal"; } ||
            { echo "wal_rate: could not put the segments into $dir/pg_wal" >&2; exit 1; }
    fi
    drop_caches
    m0=$(machine_cpu) s0=$(process_cpu "$S3_PID")
    t0=$(now)
    watch_replay "$dir" >/dev/null &
    watcher=$!
    # shellcheck disable=SC2086 # FETCH_ENV is a list of assignments
    pg env $FETCH_ENV "$@" "$PG_BIN/pg_ctl" -D "$dir" -l "$dir.log" -w -t 3600 start >/dev/null ||
        { echo "wal_rate: the $label server did not start: $(tail -1 "$dir.log")" >&2; exit 1; }
    # the end of recovery from the server's log: a query every 0.1 s would start a backend each
    # time on the 2 CPUs replay runs on (a hot standby takes read-only connections meanwhile)
    local deadline=$((SECONDS + 3600))
    until grep -q "database system is ready to accept connections" "$dir.log"; do
        [ -f "$dir/postmaster.pid" ] && [ $SECONDS -lt $deadline ] ||
            { echo "wal_rate: the $label server stopped or did not end recovery: $(tail -1 "$dir.log")" >&2; exit 1; }
        sleep 0.1
    done
    t1=$(now)
    m1=$(machine_cpu) s1=$(process_cpu "$S3_PID")
    wait "$watcher" # the startup process exits when recovery ends
    rows=$(P=$P q "SELECT count(*) FROM pgbench_history")/$(P=$P q "SELECT count(*) FROM bulk")
    pg "$PG_BIN/pg_ctl" -D "$dir" -m fast -w stop >/dev/null
    stop_background
    [ "$rows" = "$SRC_ROWS" ] ||
        { echo "wal_rate: the $label recovery ended with rows $rows, the source has $SRC_ROWS" >&2; exit 1; }
    if [ -n "$LOG_DIR" ]; then
        mkdir -p "$LOG_DIR"
        cp "$dir.log" "$LOG_DIR/$label.server.log"
        for l in "$D"/pgdirect-spool/*/log; do [ -f "$l" ] && cp "$l" "$LOG_DIR/$label.spool.$(basename "$(dirname "$l")").log"; done
    fi
    local v
    for v in "$m0" "$m1" "$s0" "$s1"; do
        [[ $v =~ ^[0-9]+(\.[0-9]+)?$ ]] ||
            { echo "wal_rate: the $label recovery's CPU times could not be read (\"$v\")" >&2; exit 1; }
    done
    replay=$(replay_times "$dir")
    rm -rf "$dir" "$dir.sched"
    echo "$label $(echo "$t1 - $t0" | bc -l) $rows $(echo "$m1 - $m0" | bc -l) $(echo "$s1 - $s0" | bc -l) $replay"
}
R_PLAIN=$(recover plain PGDIRECT_PREFETCH=0) || exit 1; say "   $R_PLAIN"
# the archived segments, as PostgreSQL wrote them (.done: archived; the rest may be recycled)
copy_archived() {
    mkdir -p "$1"
    for f in "$D"/data/pg_wal/archive_status/*.done; do
        f=$(basename "$f" .done)
        [ -f "$D/data/pg_wal/$f" ] && cp "$D/data/pg_wal/$f" "$1/"
    done
    chown -R postgres:postgres "$1"
}
if [ -n "$OLD_BIN" ]; then # the old build's own objects
    copy_archived "$D/walold"
    for f in "$D"/walold/*; do
        "$D/bin/pgdirect_old" wal-push --repo "$R-old" "$f" || bail "wal-push of $f with OLD_BIN failed"
    done
    rm -rf "$D/walold"
fi
recover_old() {
    [ -n "$OLD_BIN" ] || return 0
    R_OLD=$(RBIN=$D/bin/pgdirect_old RECOVER_REPO=$R-old recover prefetch-old-build PGDIRECT_PREFETCH="$PREFETCH") || exit 1
    say "   $R_OLD"
}
R_OLD=
# OLD_FIRST=1: the old build's recovery before this build's (to vary the order between runs)
[ "${OLD_FIRST:-0}" = 1 ] && recover_old
R_PREFETCH=$(recover prefetch PGDIRECT_PREFETCH="$PREFETCH") || exit 1; say "   $R_PREFETCH"
[ "${OLD_FIRST:-0}" = 1 ] || recover_old
R_FLOOR=
R_MV=
R_REPLAY=
if [ "$FLOOR" = 1 ]; then
    copy_archived "$D/walcopy"
    R_FLOOR=$(RECOVER_CONF="restore_command = 'cp $D/walcopy/%f %p'" recover local-cp) || exit 1
    say "   $R_FLOOR"
    # the least any restore_command can do: rename a segment already on this file system into
    # place (nothing read, written or checked); what separates it from replay alone is PostgreSQL's
    R_MV=$(cp -a "$D/walcopy" "$D/walmv" &&
        RECOVER_CONF="restore_command = 'mv $D/walmv/%f %p'" recover local-mv) || exit 1
    say "   $R_MV"
    rm -rf "$D/walmv"
    R_REPLAY=$(RECOVER_FROM_PG_WAL=$D/walcopy recover replay-only) || exit 1
    say "   $R_REPLAY"
    rm -rf "$D/walcopy"
fi

{
    echo "# WAL at the rate it is made: archiving and recovery against S3 ($S3_SERVER on 127.0.0.1), $(date -u +%F)"
    echo
    echo "Command: \`PARTS=$PARTS DROP_CACHES=$DROP_CACHES FLOOR=$FLOOR${OLD_BIN:+ OLD_BIN=$OLD_BIN OLD_FIRST=${OLD_FIRST:-0}}${S3_NICE:+ S3_NICE=$S3_NICE}${FETCH_ENV:+ FETCH_ENV=\"$FETCH_ENV\"} bash bench/wal_rate.sh $DURATION $WAL_GB $BACKLOG\` (PREFETCH=$PREFETCH, CONCURRENCY=$CONCURRENCY," \
         "CLIENTS=$CLIENTS). PostgreSQL 15, 16 MiB segments, lz4, synchronous_commit off, pgbench scale 20 with" \
         "tpcb-like and a 500-row insert in equal parts; the S3 server ($S3_SERVER) is one" \
         "process on the same $(nproc)-core machine and disk."
    echo
    if part 1; then
        echo "## 1. pgbench at full speed for $DURATION s"
        echo
        echo "| archive_command | segments made | archived per s (during) | largest .ready backlog | backlog when pgbench stopped | drained after (s) |"
        echo "|---|---|---|---|---|---|"
        for row in "$F_SYNC" "$F_ASYNC"; do
            set -- $row
            printf '| %s | %s | %.2f | %s | %s | %.1f |\n' "${1%_cmd}" "$2" "$3" "$4" "$5" "$6"
        done
        echo
    fi
    if part 2; then
        echo "## 2. a backlog archived (archiving paused, then resumed)"
        echo
        echo "| archive_command | segments | seconds | segments per s | vs sync |"
        echo "|---|---|---|---|---|"
        s_rate=$(echo "$B_SYNC" | awk '{print $4}')
        for row in "$B_SYNC" "$B_ASYNC"; do
            set -- $row
            printf '| %s | %s | %.1f | %.2f | %.2fx |\n' "${1%_cmd}" "$2" "$3" "$4" "$(echo "$4 / $s_rate" | bc -l)"
        done
        echo
    fi
    echo "## 3. recovery of $(echo "$WAL_BYTES / 1000000000" | bc -l | xargs printf '%.2f') GB of archived WAL"
    echo
    echo "| restore_command | seconds to the end of recovery | vs without prefetch | CPU seconds, whole machine ($(nproc) CPUs) | of which the S3 server | replay (startup process): s on a CPU / waiting for one / off CPU | rows of pgbench_history/bulk (source: $SRC_ROWS) |"
    echo "|---|---|---|---|---|---|---|"
    p_sec=$(echo "$R_PLAIN" | awk '{print $2}')
    for row in "$R_PLAIN" "$R_PREFETCH" ${R_OLD:+"$R_OLD"} ${R_FLOOR:+"$R_FLOOR"} ${R_MV:+"$R_MV"} ${R_REPLAY:+"$R_REPLAY"}; do
        set -- $row
        case $1 in
        local-cp) what="cp from a local directory" ;;
        local-mv) what="mv from a local directory (a rename, the least a restore_command does)" ;;
        replay-only) what="none: the segments in pg_wal (replay alone)" ;;
        *) what="wal-fetch ($1)" ;;
        esac
        printf '| %s | %.1f | %.2fx | %.1f | %.1f | %s / %s / %s | %s |\n' "$what" "$2" "$(echo "$2 / $p_sec" | bc -l)" "$4" "$5" "$6" "$7" "$8" "$3"
    done
} >"$OUT"
cat "$OUT"
