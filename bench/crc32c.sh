#!/usr/bin/env bash
# crc32c.sh - CRC-32C GB/s of the current src/util/crc32c.c against the one
# of an older commit (default: 1aef9bd, the single-stream SSE4.2 loop), same
# measuring loop, same compiler flags, alternating runs in one go.
#
#   bash bench/crc32c.sh [OLD_COMMIT] [ROUNDS]
#
# Buffer sizes: 8 KiB (a page, cache resident), 1 MiB (one read of the
# backup pipeline) and 256 MiB (from memory). Prints a Markdown table of the
# medians and the ratio new/old.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
OLD=${1:-1aef9bd}
ROUNDS=${2:-5}
CC=${CC:-cc}
CFLAGS="-O2 -g -std=gnu11 -pthread -I$ROOT/src"

W=$(mktemp -d /tmp/pgd-crc32c-bench.XXXXXX)
trap 'rm -rf "$W"' EXIT
mkdir -p "$W/old/util"
cp "$ROOT/src/util/crc32c.h" "$W/old/util/crc32c.h"
git -C "$ROOT" show "$OLD:src/util/crc32c.c" >"$W/old/crc32c.c"
# the old file includes "util/crc32c.h": give it its own header of the time
git -C "$ROOT" show "$OLD:src/util/crc32c.h" >"$W/old/util/crc32c.h"
$CC $CFLAGS -I"$W/old" -o "$W/bench_old" "$HERE/tools/pgd_crc32c_bench.c" "$W/old/crc32c.c"
$CC $CFLAGS -o "$W/bench_new" "$HERE/tools/pgd_crc32c_bench.c" "$ROOT/src/util/crc32c.c"

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

echo "CRC-32C, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $ROUNDS rounds, medians (GB/s, 1e9 bytes/s); $(date -u +%F)"
echo
echo "| buffer | $OLD | this tree | ratio | software slice-by-8 |"
echo "|---|---|---|---|---|"
for mib in 0.0078125 1 256; do
    : >"$W/o"; : >"$W/n"; : >"$W/s"
    for _ in $(seq 1 "$ROUNDS"); do
        "$W/bench_old" "$mib" 0.5 | awk '{print $2}' >>"$W/o"
        "$W/bench_new" "$mib" 0.5 | tee >(awk '{print $3}' >>"$W/s") | awk '{print $2}' >>"$W/n"
    done
    o=$(median <"$W/o"); n=$(median <"$W/n"); s=$(median <"$W/s")
    label=$(awk -v m="$mib" 'BEGIN{ if (m < 1) printf "%g KiB", m*1024; else printf "%g MiB", m }')
    printf '| %s | %.2f | %.2f | %.2fx | %.2f |\n' "$label" "$o" "$n" "$(echo "$n / $o" | bc -l)" "$s"
done
