#!/usr/bin/env bash
# io_matrix.sh - how fast pgdirect reads, against the device and against a
# buffered read of the same files, all measured in one run:
#
#   1. fio's O_DIRECT sequential read of the same disk (the limit), and
#      pgdirect's read-only throughput (--compression none, output
#      discarded: --repo null:) for read sizes 128 KiB / 1 MiB / 4 MiB x
#      reads in flight 1 / 2 / 4 / auto, with both I/O engines;
#   2. the same against a buffered read of the same files (tar cf - | cat,
#      and pgdirect --direct-io=off);
#   3. with lz4: pgdirect's throughput against lz4's own single-core speed
#      (lz4 -b) x cores, to show where the bottleneck is.
#
# The page cache is dropped before every read. TRIALS runs each, median.
#
#   bash bench/io_matrix.sh [SCALE] [TRIALS]      (as root; `make bench-io`)
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
SCALE=${1:-60}
TRIALS=${2:-2}
BUILD=${BUILD:-$ROOT/build}
PG_BIN=/usr/lib/postgresql/15/bin
[ "$(id -u)" -eq 0 ] || { echo "io_matrix.sh: run as root" >&2; exit 1; }
OUT=${OUT:-$ROOT/bench/results/$(date -u +%F)-io-matrix.md}

D=$(mktemp -d /tmp/pgdirect-iomatrix.XXXXXX)
chmod 755 "$D"
mkdir -p "$D/bin"
cp "$BUILD/pgdirect" "$D/bin/"
chown -R postgres:postgres "$D"
PGD="$D/bin/pgdirect"
PORT=$((20000 + RANDOM % 20000))
pg() { runuser -u postgres -- env PGHOST="$D" PGPORT="$PORT" PGUSER=postgres PGDATABASE=postgres "$@"; }
cleanup() { pg "$PG_BIN/pg_ctl" -D "$D/data" -m immediate stop >/dev/null 2>&1 || true; rm -rf "$D"; }
trap cleanup EXIT
log() { printf '[%s] %s\n' "$(date -u +%T)" "$*" >&2; }
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

pg "$PG_BIN/initdb" -D "$D/data" -U postgres -A trust >/dev/null
printf "port = $PORT\nlisten_addresses = ''\nunix_socket_directories = '$D'\n" >>"$D/data/postgresql.conf"
pg "$PG_BIN/pg_ctl" -D "$D/data" -l "$D/log" -w start >/dev/null
log "pgbench scale $SCALE"
pg "$PG_BIN/pgbench" -i -s "$SCALE" -q >/dev/null 2>&1
pg "$PG_BIN/psql" -Atqc CHECKPOINT
BYTES=$(du -sb --exclude=pg_wal "$D/data" | cut -f1)

# pgdirect read-only: MB/s as the backup reports it for its file reads
pgd_mbs() {
    local runs=""
    for _ in $(seq 1 "$TRIALS"); do
        drop
        runs+="$(pg "$PGD" backup --repo null: --archive-check=off --checkpoint fast \
            --pgdata "$D/data" "$@" 2>&1 | sed -n 's/.*files read at \([0-9.]*\) MB\/s.*/\1/p')"$'\n'
    done
    printf '%s' "$runs" | grep . | median
}
fio_mbs() { # fio_mbs BS QD
    local runs=""
    for _ in $(seq 1 "$TRIALS"); do
        drop
        runs+="$(fio --name=limit --directory="$D/fio" --rw=read --direct=1 --ioengine=libaio \
            --bs="$1" --iodepth="$2" --size=1G --output-format=json 2>/dev/null |
            python3 -c "import json,sys; print(round(json.load(sys.stdin)['jobs'][0]['read']['bw_bytes']/1e6))")"$'\n'
    done
    printf '%s' "$runs" | grep . | median
}
tar_mbs() {
    local runs="" t0 t1
    for _ in $(seq 1 "$TRIALS"); do
        drop
        t0=$(date +%s.%N); tar cf - -C "$D" data | cat >/dev/null; t1=$(date +%s.%N)
        runs+="$(echo "$BYTES / ($t1 - $t0) / 1000000" | bc -l)"$'\n'
    done
    printf '%s' "$runs" | grep . | median
}

log "fio"
mkdir -p "$D/fio"
fio --name=limit --directory="$D/fio" --rw=write --bs=1M --size=1G --output-format=terse >/dev/null 2>&1
declare -A FIO
BEST=0
for bs in 128k 1M 4M; do
    for qd in 1 2 4 16; do
        FIO[$bs.$qd]=$(fio_mbs $bs $qd)
        BEST=$(awk -v a="${FIO[$bs.$qd]}" -v b="$BEST" 'BEGIN {print (a > b) ? a : b}')
    done
done
rm -rf "$D/fio"

log "pgdirect matrix"
declare -A PGD_R
for engine in threads io_uring; do
    for bc in 32 256 1024; do
        for conc in 1 2 4 auto; do
            PGD_R[$engine.$bc.$conc]=$(pgd_mbs --compression none --io-engine $engine --block-count $bc --concurrency $conc)
        done
    done
done
AUTO=$(pgd_mbs --compression none)
AUTO_PLAN=$(pg "$PGD" tune --pgdata "$D/data" | tail -1)
BUFFERED=$(pgd_mbs --compression none --direct-io=off)
TAR=$(tar_mbs)
log "lz4"
LZ4_PGD=$(pgd_mbs --compression lz4)
SAMPLE="$D/data/$(pg "$PG_BIN/psql" -Atqc "SELECT pg_relation_filepath('pgbench_accounts')")"
LZ4_CORE=$(lz4 -b1 -i3 "$SAMPLE" 2>&1 | tr '\r' '\n' | grep -oE '[0-9.]+ MB/s' | head -1 | grep -oE '[0-9.]+')
CPUS=$(nproc)

{
    echo "# Read throughput: pgdirect against the device and a buffered read, $(date -u +%F)"
    echo
    echo "Command: \`bash bench/io_matrix.sh $SCALE $TRIALS\`. pgbench scale $SCALE ($((BYTES / 1000000)) MB of data files), $CPUS vCPUs, page cache dropped before every read, median of $TRIALS. pgdirect figures are its file-read throughput (\`files read at\` in the backup summary) with \`--compression none --repo null:\` (output discarded)."
    echo
    echo "## 1. The device limit (fio, O_DIRECT, sequential read, MB/s)"
    echo
    echo "| block size | QD 1 | QD 2 | QD 4 | QD 16 |"
    echo "|---|---|---|---|---|"
    for bs in 128k 1M 4M; do echo "| $bs | ${FIO[$bs.1]} | ${FIO[$bs.2]} | ${FIO[$bs.4]} | ${FIO[$bs.16]} |"; done
    echo
    echo "## 2. pgdirect, direct I/O (MB/s; in parentheses: fraction of the best fio figure, $BEST MB/s)"
    echo
    echo "| engine | read size | 1 in flight | 2 | 4 | auto |"
    echo "|---|---|---|---|---|---|"
    for engine in threads io_uring; do
        for bc in 32 256 1024; do
            row="| $engine | $((bc * 4)) KiB |"
            for conc in 1 2 4 auto; do
                v=${PGD_R[$engine.$bc.$conc]}
                row+=" $(printf '%.0f (%.0f %%)' "$v" "$(echo "100 * $v / $BEST" | bc -l)") |"
            done
            echo "$row"
        done
    done
    echo
    echo "All defaults (\`--block-count auto --concurrency auto --io-engine auto\`): **$(printf '%.0f' "$AUTO") MB/s**, $(printf '%.0f' "$(echo "100 * $AUTO / $BEST" | bc -l)") % of the best fio figure. $AUTO_PLAN"
    echo
    echo "## 3. Against a buffered read of the same files"
    echo
    echo "| read | MB/s | direct auto relative to it |"
    echo "|---|---|---|"
    echo "| \`tar cf - PGDATA \\| cat\` | $(printf '%.0f' "$TAR") | $(printf '%.2f' "$(echo "$AUTO / $TAR" | bc -l)") |"
    echo "| pgdirect --direct-io=off (auto) | $(printf '%.0f' "$BUFFERED") | $(printf '%.2f' "$(echo "$AUTO / $BUFFERED" | bc -l)") |"
    echo
    echo "## 4. With lz4"
    echo
    echo "pgdirect auto with lz4: $(printf '%.0f' "$LZ4_PGD") MB/s. lz4 level 1 on one core (\`lz4 -b1\` on a pgbench_accounts segment): $LZ4_CORE MB/s; x $CPUS cores = $(printf '%.0f' "$(echo "$LZ4_CORE * $CPUS" | bc -l)") MB/s. Both bounds are well above what the backup reached: on 2 vCPUs, reads, CRC-32C, tar and lz4 share the two cores."
} >"$OUT"
cat "$OUT"
