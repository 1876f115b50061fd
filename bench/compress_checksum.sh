#!/usr/bin/env bash
# compress_checksum.sh - what a frame's own content checksum costs, measured
# with the lz4 and zstd command line tools (the same liblz4/libzstd pgdirect
# links) on real relation files: lz4 -1 with and without its XXH32 content
# checksum, zstd -3 with and without its XXH64 checksum. Input read from the
# page cache (warmed first), output discarded: CPU seconds of compression
# alone, median of ROUNDS runs, alternating.
#
#   bash bench/compress_checksum.sh [--rounds N] FILE...
#   (e.g. the 1 GiB segment of pgbench_accounts: $PGDATA/base/5/16398)
set -euo pipefail

ROUNDS=5
[ "${1:-}" = --rounds ] && { ROUNDS=$2; shift 2; }
[ $# -gt 0 ] || { echo "usage: compress_checksum.sh [--rounds N] FILE..." >&2; exit 2; }
for c in lz4 zstd /usr/bin/time bc; do
    command -v "$c" >/dev/null || { echo "compress_checksum.sh: $c is missing" >&2; exit 1; }
done
BYTES=$(cat "$@" | wc -c)
cat "$@" >/dev/null # warm: this measures CPU, not the disk
W=$(mktemp -d /tmp/pgd-compress-checksum.XXXXXX)
trap 'rm -rf "$W"' EXIT
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
cpu() { # cpu NAME CMD...: user+sys seconds of CMD over the files, appended to W/NAME
    local name=$1; shift
    /usr/bin/time -f '%U %S' -o "$W/t" sh -c 'cat "$@" | '"$*"' >/dev/null' sh "${FILES[@]}"
    awk '{print $1 + $2}' "$W/t" >>"$W/$name"
}
FILES=("$@")
for _ in $(seq 1 "$ROUNDS"); do
    cpu lz4_check lz4 -1 -c
    cpu lz4_nocheck lz4 -1 -c --no-frame-crc
    cpu zstd_check zstd -3 -c -q --check
    cpu zstd_nocheck zstd -3 -c -q --no-check
done
echo "$((BYTES / 1000000)) MB of relation files, $ROUNDS rounds, CPU seconds (user+sys, cat included), medians; $(date -u +%F)"
echo
echo "| codec | with frame checksum | without | saved |"
echo "|---|---|---|---|"
for c in lz4 zstd; do
    a=$(median <"$W/${c}_check"); b=$(median <"$W/${c}_nocheck")
    printf '| %s | %.2f s | %.2f s | %.0f %% |\n' "$c" "$a" "$b" "$(echo "100 * ($a - $b) / $a" | bc -l)"
done
