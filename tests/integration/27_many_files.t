#!/usr/bin/env bash
# Many small relation files: a cluster of 5,000 small tables, each with a
# primary key and a TOAST table (four files each: 20,000 relation files in
# one database directory), plus unlogged tables, backs up and restores equal:
# the same file list, the same bytes in every file (md5 of the source against
# the restore), pg_verifybackup agrees, and the restored server has every
# table and its rows. The partitions read with the plain lz4 tool, and carry
# no lz4 content checksum (the per-file and per-partition CRC-32C cover those
# bytes); a partition in the old format (with the checksum) still restores.
# Each reader thread keeps reads in flight across several files, and within
# a low limit on open files (ulimit -n) with 64 reads in flight.
# `pgdirect cache` reports every table, and ends with a note when the OS user
# cannot read PGDATA.
#
# Why 20,000 and not bench/many_files.sh's 100,000 files: creating the tables
# is most of the cost (about a minute per 5,000 on this machine, twice that
# under load), and the suite runs every test; what 100,000 files cost is
# measured by the benchmark, not asserted here. 20,000 in one directory is
# enough to make a per-file rescan of the directory (the old walk) cost
# minutes under ASan.
. "$(dirname "$0")/lib.sh"
setup_tmp
TABLES=5000
UNLOGGED=50
pg_init "$T/data"
pg_start "$T/data"
q "CREATE EXTENSION pg_buffercache"
# in transactions of 250 tables: one WAL flush per batch, not per table
awk -v n=$TABLES -v u=$UNLOGGED 'BEGIN {
    for (i = 1; i <= n; i++) {
        if (i % 250 == 1) print "BEGIN;"
        printf "CREATE TABLE small_%d (id int PRIMARY KEY, v text); INSERT INTO small_%d SELECT g, md5(g::text) FROM generate_series(1, 20) g;\n", i, i
        if (i % 250 == 0 || i == n) print "COMMIT;"
    }
    for (i = 1; i <= u; i++)
        printf "CREATE UNLOGGED TABLE gone_%d (id int PRIMARY KEY); INSERT INTO gone_%d SELECT generate_series(1, 100);\n", i, i
}' >"$T/create.sql"
as_pg "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -f "$T/create.sql" >"$T/create.log" 2>&1 ||
    bail "could not create the tables: $(tail -3 "$T/create.log")"
q "VACUUM gone_1" # an unlogged table with fsm and vm forks too
q "CHECKPOINT"
db=$(q "SELECT oid FROM pg_database WHERE datname = 'postgres'")
files=$(find "$T/data/base/$db" -type f | wc -l)
cmp_ok "$files" ">=" $((TABLES * 4)) "the source database directory has at least $((TABLES * 4)) files ($files)"

# under a low limit on open files (ulimit -n 60), with 64 reads in flight: each reader thread reads
# ahead in fewer files, and the backup succeeds (without that bound: "Too many open files")
out=$( (ulimit -n 60 && pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --concurrency 64 \
        --log-level debug) 2>&1)
ok $? "a backup with --concurrency 64 under ulimit -n 60 succeeds" || diag "$(echo "$out" | tail -5)"
like "$out" "reads were in flight in up to [0-9]+ files? at once" "and says in how many files reads were in flight"

# small partitions: many of them, and one small enough to rewrite below; each reader thread keeps
# reads in flight across several small files, not one at a time
out=$(pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --partition-size 16MiB \
      --log-level debug 2>&1)
ok $? "backup of $files files succeeds"
like "$out" "complete: .* [0-9]+ files" "and says how many files"
like "$out" "reads were in flight in up to ([2-9]|[1-9][0-9]+) files at once in one reader thread" \
    "with reads in flight in several files at once in one reader thread"
id=$(pgd list --repo "$REPO" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])')

# the partitions are plain lz4 frames: the lz4 tool reads them, and they have no content checksum
part=$(ls "$REPO/backups/$id"/part_*.tar.lz4 | head -1)
listed=$(for p in "$REPO/backups/$id"/part_*.tar.lz4; do lz4 -dc "$p" | tar tf -; done | grep -c "^base/$db/[0-9]")
cmp_ok "$listed" ">=" $((TABLES * 4)) "lz4 -dc PART | tar t lists every relation file ($listed)"
flg=$(od -An -tu1 -j4 -N1 "$part" | tr -d ' ')
is "$((flg & 4))" "0" "the partition's lz4 frame has no content checksum (FLG $flg)"
is "$(od -An -tx4 -N4 "$part" | tr -d ' ')" "184d2204" "and is an lz4 frame (magic number)"

# a backup written before partitions dropped the frame checksum still restores: partition 1
# rewritten as the lz4 tool writes by default (with the content checksum, as pgdirect did), its
# size and CRC-32C in the manifest updated to match
old_part="$REPO/backups/$id/part_0001.tar.lz4"
lz4 -dc "$old_part" | lz4 -q -c >"$T/old_format.lz4"
flg=$(od -An -tu1 -j4 -N1 "$T/old_format.lz4" | tr -d ' ')
is "$((flg & 4))" "4" "the rewritten partition has the lz4 content checksum (FLG $flg)"
forge_python - "$REPO/backups/$id/manifest.json" "$T/old_format.lz4" <<'PY' || bail "could not rewrite the manifest"
import json, os, sys
from forge import crc32c
data = open(sys.argv[2], 'rb').read()
m = json.load(open(sys.argv[1]))
part = [p for p in m['partitions'] if p['name'] == 'part_0001.tar.lz4'][0]
part['size'], part['crc32c'] = len(data), '%08x' % crc32c(data)
json.dump(m, open(sys.argv[1] + '.new', 'w'))
os.replace(sys.argv[1] + '.new', sys.argv[1])
PY
cp "$T/old_format.lz4" "$old_part"
chown postgres "$old_part" "$REPO/backups/$id/manifest.json"

# what the source has that a backup keeps: every file under base/ but pg_internal.init and the
# non-init forks of unlogged relations (their relfilenodes: those with an _init fork)
(cd "$T/data" && find base -type f ! -name pg_internal.init | sort) >"$T/src_all"
sed -n 's|^\(base/[0-9]*/[0-9]*\)_init$|\1|p' "$T/src_all" | sort -u >"$T/unlogged"
cmp_ok "$(wc -l <"$T/unlogged")" ">=" $((UNLOGGED * 2)) "the source has the unlogged tables' init forks"
python3 - "$T/src_all" "$T/unlogged" >"$T/src_kept" <<'PY'
import re, sys
unlogged = set(open(sys.argv[2]).read().split())
for line in open(sys.argv[1]):
    path = line.strip()
    m = re.match(r'^(base/\d+/\d+)(_fsm|_vm|_init)?(\.\d+)?$', path)
    if m and m.group(1) in unlogged and m.group(2) != '_init':
        continue
    print(path)
PY
(cd "$T/data" && xargs md5sum <"$T/src_kept") >"$T/src_md5"

pgd restore "$id" --repo "$REPO" --target-dir "$T/restored" >"$T/restore.log" 2>&1
ok $? "restore of $files files succeeds, partition 1 in the old format"
(cd "$T/restored" && find base -type f | sort) >"$T/got_all"
is "$(diff "$T/src_kept" "$T/got_all" | head -5)" "" "the restored base/ has exactly the files the source keeps"
is "$(cd "$T/restored" && md5sum --quiet -c "$T/src_md5" 2>&1 | head -5)" "" \
    "every restored file has the source's bytes"
is "$(grep -c "_init$" "$T/got_all")" "$(wc -l <"$T/unlogged")" "each unlogged relation keeps its init fork"
out=$(as_pg "$PG_BIN/pg_verifybackup" -n "$T/restored" 2>&1)
ok $? "pg_verifybackup accepts the restored directory"
rm -rf "$T/restored"

archive_all "$PGPORT"
port=$(restore_and_start "$id" "$T/started")
ok $? "the restored cluster starts and finishes recovery"
is "$(psql_at "$port" "SELECT count(*) FROM pg_class WHERE relname LIKE 'small\_%' AND relkind = 'r'")" \
    "$TABLES" "it has every table"
is "$(psql_at "$port" "SELECT count(*) || ' ' || sum(id) FROM small_1") $(psql_at "$port" "SELECT count(*) FROM small_$TABLES")" \
    "20 210 20" "with their rows"
is "$(psql_at "$port" "SELECT count(*) FROM gone_1")" "0" "an unlogged table comes back empty"
pg_stop "$T/started"

# the cache report over every relation file
json=$(pgd cache --database postgres --relation 'small_*' --json)
ok $? "cache over $files files runs"
is "$(echo "$json" | python3 -c "import json,sys; print(len({r['relation'] for r in json.load(sys.stdin)['relations'] if r['fork'] == 'main' and r['kind'] == 'table'}))")" \
    "$TABLES" "and reports every table"

# an OS user who cannot read PGDATA is told so, and the report ends (it used to retry the first
# segment of the first relation forever); the timeout only keeps a hang from stalling the suite
out=$(timeout 120 runuser -u nobody -- env ASAN_OPTIONS="$ASAN_OPTIONS" PGHOST="$T" PGPORT="$PGPORT" \
      PGUSER=postgres "$PGD" cache --database postgres --pgdata "$T/data" --relation 'small_1' 2>&1)
is "$?" "0" "cache as an OS user without access to PGDATA finishes"
like "$out" "could not be read: .*run as the postgres OS user or root" "and says why the page cache column is empty"
like "$out" "public.small_1 +table +main" "and still lists the relation"
done_testing
