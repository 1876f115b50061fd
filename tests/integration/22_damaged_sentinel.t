#!/usr/bin/env bash
# One unreadable sentinel (backups/<id>.done.json empty or corrupt) damages
# that backup only: list marks it (a status column, "status": "damaged" and
# the reason in --json) and warns, restore LATEST takes the newest backup
# that is not damaged and says which newer one it skipped, and restore of
# the damaged id fails naming the cause. A sentinel that cannot be read
# (another owner's, mode 0600) is no verdict on its backup: list and
# restore LATEST fail naming it, and LATEST is never quietly an older backup;
# delete fails too, removing nothing.
. "$(dirname "$0")/lib.sh"
setup_tmp
pg_init "$T/data"
pg_start "$T/data"
as_pg "$PG_BIN/pgbench" -i -s 1 -q >/dev/null 2>&1 || bail "pgbench -i failed"
archive_all "$PGPORT"

backup_id() { sed -n 's/.*backup \([0-9]\{8\}T[0-9]\{6\}F\) complete.*/\1/p' "$1"; }
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast >/dev/null 2>"$T/a.err" || bail "backup A failed"
A=$(backup_id "$T/a.err")
q "UPDATE pgbench_branches SET bbalance = 42"
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast >/dev/null 2>"$T/b.err" || bail "backup B failed"
B=$(backup_id "$T/b.err")
archive_all "$PGPORT"
src_hash=$(pgbench_hash "$PGPORT")
diag "A=$A B=$B"

# ---- B's sentinel cannot be read by the user running pgdirect (root's, mode 0600) ----
cp -p "$REPO/backups/$B.done.json" "$T/B.sentinel"
chown root "$REPO/backups/$B.done.json" && chmod 600 "$REPO/backups/$B.done.json"
out=$(pgd list --repo "$REPO" 2>&1)
is "$?" "1" "list fails when a sentinel cannot be read"
like "$out" "^pgdirect: error: .*backups/$B.done.json.*Permission denied" "naming the sentinel and the cause"
expect_error "restore LATEST with an unreadable newest sentinel" "backups/$B.done.json.*Permission denied" \
    pgd restore LATEST --repo "$REPO" --target-dir "$T/r_unread"
ok $([ ! -e "$T/r_unread/PG_VERSION" ] && echo 0 || echo 1) "and restores nothing (not the older $A)"
like "$EXPECT_OUT" "nothing can be said of backup $B, whose sentinel cannot be read \(make it readable; or remove it" \
    "and says what to do"
expect_error "delete with an unreadable sentinel" "backups/$B.done.json.*Permission denied" \
    pgd delete --retain-full 1 --repo "$REPO"
is "$(ls "$REPO/backups" | grep -c done.json)" "2" "and removes nothing"
out=$(pgd verify --repo "$REPO" --all 2>&1)
is "$?" "1" "verify --all: exit 1 (could not check), not 3 (damaged)"
expect_error "restore of the id whose sentinel cannot be read" \
    "could not read the sentinel of backup $B: .*Permission denied" \
    pgd restore "$B" --repo "$REPO" --target-dir "$T/r_unread"
ok $(printf '%s' "$EXPECT_OUT" | grep -q "is damaged" && echo 1 || echo 0) "and does not call it damaged"
out=$(pgd verify --repo "$REPO" "$B" 2>&1)
is "$?" "1" "verify of that id: exit 1 (could not check)"
ok $(printf '%s' "$out" | grep -q "is damaged" && echo 1 || echo 0) "and does not call it damaged"
cp -p "$T/B.sentinel" "$REPO/backups/$B.done.json"

# ---- B's sentinel empty ----
: >"$REPO/backups/$B.done.json"
out=$(pgd list --repo "$REPO" 2>"$T/list.err")
is "$?" "0" "list succeeds with one empty sentinel"
like "$(head -1 <<<"$out")" "^ID +TYPE .* WAL START +VERIFIED +BAD PAGES +STATUS$" "the table has a status column, last"
like "$(grep "^$A" <<<"$out")" "^$A +full .* ok$" "the good backup is listed as ok"
like "$(grep "^$B" <<<"$out")" "^$B +- .* damaged: sentinel \"backups/$B.done.json\" is empty$" \
    "the damaged backup is marked, with the reason"
like "$(cat "$T/list.err")" "^pgdirect: warning: backup $B is damaged: sentinel \"backups/$B.done.json\" is empty$" \
    "list warns, naming the backup and the cause"

json=$(pgd list --repo "$REPO" --json 2>/dev/null)
is "$?" "0" "list --json succeeds"
is "$(python3 -c 'import json,sys; print(" ".join(b["id"] + ":" + b["status"] for b in json.load(sys.stdin)))' <<<"$json")" \
    "$A:ok $B:damaged" "--json: status of each backup"
like "$(python3 -c 'import json,sys; print(json.load(sys.stdin)[1]["reason"])' <<<"$json")" "is empty" \
    "--json: the reason of the damaged one"
is "$(python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["stop_lsn"] != "")' <<<"$json")" "True" \
    "--json: the good one keeps its fields"

expect_error "restore of the damaged id" "backup $B is damaged: sentinel \"backups/$B.done.json\" is empty" \
    pgd restore "$B" --repo "$REPO" --target-dir "$T/r_damaged"

port=$(restore_and_start LATEST "$T/r_latest")
ok $? "restore LATEST succeeds"
like "$(cat "$T/r_latest.restore.log")" "warning: skipping backup $B, newer than $A, because it is damaged: .*is empty" \
    "restore LATEST says it skipped the newer damaged backup"
like "$(cat "$T/r_latest.restore.log")" "restoring backup $A " "and restores the newest good one"
[ -n "$port" ] && is "$(pgbench_hash "$port")" "$src_hash" "the restored cluster recovers to the source's data"
[ -n "$port" ] && pg_stop "$T/r_latest"

# ---- B's sentinel corrupt (cut JSON), then a sentinel naming another backup ----
printf '{"id": "%s", "type": "fu' "$B" >"$REPO/backups/$B.done.json"
out=$(pgd list --repo "$REPO" 2>"$T/list.err")
is "$?" "0" "list succeeds with one corrupt sentinel"
like "$(grep "^$B" <<<"$out")" "^$B .* damaged: could not parse sentinel" "the corrupt one is marked damaged"
like "$(cat "$T/list.err")" "warning: backup $B is damaged: could not parse sentinel" "and named in a warning"
cp "$REPO/backups/$A.done.json" "$REPO/backups/$B.done.json"
out=$(pgd list --repo "$REPO" 2>/dev/null)
like "$(grep "^$B" <<<"$out")" "^$B .* damaged: sentinel .* names backup \"$A\"" \
    "a sentinel copied from another backup is damaged too"

# ---- every backup damaged ----
: >"$REPO/backups/$A.done.json"
: >"$REPO/backups/$B.done.json"
expect_error "restore LATEST with only damaged backups" \
    "no usable backup in repository .*: the 2 there are all damaged \(the newest, $B: sentinel .* is empty\)" \
    pgd restore LATEST --repo "$REPO" --target-dir "$T/r_none"

# ---- delete: a damaged backup is named by its id, and can go ----
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast >/dev/null 2>"$T/c.err" || bail "backup C failed"
C=$(backup_id "$T/c.err")
out=$(pgd delete --retain-full 1 --dry-run --repo "$REPO" 2>&1)
is "$?" "0" "delete --retain-full 1 --dry-run succeeds with damaged backups"
like "$(grep "backup $A" <<<"$out")" "^would remove backup $A: damaged .*started before $C, the oldest kept backup"     "a damaged backup older than the oldest kept one would go, named by its id"
out=$(pgd delete --backup "$B" --repo "$REPO" 2>&1)
is "$?" "0" "delete --backup of a damaged backup succeeds"
like "$out" "removed backup $B: named by --backup" "and says so"
ok $([ ! -e "$REPO/backups/$B.done.json" ] && [ ! -e "$REPO/backups/$B" ] && echo 0 || echo 1) \
    "its sentinel and directory are gone"
pgd delete --retain-full 1 --repo "$REPO" >"$T/del.out" 2>&1
is "$?" "0" "delete --retain-full 1 succeeds"
is "$(ls "$REPO/backups")" "$(printf '%s\n%s.done.json' "$C" "$C")" "only the good backup is left"
done_testing
