#!/usr/bin/env bash
# WAL of another cluster under the same names. Cluster A archives into the repository;
# cluster B (another system identifier) archives elsewhere, and is backed up into A's
# repository by mistake. A has archived segments of the very names B's backup needs:
# - the backup's archive wait finds them, reads the start segment's long page header,
#   and fails (exit 1) naming the segment and both system identifiers; nothing is
#   published (no sentinel);
# - a backup of B taken with --archive-check=off is published, and verify then exits 3,
#   saying that WAL segment is of another system and the backup is not restorable;
# - A's own backup in the same repository verifies (exit 0).
. "$(dirname "$0")/lib.sh"
setup_tmp
pg_init "$T/a"
A_PORT=$PGPORT
pg_start "$T/a"
q "CREATE TABLE x (i int)"
for _ in 1 2 3 4 5 6; do
    q "INSERT INTO x VALUES (1)"
    q "SELECT pg_switch_wal()" >/dev/null
done
pgd backup --repo "$REPO" --pgdata "$T/a" --checkpoint fast >/dev/null 2>"$T/a.err" ||
    bail "backup of A failed: $(tail -2 "$T/a.err")"
A_ID=$(ls "$REPO/backups" | sed -n 's/\.done\.json$//p' | sort | tail -1)
archive_all "$A_PORT"

pg_init "$T/b"
B_PORT=$PGPORT
echo "archive_command = '/bin/true'" >>"$T/b/postgresql.conf" # its WAL goes "elsewhere"
pg_start "$T/b" "$B_PORT"
psql_at "$B_PORT" "CREATE TABLE y AS SELECT g FROM generate_series(1, 1000) g" >/dev/null
a_sys=$(psql_at "$A_PORT" "SELECT system_identifier FROM pg_control_system()")
b_sys=$(psql_at "$B_PORT" "SELECT system_identifier FROM pg_control_system()")
isnt "$b_sys" "$a_sys" "A and B are two systems"
count_done() { ls "$REPO/backups" | grep -c '\.done\.json$'; }
before=$(count_done)

out=$(PGPORT=$B_PORT pgd backup --repo "$REPO" --pgdata "$T/b" --checkpoint fast --archive-timeout 30 2>&1)
is "$?" "1" "a backup of B into A's repository fails"
like "$(printf '%s\n' "$out" | grep 'error:')" \
    "WAL file \"[0-9A-F]{24}\" in repository .* is of another system \(system identifier $a_sys, not this cluster's $b_sys\)" \
    "naming the segment and both system identifiers"
is "$(count_done)" "$before" "and publishes no backup"

PGPORT=$B_PORT pgd backup --repo "$REPO" --pgdata "$T/b" --checkpoint fast --archive-check=off >/dev/null 2>"$T/b2.err"
is "$?" "0" "with --archive-check=off the backup of B is published"
B_ID=$(ls "$REPO/backups" | sed -n 's/\.done\.json$//p' | sort | tail -1)
start_wal=$(jq -r .start_wal "$REPO/backups/$B_ID.done.json")
ls "$REPO/wal/${start_wal:0:8}" 2>/dev/null | grep -q "^$start_wal" || bail "A has not archived $start_wal: the test needs it"
out=$(pgd verify "$B_ID" --repo "$REPO" 2>&1)
is "$?" "3" "verify of that backup exits 3"
like "$out" "WAL segment $start_wal in the repository is of another system \(system identifier $a_sys, not the backup's $b_sys\)" \
    "naming the segment and both system identifiers"
unlike_restorable=$(printf '%s\n' "$out" | grep -c 'NOT restorable')
is "$unlike_restorable" "1" "and saying it is not restorable"
pgd verify "$A_ID" --repo "$REPO" >/dev/null 2>&1
is "$?" "0" "A's own backup in the same repository verifies"
pg_stop "$T/b"
pg_stop "$T/a"
done_testing
