#!/usr/bin/env bash
# A backup that fails after its pipeline (the archive wait, the stop call,
# the metadata uploads) removes everything it wrote under its id: nothing of
# it is left in the repository, it exits non-zero with one error line. When
# the removal itself fails, a warning names what is left and the error line
# still gives the original cause.
. "$(dirname "$0")/lib.sh"
setup_tmp
pg_init "$T/data"
pg_start "$T/data"
as_pg "$PG_BIN/pgbench" -i -s 2 -q >/dev/null 2>&1 || bail "pgbench -i failed"
archive_all "$PGPORT"

# archive_command through a script: it can archive normally, not at all, or wait
cat >"$T/archive.sh" <<SH
#!/bin/sh
# \$1: the WAL file's path. Mode from $T/archive.mode: push, skip (claims success), fail
mode=\$(cat "$T/archive.mode" 2>/dev/null || echo push)
while [ -e "$T/archive.hold" ]; do sleep 0.1; done
case \$mode in
skip) exit 0 ;;
fail) exit 1 ;;
esac
exec "$PGD" wal-push --repo "$REPO" "\$1"
SH
chmod 755 "$T/archive.sh"
echo push >"$T/archive.mode"
chown postgres "$T/archive.sh" "$T/archive.mode"
reload_and_wait archive_command "$T/archive.sh %p"
is "$(q 'SHOW archive_command')" "$T/archive.sh %p" "archive_command goes through the test's script"
archive_all "$PGPORT"

# What is under backups/ (the repository has no backup yet, so: nothing).
leftovers() { ls -A "$REPO/backups" 2>/dev/null | tr '\n' ' '; }
error_lines() { printf '%s\n' "$1" | grep -c '^pgdirect: error: '; }

# check_failed DESCRIPTION RC OUTPUT REGEX: non-zero exit, one error line saying why, nothing left
check_failed() {
    isnt "$2" "0" "$1: non-zero exit"
    is "$(error_lines "$3")" "1" "$1: one error line"
    like "$(printf '%s\n' "$3" | grep '^pgdirect: error: ')" "$4" "$1: the error says why"
    is "$(leftovers)" "" "$1: nothing of the backup is left in the repository"
    like "$3" "removed what backup [0-9T]+F had written" "$1: says it removed what it wrote"
}

# ---- the archive wait times out: archive_command claims success but archives nothing ----
echo skip >"$T/archive.mode"
out=$(pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --archive-timeout 1 2>&1)
check_failed "archive wait timeout" "$?" "$out" "was not archived to repository .* within 1 s"

# ---- archive_command fails: refused before the cluster is read (backup/archive_probe.h) ----
echo fail >"$T/archive.mode"
out=$(timeout 120 runuser -u postgres -- env ASAN_OPTIONS="$ASAN_OPTIONS" PGHOST="$T" PGPORT="$PGPORT" \
    PGUSER=postgres "$PGD" backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast \
    --archive-timeout 1 2>&1)
rc=$?
isnt "$rc" "124" "a failing archive_command: the backup ends by itself (no endless wait in the stop call)"
isnt "$rc" "0" "failing archive_command: non-zero exit"
is "$(error_lines "$out")" "1" "failing archive_command: one error line"
like "$(printf '%s\n' "$out" | grep '^pgdirect: error: ')" \
    "archive_command failed while WAL file \"[0-9A-F]{24}\" waited to reach repository .*\(checked before reading the cluster; --archive-check off skips it\)" \
    "failing archive_command: the error says why, before the cluster is read"
is "$(leftovers)" "" "failing archive_command: nothing of the backup is left in the repository"
is "$(printf '%s\n' "$out" | grep -c 'backup started')" "0" "failing archive_command: and nothing was read"
echo push >"$T/archive.mode"
archive_all "$PGPORT"

# ---- faults after the pipeline, while the stop call waits for the archiver ----
# start_held_backup: a backup whose stop call blocks until $T/archive.hold goes; sets BPID
start_held_backup() {
    local before
    before=$(ls "$REPO/backups" 2>/dev/null)
    touch "$T/archive.hold"
    pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --archive-check=off \
        >"$T/held.log" 2>&1 &
    BPID=$!
    waiting=no
    for _ in $(seq 1 600); do
        if [ "$(q "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pgdirect'
                   AND wait_event = 'BackupWaitWalArchive'")" = 1 ]; then
            waiting=yes
            break
        fi
        sleep 0.1
    done
    HELD_ID=$(ls "$REPO/backups" | grep -vxF -e "$before" -e '' | grep -v '\.json$' | head -1)
}
finish_held_backup() { # sets RC and OUT
    rm -f "$T/archive.hold"
    wait "$BPID"
    RC=$?
    OUT=$(cat "$T/held.log")
}

start_held_backup
is "$waiting" "yes" "the backup's stop call is waiting for the archiver"
cmp_ok "$(ls "$REPO/backups/$HELD_ID" | grep -c '^part_')" ">" "0" "its partitions are written"
q "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'pgdirect'" >/dev/null
finish_held_backup
check_failed "session killed in the stop call" "$RC" "$OUT" "pg_backup_stop"

start_held_backup
is "$waiting" "yes" "second backup waits in its stop call"
mkdir "$REPO/backups/$HELD_ID/backup_label" && chown postgres "$REPO/backups/$HELD_ID/backup_label"
finish_held_backup
check_failed "metadata upload fails" "$RC" "$OUT" "backup_label"

# the repository turns read-only: nothing can be removed either, and a warning says what is left
start_held_backup
is "$waiting" "yes" "third backup waits in its stop call"
chmod 555 "$REPO/backups/$HELD_ID"
finish_held_backup
chmod 755 "$REPO/backups/$HELD_ID"
isnt "$RC" "0" "read-only repository: non-zero exit"
is "$(error_lines "$OUT")" "1" "read-only repository: one error line"
like "$(printf '%s\n' "$OUT" | grep '^pgdirect: error: ')" "backup $HELD_ID failed: .*backup_label.*Permission denied" \
    "read-only repository: the error line gives the original cause, not the removal's"
warning=$(printf '%s\n' "$OUT" | grep '^pgdirect: warning: could not remove backup')
like "$warning" "could not remove backup $HELD_ID .*Permission denied; left behind: backups/$HELD_ID/ with [0-9]+ objects: .*part_0001" \
    "read-only repository: a warning names what is left"
left=$(ls "$REPO/backups/$HELD_ID" | wc -l)
like "$warning" "with $left objects" "and the count is what is really there"
ok $([ ! -e "$REPO/backups/$HELD_ID.done.json" ] && echo 0 || echo 1) "no sentinel for it"
is "$(pgd list --repo "$REPO" --json | python3 -c 'import json,sys; print(len([b for b in json.load(sys.stdin) if b["status"] not in ("running", "interrupted", "unknown")]))')" "0" \
    "list shows no complete backup"
rm -rf "${REPO:?}/backups/$HELD_ID"

# ---- SIGTERM in the middle of the pipeline: the run stops, removes what it wrote, dies of it ----
# zstd at its slowest level keeps the backup reading long enough to be interrupted
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --compression zstd \
    --compression-level 19 --concurrency 1 >"$T/term.log" 2>&1 &
pid=$!
writing=no
for _ in $(seq 1 600); do
    if ls "$REPO"/backups/*/part_*.tmp.* >/dev/null 2>&1; then writing=yes; break; fi
    sleep 0.1
done
is "$writing" "yes" "the backup to be interrupted is writing its first partition"
victim=$(pgrep -f "^$PGD backup")
is "$(echo $victim | wc -w)" "1" "found the backup's process"
kill -TERM $victim
wait "$pid"
rc=$?
OUT=$(cat "$T/term.log")
isnt "$rc" "0" "SIGTERM: non-zero exit"
is "$(error_lines "$OUT")" "1" "SIGTERM: one error line"
like "$(printf '%s\n' "$OUT" | grep '^pgdirect: error: ')" "backup [0-9T]+F failed: interrupted by SIGTERM$" \
    "SIGTERM: the error says so"
is "$(leftovers)" "" "SIGTERM: nothing of the backup is left in the repository"
# the server process of the session ends on its own schedule, after pgdirect
session_gone() { [ "$(q "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pgdirect'")" = 0 ]; }
for _ in $(seq 1 300); do session_gone && break; sleep 0.1; done
ok $(session_gone && echo 0 || echo 1) "SIGTERM: the backup's session is gone"

# ---- a full disk: the pipeline fails, what it wrote goes ----
mkdir "$T/small" && mount -t tmpfs -o size=4m tmpfs "$T/small" && chown postgres "$T/small" ||
    bail "could not mount a small tmpfs"
trap 'umount "$T/small" 2>/dev/null; cleanup_all' EXIT
out=$(pgd backup --repo "$T/small" --pgdata "$T/data" --checkpoint fast --archive-check=off \
    --compression none 2>&1)
isnt "$?" "0" "full disk: non-zero exit"
is "$(error_lines "$out")" "1" "full disk: one error line"
like "$(printf '%s\n' "$out" | grep '^pgdirect: error: ')" "No space left on device" "full disk: the error says why"
is "$(ls -A "$T/small/backups" 2>/dev/null | tr '\n' ' ')" "" "full disk: nothing of the backup is left"
umount "$T/small"

# positive control: the same repository and server take a complete backup
archive_all "$PGPORT"
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast >/dev/null 2>"$T/good.err"
ok $? "a backup after the failures succeeds"
is "$(pgd list --repo "$REPO" --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" "1" \
    "list shows exactly that backup"
done_testing
