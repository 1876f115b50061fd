#!/usr/bin/env bash
# A delta's parent while the delta runs (--max-rate keeps it running; the test waits for it
# to be reading, with a deadline):
# - full F1, full F2, then backup --delta --delta-from F1: its claim names F1 as its parent;
#   delete --retain-full 1 exits 0 and keeps F1, saying it is the parent of the running
#   backup; delete --backup F1 (with or without --with-dependents) is refused; the delta
#   completes, list shows it ok, verify exits 0, and it restores with the source's data;
# - list marks a delta whose parent is missing "chain broken" (not ok);
# - a delta whose parent's sentinel is removed by hand while it runs fails (exit 1), names
#   the parent, writes no sentinel and leaves nothing under its id.
. "$(dirname "$0")/lib.sh"
setup_tmp
pg_init "$T/data"
pg_start "$T/data"
as_pg "$PG_BIN/pgbench" -i -s 2 -q >/dev/null 2>&1 || bail "pgbench -i failed"
archive_all "$PGPORT"

newest() { ls "$REPO/backups" | sed -n 's/\.done\.json$//p' | sort | tail -1; }
backup() { pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --progress off "$@"; }
# the id of the backup directory without a sentinel (the running delta)
running_id() {
    local d
    for d in "$REPO"/backups/*D; do
        [ -d "$d" ] && [ ! -e "$d.done.json" ] && basename "$d"
    done
}
# start_slow_delta NAME PARENT: a delta on PARENT in the background, slowed down by --max-rate
# (pgbench scale 2 is about 35 MB: some 15 s at 2 MiB/s); waits until it is reading, sets PID
start_slow_delta() {
    backup --delta --delta-from "$2" --max-rate 2MiB --concurrency 1 >/dev/null 2>"$T/$1.err" &
    PID=$!
    wait_for_line "$T/$1.err" "backup started at WAL location" "$PID" ||
        bail "the delta on $2 did not start reading: $(tail -2 "$T/$1.err")"
}

backup >/dev/null 2>"$T/f1.err" || bail "backup F1 failed: $(tail -1 "$T/f1.err")"
F1=$(newest)
backup >/dev/null 2>"$T/f2.err" || bail "backup F2 failed: $(tail -1 "$T/f2.err")"
F2=$(newest)
isnt "$F2" "$F1" "two full backups ($F1, $F2)"
q "UPDATE pgbench_accounts SET filler = 'changed' WHERE aid % 100 = 0"
hash=$(pgbench_hash "$PGPORT")

# ---- a delta on F1 runs while delete --retain-full 1 runs ----
start_slow_delta d1 "$F1"
D=$(running_id)
like "$D" '^[0-9]{8}T[0-9]{6}D$' "the delta on $F1 is running ($D)"
is "$(jq -r '.parent' "$REPO/backups/$D/claim.json")" "$F1" "its claim names its parent"
pgd delete --repo "$REPO" --retain-full 1 >"$T/del.out" 2>"$T/del.err"
is "$?" "0" "delete --retain-full 1 while it runs exits 0"
like "$(cat "$T/del.out")" "^kept backup $F1: parent of running backup $D\$" \
    "and keeps $F1, the parent of the running delta, saying why"
ok "$([ -e "$REPO/backups/$F1.done.json" ] && [ -e "$REPO/backups/$F1/manifest.json" ] && echo 0 || echo 1)" \
    "$F1's sentinel and manifest are still there"
like "$(cat "$T/del.out")" "keep all WAL: backup $D may still be running" "and all WAL"
pgd delete --repo "$REPO" --backup "$F1" >"$T/del1.out" 2>"$T/del1.err"
isnt "$?" "0" "delete --backup $F1 is refused"
like "$(cat "$T/del1.err")" "backup $F1 cannot be removed: it is the parent of running backup $D" "saying why"
pgd delete --repo "$REPO" --backup "$F1" --with-dependents >"$T/del2.out" 2>"$T/del2.err"
isnt "$?" "0" "so is delete --backup $F1 --with-dependents"
like "$(cat "$T/del2.err")" "parent of running backup $D" "for the same reason"
ok "$(kill -0 "$PID" 2>/dev/null && echo 0 || echo 1)" "the delta was still running through all three"
wait "$PID"
is "$?" "0" "the delta completes"
like "$(cat "$T/d1.err")" "backup $D is a delta of $F1" "on $F1"
like "$(pgd list --repo "$REPO" | grep "^$D ")" " ok\$" "list shows it ok"
pgd verify "$D" --repo "$REPO" >"$T/verify.out" 2>&1
is "$?" "0" "verify $D exits 0: its chain is whole"
port=$(restore_and_start "$D" "$T/r1")
ok $? "it restores"
[ -n "$port" ] && is "$(pgbench_hash "$port")" "$hash" "with the source's data"
[ -n "$port" ] && pg_stop "$T/r1"

# ---- list: a delta whose parent is missing is not ok ----
mv "$REPO/backups/$F1.done.json" "$T/f1.saved"
like "$(pgd list --repo "$REPO" 2>/dev/null | grep "^$D ")" "chain broken: parent $F1 is missing\$" \
    "list shows a delta whose parent is missing as chain broken"
is "$(pgd list --repo "$REPO" --json 2>/dev/null | jq -r --arg d "$D" '.[] | select(.id == $d) | .status + ": " + .reason')" \
    "chain broken: parent $F1 is missing" "list --json too"
mv "$T/f1.saved" "$REPO/backups/$F1.done.json"

# ---- the parent's sentinel removed by hand while a delta on it runs ----
start_slow_delta d2 "$F2"
D2=$(running_id)
like "$D2" '^[0-9]{8}T[0-9]{6}D$' "a delta on $F2 is running ($D2)"
mv "$REPO/backups/$F2.done.json" "$T/f2.saved"
wait "$PID"
is "$?" "1" "it fails once its parent's sentinel is gone"
like "$(tail -1 "$T/d2.err")" "backup $D2 failed: parent backup $F2 is no longer in the repository" \
    "naming the parent"
ok "$([ ! -e "$REPO/backups/$D2.done.json" ] && echo 0 || echo 1)" "it wrote no sentinel"
ok "$([ ! -e "$REPO/backups/$D2" ] && echo 0 || echo 1)" "and left nothing under its id"
like "$(cat "$T/d2.err")" "removed what backup $D2 had written" "saying it removed what it wrote"
mv "$T/f2.saved" "$REPO/backups/$F2.done.json"
is "$(newest)" "$D" "the newest backup is $D again, not the failed delta"
done_testing
