#!/usr/bin/env bash
# Backups from a hot standby. A primary archives to the repository; a streaming
# standby is seeded by `restore --standby --primary-conninfo` from a backup of the
# primary; a backup of the standby (taken while the primary writes) restored to a
# restore point made on the primary afterwards equals the primary there. A standby
# promoted during its backup fails the backup, which leaves nothing listed;
# --standby-only refuses a primary.
. "$(dirname "$0")/lib.sh"
setup_tmp
pg_init "$T/data"
# a primary_conninfo the primary ignores, inherited by its backups: the restore's must win
echo "primary_conninfo = 'port=1 application_name=inherited'" >>"$T/data/postgresql.conf"
pg_start "$T/data"
P=$PGPORT

as_pg "$PG_BIN/pgbench" -i -s 2 -q >/dev/null 2>&1 || bail "pgbench -i failed"
archive_all "$P"
nbackups() { pgd list --repo "$REPO" --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'; }
last() { pgd list --repo "$REPO" --json | python3 -c "import json,sys; print(json.load(sys.stdin)[-1]['$1'])"; }

# --standby-only on a primary: refused before anything is written, exit 1 (not a usage error)
out=$(pgd backup --repo "$REPO" --pgdata "$T/data" --standby-only 2>&1)
rc=$?
is "$rc" "1" "--standby-only on a primary exits 1"
like "$out" "^pgdirect: error: the server is a primary \(pg_is_in_recovery\(\) is false\): --standby-only" \
    "--standby-only on a primary says why"
is "$(ls "$REPO/backups" 2>/dev/null | wc -l)" "0" "--standby-only on a primary wrote nothing"

# the primary's backup seeds a streaming standby
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast >"$T/b1.log" 2>&1
ok $? "backup of the primary succeeds"
id1=$(last id)
is "$(last from_standby)" "False" "the primary's sentinel says it is not from a standby"
out=$(pgd restore "$id1" --repo "$REPO" --target-dir "$T/data_x" --primary-conninfo "port=$P" 2>&1)
is "$?" "2" "--primary-conninfo without --standby is a usage error"
like "$out" "needs --standby" "--primary-conninfo without --standby says why"
pgd restore "$id1" --repo "$REPO" --target-dir "$T/data_standby" --standby \
    --primary-conninfo "host=$T port=$P user=postgres application_name='seeded'" >"$T/r1.log" 2>&1
ok $? "restore --standby --primary-conninfo succeeds"
[ -f "$T/data_standby/standby.signal" ] && [ ! -e "$T/data_standby/recovery.signal" ]
ok $? "restore --standby writes standby.signal, not recovery.signal"
like "$(cat "$T/data_standby/postgresql.auto.conf")" \
    "primary_conninfo = 'host=$T port=$P user=postgres application_name=''seeded'''" \
    "primary_conninfo is written, its quotes doubled"
S=$(free_port)
cat >>"$T/data_standby/postgresql.auto.conf" <<CONF
port = $S
archive_mode = off
CONF
pg_start "$T/data_standby" "$S"
is "$(psql_at "$S" "SELECT pg_is_in_recovery()")" "t" "the seeded standby is in recovery"
streaming=no
for _ in $(seq 1 600); do
    [ "$(psql_at "$P" "SELECT count(*) FROM pg_stat_replication WHERE application_name = 'seeded' AND state = 'streaming'")" = "1" ] &&
        { streaming=yes; break; }
    sleep 0.2
done
is "$streaming" "yes" "the seeded standby streams from the primary"

# load on the primary, then a backup of the standby
as_pg "$PG_BIN/pgbench" -n -c 2 -t 300 >/dev/null 2>&1 || bail "pgbench failed"
# --checkpoint fast: a spread restartpoint could outlast wait_for_line once a timed checkpoint
# of the primary has been replayed
pgd backup --repo "$REPO" --pgdata "$T/data_standby" --dbname "port=$S" --standby-only \
    --checkpoint fast --archive-timeout 300 >"$T/b2.log" 2>&1 &
bpid=$!
wait_for_line "$T/b2.log" "waiting up to 300 s for WAL .* archived by its primary" "$bpid"
ok $? "the standby's backup says what it waits for"
# the standby's stop segment is complete only once the primary switches WAL
archive_all "$P"
wait "$bpid"
rc=$?
ok $rc "backup of the standby succeeds"
[ "$rc" -eq 0 ] || sed 's/^/# /' "$T/b2.log"
id2=$(last id)
isnt "$id2" "$id1" "the standby's backup is listed"
is "$(last from_standby)" "True" "its sentinel says it was taken from a standby"

as_pg "$PG_BIN/pgbench" -n -c 1 -t 200 >/dev/null 2>&1 || bail "pgbench failed"
hash=$(pgbench_hash "$P")
q "SELECT pg_create_restore_point('after_standby_backup')" >/dev/null
as_pg "$PG_BIN/pgbench" -n -c 1 -t 100 >/dev/null 2>&1 || bail "pgbench failed"
isnt "$(pgbench_hash "$P")" "$hash" "the primary changed after the restore point"
archive_all "$P"
port=$(restore_and_start "$id2" "$T/data_pitr" --target-name after_standby_backup --target-action promote)
ok $? "the standby's backup restores and recovers to the primary's restore point"
is "$(pgbench_hash "$port")" "$hash" "restored tables equal the primary at the restore point"
pg_stop "$T/data_pitr"

# a standby promoted during its backup: the backup fails and leaves nothing listed.
# --max-rate makes the read last long enough to promote while it runs.
before=$(nbackups)
size=$(du -sm "$T/data_standby/base" | cut -f1)
diag "standby base: $size MiB, read at 1 MiB/s"
pgd backup --repo "$REPO" --pgdata "$T/data_standby" --dbname "port=$S" --max-rate 1MiB \
    --checkpoint fast --archive-timeout 30 >"$T/b3.log" 2>&1 &
bpid=$!
wait_for_line "$T/b3.log" "backup started at WAL location" "$bpid"
ok $? "the backup of the standby started"
as_pg "$PG_BIN/pg_ctl" -D "$T/data_standby" -w -t 120 promote >/dev/null
ok $? "the standby is promoted during the backup"
running=$(kill -0 "$bpid" 2>/dev/null && echo yes || echo no)
is "$running" "yes" "the backup was still running after the promotion"
wait "$bpid"
rc=$?
is "$rc" "1" "the backup across a promotion exits 1"
like "$(cat "$T/b3.log")" "error: backup [0-9T]+F failed: the standby was promoted during the backup" \
    "it says the standby was promoted"
is "$(nbackups)" "$before" "the failed backup is not listed"
like "$(cat "$T/b3.log")" "removed what backup [0-9T]+F had written" "its files were removed"

done_testing
