#!/usr/bin/env bash
# Restore of delta backups (issue 10): a full backup, then three deltas, each
# taken with pgbench writing. Between them: a new table, a dropped table,
# TRUNCATE, VACUUM FULL (a new relfilenode), CREATE DATABASE ... TEMPLATE, a
# table that shrinks (VACUUM cuts its file) and a contiguous range of
# pgbench_accounts updated. Each backup is restored to a named restore point
# after it, the last to the end of the archive: pgbench and test-table hashes
# equal the source at that point, pg_verifybackup -n accepts the assembled
# directory before it starts (its backup_manifest is written from what was
# assembled), and pg_amcheck --heapallindexed finds nothing.
#
# A flipped byte in a page of the middle delta that the newest restore needs:
# the restore fails naming that backup and file. A missing parent: the error
# names the delta that needs it and the parent.
. "$(dirname "$0")/lib.sh"
setup_tmp

pg_init "$T/data"
pg_start "$T/data"
as_pg "$PG_BIN/pgbench" -i -s 3 -q >/dev/null 2>&1 || bail "pgbench -i failed"
q "CREATE TABLE t_keep (id int PRIMARY KEY, v text);
   INSERT INTO t_keep SELECT g, md5(g::text) FROM generate_series(1, 60000) g;
   CREATE TABLE t_drop AS SELECT g AS id FROM generate_series(1, 10000) g;
   CREATE TABLE t_trunc (id int PRIMARY KEY, v text);
   INSERT INTO t_trunc SELECT g, md5(g::text) FROM generate_series(1, 30000) g;
   CREATE TABLE t_vf (id int PRIMARY KEY, v text);
   INSERT INTO t_vf SELECT g, md5(g::text) FROM generate_series(1, 30000) g;
   CREATE TABLE t_shrink (id int, v text);
   INSERT INTO t_shrink SELECT g, repeat('s', 200) FROM generate_series(1, 40000) g;"
# one row of ~420 bytes a page (fillfactor 10 leaves room for one): 110000 rows are 859 MiB,
# one segment; it grows past 1 GiB later. Big files, little WAL and little to hash.
q "CREATE TABLE t_big (id int, v text) WITH (autovacuum_enabled = off, fillfactor = 10);
   ALTER TABLE t_big ALTER COLUMN v SET STORAGE PLAIN;
   INSERT INTO t_big SELECT g, repeat(md5(g::text), 12) FROM generate_series(1, 110000) g;"
cmp_ok "$(q "SELECT pg_relation_size('t_big') / 8192")" "=" 110000 "t_big holds one row a page"

# Hash of everything the test checks, in one line: pgbench's tables, the test tables of
# postgres that exist, and db2's copy when it exists.
state_hash() { # state_hash PORT
    local port=$1 tables t db2=""
    tables=$(psql_at "$port" "SELECT string_agg(relname, ' ' ORDER BY relname) FROM pg_class
        WHERE relkind = 'r' AND relname LIKE 't\\_%' AND relnamespace = 'public'::regnamespace")
    for t in $tables; do
        db2="$db2 $t:$(psql_at "$port" "SELECT count(*) || '/' || coalesce(sum(hashtext(t::text)::numeric), 0) FROM $t t")"
    done
    if [ "$(psql_at "$port" "SELECT count(*) FROM pg_database WHERE datname = 'db2'")" = 1 ]; then
        db2="$db2 db2:$(PGPORT=$port as_pg "$PG_BIN/psql" -X -Atq -d db2 -c \
            "SELECT md5(string_agg(t::text, ',' ORDER BY t::text)) FROM t_keep t")"
    fi
    echo "$(pgbench_hash "$port")$db2"
}

PGBENCH=""
load_start() {
    as_pg "$PG_BIN/pgbench" -n -c 2 -R 100 -T 900 >>"$T/pgbench.log" 2>&1 &
    PGBENCH=$!
    pgbench_wait_writing "$PGPORT"
}
load_stop() {
    q "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'pgbench'" >/dev/null
    wait "$PGBENCH" 2>/dev/null
}
# backup [OPTIONS]: under pgbench; echo the new id
backup() {
    local before after
    before=$(ls "$REPO/backups" 2>/dev/null)
    load_start
    pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --compression none \
        --partition-size 16MiB "$@" >>"$T/backup.log" 2>&1 || { load_stop; return 1; }
    load_stop
    after=$(ls "$REPO/backups")
    comm -13 <(echo "$before") <(echo "$after") | grep -E '[FD]$' | tail -1
}
# mark NAME: a restore point; the state there is remembered as hash_NAME
declare -A HASH
mark() {
    HASH[$1]=$(state_hash "$PGPORT")
    q "SELECT pg_create_restore_point('$1')" >/dev/null
}

full=$(backup)
like "$full" "F$" "the full backup"
q "INSERT INTO t_big SELECT g, repeat(md5(g::text), 12) FROM generate_series(110001, 140000) g"
cmp_ok "$(q "SELECT pg_relation_size('t_big')")" ">" $((1024 * 1024 * 1024)) "t_big grew past 1 GiB: a second segment"
q "CREATE TABLE t_new AS SELECT g AS id, md5(g::text) AS v FROM generate_series(1, 20000) g;
   DROP TABLE t_drop;
   UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid BETWEEN 1000 AND 4000;"
mark rp1
d1=$(backup --delta)
like "$d1" "D$" "the first delta"
q "TRUNCATE t_trunc; INSERT INTO t_trunc SELECT g, 'after truncate' FROM generate_series(1, 500) g;
   UPDATE t_keep SET v = 'd1' WHERE id BETWEEN 100 AND 200;"
vf_before=$(q "SELECT pg_relation_filepath('t_vf')")
q "VACUUM FULL t_vf"
isnt "$(q "SELECT pg_relation_filepath('t_vf')")" "$vf_before" "VACUUM FULL gave t_vf a new file"
q "CREATE DATABASE db2 TEMPLATE postgres"
mark rp2
d2=$(backup --delta)
like "$d2" "D$" "the second delta"
shrink_before=$(q "SELECT pg_relation_size('t_shrink')")
q "DELETE FROM t_shrink WHERE id > 2000"
q "VACUUM t_shrink"
cmp_ok "$(q "SELECT pg_relation_size('t_shrink')")" "<" "$shrink_before" "VACUUM cut t_shrink's file"
q "DELETE FROM t_big WHERE id > 75000"
q "VACUUM t_big"
cmp_ok "$(q "SELECT pg_relation_size('t_big')")" "<" $((1024 * 1024 * 1024)) "t_big shrank back into one segment"
q "UPDATE t_vf SET v = 'd2' WHERE id % 100 = 0; INSERT INTO t_new SELECT g, 'more' FROM generate_series(20001, 30000) g;"
PGPORT=$PGPORT as_pg "$PG_BIN/psql" -X -q -d db2 -c "UPDATE t_keep SET v = 'db2' WHERE id < 50" >/dev/null
mark rp3
d3=$(backup --delta)
like "$d3" "D$" "the third delta"
q "UPDATE t_keep SET v = 'end' WHERE id BETWEEN 5000 AND 5100"
HASH[end]=$(state_hash "$PGPORT")
archive_all "$PGPORT"
is "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["parent"])' "$REPO/backups/$d3.done.json" 2>/dev/null ||
    grep -o '"parent": *"[^"]*"' "$REPO/backups/$d3.done.json" | sed 's/.*"\([^"]*\)"$/\1/')" "$d2" \
    "the newest delta's parent is the middle one"
ls "$REPO/backups/$d3" | grep -q . || bail "no directory for $d3"
cmp_ok "$(find "$REPO/backups/$d3" -name 'part_*' -printf '%s\n' | awk '{s+=$1} END {print s}')" "<" \
    "$(find "$REPO/backups/$full" -name 'part_*' -printf '%s\n' | awk '{s+=$1} END {print s}')" \
    "the last delta stores less than the full backup (the middle one holds a new database)"

# ---- each backup restored to the point after it ----
check_restore() { # check_restore ID NAME [restore options]
    local id=$1 name=$2 dir="$T/r_$2" port out
    shift 2
    pgd restore "$id" --repo "$REPO" --target-dir "$dir" "$@" >"$dir.restore.log" 2>&1
    ok $? "restore of $id for $name" || { sed 's/^/# /' "$dir.restore.log"; return; }
    out=$(as_pg "$PG_BIN/pg_verifybackup" -n "$dir" 2>&1)
    ok $? "pg_verifybackup -n accepts the restore of $id" || diag "$out"
    port=$(free_port)
    printf 'port = %s\narchive_mode = off\n' "$port" >>"$dir/postgresql.auto.conf"
    pg_start "$dir" "$port"
    for _ in $(seq 1 600); do
        [ "$(psql_at "$port" "SELECT pg_is_in_recovery()" 2>/dev/null)" = "f" ] && break
        sleep 0.2
    done
    is "$(state_hash "$port")" "${HASH[$name]}" "restore of $id recovered to $name: the source's data"
    out=$(PGPORT=$port as_pg "$PG_BIN/pg_amcheck" --all --heapallindexed --install-missing 2>&1)
    ok $? "pg_amcheck --heapallindexed finds nothing in the restore of $id" || diag "$out"
    pg_stop "$dir"
    rm -rf "$dir"
}
out=$(pgd verify "$d3" --repo "$REPO" 2>&1)
ok $? "verify of the newest delta checks its chain and finds it good" || diag "$out"
like "$out" "4 backups verified: good" "all four members were verified"
check_restore "$full" rp1 --target-name rp1 --target-action promote
check_restore "$d1" rp2 --target-name rp2 --target-action promote
like "$(cat "$T/r_rp2.restore.log")" "is a delta: its chain of 1 older backups down to full backup $full" \
    "the restore says which chain it assembles"
check_restore "$d2" rp3 --target-name rp3 --target-action promote
check_restore "$d3" end

# ---- restore --delta of the newest delta over a restore of the full backup ----
pgd restore "$full" --repo "$REPO" --target-dir "$T/r_over" >/dev/null 2>&1 || bail "restore of $full failed"
pgd restore "$d3" --repo "$REPO" --target-dir "$T/r_fresh" >/dev/null 2>&1 || bail "restore of $d3 failed"
pgd restore "$d3" --repo "$REPO" --target-dir "$T/r_over" --delta >"$T/r_over.log" 2>&1
ok $? "restore --delta of the newest delta over a restore of the full backup" || sed 's/^/# /' "$T/r_over.log"
like "$(cat "$T/r_over.log")" "[1-9][0-9]* bytes of [0-9]+ .* did not have to be written" \
    "it reports the bytes it did not have to write"
is "$(diff -r --no-dereference "$T/r_fresh" "$T/r_over" 2>&1 | head -5)" "" \
    "the result equals a fresh restore of the delta, file by file"
out=$(as_pg "$PG_BIN/pg_verifybackup" -n "$T/r_over" 2>&1)
ok $? "pg_verifybackup -n accepts it" || diag "$out"
rm -rf "$T/r_over" "$T/r_fresh"

# ---- a flipped byte in a page of the middle delta that the newest needs ----
victim=$(python3 - "$REPO/backups" "$d2" "$d3" <<'PY'
import json, sys, os
repo, d2, d3 = sys.argv[1:]
m2 = json.load(open(os.path.join(repo, d2, "manifest.json")))
m3 = json.load(open(os.path.join(repo, d3, "manifest.json")))
inc3 = {f["path"] for f in m3["files"] if f.get("increment")}
for f in m2["files"]:
    if f.get("increment") and f["increment"]["blocks"] > 0 and f["path"] in inc3:
        print(f["path"], f["partition"])
        break
PY
)
[ -n "$victim" ] || bail "no increment of $d2 that $d3 needs"
vpath=${victim% *}
vpart=$(printf 'part_%04d.tar' "${victim#* }")
vtar=$(dirname "$vpath")/INCREMENTAL.$(basename "$vpath")
cp "$REPO/backups/$d2/$vpart" "$T/saved.tar"
python3 - "$REPO/backups/$d2/$vpart" "$vtar" <<'PY' || bail "could not flip a byte of $vtar"
import sys, tarfile
path, name = sys.argv[1:]
with tarfile.open(path) as t:
    m = t.getmember(name)
    at = m.offset_data + m.size - 100  # inside the last page
with open(path, "r+b") as f:
    f.seek(at); b = f.read(1); f.seek(at); f.write(bytes([b[0] ^ 1]))
PY
out=$(pgd verify "$d3" --repo "$REPO" 2>&1)
is "$?" "3" "verify of the newest delta says its chain is damaged (exit 3)"
like "$(echo "$out" | grep -A1 "^backup $d2: DAMAGED")" "problem: .*$vtar" "naming the middle backup's file"
like "$out" "its parent $d2 is damaged" "and why the newest cannot be restored"
out=$(pgd restore "$d3" --repo "$REPO" --target-dir "$T/r_flip" 2>&1)
isnt "$?" "0" "restore of the newest delta fails when a page of the middle one is damaged"
like "$out" "$vtar.* in backup \"$d2\"|backup \"$d2\".*$vtar" "the error names the middle backup and the file"
ok $([ ! -e "$T/r_flip" ] && echo 0 || echo 1) "and nothing is left behind"
cp "$T/saved.tar" "$REPO/backups/$d2/$vpart"

# ---- a missing parent ----
mv "$REPO/backups/$d1.done.json" "$T/d1.done.json"
expect_error "a delta whose parent is gone" \
    "backup \"$d2\" needs its parent \"$d1\", which is not in the repository" \
    as_pg "$PGD" restore "$d3" --repo "$REPO" --target-dir "$T/r_orphan"
ok $([ ! -e "$T/r_orphan" ] && echo 0 || echo 1) "refused before anything is written"
out=$(pgd verify "$d3" --repo "$REPO" 2>&1)
is "$?" "3" "verify of a delta whose chain lost a member: damaged"
like "$out" "needs its parent \"$d1\", which is not in the repository" "naming the missing parent"
mv "$T/d1.done.json" "$REPO/backups/$d1.done.json"

done_testing
