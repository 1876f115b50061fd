#!/usr/bin/env bash
# read_cost.sh - "the read is the only cost": an lz4 backup against a plain
# O_DIRECT read pass over the same files, and CPU seconds per GB against
# pgBackRest, this build and an older one side by side in one run.
#
# One pgbench cluster (scale SCALE, default 100, plus a ~500 MB table at
# scale 200 as in the issue's measurement); trials alternate, page cache
# dropped before each step:
#   read      bench/tools/pgd_dio_read.c: the backup's file list (same walk),
#             each file read once with O_DIRECT, 1 MiB reads, 2 threads, into
#             4 KiB pages (read) and into 2 MiB pages (read_huge, as the
#             backup's readers do since 198734b): the faster is the yardstick
#   pgdirect_none  backup --compression none: the read path without lz4
#   pgdirect  backup --compression lz4 (this build), then OLD_BIN's
#   pgbackrest  backup, lz4, process-max 2
#   restore   pgdirect restore vs pgbackrest restore of those backups, each
#             followed by sync
# Wall and CPU seconds (user+sys, children included) from /usr/bin/time.
# With --read-limit MBPS, every timed step (the read passes, the backups and
# restores; not the --polite, checksum or perf runs) runs in a blkio cgroup
# (v1) that throttles reads from the data directory's disk to about MBPS MB/s:
# the device is then the limit, as a cloud volume's is, instead of two vCPUs
# against a disk the host serves at several GB/s. Writes are not limited.
# With --polite, then goal 4's question: query p99 (pgbench -S at a fixed
# rate, 2 clients, page cache warm) with no backup, and during a backup with
# each set of options in POLITE_MODES (default: best-effort I/O at the
# normal nice value, the idle I/O class, idle I/O and nice 10; not
# --cpu-weight, which the postgres user running the backup here may not
# use), POLITE_REPEAT backups back to back per window, each mode TRIALS
# times, backup wall time (per backup) next to it.
# Then the frame-checksum cost alone (bench/compress_checksum.sh on the
# largest relation file), and with --perf FILE a `perf record -g` of one
# lz4 backup of this build, its top symbols written to FILE.top.txt.
#
#   bash bench/read_cost.sh [--scale N] [--trials N] [--old-bin PGDIRECT] [--perf FILE]
#                           [--polite] [--rate TPS] [--read-limit MBPS] [--out DIR]
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
. "$HERE/lib.sh"
SCALE=100
TRIALS=3
OLD_BIN=""
PERF_OUT=""
OUT=""
POLITE=0
RATE=100
READ_LIMIT=""
POLITE_REPEAT=${POLITE_REPEAT:-3}
# each mode spelled out in full, so the comparison does not move when the defaults do
POLITE_MODES=${POLITE_MODES:-"none|--io-class best-effort --nice 0|--io-class idle --nice 0|--io-class idle --nice 10"}
while [ $# -gt 0 ]; do
    case $1 in
    --scale) SCALE=$2; shift ;;
    --trials) TRIALS=$2; shift ;;
    --old-bin) OLD_BIN=$2; shift ;;
    --perf) PERF_OUT=$2; shift ;;
    --polite) POLITE=1 ;;
    --rate) RATE=$2; shift ;;
    --read-limit) READ_LIMIT=$2; shift ;;
    --out) OUT=$2; shift ;;
    *) echo "read_cost.sh: unknown argument \"$1\"" >&2; exit 2 ;;
    esac
    shift
done
PG_BIN=/usr/lib/postgresql/15/bin
BUILD=${BUILD:-$ROOT/build}
bench_require read_cost.sh "drop_caches, servers as postgres" pgdirect -- pgbackrest bc /usr/bin/time

STAMP=$(date -u +%Y-%m-%dT%H%M%SZ)
OUT=${OUT:-$ROOT/bench/results/$STAMP-read-cost}
mkdir -p "$OUT/raw"
D=$(mktemp -d /tmp/pgdirect-readcost.XXXXXX)
chmod 755 "$D"
mkdir -p "$D/bin"
cp "$BUILD/pgdirect" "$D/bin/pgdirect"
[ -z "$OLD_BIN" ] || cp "$OLD_BIN" "$D/bin/pgdirect_old"
cc -O2 -std=gnu11 -pthread -I"$ROOT/src" -o "$D/bin/dio_read" "$HERE/tools/pgd_dio_read.c" \
    "$ROOT/src/pg/datadir.c" "$ROOT/src/util/log.c" "$ROOT/src/util/error.c" "$ROOT/src/util/big_buffer.c"
chown -R postgres:postgres "$D"
PORT=$((20000 + RANDOM % 20000))
CG=""
cleanup() {
    stop_pg
    rm -rf "$D"
    [ -z "$CG" ] || rmdir "$CG" || echo "read_cost.sh: could not remove cgroup $CG" >&2
}
trap cleanup EXIT
if [ -n "$READ_LIMIT" ]; then
    case $READ_LIMIT in [1-9] | [1-9]*[0-9]) ;; *) READ_LIMIT=x ;; esac
    case $READ_LIMIT in *[!0-9]*) echo "read_cost.sh: --read-limit takes MB/s, a whole number from 1" >&2; exit 2 ;; esac
    [ -d /sys/fs/cgroup/blkio ] || { echo "read_cost.sh: --read-limit needs the cgroup v1 blkio controller (/sys/fs/cgroup/blkio)" >&2; exit 1; }
    # the disk under the data directory (a partition's own disk: blk-throttle holds whole disks)
    dev=$(stat -c '%Hd:%Ld' "$D")
    [ -e "/sys/dev/block/$dev" ] ||
        { echo "read_cost.sh: --read-limit: $D is on no block device ($dev: tmpfs, overlay, btrfs?)" >&2; exit 1; }
    [ -f "/sys/dev/block/$dev/partition" ] && dev=$(cat "/sys/dev/block/$dev/../dev")
    CG=/sys/fs/cgroup/blkio/pgdirect-readcost-$$
    mkdir "$CG"
    echo "$dev $((READ_LIMIT * 1000000))" >"$CG/blkio.throttle.read_bps_device"
fi
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
col() { awk -v c="$2" '{print $c}' "$OUT/raw/$1" | median; }
cpu() { awk '{print $2 + $3}' "$OUT/raw/$1" | median; }

log "cluster: pgbench scale $SCALE and a table of $((SCALE * 12500)) rows"
pg "$PG_BIN/initdb" -D "$D/data" -U postgres -A trust >/dev/null
bench_server_conf "$D/bin/pgdirect wal-push --repo $D/repo_pgdirect %p"
pg "$PG_BIN/pg_ctl" -D "$D/data" -l "$D/server.log" -w start >/dev/null
pg "$PG_BIN/pgbench" -i -s "$SCALE" -q >/dev/null 2>&1
q "CREATE TABLE extra AS SELECT g AS id, repeat('x', 300) AS pad FROM generate_series(1, $((SCALE * 12500))) g"
q "VACUUM (FREEZE, ANALYZE)"
q "CHECKPOINT"
BYTES=$(du -sb --exclude=pg_wal "$D/data" | cut -f1)
GB=$(echo "$BYTES / 1000000000" | bc -l)

bench_pgbackrest_conf
pg $PGBR stanza-create >/dev/null
archive_to() { # archive_to pgdirect|pgbackrest
    local cmd="$D/bin/pgdirect wal-push --repo $D/repo_pgdirect %p"
    [ "$1" = pgbackrest ] && cmd="$PGBR archive-push %p"
    sed -i "/^archive_command/d" "$D/data/postgresql.conf"
    echo "archive_command = '$cmd'" >>"$D/data/postgresql.conf"
    q "SELECT pg_reload_conf()" >/dev/null
}
timed() { # timed NAME CMD...: appends "wall user sys maxrss_kib" to raw/NAME; a failure ends the run
    local name=$1; shift
    drop
    if ! (
        # without the limit the step would measure something else: it does not run
        { [ -z "$CG" ] || echo "$BASHPID" >"$CG/cgroup.procs"; } ||
            { echo "read_cost.sh: could not move step $name into cgroup $CG" >&2; exit 1; }
        pg /usr/bin/time -f '%e %U %S %M' -o "$D/time.$name" "$@" >>"$OUT/raw/$name.log" 2>&1
    ); then
        echo "read_cost.sh: $name failed:" >&2; tail -5 "$OUT/raw/$name.log" >&2; exit 1
    fi
    cat "$D/time.$name" >>"$OUT/raw/$name"
}

for t in $(seq 1 "$TRIALS"); do
    log "trial $t/$TRIALS"
    timed read "$D/bin/dio_read" "$D/data" 2 small
    timed read_huge "$D/bin/dio_read" "$D/data" 2 huge
    archive_to pgdirect
    rm -rf "$D/repo_pgdirect/backups"
    timed pgdirect_none "$D/bin/pgdirect" backup --repo "$D/repo_pgdirect" --pgdata "$D/data" --checkpoint fast --compression none
    rm -rf "$D/repo_pgdirect/backups"
    timed pgdirect "$D/bin/pgdirect" backup --repo "$D/repo_pgdirect" --pgdata "$D/data" --checkpoint fast --compression lz4
    if [ -n "$OLD_BIN" ]; then
        rm -rf "$D/repo_pgdirect/backups"
        timed pgdirect_old "$D/bin/pgdirect_old" backup --repo "$D/repo_pgdirect" --pgdata "$D/data" --checkpoint fast --compression lz4
    fi
    archive_to pgbackrest
    timed pgbackrest $PGBR --type=full backup
    pg $PGBR expire --repo1-retention-full=1 >/dev/null 2>&1 || true
    archive_to pgdirect
    rm -rf "$D/r_pgd" "$D/r_pgbr"
    timed restore_pgdirect sh -c "'$D/bin/pgdirect' restore LATEST --repo '$D/repo_pgdirect' --target-dir '$D/r_pgd' && sync"
    mkdir -p "$D/r_pgbr"; chown postgres "$D/r_pgbr"; chmod 700 "$D/r_pgbr"
    timed restore_pgbackrest sh -c "$PGBR --pg1-path='$D/r_pgbr' restore && sync"
    rm -rf "$D/r_pgd" "$D/r_pgbr"
done

# goal 4: query p99 during a backup, per set of politeness options. pgbench -S at a fixed rate
# (latency, not throughput, is the question), page cache warm (the backup's O_DIRECT reads do
# not evict it; what it takes from queries is CPU and disk time), the latency of the
# transactions that ended while the backup ran (the same length of time for "none").
if [ "$POLITE" = 1 ]; then
    cp "$BUILD/pgd-latency" "$D/bin/pgd-latency"
    pg "$PG_BIN/pgbench" -S -c 2 -j 2 -T 10 >/dev/null 2>&1 # warm
    # each window holds POLITE_REPEAT backups back to back (enough queries for a p99); the window
    # without a backup lasts as long as that took with default options in the trials above, and
    # every pgbench run outlasts its window (twice that, plus 10 s)
    none_s=$(printf "%.0f" "$(echo "$(col pgdirect 1) * $POLITE_REPEAT" | bc -l)")
    [ "$none_s" -ge 10 ] || none_s=10
    dur=$((none_s * 2 + 10))
    for t in $(seq 1 "$TRIALS"); do
        IFS='|' read -ra modes <<<"$POLITE_MODES"
        for m in "${modes[@]}"; do
            key=$(echo "$m" | tr -c 'a-z0-9\n' '_')
            log "polite trial $t/$TRIALS: $m"
            rm -rf "$D/repo_pgdirect/backups" "$D/lat"; mkdir -p "$D/lat"; chown postgres "$D/lat"
            (cd "$D/lat" && pg "$PG_BIN/pgbench" -S -c 2 -j 2 -R "$RATE" -T "$dur" -l --log-prefix="$D/lat/lat" >/dev/null 2>&1) &
            bpid=$!
            sleep 3 # pgbench connected and at its rate before the window opens
            t0=$(date +%s.%N)
            if [ "$m" = none ]; then
                sleep "$none_s"
            else
                for r in $(seq 1 "$POLITE_REPEAT"); do
                rm -rf "$D/repo_pgdirect/backups"
                pg /usr/bin/time -f '%e %U %S %M' -o "$D/time.polite" "$D/bin/pgdirect" backup --repo "$D/repo_pgdirect" \
                    --pgdata "$D/data" --checkpoint fast --compression lz4 $m >>"$OUT/raw/polite_$key.log" 2>&1 ||
                    { echo "read_cost.sh: backup with \"$m\" failed" >&2; tail -5 "$OUT/raw/polite_$key.log" >&2; exit 1; }
                cat "$D/time.polite" >>"$OUT/raw/polite_$key"
                done
            fi
            t1=$(date +%s.%N)
            wait "$bpid" || true
            # a window pgbench did not cover to its end would leave out the slowest queries
            [ "$(echo "$t1 < $t0 - 3 + $dur" | bc)" = 1 ] ||
                echo "read_cost.sh: the backup with \"$m\" outlasted pgbench (${dur}s): its p99 is partial" >&2
            echo "$m|$("$D/bin/pgd-latency" "$t0" "$t1" "$D"/lat/lat.*)" >>"$OUT/raw/polite_lat"
        done
    done
fi

largest=$(find "$D/data/base" -type f -printf '%s %p\n' | sort -n | tail -1 | cut -d' ' -f2)
bash "$HERE/compress_checksum.sh" --rounds 3 "$largest" >"$OUT/compress_checksum.md"

if [ -n "$PERF_OUT" ]; then
    log "perf record -g of one lz4 backup"
    rm -rf "$D/repo_pgdirect/backups"
    drop
    perf record -g -o "$PERF_OUT" -- runuser -u postgres -- env PGHOST="$D" PGPORT="$PORT" \
        "$D/bin/pgdirect" backup --repo "$D/repo_pgdirect" --pgdata "$D/data" --checkpoint fast \
        --compression lz4 >"$OUT/raw/perf_backup.log" 2>&1
    perf report -i "$PERF_OUT" --no-children -g none --sort dso,symbol --percent-limit 0.5 --stdio 2>/dev/null |
        grep -v '^$' | grep -v '^#' | grep '%' | head -40 >"$PERF_OUT.top.txt" || true
fi

{
    echo "read_cost.sh: pgbench scale $SCALE + extra table, $(printf '%.2f' "$GB") GB without pg_wal; $TRIALS trials, medians, caches dropped before each step; $(date -u +%F)"
    [ -z "$READ_LIMIT" ] || echo "The read passes, backups and restores read their disk ($dev) through a blkio cgroup that throttles reads to about $READ_LIMIT MB/s (writes are not limited)."
    echo
    echo "| step | wall s | x faster O_DIRECT read | CPU s | CPU s per GB | CPU x pgBackRest |"
    echo "|---|---|---|---|---|---|"
    # the yardstick is the faster read pass
    read_s=$(col read 1); pgbr_cpu=$(cpu pgbackrest)
    if [ -f "$OUT/raw/read_huge" ] && [ "$(echo "$(col read_huge 1) < $read_s" | bc)" = 1 ]; then
        read_s=$(col read_huge 1)
    fi
    for k in read read_huge pgdirect_none pgdirect pgdirect_old pgbackrest; do
        [ -f "$OUT/raw/$k" ] || continue
        name=$k
        case $k in
        read) name="O_DIRECT read pass, 2 threads, 4 KiB pages" ;;
        read_huge) name="O_DIRECT read pass, 2 threads, 2 MiB pages" ;;
        pgdirect_none) name="pgdirect backup, no compression (this build)" ;;
        pgdirect) name="pgdirect backup lz4 (this build)" ;;
        pgdirect_old) name="pgdirect backup lz4 (old binary)" ;;
        pgbackrest) name="pgBackRest backup lz4, process-max 2" ;;
        esac
        w=$(col "$k" 1); c=$(cpu "$k")
        printf '| %s | %.2f | %.2f | %.2f | %.2f | %.2f |\n' "$name" "$w" "$(echo "$w / $read_s" | bc -l)" \
            "$c" "$(echo "$c / $GB" | bc -l)" "$(echo "$c / $pgbr_cpu" | bc -l)"
    done
    for k in restore_pgdirect restore_pgbackrest; do
        [ -f "$OUT/raw/$k" ] || continue
        printf '| %s | %.2f | | %.2f | | |\n' "${k/_/ + sync, }" "$(col "$k" 1)" "$(cpu "$k")"
    done
    echo
    cat "$OUT/compress_checksum.md"
    if [ -f "$OUT/raw/polite_lat" ]; then
        echo
        echo "Query latency (pgbench -S, 2 clients, $RATE tps) while a backup runs; medians of $TRIALS trials"
        echo
        echo "| backup options | transactions | p50 ms | p99 ms | backup wall s | backup CPU s |"
        echo "|---|---|---|---|---|---|"
        IFS='|' read -ra modes <<<"$POLITE_MODES"
        for m in "${modes[@]}"; do
            key=$(echo "$m" | tr -c 'a-z0-9\n' '_')
            lat=$(awk -F'|' -v m="$m" '$1 == m {print $2}' "$OUT/raw/polite_lat")
            n=$(echo "$lat" | awk '{print $1}' | median); p50=$(echo "$lat" | awk '{print $2}' | median)
            p99=$(echo "$lat" | awk '{print $3}' | median)
            if [ -f "$OUT/raw/polite_$key" ]; then w=$(col "polite_$key" 1); c=$(cpu "polite_$key"); else w=0; c=0; fi
            printf '| %s | %.0f | %.2f | %.2f | %.2f | %.2f |\n' "$m" "$n" "$(echo "$p50 / 1000" | bc -l)" \
                "$(echo "$p99 / 1000" | bc -l)" "$w" "$c"
        done
    fi
} | tee "$OUT/report.md"
