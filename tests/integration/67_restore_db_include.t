#!/usr/bin/env bash
# restore --db-include / --db-exclude (issue 38): restore only the databases you need.
#
# Three user databases under pgbench load: app and other1 in the data directory, other2 in a
# tablespace. A full backup, then a delta, each taken with pgbench writing in app and other1.
# The delta (a chain of two) restored with --db-include app: the relation files of other1 and
# other2 exist at their size but occupy no disk blocks (stat's st_blocks), while app's do; the
# log reports the bytes read from the repository and written, names the databases left out
# and says to drop them; the restored server starts, app's pgbench tables equal the source's,
# and DROP DATABASE other1, other2 works. Positive control: the same restore without
# --db-include writes other1's and other2's files (blocks on disk), and writes more bytes.
# restore --delta --db-exclude over that full restore empties other1's files the same way and
# still recovers app and other2 equal to the source.
#
# Not reading what it leaves out: in both backups of the chain no partition holds the relation
# files of a user database together with any other file (each database at least a quarter of
# --partition-size has partitions of its own, backup/file_queue.h); the selective restore reads
# from the repository at most the partitions that hold something it restores (counted from the
# manifests, independently of restore's counter), less than 70 % of what the whole restore
# reads (the control). A backup whose partitions mix the databases (--partition-size 1GiB: all
# three are under a quarter of it, the layout of backups older than the rule): the layout check
# finds the mixing (its positive control), and --db-include app still restores app equal to the
# source, reading as much as the whole restore.
#
# Refused before anything is written (exit 2, one line): a name the backup does not have, a
# system database in --db-exclude, a name in both lists, and a backup whose manifest recorded
# no databases (an older pgdirect's).
. "$(dirname "$0")/lib.sh"
setup_tmp

pg_init "$T/data"
pg_start "$T/data"
mkdir -p "$T/ts1" && chown postgres:postgres "$T/ts1"
q "CREATE TABLESPACE ts1 LOCATION '$T/ts1'"
q "CREATE DATABASE app"
q "CREATE DATABASE other1"
q "CREATE DATABASE other2 TABLESPACE ts1"
for db in app other1 other2; do
    as_pg "$PG_BIN/pgbench" -i -s 1 -q "$db" >/dev/null 2>&1 || bail "pgbench -i $db failed"
done

# hash_db PORT DB: pgbench_hash of one database
hash_db() {
    PGPORT=$1 as_pg env PGDATABASE="$2" "$PG_BIN/psql" -X -Atq -v ON_ERROR_STOP=1 -c \
        "SELECT string_agg(h, ' ' ORDER BY t) FROM (
        SELECT 'a' t, md5(string_agg(aid || ':' || bid || ':' || abalance, ',' ORDER BY aid)) h FROM pgbench_accounts
        UNION ALL SELECT 'b', md5(string_agg(bid || ':' || bbalance, ',' ORDER BY bid)) FROM pgbench_branches
        UNION ALL SELECT 't', md5(string_agg(tid || ':' || bid || ':' || tbalance, ',' ORDER BY tid)) FROM pgbench_tellers
        UNION ALL SELECT 'h', md5(coalesce(string_agg(tid || ':' || bid || ':' || aid || ':' || delta || ':' || mtime, ',' ORDER BY tid, bid, aid, delta, mtime), '')) FROM pgbench_history) s"
}
PIDS=()
load_start() {
    PIDS=()
    for db in app other1; do
        as_pg "$PG_BIN/pgbench" -n -c 1 -R 100 -T 600 "$db" >>"$T/pgbench.log" 2>&1 &
        PIDS+=($!)
    done
    for _ in $(seq 1 300); do
        [ "$(hist app)" -gt 0 ] && [ "$(hist other1)" -gt 0 ] && return 0
        sleep 0.2
    done
    bail "pgbench did not start writing"
}
hist() { PGPORT=$PGPORT as_pg env PGDATABASE="$1" "$PG_BIN/psql" -X -Atq -c "SELECT count(*) FROM pgbench_history" 2>/dev/null || echo 0; }
load_stop() {
    q "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'pgbench'" >/dev/null
    wait "${PIDS[@]}" 2>/dev/null
}
# oid DB
oid() { q "SELECT oid FROM pg_database WHERE datname = '$1'"; }
APP=$(oid app) O1=$(oid other1) O2=$(oid other2)
SPC=$(ls "$T/data/pg_tblspc")
# dbdir ROOT DB_OID: where a database's files are in a restored directory
dbdir() {
    if [ "$2" = "$O2" ]; then echo "$1/pg_tblspc/$SPC"/PG_*/"$2"; else echo "$1/base/$2"; fi
}
# usage ROOT DB_OID: "apparent_bytes allocated_bytes" of the database's relation files
usage() {
    find $(dbdir "$1" "$2") -type f -regex '.*/[0-9]+\(_[a-z]+\)?\(\.[0-9]+\)?$' -printf '%s %b\n' |
        awk '{s += $1; b += $2 * 512} END {print s + 0, b + 0}'
}

load_start
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --partition-size 4MiB \
    >"$T/full.log" 2>&1
ok $? "a full backup under load"
sleep 2
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --partition-size 4MiB --delta \
    >"$T/delta.log" 2>&1
ok $? "a delta backup under load"
load_stop
full=$(ls "$REPO/backups" | grep -E 'F$' | tail -1)
delta=$(ls "$REPO/backups" | grep -E 'D$' | tail -1)
[ -n "$full" ] && [ -n "$delta" ] || bail "no full or delta backup: $(tail -3 "$T/delta.log")"
# mixed partitions: every database under a quarter of the partition size (no load: app as hashed)
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --partition-size 1GiB \
    >"$T/mixed.log" 2>&1
ok $? "a full backup with mixed partitions"
mixed=$(ls "$REPO/backups" | grep -E 'F$' | tail -1)
[ "$mixed" != "$full" ] || bail "no backup of mixed partitions: $(tail -3 "$T/mixed.log")"

# parts_mixed MANIFEST: the partitions holding a user database's relation files and any other file
parts_mixed() {
    python3 - "$1" <<'PY'
import json, re, sys
m = json.load(open(sys.argv[1]))
owners = {}
for f in m["files"] + m.get("links", []):
    if "partition" not in f:
        continue
    r = re.match(r"(?:base|pg_tblspc/\d+/[^/]+)/(\d+)/\d+(?:_[a-z]+)?(?:\.\d+)?$", f["path"])
    owner = r.group(1) if r and f.get("type", "file") == "file" and int(r.group(1)) >= 16384 else "rest"
    owners.setdefault(f["partition"], set()).add(owner)
print(sum(1 for o in owners.values() if len(o) > 1))
PY
}
# needed_bytes EXCLUDED_OIDS MANIFEST...: stored bytes of the partitions holding a file that is not
# a relation file of the excluded databases (what a selective restore of the chain may read)
needed_bytes() {
    python3 - "$@" <<'PY'
import json, re, sys
excl = set(sys.argv[1].split())
total = 0
for path in sys.argv[2:]:
    m = json.load(open(path))
    need = set()
    for f in m["files"] + m.get("links", []):
        if "partition" not in f or f.get("type") == "dir":
            continue
        r = re.match(r"(?:base|pg_tblspc/\d+/[^/]+)/(\d+)/\d+(?:_[a-z]+)?(?:\.\d+)?$", f["path"])
        if not (r and f.get("type", "file") == "file" and r.group(1) in excl):
            need.add(f["partition"])
    total += sum(p["size"] for i, p in enumerate(m["partitions"]) if i + 1 in need)
print(total)
PY
}
is "$(parts_mixed "$REPO/backups/$full/manifest.json") $(parts_mixed "$REPO/backups/$delta/manifest.json")" \
    "0 0" "no partition of the full or the delta mixes a user database's relation files with other files"
cmp_ok "$(parts_mixed "$REPO/backups/$mixed/manifest.json")" ">" 0 \
    "control: the layout check finds the mixing in a backup of 1GiB partitions"
python3 -c 'import json, sys; m = json.load(open(sys.argv[1]))
print(" ".join(sorted(d["name"] for d in m["databases"])))' "$REPO/backups/$delta/manifest.json" \
    >"$T/dbs" 2>&1
is "$(cat "$T/dbs")" "app other1 other2 postgres template0 template1" \
    "the delta's manifest records every database by name"
src_app=$(hash_db "$PGPORT" app)
src_o2=$(hash_db "$PGPORT" other2)
archive_all "$PGPORT"
pg_stop "$T/data"

# start_restored DIR: start a restored directory on a new port, wait for the end of recovery,
# echo the port
start_restored() {
    local port
    port=$(free_port)
    printf 'port = %s\n' "$port" >>"$1/postgresql.auto.conf"
    pg_start "$1" "$port" >&2
    for _ in $(seq 1 300); do
        [ "$(psql_at "$port" "SELECT pg_is_in_recovery()" 2>/dev/null)" = "f" ] && { echo "$port"; return 0; }
        sleep 0.2
    done
    return 1
}

# ---- --db-include app ----
t0=$(date +%s.%N)
pgd restore "$delta" --repo "$REPO" --target-dir "$T/sel" --db-include app \
    --tablespace-map "$T/ts1=$T/ts_sel" >"$T/sel.restore.log" 2>&1
ok $? "restore of the delta chain with --db-include app"
diag "restore --db-include: $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s"
log=$(cat "$T/sel.restore.log")
like "$log" "leaving out databases \"other1\", \"other2\": [0-9]+ relation files restored as empty" \
    "the restore names the databases it leaves out"
like "$log" "read [0-9]+ bytes \\([^)]*\\) from the repository and wrote [0-9]+ bytes" \
    "the restore reports the bytes read from the repository and written"
like "$log" "warning: databases \"other1\", \"other2\" were restored without data.*DROP DATABASE" \
    "the summary says the databases left out must be dropped"
read -r app_size app_alloc <<<"$(usage "$T/sel" "$APP")"
read -r o1_size o1_alloc <<<"$(usage "$T/sel" "$O1")"
read -r o2_size o2_alloc <<<"$(usage "$T/sel" "$O2")"
o1_sel_size=$o1_size o2_sel_size=$o2_size
diag "app $app_size/$app_alloc, other1 $o1_size/$o1_alloc, other2 $o2_size/$o2_alloc (bytes/allocated)"
cmp_ok "$o1_size" ">" 10000000 "other1's relation files have their size"
is "$o1_alloc" "0" "other1's relation files occupy no disk blocks (sparse)"
cmp_ok "$o2_size" ">" 10000000 "other2's relation files (in a tablespace) have their size"
is "$o2_alloc" "0" "other2's relation files occupy no disk blocks (sparse)"
cmp_ok "$app_alloc" ">=" "$app_size" "app's relation files are written whole"
port=$(start_restored "$T/sel")
ok $? "the restored server starts and recovers"
is "$(hash_db "$port" app)" "$src_app" "app's pgbench tables equal the source's"
is "$(psql_at "$port" "SELECT count(*) FROM pg_database WHERE datname IN ('postgres', 'template1')")" "2" \
    "the system databases are there"
psql_at "$port" "DROP DATABASE other1" && psql_at "$port" "DROP DATABASE other2"
ok $? "the databases left out can be dropped"
is "$(psql_at "$port" "SELECT string_agg(datname, ' ' ORDER BY datname) FROM pg_database WHERE NOT datistemplate")" \
    "app postgres" "only app and postgres are left"
is "$(hash_db "$port" app)" "$src_app" "app is intact after the drops"
pg_stop "$T/sel"
sel_written=$(sed -n 's/.*wrote \([0-9]*\) bytes.*/\1/p' "$T/sel.restore.log")

# ---- positive control: without --db-include every database is written ----
pgd restore "$delta" --repo "$REPO" --target-dir "$T/all" --tablespace-map "$T/ts1=$T/ts_all" \
    --json >"$T/all.json" 2>"$T/all_restore.log"
ok $? "the same restore without --db-include"
read -r _ o1_alloc_all <<<"$(usage "$T/all" "$O1")"
read -r _ o2_alloc_all <<<"$(usage "$T/all" "$O2")"
cmp_ok "$o1_alloc_all" ">" 10000000 "control: other1's files occupy disk blocks"
cmp_ok "$o2_alloc_all" ">" 10000000 "control: other2's files occupy disk blocks"
all_written=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["bytes"])' "$T/all.json")
all_read=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["repository_bytes"])' "$T/all.json")
sel_read=$(sed -n 's/.*read \([0-9]*\) bytes .* from the repository.*/\1/p' "$T/sel.restore.log")
diag "read from the repository: $sel_read bytes with --db-include app, $all_read without"
cmp_ok "$sel_read" "<=" "$all_read" "--db-include reads no more from the repository than the whole restore"
need=$(needed_bytes "$O1 $O2" "$REPO/backups/$delta/manifest.json" "$REPO/backups/$full/manifest.json")
diag "partitions holding something --db-include app restores: $need bytes"
cmp_ok "$sel_read" "<=" "$need" \
    "--db-include app reads only partitions holding something it restores (the others not at all)"
cmp_ok "$((sel_read * 100))" "<" "$((all_read * 70))" \
    "--db-include app reads less than 70 % of what the whole restore reads ($sel_read of $all_read)"
cmp_ok "$sel_written" "<" "$((all_written - o1_sel_size - o2_sel_size))" \
    "--db-include app writes less than the whole restore less other1's and other2's files ($sel_written of $all_written)"

# ---- restore --delta --db-exclude other1 over the whole restore ----
pgd restore "$delta" --repo "$REPO" --target-dir "$T/all" --delta --db-exclude other1 \
    --json >"$T/redo.json" 2>"$T/redo_restore.log"
ok $? "restore --delta --db-exclude other1 over an existing directory"
is "$(python3 -c 'import json, sys; o = json.load(open(sys.argv[1]))
print(o["excluded_databases"], o["sparse_files"] > 0, o["repository_bytes"] > 0)' "$T/redo.json")" \
    "['other1'] True True" "--json names the database left out, its sparse files and the bytes read"
read -r o1_size o1_alloc <<<"$(usage "$T/all" "$O1")"
is "$o1_alloc" "0" "--delta: other1's existing files are emptied (no disk blocks)"
cmp_ok "$o1_size" ">" 10000000 "--delta: and keep their size"
port=$(start_restored "$T/all")
ok $? "--delta: the server starts and recovers"
is "$(hash_db "$port" app)" "$src_app" "--delta: app equals the source"
is "$(hash_db "$port" other2)" "$src_o2" "--delta: other2 (not excluded) equals the source"
psql_at "$port" "DROP DATABASE other1"
ok $? "--delta: other1 can be dropped"
pg_stop "$T/all"

# ---- a backup of mixed partitions: still restored selectively, reading them ----
pgd restore "$mixed" --repo "$REPO" --target-dir "$T/mix" --db-include app \
    --tablespace-map "$T/ts1=$T/ts_mix" --json >"$T/mix.json" 2>"$T/mix_restore.log"
ok $? "--db-include app of a backup of mixed partitions"
read -r _ o1_alloc <<<"$(usage "$T/mix" "$O1")"
is "$o1_alloc" "0" "mixed partitions: other1's relation files occupy no disk blocks"
mix_read=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["repository_bytes"])' "$T/mix.json")
mix_all=$(python3 -c 'import json, sys; print(sum(p["size"] for p in json.load(open(sys.argv[1]))["partitions"]))' \
    "$REPO/backups/$mixed/manifest.json")
is "$mix_read" "$mix_all" "mixed partitions: every partition is read ($mix_read bytes)"
port=$(start_restored "$T/mix")
ok $? "mixed partitions: the server starts and recovers"
is "$(hash_db "$port" app)" "$src_app" "mixed partitions: app equals the source"
pg_stop "$T/mix"

# ---- refused before anything is written ----
expect_error "a database the backup does not have" 'database "nosuch" is not in backup' \
    pgd restore "$delta" --repo "$REPO" --target-dir "$T/r1" --db-include nosuch
is "$(pgd restore "$delta" --repo "$REPO" --target-dir "$T/r1" --db-include nosuch >/dev/null 2>&1; echo $?)" \
    "2" "a database the backup does not have: exit 2"
expect_error "a system database excluded" 'a template or system database is always restored' \
    pgd restore "$delta" --repo "$REPO" --target-dir "$T/r1" --db-exclude template1
expect_error "a name in both lists" 'given to both --db-include and --db-exclude' \
    pgd restore "$delta" --repo "$REPO" --target-dir "$T/r1" --db-include app --db-exclude app
# an older pgdirect's backup: its manifest has no "databases"
python3 - "$REPO/backups/$full/manifest.json" <<'PY' || bail "could not edit the manifest"
import json, sys
m = json.load(open(sys.argv[1]))
del m["databases"]
json.dump(m, open(sys.argv[1], "w"))
PY
expect_error "a backup that recorded no databases" "backup $full recorded no database names" \
    pgd restore "$full" --repo "$REPO" --target-dir "$T/r1" --db-include app
ok "$([ ! -e "$T/r1" ]; echo $?)" "nothing was written by the refused restores"
pgd restore "$full" --repo "$REPO" --target-dir "$T/r2" --tablespace-map "$T/ts1=$T/ts_r2" >/dev/null 2>&1
ok $? "control: that backup still restores whole"

done_testing
