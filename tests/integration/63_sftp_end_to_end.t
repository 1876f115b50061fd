#!/usr/bin/env bash
# The end-to-end scenario of 12_s3.t on an sftp:// repository served by the
# test's own sshd (lib_sftp.sh), with the key and known_hosts given by
# option everywhere (archive_command, restore_command) and readable by
# postgres only:
# - WAL archived by wal-push, directly and then with --archive-async; a full
#   and a delta backup under pgbench load; a restore of the delta to a named
#   restore point, with wal-fetch prefetching (PGDIRECT_PREFETCH), whose data
#   equal the source's; restore_command carries the two SFTP options;
# - list, verify (clean), check; a byte flipped in a stored partition on the
#   server's disk found by verify (exit 3) and by restore (non-zero, no
#   target directory left behind); a backup's peak RSS under --max-memory;
# - faults: sshd and its sessions killed mid-backup: the backup fails naming
#   the server, nothing is listed as complete that cannot be restored, and
#   delete --garbage (age 0) removes all it left; wal-fetch while sshd is
#   down exits 254, never 1.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_sftp.sh"
setup_tmp
trap 'sftp_kill; cleanup_all' EXIT
unset SSH_AUTH_SOCK
sftp_start
REPO=$SFTP_URI
SRV="$T/sftprepo" # the repository as the server's disk holds it
O="--sftp-private-key-file $SFTP_KEY --sftp-known-hosts $SFTP_KNOWN_HOSTS"

# archive_all of lib.sh, for this repository: wal-fetch finds the segment
archive_all() {
    local seg
    seg=$(psql_at "$1" "SELECT pg_walfile_name(pg_switch_wal())")
    for _ in $(seq 1 600); do
        # shellcheck disable=SC2086
        pgd wal-fetch --repo "$REPO" $O "$seg" "$T/probe_wal" 2>/dev/null && return 0
        sleep 0.2
    done
    bail "segment $seg was not archived"
}
ids() { pgd list --repo "$REPO" $O --json | python3 -c 'import json,sys; print(" ".join(b["id"] + ":" + b["status"] for b in json.load(sys.stdin)))'; }

pg_init "$T/data"
echo "archive_command = '$PGD wal-push --repo $REPO $O %p'" >>"$T/data/postgresql.conf"
pg_start "$T/data"
as_pg "$PG_BIN/pgbench" -i -s 2 -q >/dev/null 2>&1 || bail "pgbench -i failed"
seg=$(psql_at "$PGPORT" "SELECT pg_walfile_name(pg_switch_wal())")
cp "$T/data/pg_wal/$seg" "$T/seg.source"
archive_all "$PGPORT"
pgd wal-fetch --repo "$REPO" $O "$seg" "$T/seg.fetched"
is "$?" "0" "wal-fetch finds segment $seg that archive_command pushed over SFTP"
cmp -s "$T/seg.source" "$T/seg.fetched"
ok $? "and it is byte-identical to the server's"
ok $([ -f "$SRV/wal/00000001/$seg.lz4" ] && echo 0 || echo 1) "the server's disk holds it"

as_pg "$PG_BIN/pgbench" -n -c 2 -j 2 -R 150 -T 60 >/dev/null 2>&1 &
load=$!
pgbench_wait_writing "$PGPORT"
out=$(pgd backup --repo "$REPO" $O --pgdata "$T/data" --checkpoint fast --partition-size 8MiB 2>&1)
ok $? "a full backup over SFTP under pgbench load succeeds"
like "$out" "backup [0-9T]+F complete" "with its summary"
# archiving goes asynchronous for the rest of the load
reload_and_wait archive_command \
    "$PGD wal-push --archive-async --spool-path $T/spool --repo $REPO $O %p"
out=$(pgd backup --repo "$REPO" $O --pgdata "$T/data" --checkpoint fast --delta 2>&1)
ok $? "a delta backup over SFTP under load, with asynchronous archiving, succeeds"
like "$out" "backup [0-9T]+D complete" "with its summary"
# the load has done its part: end it now rather than at its -T
q "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'pgbench'" >/dev/null
wait $load
read -r F D <<<"$(ids | tr ' ' '\n' | sed 's/:.*//' | tr '\n' ' ')"
is "$(ids)" "$F:ok $D:ok" "list shows the full and the delta backup, both complete"

# segments for recovery to replay after the delta's end, for the prefetcher to fetch ahead
q "CREATE TABLE t63 (x int)" >/dev/null
for _ in 1 2 3 4 5 6 7 8; do q "INSERT INTO t63 VALUES (1); SELECT pg_switch_wal()" >/dev/null; done
hash_a=$(pgbench_hash "$PGPORT")
q "SELECT pg_create_restore_point('p63')" >/dev/null
as_pg "$PG_BIN/pgbench" -n -c 1 -t 200 >/dev/null 2>&1
isnt "$(pgbench_hash "$PGPORT")" "$hash_a" "the data moved on after the restore point"
archive_all "$PGPORT"
ok $([ -n "$(ls "$T"/spool/*/ 2>/dev/null)" ] && echo 0 || echo 1) "the asynchronous pusher's spool was used"

# shellcheck disable=SC2086
port=$(PGDIRECT_PREFETCH=4 PGDIRECT_LOG_LEVEL=debug restore_and_start "$D" "$T/restored" $O \
       --target-name p63 --target-action promote)
ok $? "a restore of the delta from SFTP to the restore point starts, prefetching WAL"
is "$(pgbench_hash "$port")" "$hash_a" "restored from SFTP: every pgbench table equals the source at the restore point"
served=$(grep -c "served from the prefetch spool" "$T/restored.log")
cmp_ok "$served" ">" 0 "wal-fetch served segments from its prefetch spool ($served)"
rc_line=$(grep "^restore_command" "$T/restored/postgresql.auto.conf" | tail -1)
like "$rc_line" "--repo .?$REPO.? .*--sftp-private-key-file .?$SFTP_KEY.? --sftp-known-hosts .?$SFTP_KNOWN_HOSTS" \
    "restore_command carries the repository and both SFTP options"
pg_stop "$T/restored"

pgd verify --repo "$REPO" $O --all >"$T/verify.out" 2>&1
is "$?" "0" "verify --all: both backups are clean"
pgd check --repo "$REPO" $O >"$T/check.out" 2>&1
is "$?" "0" "check: the cluster archives to the SFTP repository"

# the bounded-memory rule holds on SFTP too: a backup's peak RSS stays under --max-memory
if [ -n "${PGDIRECT_RELEASE_BIN:-}" ]; then
    cp "$PGDIRECT_RELEASE_BIN" "$T/bin/pgdirect-release" && chmod 755 "$T/bin/pgdirect-release"
    # shellcheck disable=SC2086
    out=$(as_pg "$T/bin/pgdirect-release" backup --repo "$REPO-capped" $O --pgdata "$T/data" \
          --checkpoint fast --archive-check=off --compression none --max-memory 64MiB 2>&1)
    ok $? "a backup to SFTP under --max-memory 64MiB succeeds"
    rss=$(echo "$out" | sed -n 's/.*peak RSS \([0-9]*\) MiB.*/\1/p')
    cmp_ok "$rss" "<" 64 "its peak RSS stays under the cap ($rss MiB)"
fi

# ---- a byte flipped in a stored partition ----
part=$(ls -S "$SRV/backups/$F"/part_* | head -1)
size=$(stat -c %s "$part")
flip_byte "$part" $((size / 2))
pgd verify --repo "$REPO" $O "$F" >"$T/bad.out" 2>&1
is "$?" "3" "verify finds the flipped byte (exit 3)"
like "$(cat "$T/bad.out")" "$(basename "$part")" "and names the partition"
pgd restore "$F" --repo "$REPO" $O --target-dir "$T/bad" >"$T/badrestore.out" 2>&1
isnt "$?" "0" "restore of the damaged backup fails"
ok $([ ! -e "$T/bad" ] || [ -z "$(ls -A "$T/bad")" ] && echo 0 || echo 1) "and leaves nothing behind"

# ---- sshd killed mid-backup ----
before=$(ids)
as_pg "$PGD" backup --repo "$REPO" $O --pgdata "$T/data" --checkpoint fast --max-rate 1MiB \
    --partition-size 4MiB --archive-check=off >"$T/killed.out" 2>&1 &
backup=$!
for _ in $(seq 1 300); do
    ls "$SRV"/backups/*/part_*.tmp.* >/dev/null 2>&1 && break
    sleep 0.1
done
K=$(ls -d "$SRV"/backups/*/ | xargs -n1 basename | grep -v -e "^$F$" -e "^$D$")
ok $([ -n "$K" ] && ls "$SRV/backups/$K"/part_*.tmp.* >/dev/null 2>&1 && echo 0 || echo 1) \
    "the backup is writing a partition"
sftp_kill
wait $backup
isnt "$?" "0" "with sshd killed mid-backup, the backup fails"
like "$(grep 'error' "$T/killed.out" | tail -1)" "127\.0\.0\.1:$SFTP_PORT" "naming the server"
out=$(pgd wal-fetch --repo "$REPO" $O "$seg" "$T/seg.down" 2>&1)
is "$?" "254" "wal-fetch while sshd is down exits 254, never 1 (not archived)"
like "$out" "could not connect to sftp server 127\.0\.0\.1:$SFTP_PORT" "and says why"
sftp_restart
is "$(ids | tr ' ' '\n' | grep -v -e "^$F:ok$" -e "^$D:ok$" | grep -c ':ok$')" "0" \
    "no backup but the two restorable ones is listed as complete"
pgd delete --repo "$REPO" $O --garbage --garbage-age 0 >"$T/garbage.out" 2>&1
is "$?" "0" "delete --garbage succeeds"
ok $([ ! -e "$SRV/backups/$K" ] && echo 0 || echo 1) "every object of the failed backup is gone"
is "$(find "$SRV" -name '*.tmp.*' | wc -l)" "0" "and no temporary file is left anywhere"
is "$(ids)" "$before" "the two backups are untouched"
done_testing
