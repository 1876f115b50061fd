#!/usr/bin/env bash
# throughput.sh - backup MB/s of pgdirect (lz4 and none) against a plain
# buffered read of the same data directory (`tar cf - PGDATA | cat`), on one
# pgbench cluster, in one run, with the page cache dropped before every trial.
# Prints a Markdown table of medians over TRIALS runs, ratios to tar, and
# pgdirect's peak RSS.
#
#   bash bench/throughput.sh PGDIRECT_BINARY [SCALE] [TRIALS]     (as root)
set -euo pipefail

BIN=${1:?usage: throughput.sh PGDIRECT [SCALE] [TRIALS]}
SCALE=${2:-100}
TRIALS=${3:-3}
PG_BIN=/usr/lib/postgresql/15/bin
[ "$(id -u)" -eq 0 ] || { echo "throughput.sh: run as root (drops caches, runs postgres)" >&2; exit 1; }

D=$(mktemp -d /tmp/pgdirect-bench.XXXXXX)
chmod 755 "$D"; mkdir -p "$D/bin"; cp "$BIN" "$D/bin/pgdirect"; chown -R postgres:postgres "$D"
PGD="$D/bin/pgdirect"
pg() { runuser -u postgres -- env PGHOST="$D" PGPORT=$PORT PGUSER=postgres PGDATABASE=postgres "$@"; }
cleanup() { [ -f "$D/data/postmaster.pid" ] && pg "$PG_BIN/pg_ctl" -D "$D/data" -m immediate stop >/dev/null 2>&1; rm -rf "$D"; }
trap cleanup EXIT
PORT=$((20000 + RANDOM % 20000))

pg "$PG_BIN/initdb" -D "$D/data" -U postgres -A trust >/dev/null
cat >>"$D/data/postgresql.conf" <<CONF
port = $PORT
listen_addresses = ''
unix_socket_directories = '$D'
archive_mode = on
archive_command = '$PGD wal-push --repo $D/repo %p'
CONF
pg "$PG_BIN/pg_ctl" -D "$D/data" -l "$D/log" -w start >/dev/null
echo "# loading pgbench scale $SCALE ..." >&2
pg "$PG_BIN/pgbench" -i -s "$SCALE" -q >/dev/null 2>&1
pg "$PG_BIN/psql" -Atqc CHECKPOINT
BYTES=$(du -sb --exclude=pg_wal "$D/data" | cut -f1)

drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

declare -A times rss
run_tar() { local t0; drop; t0=$(now); tar cf - -C "$D" data | cat >/dev/null; echo "$(now) - $t0" | bc; }
run_pgd() { # run_pgd COMPRESSION -> seconds; records peak RSS
    local t0 out; drop; rm -rf "$D/repo/backups"; t0=$(now)
    out=$(pg "$PGD" backup --repo "$D/repo" --pgdata "$D/data" --checkpoint fast --compression "$1" 2>&1)
    echo "$(now) - $t0" | bc
    echo "$out" | sed -n 's/.*peak RSS \([0-9]*\) MiB.*/\1/p' >>"$D/rss_$1"
}
for i in $(seq 1 "$TRIALS"); do
    echo "# trial $i/$TRIALS" >&2
    run_tar >>"$D/t_tar"
    run_pgd lz4 >>"$D/t_lz4"
    run_pgd none >>"$D/t_none"
done
tar_s=$(median <"$D/t_tar")
echo
echo "pgbench scale $SCALE, $(awk -v b="$BYTES" 'BEGIN{printf "%.0f", b/1e6}') MB of data files, $TRIALS trials, page cache dropped before each, medians; $(date -u +%F)"
echo
echo "| trial | seconds (min-max) | MB/s | speed relative to tar | peak RSS |"
echo "|---|---|---|---|---|"
for k in tar lz4 none; do
    s=$(median <"$D/t_$k"); mn=$(sort -g "$D/t_$k" | head -1); mx=$(sort -g "$D/t_$k" | tail -1)
    r="-"; [ -f "$D/rss_$k" ] && r="$(median <"$D/rss_$k") MiB"
    name=$k; [ $k = tar ] && name='tar cf - PGDATA \| cat'; [ $k != tar ] && name="pgdirect --compression $k"
    printf '| %s | %.2f (%.2f-%.2f) | %.0f | %.2f | %s |\n' "$name" "$s" "$mn" "$mx" \
        "$(echo "$BYTES / $s / 1000000" | bc -l)" "$(echo "$tar_s / $s" | bc -l)" "$r"
done
