#!/usr/bin/env bash
# A delta's parent must be the very backup the delta was taken on. Under the parent's id
# the repository could hold another backup of the same cluster (a directory copied over by
# hand, a repository restored from elsewhere, an id reused): its pages are not the ones the
# delta's increments were taken against, and a restore from them would exit 0 with wrong
# data. On pgbench scale 1: a full F1, a delta D1 on it (restore point after it), more
# changes, a full F2. Then, under F1's id:
# - F2's directory (F1's sentinel kept): verify exits 3 and restore fails, both naming the
#   manifest of F2, and the target is left empty;
# - F2's directory and sentinel with F2's id rewritten to F1's everywhere: verify exits 3 and
#   restore fails, naming the start LSN D1 recorded for its parent and the one found;
# - F1 put back: verify exits 0 and the restore equals the source at the restore point.
. "$(dirname "$0")/lib.sh"
setup_tmp
pg_init "$T/data"
pg_start "$T/data"
as_pg "$PG_BIN/pgbench" -i -s 1 -q >/dev/null 2>&1 || bail "pgbench -i failed"
q "CREATE TABLE b (id int PRIMARY KEY, v text); INSERT INTO b SELECT g, 'orig' FROM generate_series(1, 5000) g"

newest() { ls "$REPO/backups" | sed -n 's/\.done\.json$//p' | sort | tail -1; }
backup() { pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast "$@" >/dev/null 2>>"$T/backups.err" ||
    bail "backup $* failed: $(tail -2 "$T/backups.err")"; newest; }

F1=$(backup)
q "UPDATE pgbench_accounts SET abalance = abalance + 7 WHERE aid BETWEEN 1 AND 1000"
D1=$(backup --delta)
like "$D1" 'D$' "the delta D1 on F1"
q "SELECT pg_create_restore_point('after_d1')" >/dev/null
HASH="$(pgbench_hash "$PGPORT") $(q "SELECT count(*) FROM b")"
q "DELETE FROM b WHERE id % 10 = 0"
q "VACUUM b"
q "UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid BETWEEN 50001 AND 60000"
next_second # F2 in another second than D1
F2=$(backup)
archive_all "$PGPORT"
B=$REPO/backups
mv "$B/$F1" "$T/f1.dir"
cp "$B/$F1.done.json" "$T/f1.done.json"

# ---- F2's files under F1's id ----
cp -a "$B/$F2" "$B/$F1"
out=$(pgd verify "$D1" --repo "$REPO" 2>&1)
is "$?" "3" "verify of D1 with F2's files under F1's id exits 3"
like "$out" "manifest is that of backup \"$F2\"" "naming whose manifest it found"
out=$(pgd restore "$D1" --repo "$REPO" --target-dir "$T/ta" 2>&1)
isnt "$?" "0" "restore of D1 fails"
like "$(printf '%s\n' "$out" | grep 'error:')" "backup \"$D1\" needs its parent \"$F1\".*manifest is that of backup \"$F2\"" \
    "naming the delta, its parent and the manifest found"
is "$(ls -A "$T/ta" 2>/dev/null | wc -l)" "0" "and writes nothing"

# ---- F2 whole, renamed F1: the sentinel's start LSN gives it away ----
sed "s/$F2/$F1/g" "$B/$F2.done.json" >"$B/$F1.done.json"
sed -i "s/$F2/$F1/g" "$B/$F1/manifest.json"
chown -R postgres:postgres "$B"
recorded=$(jq -r .parent_start_lsn "$B/$D1.done.json")
found=$(jq -r .start_lsn "$B/$F1.done.json")
isnt "$found" "$recorded" "the impostor started at $found, D1's parent at $recorded"
out=$(pgd verify "$D1" --repo "$REPO" 2>&1)
is "$?" "3" "verify of D1 on the renamed F2 exits 3"
like "$out" "taken on a parent \"$F1\" that started at $recorded, but the backup \"$F1\" in the repository started at $found, after it" \
    "naming both start LSNs"
out=$(pgd restore "$D1" --repo "$REPO" --target-dir "$T/tb" 2>&1)
isnt "$?" "0" "restore of D1 on the renamed F2 fails"
like "$(printf '%s\n' "$out" | grep 'error:')" "taken on a parent \"$F1\" that started at $recorded" "saying why"
is "$(ls -A "$T/tb" 2>/dev/null | wc -l)" "0" "and writes nothing"

# ---- the real F1 back: the chain verifies and restores equal ----
rm -rf "$B/$F1"
mv "$T/f1.dir" "$B/$F1"
cp "$T/f1.done.json" "$B/$F1.done.json"
chown -R postgres:postgres "$B"
pgd verify "$D1" --repo "$REPO" >/dev/null 2>&1
is "$?" "0" "with F1 back, verify of D1 exits 0"
port=$(restore_and_start "$D1" "$T/tc" --target-name after_d1 --target-action promote)
ok $? "restore of D1 to after_d1"
is "$(pgbench_hash "$port") $(psql_at "$port" "SELECT count(*) FROM b")" "$HASH" "equals the source at after_d1"
pg_stop "$T/tc"
done_testing
