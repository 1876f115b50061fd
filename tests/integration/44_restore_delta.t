#!/usr/bin/env bash
# restore --delta into an existing data directory (issue 10).
#
# A full backup is taken with pgbench writing; the server keeps writing after
# it and is stopped. A copy of its data directory (and tablespace) then has 1 %
# of its files changed and 1 % deleted, plus the hostile cases: a file grown,
# one truncated, extra files and directories, a file replaced by a symbolic
# link to a file outside and a file hard-linked to one outside (both outside
# files must be left as they were: nothing is written through a link). restore
# --delta over that copy must equal a fresh restore of the same backup file by
# file (content, type, mode, link targets), report the bytes it did not have to
# write, leave a file that already matched alone (its mtime, set to 2001, stays),
# and recover to the source's pgbench and tablespace-table hashes.
#
# Refused before anything is written: a directory with a running server, a data
# directory of another system, a non-empty directory that is not a data
# directory; each leaves the directory as it was. A --delta restore that fails
# midway (a corrupted partition) leaves no global/pg_control, so the directory
# cannot be started, and a second run completes it.
. "$(dirname "$0")/lib.sh"
setup_tmp

pg_init "$T/data"
pg_start "$T/data"
mkdir -p "$T/ts1" && chown postgres:postgres "$T/ts1"
q "CREATE TABLESPACE ts1 LOCATION '$T/ts1'"
q "CREATE TABLE spc_t TABLESPACE ts1 AS SELECT g AS id, md5(g::text) AS v FROM generate_series(1, 20000) g"
as_pg "$PG_BIN/pgbench" -i -s 2 -q >/dev/null 2>&1 || bail "pgbench -i failed"
as_pg "$PG_BIN/pgbench" -n -c 2 -R 200 -T 600 >/dev/null 2>&1 &
PGBENCH=$!
pgbench_wait_writing "$PGPORT"
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --partition-size 8MiB \
    >"$T/backup.log" 2>&1
ok $? "a full backup with pgbench writing"
id=$(ls "$REPO/backups" | grep -E 'F$' | tail -1)
# more changes after the backup, so the copy differs from it
for _ in $(seq 1 600); do
    [ "$(q "SELECT count(*) FROM pgbench_history")" -gt 2000 ] && break
    sleep 0.2
done
q "UPDATE spc_t SET v = 'changed' WHERE id % 50 = 0"
q "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'pgbench'" >/dev/null
wait "$PGBENCH" 2>/dev/null
src_hash=$(pgbench_hash "$PGPORT")
src_spc=$(q "SELECT md5(string_agg(id || v, ',' ORDER BY id)) FROM spc_t")
archive_all "$PGPORT"
pg_stop "$T/data"
oid=$(ls "$T/data/pg_tblspc")

# ---- a fresh restore, and a changed copy of the source ----
pgd restore "$id" --repo "$REPO" --target-dir "$T/fresh" --tablespace-map "$T/ts1=$T/ts_fresh" \
    >"$T/fresh.log" 2>&1
ok $? "a fresh restore into an empty directory"
cp -a "$T/data" "$T/copy"
cp -a "$T/ts1" "$T/ts_copy"
ln -sfn "$T/ts_copy" "$T/copy/pg_tblspc/$oid"
cd "$T/copy" || bail "no copy"
find base global "pg_tblspc/$oid/" -type f -size +0 | sort >"$T/files"
n=$(wc -l <"$T/files")
pct=$(( (n + 99) / 100 ))
shuf -n $((2 * pct)) --random-source=<(yes) "$T/files" >"$T/picked"
grep -vx 'global/pg_control' "$T/picked" | head -n "$pct" >"$T/changed"
grep -vx 'global/pg_control' "$T/picked" | tail -n +$((pct + 1)) >"$T/deleted"
while read -r f; do
    size=$(stat -c %s "$f")
    printf 'X' | dd of="$f" bs=1 seek=$((size / 2)) conv=notrunc status=none
done <"$T/changed"
while read -r f; do rm -f "$f"; done <"$T/deleted"
diag "$n files: $(wc -l <"$T/changed") changed, $(wc -l <"$T/deleted") deleted"
# the hostile cases, each on a file of pgbench_accounts' database
rel() { find base -type f -size +"$1"k -regex '.*/[0-9]+$' | sort | sed -n "$2p"; }
grown=$(rel 8 1); shrunk=$(rel 8 2); linked=$(rel 8 3); hard=$(rel 8 4)
head -c 100000 /dev/urandom >>"$grown"
truncate -s 8192 "$shrunk"
echo "outside, must stay" >"$T/outside"
rm -f "$linked" && ln -s "$T/outside" "$linked"
echo "hard-linked, must stay" >"$T/outside_hard"
rm -f "$hard" && ln "$T/outside_hard" "$hard"
mkdir -p base/99999/sub && echo junk >base/99999/sub/file && echo junk >base/1/99999
# another cluster's version directory (pg_upgrade --link leaves one; 13's, never the version
# under test): not the backup's business
mkdir -p "$T/ts_copy/PG_13_202007201/5" && echo other >"$T/ts_copy/PG_13_202007201/5/16385"
echo stale >pg_wal/000000010000000000000099
# a file that matches the backup already: its mtime is made distinctive
matched=""
for f in $(cd "$T/fresh" && find base/1 -type f -size +8k | sort); do
    cmp -s "$T/fresh/$f" "$T/copy/$f" && { matched=$f; break; }
done
[ -n "$matched" ] || bail "no file of base/1 matches the fresh restore"
touch -d '2001-01-01 00:00:00' "$matched"
mtime_before=$(stat -c %y "$matched")
cd / || bail "no /"
chown -R postgres:postgres "$T/copy" "$T/ts_copy" "$T/outside" "$T/outside_hard"

# ---- refused: a running server, another system, not a data directory ----
pgd restore "$id" --repo "$REPO" --target-dir "$T/copy" >/dev/null 2>&1
isnt "$?" "0" "without --delta, a non-empty directory is refused"
echo "$$" >"$T/copy/postmaster.pid" # a live process
expect_error "a directory whose postmaster.pid names a live process" \
    "refusing to restore into \"$T/copy\": a server is running in it" \
    as_pg "$PGD" restore "$id" --repo "$REPO" --target-dir "$T/copy" --delta \
    --tablespace-map "$T/ts1=$T/ts_copy"
ok $([ -f "$T/copy/global/pg_control" ] && [ -L "$T/copy/$linked" ] && echo 0 || echo 1) \
    "and the directory is left as it was"
echo 999999999 >"$T/copy/postmaster.pid" # stale: no such process
chown postgres "$T/copy/postmaster.pid"
as_pg "$PG_BIN/initdb" -D "$T/other" -U postgres -A trust >/dev/null 2>&1 || bail "initdb failed"
expect_error "a data directory of another system" \
    "refusing to restore into \"$T/other\": it is a data directory of another system" \
    as_pg "$PGD" restore "$id" --repo "$REPO" --target-dir "$T/other" --delta \
    --tablespace-map "$T/ts1=$T/ts_other"
ok $([ -f "$T/other/global/pg_control" ] && [ ! -e "$T/ts_other" ] && echo 0 || echo 1) \
    "and it is left as it was"
mkdir -p "$T/junk" && echo keep >"$T/junk/file" && chown -R postgres "$T/junk"
expect_error "a non-empty directory without global/pg_control" \
    "refusing to restore into \"$T/junk\": it is not empty and has no regular file \"global/pg_control\"" \
    as_pg "$PGD" restore "$id" --repo "$REPO" --target-dir "$T/junk" --delta \
    --tablespace-map "$T/ts1=$T/ts_junk"
is "$(cat "$T/junk/file")" "keep" "and its file is left alone"

# ---- restore --delta over the changed copy ----
pgd restore "$id" --repo "$REPO" --target-dir "$T/copy" --delta \
    --tablespace-map "$T/ts1=$T/ts_copy" >"$T/delta.log" 2>&1
ok $? "restore --delta over the changed copy succeeds" || sed 's/^/# /' "$T/delta.log"
line=$(grep -E 'bytes of [0-9]+ .* did not have to be written' "$T/delta.log")
like "$line" "[0-9]+ bytes of [0-9]+ \(.* of .*\) did not have to be written" "it reports the bytes it did not write"
same=$(echo "$line" | sed -E 's/.* ([0-9]+) bytes of ([0-9]+) .*/\1/')
total=$(echo "$line" | sed -E 's/.* ([0-9]+) bytes of ([0-9]+) .*/\2/')
cmp_ok "$same" ">" "$((total / 2))" "most of the $total bytes did not have to be written ($same)"
cmp_ok "$same" "<" "$total" "but not all: what differed was written"
like "$(cat "$T/delta.log")" "removed [0-9]+ files and directories the backup does not have" \
    "it reports what it removed"
like "$(tail -1 "$T/delta.log")" "restore of backup $id complete" "and completes"

# file by file: the same entries, types, modes and link targets; the same contents
listing() { (cd "$1" && find . -path "./pg_tblspc/$oid" -prune -o -printf '%P %y %m %l\n' | sort); }
is "$(diff <(listing "$T/fresh") <(listing "$T/copy") | head -5)" "" \
    "the same files, directories and links as a fresh restore, with the same modes"
is "$(diff -r --no-dereference -x "$oid" "$T/fresh" "$T/copy" 2>&1 | head -5)" "" \
    "with the same contents"
is "$(diff -r --no-dereference "$T/ts_fresh" "$T/ts_copy" 2>&1 | head -5)" "Only in $T/ts_copy: PG_13_202007201" \
    "the tablespace too; another version's directory in it is left alone"
rm -rf "$T/ts_copy/PG_13_202007201" # pg_verifybackup would report it
is "$(readlink "$T/copy/pg_tblspc/$oid")" "$T/ts_copy" "the tablespace link points at its destination"
is "$(cat "$T/outside")" "outside, must stay" "nothing was written through a symbolic link"
is "$(cat "$T/outside_hard")" "hard-linked, must stay" "nor into a file hard-linked from outside"
is "$(stat -c %y "$T/copy/$matched")" "$mtime_before" "a file that matched was not written (its mtime stays)"
ok $([ ! -e "$T/copy/postmaster.pid" ] && [ ! -e "$T/copy/pg_wal/000000010000000000000099" ] &&
    echo 0 || echo 1) "a stale postmaster.pid and WAL the backup does not have are gone"
if verifybackup=$(pg_tool pg_verifybackup); then
    out=$("$verifybackup" -n "$T/copy" 2>&1)
    rc=$?
    ok $rc "pg_verifybackup accepts the result"
    [ $rc -eq 0 ] || diag "$out"
else
    tap_skip "pg_verifybackup accepts the result" "$(pg_tool_missing pg_verifybackup)"
fi

# ---- it recovers to the source's data ----
port=$(free_port)
printf 'port = %s\narchive_mode = off\n' "$port" >>"$T/copy/postgresql.auto.conf"
pg_start "$T/copy" "$port"
for _ in $(seq 1 300); do
    [ "$(psql_at "$port" "SELECT pg_is_in_recovery()" 2>/dev/null)" = "f" ] && break
    sleep 0.2
done
is "$(pgbench_hash "$port")" "$src_hash" "the recovered copy has the source's pgbench data"
is "$(psql_at "$port" "SELECT md5(string_agg(id || v, ',' ORDER BY id)) FROM spc_t")" "$src_spc" \
    "and its tablespace table"

# ---- a running server is refused, and its directory left alone ----
expect_error "the running restored server" "a server is running in it" \
    as_pg "$PGD" restore "$id" --repo "$REPO" --target-dir "$T/copy" --delta \
    --tablespace-map "$T/ts1=$T/ts_copy"
is "$(psql_at "$port" "SELECT count(*) FROM spc_t")" "20000" "and the server runs on, untouched"
pg_stop "$T/copy"

# ---- a --delta restore that fails midway leaves a directory that cannot start ----
part=$(ls -S "$REPO/backups/$id"/part_* | head -1)
cp -a "$part" "$T/part.saved"
python3 -c "
import sys
f = open(sys.argv[1], 'r+b'); f.seek(0, 2); at = f.tell() // 2
f.seek(at); b = f.read(1); f.seek(at); f.write(bytes([b[0] ^ 0xff]))" "$part"
pgd restore "$id" --repo "$REPO" --target-dir "$T/copy" --delta \
    --tablespace-map "$T/ts1=$T/ts_copy" >"$T/failed.log" 2>&1
isnt "$?" "0" "a --delta restore from a corrupted partition fails"
like "$(cat "$T/failed.log")" "partly restored and has no global/pg_control: run restore --delta again" \
    "it says the directory is incomplete"
ok $([ ! -e "$T/copy/global/pg_control" ] && echo 0 || echo 1) \
    "and it has no global/pg_control, so PostgreSQL will not start it"
cp -a "$T/part.saved" "$part"
pgd restore "$id" --repo "$REPO" --target-dir "$T/copy" --delta \
    --tablespace-map "$T/ts1=$T/ts_copy" >"$T/again.log" 2>&1
ok $? "a second run completes it" || sed 's/^/# /' "$T/again.log"
is "$(diff -r --no-dereference -x "$oid" -x postgresql.auto.conf "$T/fresh" "$T/copy" 2>&1 | head -5)" "" \
    "and the result equals the fresh restore again"

done_testing
