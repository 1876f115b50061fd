#!/usr/bin/env bash
# plot.sh - the page-cache-over-time chart of a bench/run.sh results directory.
#   bash bench/plot.sh RESULTS_DIR LIMIT_MB KIND...
set -euo pipefail
OUT=$1 LIMIT_MB=$2
shift 2
plot="set terminal pngcairo size 1100,600; set output '$OUT/cache.png'; set termoption noenhanced;"
plot+="set title 'page cache of the memory cgroup (limit $LIMIT_MB MiB), trial 1 of each';"
plot+="set xlabel 'seconds since the backup started'; set ylabel 'MiB'; set key outside;"
plot+="set datafile separator ','; plot "
sep=""
for kind in "$@"; do
    t0=$(cat "$OUT/raw/$kind.1.t0")
    plot+="$sep'$OUT/raw/$kind.1.cache.csv' every ::1 using (\$1-$t0):(\$10/1048576) with lines lw 2 title '$kind'"
    sep=", "
done
gnuplot -e "$plot"
