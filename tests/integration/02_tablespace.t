#!/usr/bin/env bash
# A cluster with a tablespace: restored in place of a moved location with
# --tablespace-map, the tablespace's table equals the source; a mapping that
# matches no tablespace and a non-empty tablespace destination are refused.
. "$(dirname "$0")/lib.sh"
setup_tmp
pg_init "$T/data"
pg_start "$T/data"
mkdir -p "$T/ts1" && chown postgres:postgres "$T/ts1"

q "CREATE TABLESPACE ts1 LOCATION '$T/ts1'"
q "CREATE TABLE spc_t (id int primary key, v text) TABLESPACE ts1"
q "INSERT INTO spc_t SELECT g, md5(g::text) FROM generate_series(1, 50000) g"
q "CREATE INDEX spc_t_v ON spc_t (v) TABLESPACE ts1"
archive_all "$PGPORT"

pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast >/dev/null 2>"$T/backup.err"
ok $? "backup of a cluster with a tablespace succeeds"
id=$(ls "$REPO/backups" | grep -E '^[0-9]{8}T[0-9]{6}F$' | tail -1)
spc_oid=$(q "SELECT oid FROM pg_tablespace WHERE spcname = 'ts1'")
manifest_spc=$(python3 -c "import json; m=json.load(open('$REPO/backups/$id/manifest.json')); print(m['tablespaces'][0]['oid'], m['tablespaces'][0]['location'])")
is "$manifest_spc" "$spc_oid $T/ts1" "manifest records the tablespace and its location"

q "INSERT INTO spc_t SELECT g, 'after' FROM generate_series(50001, 50100) g"
want=$(q "SELECT count(*), md5(string_agg(id || v, ',' ORDER BY id)) FROM spc_t")
archive_all "$PGPORT"

# the original location is still in use: without a map the restore is refused
out=$(pgd restore "$id" --repo "$REPO" --target-dir "$T/data_nomap" 2>&1)
rc=$?
isnt "$rc" "0" "restore into the live tablespace location is refused"
like "$out" "tablespace directory \"$T/ts1\" is not empty" "the error names the tablespace directory"
ok $([ ! -e "$T/data_nomap" ] && echo 0 || echo 1) "the refused restore left no target directory"

out=$(pgd restore "$id" --repo "$REPO" --target-dir "$T/data_bad" --tablespace-map "/nowhere=$T/x" 2>&1)
isnt "$?" "0" "a --tablespace-map that matches no tablespace is refused"
like "$out" "no tablespace of the backup is at \"/nowhere\"" "the error names the unmatched location"

pgd restore "$id" --repo "$REPO" --target-dir "$T/data_v" --tablespace-map "$T/ts1=$T/ts1_v" >/dev/null 2>&1
ok $? "restore with --tablespace-map succeeds"
out=$(as_pg "$PG_BIN/pg_verifybackup" -n "$T/data_v" 2>&1)
ok $? "pg_verifybackup accepts the restore, tablespace included"
rm -rf "$T/data_v" "$T/ts1_v"

port=$(restore_and_start "$id" "$T/data_map" --tablespace-map "$T/ts1=$T/ts1_new")
ok $? "restore with --tablespace-map starts"
is "$(psql_at "$port" "SELECT count(*), md5(string_agg(id || v, ',' ORDER BY id)) FROM spc_t")" "$want" \
   "table in the mapped tablespace equals the source"
is "$(readlink "$T/data_map/pg_tblspc/$spc_oid")" "$T/ts1_new" "pg_tblspc link points at the new location"
is "$(psql_at "$port" "SELECT pg_tablespace_location($spc_oid)")" "$T/ts1_new" \
   "the server reports the new tablespace location"
is "$(psql_at "$port" "SELECT count(*) FROM spc_t WHERE v = 'after'")" "100" "rows written after the backup were replayed"
pg_stop "$T/data_map"
done_testing
