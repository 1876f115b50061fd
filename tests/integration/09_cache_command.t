#!/usr/bin/env bash
# pgdirect cache against known states: a relation just read with
# pg_prewarm(..., 'read') is 100 % in the OS cache; after POSIX_FADV_DONTNEED
# it is 0 %; after pg_prewarm(..., 'buffer') its pages show in shared_buffers.
# Also: --watch CSV, filters, and what a non-superuser is told.
. "$(dirname "$0")/lib.sh"
setup_tmp
require_pagecache
pg_init "$T/data"
pg_start "$T/data"
q "CREATE EXTENSION pg_prewarm"
q "CREATE TABLE probe (id int, pad text) WITH (autovacuum_enabled = off)"
q "INSERT INTO probe SELECT g, repeat('p', 300) FROM generate_series(1, 30000) g"
q "VACUUM (FREEZE) probe"
q "CHECKPOINT"
file="$T/data/$(q "SELECT pg_relation_filepath('probe')")"

field() { # field JSON_TEXT KEY: from the first relation row
    python3 -c "import json,sys; r=json.loads(sys.argv[1])['relations']; print(r[0]['$2'] if r else 'none')" "$1"
}
report() { pgd cache --database postgres --relation probe --json; }

out=$(pgd cache --database postgres --relation probe 2>&1)
ok $? "cache runs"
like "$out" "pg_buffercache is not installed in database \"postgres\"" "it says when pg_buffercache is missing"
q "CREATE EXTENSION pg_buffercache"

sync; "$PC" evict "$file"
# (the kernel occasionally drops a few hundred KB of a just-read file on this
# machine for reasons outside the test; read again, up to three times)
for attempt in 1 2 3; do
    q "SELECT pg_prewarm('probe', 'read')" >/dev/null
    json=$(report)
    size=$(field "$json" size)
    [ "$(field "$json" os_cache)" = "$size" ] && break
    diag "attempt $attempt: $(field "$json" os_cache) of $size bytes cached"
done
cmp_ok "$size" ">" 8000000 "probe is about 10 MB ($size bytes)"
is "$(field "$json" os_cache)" "$size" "after pg_prewarm read: 100 % in the OS page cache"
is "$(python3 -c "import json,sys; print(sorted(set((r['relation'], r['fork']) for r in json.loads(sys.argv[1])['relations'])))" "$json")" \
   "[('public.probe', 'fsm'), ('public.probe', 'main'), ('public.probe', 'vm')]" \
   "--relation probe reports probe's three forks and nothing else"

"$PC" evict "$file"
json=$(report)
is "$(field "$json" os_cache)" "0" "after POSIX_FADV_DONTNEED: 0 % in the OS page cache"
q "SELECT pg_prewarm('probe', 'buffer')" >/dev/null
json=$(report)
is "$(field "$json" shared_buffers)" "$size" "after pg_prewarm buffer: every page in shared_buffers"
is "$(field "$json" disk_only)" "0" "and no page is only on disk"

table=$(pgd cache --database postgres --top 3)
like "$table" "public.probe +table +main" "the human table lists probe"
like "$table" "TOTAL" "with totals"
is "$(echo "$table" | grep -c 'pg_catalog')" "$(echo "$table" | head -4 | grep -c pg_catalog)" "--top 3 shows at most 3 rows"

csv=$(pgd cache --database postgres --watch 0.2 --count 3)
ok $? "--watch runs"
is "$(echo "$csv" | wc -l)" "4" "--watch --count 3 prints a header and 3 samples"
is "$(echo "$csv" | head -1)" "epoch,size,shared_buffers,os_cache,disk_only,evicted_pages,mem_free,cached,dirty,cgroup_cache" \
   "--watch CSV header"
is "$(echo "$csv" | tail -1 | awk -F, '{print NF}')" "10" "each sample has 10 fields"

# relations outside base/: in a tablespace, in a database whose default tablespace it is, and
# the shared and mapped catalogs; each found at its file (its size is the server's)
mkdir -p "$T/ts" && chown postgres:postgres "$T/ts"
q "CREATE TABLESPACE ts LOCATION '$T/ts'"
q "CREATE TABLE in_ts (id int) TABLESPACE ts"
q "INSERT INTO in_ts SELECT generate_series(1, 5000)"
q "CREATE DATABASE tsdb TABLESPACE ts"
PGPORT=$PGPORT as_pg "$PG_BIN/psql" -X -Atq -v ON_ERROR_STOP=1 -d tsdb \
    -c "CREATE TABLE in_tsdb (id int)" -c "INSERT INTO in_tsdb SELECT generate_series(1, 7000)" ||
    bail "could not create in_tsdb"
main_field() { # main_field JSON RELATION FIELD: FIELD of the relation's main fork, as a list
    python3 -c "import json,sys; print([r[sys.argv[3]] for r in json.loads(sys.argv[1])['relations'] if r['relation'] == sys.argv[2] and r['fork'] == 'main'])" "$1" "$2" "$3"
}
main_size() { main_field "$1" "$2" size; }
json=$(pgd cache --database postgres --json)
is "$(main_size "$json" public.in_ts)" "[$(q "SELECT pg_relation_size('in_ts')")]" \
   "a table in a tablespace: its size from its file under pg_tblspc"
is "$(main_size "$json" pg_catalog.pg_class)" "[$(q "SELECT pg_relation_size('pg_class')")]" \
   "a mapped catalog (pg_class): its size from its file"
is "$(main_size "$json" pg_catalog.pg_database)" "[$(q "SELECT pg_relation_size('pg_database')")]" \
   "a shared catalog (pg_database): its size from its file under global/"
json=$(pgd cache --database tsdb --relation 'in_tsdb' --json)
is "$(main_size "$json" public.in_tsdb)" \
   "[$(PGPORT=$PGPORT as_pg "$PG_BIN/psql" -X -Atq -d tsdb -c "SELECT pg_relation_size('in_tsdb')")]" \
   "a table of a database whose default tablespace is another: its size from its file"
cmp_ok "$(q "SELECT pg_relation_size('in_ts')")" ">" 0 "(the table in the tablespace is not empty)"
# their buffers, matched on tablespace and relfilenode (a relfilenode is unique only within
# one tablespace): each relation's pages, after pg_prewarm into shared_buffers
q "SELECT pg_prewarm('in_ts', 'buffer'), pg_prewarm('pg_database', 'buffer'), pg_prewarm('pg_class', 'buffer')" >/dev/null
json=$(pgd cache --database postgres --json)
for rel in public.in_ts pg_catalog.pg_class pg_catalog.pg_database; do
    is "$(main_field "$json" "$rel" shared_buffers)" "$(main_size "$json" "$rel")" \
       "$rel: every page in shared_buffers after pg_prewarm buffer"
done
PGPORT=$PGPORT as_pg "$PG_BIN/psql" -X -Atq -v ON_ERROR_STOP=1 -d tsdb -c "CREATE EXTENSION pg_buffercache" \
    -c "CREATE EXTENSION pg_prewarm" -c "SELECT pg_prewarm('in_tsdb', 'buffer')" >/dev/null ||
    bail "could not prewarm in_tsdb"
json=$(pgd cache --database tsdb --relation 'in_tsdb' --json)
is "$(main_field "$json" public.in_tsdb shared_buffers)" "$(main_size "$json" public.in_tsdb)" \
   "a table in its database's default tablespace (reltablespace 0): every page in shared_buffers"

# a role without superuser: told what it could not read
q "CREATE ROLE viewer LOGIN"
out=$(pgd cache --dbname "user=viewer" --database postgres 2>&1)
isnt "$?" "0" "a role that cannot read data_directory fails without --pgdata"
like "$out" "could not read the server's data_directory .*give --pgdata" "and is told to give --pgdata"
out=$(pgd cache --dbname "user=viewer" --database postgres --pgdata "$T/data" --relation probe 2>&1)
ok $? "with --pgdata it runs"
like "$out" "no permission to read pg_buffercache in database \"postgres\"" "and says shared_buffers could not be read"
like "$out" "public.probe" "and still reports the OS page cache"
done_testing
