#!/usr/bin/env bash
# A restore recovers along the newest timeline in the repository, as PostgreSQL does by default,
# and checks before writing anything that this timeline's history passes through the backup.
# The case: a test restore of an older backup, promoted at a restore point and archiving into
# the same repository, leaves timeline 2, which left timeline 1 before a later backup began.
# Restoring that later backup the default way would give a server that does not start (shown
# here by PostgreSQL itself); restore refuses instead, says why and how to go on
# (--target-timeline current), and the backup restores along its own timeline. The older
# backup follows timeline 2 to its end. verify says the same: exit 3 and a TIMELINE line for the
# later backup, and the older one's window following timeline 2. A damaged history file, a timeline with none and a bad
# value are refused by name.
. "$(dirname "$0")/lib.sh"
setup_tmp
pg_init "$T/data"
pg_start "$T/data"

backup_id() { # backup_id: the newest backup's id
    pgd list --repo "$REPO" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])'
}
rows() { psql_at "$1" "SELECT count(*) || ' ' || sum(i) FROM t"; }
# start_promoted DIR: start the restored DIR on a new port (FORK_PORT), archiving into the
# repository as its postgresql.conf says, and wait until its recovery has ended
start_promoted() {
    FORK_PORT=$(free_port)
    echo "port = $FORK_PORT" >>"$1/postgresql.auto.conf"
    pg_start "$1" "$FORK_PORT"
    for _ in $(seq 1 300); do
        [ "$(psql_at "$FORK_PORT" "SELECT pg_is_in_recovery()" 2>/dev/null)" = "f" ] && return
        sleep 0.2
    done
    bail "the server in $1 did not leave recovery"
}
b1_field() { pgd list --repo "$REPO" --json | python3 -c "import json,sys; print([b for b in json.load(sys.stdin) if b['id'] == '$B1'][0]['$1'])"; }

q "CREATE TABLE t (i int)"
q "INSERT INTO t SELECT generate_series(1, 1000)"
archive_all "$PGPORT"
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast >/dev/null 2>"$T/b0.err" ||
    bail "backup 0 failed: $(cat "$T/b0.err")"
B0=$(backup_id)
q "INSERT INTO t SELECT generate_series(1001, 2000)"
q "SELECT pg_create_restore_point('fork')" >/dev/null
q "INSERT INTO t SELECT generate_series(2001, 3000)"
archive_all "$PGPORT"
next_second # a second backup id
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast >/dev/null 2>"$T/b1.err" ||
    bail "backup 1 failed: $(cat "$T/b1.err")"
B1=$(backup_id)
isnt "$B1" "$B0" "two backups on timeline 1"
q "INSERT INTO t SELECT generate_series(3001, 4000)"
archive_all "$PGPORT"
END_TL1=$(rows "$PGPORT")
is "$END_TL1" "4000 8002000" "timeline 1 ends with 4,000 rows"
pg_stop "$T/data"

# before timeline 2 exists, the default restore of the later backup names no other timeline
pgd restore "$B1" --repo "$REPO" --target-dir "$T/before" >"$T/before.log" 2>&1
ok $? "before timeline 2: the later backup restores"
ok $(grep -q "recovery will follow timeline" "$T/before.log" && echo 1 || echo 0) \
    "and follows no other timeline"
ok $(grep -q "recovery_target_timeline" "$T/before/postgresql.auto.conf" && echo 1 || echo 0) \
    "and leaves recovery_target_timeline to PostgreSQL"

# ---- timeline 2: the older backup restored to the restore point, promoted, archiving here ----
pgd restore "$B0" --repo "$REPO" --target-dir "$T/fork" --target-name fork --target-action promote \
    --archive-mode preserve >"$T/fork.restore.log" 2>&1 || bail "restore of $B0 failed: $(tail -3 "$T/fork.restore.log")"
start_promoted "$T/fork"
is "$(psql_at "$FORK_PORT" "SELECT timeline_id FROM pg_control_checkpoint()")" "2" \
    "the promoted test restore runs on timeline 2"
psql_at "$FORK_PORT" "INSERT INTO t SELECT generate_series(5001, 5500)"
archive_all "$FORK_PORT"
psql_at "$FORK_PORT" "INSERT INTO t SELECT generate_series(5501, 5600)"
archive_all "$FORK_PORT"
END_TL2=$(rows "$FORK_PORT")
is "$END_TL2" "2600 5181300" "timeline 2: the 2,000 rows of the restore point and 600 of its own"
pg_stop "$T/fork"
history=$(ls "$REPO/wal/00000002/" | grep '^00000002\.history')
[ -n "$history" ] || bail "timeline 2's history file was not archived"

# ---- verify says so, and follows timeline 2 where a restore does ----
out=$(pgd verify --repo "$REPO" "$B1" 2>&1)
is "$?" "3" "verify of the later backup: exit 3"
like "$out" "TIMELINE: a restore the default way would fail: recovery would follow timeline 2, the newest PostgreSQL finds in the repository, which leaves the backup's timeline 1 at" \
    "verify: a TIMELINE line says why"
like "$out" "point-in-time window: from .* \(the end of segment 00000001[0-9A-F]{16}\)" \
    "verify: and gives the window along the backup's own timeline"
json=$(pgd verify --repo "$REPO" "$B1" --json 2>/dev/null)
is "$(echo "$json" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["ok"], d["backups"][0]["window"]["timeline_problem"][:32])')" \
    "False recovery would follow timeline 2" "verify --json: ok false, and the window's timeline_problem"
last_tl2=$(ls "$REPO/wal/00000002/" | grep -E '^00000002[0-9A-F]{16}' | sort | tail -1 | cut -c1-24)
out=$(pgd verify --repo "$REPO" "$B0" 2>&1)
is "$?" "0" "verify of the older backup: exit 0"
like "$out" "point-in-time window: from .* \(the end of segment $last_tl2\)" \
    "verify: its window follows timeline 2 to its last segment ($last_tl2)"
# timeline 2 without its copy of the segment it began in: recovery reads timeline 1's copy there,
# goes on along timeline 1, and cannot reach timeline 2's later segments
first_tl2=$(ls "$REPO/wal/00000002/" | grep -E '^00000002[0-9A-F]{16}' | sort | head -1)
[ "${first_tl2:0:24}" != "$last_tl2" ] || bail "timeline 2 has one segment only"
mv "$REPO/wal/00000002/$first_tl2" "$T/first_tl2.keep"
out=$(pgd verify --repo "$REPO" "$B0" 2>&1)
is "$?" "0" "timeline 2's first segment missing: verify exit 0"
like "$out" "point-in-time window: from .* \(the end of segment 00000001${first_tl2:8:16}\)" \
    "verify: the window ends with timeline 1's copy of that segment"
like "$out" "WAL gap: segment ${first_tl2:0:24} is missing \(the window ends there\); later WAL resumes at 00000002" \
    "verify: and names timeline 2's missing segment as the gap"
mv "$T/first_tl2.keep" "$REPO/wal/00000002/$first_tl2"

# ---- the later backup, the default way: refused before anything is written ----
out=$(pgd restore "$B1" --repo "$REPO" --target-dir "$T/r1" 2>&1)
is "$?" "1" "the later backup, following the newest timeline: exit 1"
is "$(printf '%s\n' "$out" | grep -c '^pgdirect: error: ')" "1" "one error line"
like "$out" "restore of backup $B1 failed: recovery would follow timeline 2, the newest PostgreSQL finds in the repository, which leaves the backup's timeline 1 at [0-9A-F]+/[0-9A-F]+, before the backup's end at [0-9A-F]+/[0-9A-F]+" \
    "it names the timelines and where they part"
like "$out" "--target-timeline current recovers along the backup's own timeline" "and says how to go on"
ok $([ -e "$T/r1" ] && echo 1 || echo 0) "nothing was written"
out=$(pgd restore "$B1" --repo "$REPO" --target-dir "$T/r1" --target-timeline 2 2>&1)
is "$?" "1" "--target-timeline 2: the same refusal"
like "$out" "recovery would follow timeline 2, which leaves the backup's timeline 1" "naming timeline 2"

# PostgreSQL agrees: the backup restored along its own timeline, then told to follow the newest
pgd restore "$B1" --repo "$REPO" --target-dir "$T/pgsays" --target-timeline current >/dev/null 2>&1 ||
    bail "restore --target-timeline current failed"
sed -i "s/^recovery_target_timeline = 'current'/recovery_target_timeline = 'latest'/" \
    "$T/pgsays/postgresql.auto.conf"
cat >>"$T/pgsays/postgresql.auto.conf" <<CONF
port = $(free_port)
archive_mode = off
CONF
as_pg "$PG_BIN/pg_ctl" -D "$T/pgsays" -l "$T/pgsays.log" -w -t 60 start >/dev/null 2>&1
isnt "$?" "0" "control: PostgreSQL following timeline 2 from the later backup does not start"
like "$(cat "$T/pgsays.log")" "restored log file \"00000002.history\" from archive" \
    "control: it read timeline 2's history"
fatal=$(grep -m1 "FATAL:" "$T/pgsays.log")
like "$fatal" "FATAL: " "control: and its recovery failed"
diag "PostgreSQL said: ${fatal#*FATAL:  }"

# ---- the later backup along its own timeline ----
port=$(restore_and_start "$B1" "$T/r1" --target-timeline current)
ok $? "--target-timeline current: the later backup restores and recovers"
like "$(cat "$T/r1/postgresql.auto.conf")" "recovery_target_timeline = 'current'" \
    "with recovery_target_timeline = 'current'"
is "$(rows "$port")" "$END_TL1" "to the end of timeline 1: every row of the original"
pg_stop "$T/r1"

# ---- the older backup: the default follows timeline 2 to its end ----
port=$(restore_and_start "$B0" "$T/r0")
ok $? "the older backup restores following the newest timeline"
like "$(cat "$T/r0.restore.log")" "recovery will follow timeline 2 \(the newest PostgreSQL finds in the repository\), which leaves the backup's timeline 1 at [0-9A-F]+/[0-9A-F]+; the backup ends at [0-9A-F]+/[0-9A-F]+" \
    "and says which timeline it follows"
is "$(rows "$port")" "$END_TL2" "to the end of timeline 2"
pg_stop "$T/r0"

# ---- refused by name ----
obj="$REPO/wal/00000002/$history"
cp "$obj" "$T/history.keep"
flip_byte "$obj" 12
out=$(pgd restore "$B0" --repo "$REPO" --target-dir "$T/r2" 2>&1)
is "$?" "1" "a damaged history file of the newest timeline: exit 1"
like "$out" "the history of timeline 2, which recovery would read: .*00000002\.history" \
    "naming the file"
ok $([ -e "$T/r2" ] && echo 1 || echo 0) "nothing was written"
# recovery along timeline 1 reads it too, at its end, to choose its next timeline
out=$(pgd restore "$B1" --repo "$REPO" --target-dir "$T/r2" --target-timeline current 2>&1)
is "$?" "1" "the damaged history file, --target-timeline current: exit 1 too"
like "$out" "the history of timeline 2, which recovery would read: .*PostgreSQL reads it whatever --target-timeline says" \
    "saying that no --target-timeline avoids it"
out=$(pgd verify --repo "$REPO" "$B0" 2>&1)
is "$?" "3" "verify with the damaged history file: exit 3"
like "$out" "TIMELINE: a restore would fail: the history of timeline 2" "verify: naming it"
cp "$T/history.keep" "$obj"
out=$(pgd restore "$B0" --repo "$REPO" --target-dir "$T/r2" --target-timeline 7 2>&1)
is "$?" "1" "--target-timeline 7, which has no history file: exit 1"
like "$out" "timeline 7 has no history file in repository .*: PostgreSQL would refuse to start \(\"recovery target timeline 7 does not exist\"\)" \
    "it says so"
out=$(pgd restore "$B0" --repo "$REPO" --target-dir "$T/r2" --target-timeline foo 2>&1)
is "$?" "2" "--target-timeline foo: a usage error (exit 2)"
like "$out" '^pgdirect: error: invalid value "foo" for option "--target-timeline": expected latest, current or a timeline number' \
    "it says what it expects"
# ---- a test restore promoted right at the later backup's end: timeline 3 begins inside the
# backup's stop segment, with its own copy of that segment, which recovery reads ----
STOP_LSN=$(b1_field stop_lsn)
STOP_WAL=$(b1_field stop_wal)
pgd restore "$B1" --repo "$REPO" --target-dir "$T/fork3" --target-lsn "$STOP_LSN" --target-timeline current \
    --target-action promote --archive-mode preserve >"$T/fork3.restore.log" 2>&1 || bail "restore for timeline 3 failed"
echo "recovery_target_inclusive = off" >>"$T/fork3/postgresql.auto.conf"
start_promoted "$T/fork3"
psql_at "$FORK_PORT" "INSERT INTO t SELECT generate_series(7001, 7100)"
archive_all "$FORK_PORT"
pg_stop "$T/fork3"
copy="$REPO/wal/00000003/$(ls "$REPO/wal/00000003/" | grep "^00000003${STOP_WAL:8}")"
[ -f "$copy" ] || bail "timeline 3 has no copy of the stop segment $STOP_WAL: $(ls "$REPO/wal/00000003/")"
out=$(pgd verify --repo "$REPO" "$B1" 2>&1)
is "$?" "0" "timeline 3 begins in the later backup's stop segment: verify exit 0"
like "$out" "point-in-time window: from .* \(the end of segment 00000003[0-9A-F]{16}\)" \
    "verify: its window follows timeline 3"
flip_byte "$copy" 4000
out=$(pgd verify --repo "$REPO" "$B1" 2>&1)
is "$?" "3" "timeline 3's copy of the stop segment damaged: verify exit 3"
like "$out" "TIMELINE: a restore the default way would fail: the copy of the stop segment on a newer timeline, 00000003${STOP_WAL:8}, is damaged" \
    "verify: naming timeline 3's copy, which a default restore reads first"
like "$out" "point-in-time window: from .* \(the end of segment 00000001[0-9A-F]{16}\)" \
    "verify: and the window along timeline 1"
done_testing
