#!/usr/bin/env bash
# speed_scale.sh - issue 13's measurements in one run, one build, on one
# machine state: read_cost.sh (lz4 backup vs an O_DIRECT read pass vs
# pgBackRest, restores, with --polite the query p99 during backups) then
# many_files.sh (many small relation files: backup vs tar | cat vs
# pgBackRest, restore, `pgdirect cache`), each with a perf profile of one
# backup. Sized by default to finish in about ten minutes on a shared
# 2-core machine.
#
#   bash bench/speed_scale.sh [--scale N] [--tables N] [--trials N] [--out DIR]   (as root; make first)
#
# Output: DIR/report.md (both tables and both profiles' top symbols).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
SCALE=20
TABLES=3000
TRIALS=3
OUT=""
while [ $# -gt 0 ]; do
    case $1 in
    --scale) SCALE=$2; shift ;;
    --tables) TABLES=$2; shift ;;
    --trials) TRIALS=$2; shift ;;
    --out) OUT=$2; shift ;;
    *) echo "speed_scale.sh: unknown argument \"$1\"" >&2; exit 2 ;;
    esac
    shift
done
OUT=${OUT:-$ROOT/bench/results/$(date -u +%Y-%m-%dT%H%M%SZ)-speed-scale}
mkdir -p "$OUT"

bash "$HERE/read_cost.sh" --scale "$SCALE" --trials "$TRIALS" --polite --perf "$OUT/read_cost.perf" \
    --out "$OUT/read_cost"
bash "$HERE/many_files.sh" --tables "$TABLES" --trials "$TRIALS" --perf "$OUT/many_files.perf" \
    --out "$OUT/many_files"
{
    echo "# speed_scale.sh, $(git -C "$ROOT" rev-parse --short HEAD), $(date -u +%FT%TZ), $(nproc) CPUs"
    echo
    cat "$OUT/read_cost/report.md"
    echo
    echo "perf, one lz4 backup (read_cost cluster), symbols >= 0.5 %:"
    echo '```'
    cat "$OUT/read_cost.perf.top.txt"
    echo '```'
    echo
    cat "$OUT/many_files/report.md"
    echo
    echo "perf, one lz4 backup (many_files cluster), symbols >= 1 %:"
    echo '```'
    grep '%' "$OUT/many_files.perf.top.txt" | head -40
    echo '```'
} >"$OUT/report.md"
rm -f "$OUT"/*.perf "$OUT"/*.perf.old
echo "speed_scale.sh: $OUT/report.md"
