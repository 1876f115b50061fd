#!/usr/bin/env bash
# demo.sh - pgdirect end to end on a throwaway cluster, narrated:
# archive WAL, back up with direct I/O while pgbench writes, show that the
# page cache was left alone, list, restore, start the restored server and
# compare its data with the source. Cleans up after itself.
#
#   bash scripts/demo.sh PGDIRECT_BINARY PGD_PAGECACHE_BINARY   (as root; `make demo`)
set -euo pipefail

BIN=${1:?usage: demo.sh PGDIRECT PGD_PAGECACHE}
PCBIN=${2:?usage: demo.sh PGDIRECT PGD_PAGECACHE}
PG_BIN=/usr/lib/postgresql/15/bin
SCALE=${DEMO_SCALE:-20}

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
[ "$(id -u)" -eq 0 ] || { echo "demo.sh: run as root (the servers run as postgres)" >&2; exit 1; }

D=$(mktemp -d /tmp/pgdirect-demo.XXXXXX)
chmod 755 "$D"
mkdir -p "$D/bin"
cp "$BIN" "$D/bin/pgdirect"
cp "$PCBIN" "$D/bin/pgd-pagecache"
chown -R postgres:postgres "$D"
PGD="$D/bin/pgdirect"
PC="$D/bin/pgd-pagecache"
REPO="$D/repo"
free_port() { local p; while :; do p=$((20000 + RANDOM % 20000)); (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null || { echo $p; return; }; done; }
PORT=$(free_port)
PORT2=$(free_port)
pg() { runuser -u postgres -- env PGHOST="$D" PGUSER=postgres PGDATABASE=postgres "$@"; }
cleanup() {
    for d in "$D/data" "$D/restored"; do
        [ -f "$d/postmaster.pid" ] && pg "$PG_BIN/pg_ctl" -D "$d" -m immediate stop >/dev/null 2>&1 || true
    done
    rm -rf "$D"
}
trap cleanup EXIT

say "1. A throwaway PostgreSQL 15 cluster in $D/data (port $PORT), WAL archived by pgdirect"
pg "$PG_BIN/initdb" -D "$D/data" -U postgres --data-checksums -A trust >/dev/null
cat >>"$D/data/postgresql.conf" <<CONF
port = $PORT
listen_addresses = ''
unix_socket_directories = '$D'
wal_level = replica
archive_mode = on
archive_command = '$PGD wal-push --repo $REPO %p'
CONF
echo "archive_command = '$PGD wal-push --repo $REPO %p'"
pg "$PG_BIN/pg_ctl" -D "$D/data" -l "$D/data.log" -w start >/dev/null

say "2. pgbench data, scale $SCALE"
pg "$PG_BIN/pgbench" -p "$PORT" -i -s "$SCALE" -q 2>&1 | tail -1
pg "$PG_BIN/psql" -p "$PORT" -Atqc "SELECT 'database size: ' || pg_size_pretty(pg_database_size('postgres'))"

rel_files() { # all segment files of a relation
    local base
    base="$D/data/$(pg "$PG_BIN/psql" -p "$PORT" -Atqc "SELECT pg_relation_filepath('$1')")"
    ls "$base" "$base".[0-9]* 2>/dev/null
}
cache_report() {
    pg env PGPORT="$PORT" "$PGD" cache --database postgres --relation 'pgbench_accounts*' 2>/dev/null |
        grep -E 'RELATION|main|TOTAL' | sed 's/^/   /'
}

say "3. Page cache before the backup (pgdirect cache): pgbench_accounts_pkey hot, pgbench_accounts cold"
pg "$PG_BIN/psql" -p "$PORT" -Atqc "CREATE EXTENSION pg_buffercache; CREATE EXTENSION pg_prewarm"
sync
for f in $(rel_files pgbench_accounts); do "$PC" evict "$f"; done
pg "$PG_BIN/psql" -p "$PORT" -Atqc "SELECT pg_prewarm('pgbench_accounts_pkey', 'read')" >/dev/null
cache_report

say "4. Direct-I/O backup while pgbench writes"
pg "$PG_BIN/pgbench" -p "$PORT" -n -c 2 -j 2 -T 15 >"$D/pgbench.log" 2>&1 &
LOAD=$!
sleep 1
pg env PGPORT="$PORT" "$PGD" backup --repo "$REPO" --pgdata "$D/data" --checkpoint fast --progress on

say "5. Page cache after the backup (pgdirect cache)"
cache_report
echo "   The backup read every byte of both, yet left the cold table out of the cache: what"
echo "   little of it is cached now are the pages pgbench's own UPDATEs read. A buffered backup"
echo "   (tar, pg_basebackup, pgBackRest) would have pulled the whole table in, evicting other data."
wait "$LOAD"
grep -E '^(tps|latency average)' "$D/pgbench.log" | sed 's/^/   pgbench during the backup: /'

say "6. The repository"
pg "$PGD" list --repo "$REPO"

hash_sql="SELECT md5(string_agg(aid || ':' || abalance, ',' ORDER BY aid)) || '/' ||
          (SELECT md5(coalesce(string_agg(tid || ':' || delta || ':' || mtime, ',' ORDER BY tid, bid, aid, delta, mtime), '')) FROM pgbench_history)
          FROM pgbench_accounts"
SOURCE_HASH=$(pg "$PG_BIN/psql" -p "$PORT" -Atqc "$hash_sql")
SEG=$(pg "$PG_BIN/psql" -p "$PORT" -Atqc "SELECT pg_walfile_name(pg_switch_wal())")
until ls "$REPO/wal/${SEG:0:8}/$SEG"* >/dev/null 2>&1; do sleep 0.2; done

say "7. Restore to $D/restored and recover to the end of the archive"
pg "$PGD" restore LATEST --repo "$REPO" --target-dir "$D/restored" --progress on
printf 'port = %s\narchive_mode = off\n' "$PORT2" >>"$D/restored/postgresql.auto.conf"
pg "$PG_BIN/pg_ctl" -D "$D/restored" -l "$D/restored.log" -w start >/dev/null
until [ "$(pg "$PG_BIN/psql" -p "$PORT2" -Atqc 'SELECT pg_is_in_recovery()' 2>/dev/null)" = "f" ]; do sleep 0.3; done
RESTORED_HASH=$(pg "$PG_BIN/psql" -p "$PORT2" -Atqc "$hash_sql")

say "8. Compare"
echo "   source:   $SOURCE_HASH"
echo "   restored: $RESTORED_HASH"
if [ "$SOURCE_HASH" = "$RESTORED_HASH" ]; then
    printf '\n\033[1mOK: the restored cluster holds exactly the data of the source.\033[0m\n'
else
    echo "MISMATCH: the restored data differs from the source" >&2
    exit 1
fi
