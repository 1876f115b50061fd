#!/usr/bin/env bash
# checksums.sh - what verifying data page checksums costs a backup: the same
# pgbench cluster (initdb --data-checksums) backed up into the null
# repository (nothing stored, so reading and checking is all there is),
# with --compression none, alternating verification on and off in one run.
# Prints a Markdown table of medians: wall seconds, MB/s, CPU seconds (user
# + system of the pgdirect process) per GB read, and the difference.
#
#   bash bench/checksums.sh PGDIRECT_BINARY [SCALE] [TRIALS]     (as root)
set -euo pipefail

BIN=${1:?usage: checksums.sh PGDIRECT [SCALE] [TRIALS]}
SCALE=${2:-50}
TRIALS=${3:-5}
PG_BIN=/usr/lib/postgresql/15/bin
[ "$(id -u)" -eq 0 ] || { echo "checksums.sh: run as root (runs postgres as the postgres user)" >&2; exit 1; }

D=$(mktemp -d /tmp/pgdirect-bench.XXXXXX)
chmod 755 "$D"; mkdir -p "$D/bin"; cp "$BIN" "$D/bin/pgdirect"; chown -R postgres:postgres "$D"
PGD="$D/bin/pgdirect"
pg() { runuser -u postgres -- env PGHOST="$D" PGPORT=$PORT PGUSER=postgres PGDATABASE=postgres "$@"; }
cleanup() { [ -f "$D/data/postmaster.pid" ] && pg "$PG_BIN/pg_ctl" -D "$D/data" -m immediate stop >/dev/null 2>&1; rm -rf "$D"; }
trap cleanup EXIT
PORT=$((20000 + RANDOM % 20000))

pg "$PG_BIN/initdb" -D "$D/data" -U postgres -A trust --data-checksums >/dev/null
cat >>"$D/data/postgresql.conf" <<CONF
port = $PORT
listen_addresses = ''
unix_socket_directories = '$D'
CONF
pg "$PG_BIN/pg_ctl" -D "$D/data" -l "$D/log" -w start >/dev/null
echo "# loading pgbench scale $SCALE ..." >&2
pg "$PG_BIN/pgbench" -i -s "$SCALE" -q >/dev/null 2>&1
pg "$PG_BIN/psql" -Atqc CHECKPOINT

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

# run MODE (on|off): appends "wall cpu bytes pages" to $D/r_MODE
run() {
    local extra=() out
    [ "$1" = off ] && extra=(--no-verify-checksums)
    out=$(pg /usr/bin/time -f 'TIME %e %U %S' "$PGD" backup --repo null: --archive-check=off \
        --pgdata "$D/data" --checkpoint fast --compression none "${extra[@]}" 2>&1)
    local t bytes pages
    t=$(sed -n 's/^TIME //p' <<<"$out")
    bytes=$(sed -n 's/.* complete: .*(files read at \([0-9.]*\) MB\/s).*/\1/p' <<<"$out")
    pages=$(sed -n 's/.*page checksums: \([0-9]*\) pages verified.*/\1/p' <<<"$out")
    read -r wall user sys <<<"$t"
    echo "$wall $(echo "$user + $sys" | bc) $bytes ${pages:-0}" >>"$D/r_$1"
}
for i in $(seq 1 "$TRIALS"); do
    echo "# trial $i/$TRIALS" >&2
    if [ $((i % 2)) -eq 1 ]; then run on; run off; else run off; run on; fi
done
GB=$(du -sb --exclude=pg_wal "$D/data" | awk '{print $1 / 1e9}')
echo
echo "pgbench scale $SCALE ($(awk -v g="$GB" 'BEGIN{printf "%.2f", g}') GB of data files), --repo null:, --compression none, $TRIALS trials each, alternating, medians; $(nproc) CPUs; $(date -u +%F)"
echo
echo "| page checksums | wall s | read MB/s (pipeline) | CPU s | CPU s per GB | pages verified |"
echo "|---|---:|---:|---:|---:|---:|"
for m in on off; do
    w=$(awk '{print $1}' "$D/r_$m" | median)
    c=$(awk '{print $2}' "$D/r_$m" | median)
    r=$(awk '{print $3}' "$D/r_$m" | median)
    p=$(awk '{print $4}' "$D/r_$m" | median)
    printf '| %s | %.2f | %.0f | %.2f | %.2f | %s |\n' "$([ $m = on ] && echo verified || echo off)" \
        "$w" "$r" "$c" "$(awk -v c="$c" -v g="$GB" 'BEGIN{print c/g}')" "$p"
    eval "w_$m=$w r_$m=$r c_$m=$c"
done
echo
awk -v a="$r_on" -v b="$r_off" -v ca="$c_on" -v cb="$c_off" -v g="$GB" 'BEGIN {
    printf "throughput with verification: %+.1f %% against without; CPU: %+.2f s per GB\n", (a / b - 1) * 100, (ca - cb) / g }'
