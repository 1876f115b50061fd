#!/usr/bin/env bash
# A DBA's first hour (issue 32): the usual mistakes of a new user, each answered before it
# costs a day later.
# - A test restore, started and promoted, archives nothing into the production repository:
#   restore writes archive_mode = off (the positive control, --archive-mode preserve, does
#   archive a new timeline). The stray timeline such a restore leaves is named by check and
#   backup; restore LATEST of a later backup refuses it (PostgreSQL would not start);
#   delete --timeline N removes it (refused while a backup is on it), and the restore works.
. "$(dirname "$0")/lib.sh"
setup_tmp
pg_init "$T/data"
pg_start "$T/data"

newest() { pgd list --repo "$REPO" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])'; }
rows() { psql_at "$1" "SELECT count(*) || ' ' || sum(i) FROM t"; }
# start_restored DIR: start a restored cluster on a new port (PORT_R) as restore left it, and
# wait until its recovery has ended (no target: it promotes at the end of the archive)
start_restored() {
    PORT_R=$(free_port)
    echo "port = $PORT_R" >>"$1/postgresql.auto.conf"
    pg_start "$1" "$PORT_R"
    for _ in $(seq 1 600); do
        [ "$(psql_at "$PORT_R" "SELECT pg_is_in_recovery()" 2>/dev/null)" = "f" ] && return
        sleep 0.1
    done
    bail "the server in $1 did not leave recovery"
}

q "CREATE TABLE t (i int)"
q "INSERT INTO t SELECT generate_series(1, 1000)"
archive_all "$PGPORT"
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast >/dev/null 2>"$T/b1.err" ||
    bail "backup 1 failed: $(cat "$T/b1.err")"
B1=$(newest)

# ---- a test restore does not archive into the repository ----
pgd restore "$B1" --repo "$REPO" --target-dir "$T/r1" >"$T/r1.restore.log" 2>&1
ok $? "a test restore with the defaults"
like "$(cat "$T/r1.restore.log")" "the restored cluster will not archive WAL \(archive_mode = off" \
    "it says the restored cluster will not archive, and why"
is "$(grep -c "^archive_mode = 'off'$" "$T/r1/postgresql.auto.conf")" "1" \
    "postgresql.auto.conf sets archive_mode = off"
start_restored "$T/r1"
is "$(psql_at "$PORT_R" "SHOW archive_mode")" "off" "the started test restore does not archive"
is "$(psql_at "$PORT_R" "SELECT timeline_id FROM pg_control_checkpoint()")" "2" \
    "it was promoted onto timeline 2"
psql_at "$PORT_R" "INSERT INTO t VALUES (-1); SELECT pg_switch_wal()" >/dev/null
pg_stop "$T/r1" # a fast shutdown archives what is ready first, where archiving is on
is "$(ls "$REPO/wal" | tr '\n' ' ')" "00000001 " "and the repository holds no timeline 2"

# the control: the same steps with --archive-mode preserve archive timeline 2
pgd restore "$B1" --repo "$REPO" --target-dir "$T/r2" --archive-mode preserve >"$T/r2.restore.log" 2>&1
ok $? "a restore with --archive-mode preserve"
is "$(grep -c "archive_mode = 'off'" "$T/r2/postgresql.auto.conf")" "0" "writes no archive_mode"
start_restored "$T/r2"
R2_PORT=$PORT_R
psql_at "$R2_PORT" "INSERT INTO t VALUES (-2); SELECT pg_switch_wal()" >/dev/null
for _ in $(seq 1 300); do [ -e "$REPO/wal/00000002/00000002.history.lz4" ] && break; sleep 0.1; done
ok $([ -e "$REPO/wal/00000002/00000002.history.lz4" ] && echo 0 || echo 1) \
    "the control: started and promoted, it archives timeline 2's history into the repository"

# a backup on timeline 2 (of the promoted control), which will keep it from delete --timeline
pgd backup --repo "$REPO" --pgdata "$T/r2" --checkpoint fast --dbname "port=$R2_PORT" >/dev/null 2>"$T/b3.err" ||
    bail "backup of timeline 2 failed: $(cat "$T/b3.err")"
B3=$(newest)

# ---- the stray timeline is named, and refused by restore ----
q "INSERT INTO t SELECT generate_series(1001, 2000)"
archive_all "$PGPORT"
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast >/dev/null 2>"$T/b2.err"
ok $? "production's next backup succeeds"
like "$(cat "$T/b2.err")" "warning: repository \"$REPO\" holds timeline 2 \(00000002.history\), newer than the server's timeline 1: .*pgdirect delete --timeline 2" \
    "and warns of the stray timeline, saying how to remove it"
B2=$(newest)
out=$(pgd check --repo "$REPO" 2>&1)
like "$out" "warning +timelines +repository \"$REPO\" holds timeline 2" "check warns of it too"
expect_error "restore LATEST across the stray timeline" \
    "recovery would follow timeline 2, the newest PostgreSQL finds in the repository, which leaves the backup's timeline 1" \
    pgd restore LATEST --repo "$REPO" --target-dir "$T/r3"

# ---- delete --timeline ----
expect_error "delete --timeline 2 while a backup is on it" "timeline 2 not removed: backup $B3 is on it" \
    pgd delete --repo "$REPO" --timeline 2
pg_stop "$T/r2"
pgd delete --repo "$REPO" --backup "$B3" >/dev/null 2>&1 || bail "could not delete $B3"
expect_error "--timeline 1" "invalid value \"1\" for option \"--timeline\"" pgd delete --repo "$REPO" --timeline 1
pgd delete --repo "$REPO" --timeline 1 >/dev/null 2>&1
is "$?" "2" "--timeline 1 is a usage error (exit 2)"
out=$(pgd delete --repo "$REPO" --timeline 2 --dry-run 2>&1)
ok $? "delete --timeline 2 --dry-run"
like "$out" "would remove wal/00000002/00000002.history.lz4" "lists the history file"
ok $([ -e "$REPO/wal/00000002/00000002.history.lz4" ] && echo 0 || echo 1) "and removes nothing"
out=$(pgd delete --repo "$REPO" --timeline 2 2>&1)
ok $? "delete --timeline 2" || diag "$out"
like "$out" "removed timeline 2: [0-9]+ files" "says what it removed"
ok $([ ! -e "$REPO/wal/00000002" ] || [ -z "$(ls "$REPO/wal/00000002")" ] && echo 0 || echo 1) \
    "timeline 2's directory is empty"
expect_error "delete --timeline 2 again" "holds nothing of timeline 2" pgd delete --repo "$REPO" --timeline 2
out=$(pgd check --repo "$REPO" 2>&1)
like "$out" "ok +timelines +no timeline newer than the server's \(1\)" "check: no stray timeline now"
pgd restore LATEST --repo "$REPO" --target-dir "$T/r4" >"$T/r4.restore.log" 2>&1
ok $? "restore LATEST works again" || sed 's/^/# /' "$T/r4.restore.log"
start_restored "$T/r4"
is "$(rows "$PORT_R")" "$(rows "$PGPORT")" "and recovers production's data, not the test restore's"
pg_stop "$T/r4"

done_testing
