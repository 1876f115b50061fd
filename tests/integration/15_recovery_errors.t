#!/usr/bin/env bash
# Recovery never ends early because of an error. One marker row per segment
# after the backup; the segment of the second is damaged in the repository
# (truncated, a byte changed, empty, unreadable; lz4 and uncompressed), or an
# S3 repository goes away during recovery. PostgreSQL would promote without
# the rest of the archive if wal-fetch said "not archived" (exit 1); instead
# the restored server stops, its log naming the segment. Repaired, the same
# restored directory then recovers to the end with every marker row.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_s3.sh"
setup_tmp
trap 's3_stop; cleanup_all' EXIT
s3_start
S3REPO="s3://$S3_BUCKET/recovery"
pg_init "$T/data"
echo "archive_command = '$PGD wal-push --repo $REPO %p && $PGD wal-push --repo $S3REPO %p'" \
    >>"$T/data/postgresql.conf"
pg_start "$T/data"
q "CREATE TABLE marker(n int)"
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast >/dev/null 2>&1 || bail "local backup failed"
pgd backup --repo "$S3REPO" --pgdata "$T/data" --checkpoint fast >/dev/null 2>&1 || bail "S3 backup failed"
for n in 1 2 3; do
    q "INSERT INTO marker VALUES ($n)"
    [ "$n" = 1 ] && q "SELECT pg_create_restore_point('after1')" >/dev/null
    segs[$n]=$(q "SELECT pg_walfile_name(pg_current_wal_lsn())")
    last=$(q "SELECT pg_walfile_name(pg_switch_wal())")
done
# archive_command pushes to S3 second: wait until PostgreSQL has archived the last one
for _ in $(seq 1 300); do
    [ "$(q "SELECT last_archived_wal FROM pg_stat_archiver")" = "$last" ] && break
    sleep 0.2
done
is "$(q "SELECT last_archived_wal FROM pg_stat_archiver")" "$last" "WAL archived to both repositories"
seg=${segs[2]}
isnt "$seg" "${segs[1]}" "each marker row is in a segment of its own ($seg holds the second)"

# the same archive uncompressed
RN="$T/repo_none"
mkdir -p "$RN" && cp -a "$REPO/backups" "$RN/" && chown -R postgres "$RN"
for obj in "$REPO"/wal/*/*; do
    name=$(basename "$obj")
    name=${name%.lz4}
    pgd wal-fetch --repo "$REPO" "$name" "$T/walfile" &&
        mv "$T/walfile" "$T/$name" && pgd wal-push --repo "$RN" --compression none "$T/$name" ||
        bail "could not copy $name uncompressed"
done

NR=0
RPORT=""
# restore_to REPO [restore options]: the latest backup into a new $RDIR on port $RPORT
restore_to() {
    local repo=$1
    shift
    NR=$((NR + 1))
    RDIR="$T/data_r$NR"
    pgd restore LATEST --repo "$repo" --target-dir "$RDIR" "$@" >"$RDIR.restore.log" 2>&1 ||
        bail "restore into $RDIR failed: $(tail -3 "$RDIR.restore.log")"
    RPORT=$(free_port)
    printf "port = %s\narchive_mode = off\n" "$RPORT" >>"$RDIR/postgresql.auto.conf"
}

# start_restored: 0 once the server runs out of recovery; 1 when it stopped instead
start_restored() {
    as_pg "$PG_BIN/pg_ctl" -D "$RDIR" -l "$RDIR.log" -w -t 120 start >/dev/null 2>&1 || return 1
    for _ in $(seq 1 600); do
        [ "$(psql_at "$RPORT" "SELECT pg_is_in_recovery()" 2>/dev/null)" = "f" ] && return 0
        [ -f "$RDIR/postmaster.pid" ] || return 1
        sleep 0.2
    done
    return 2
}

markers() { psql_at "$RPORT" "SELECT string_agg(n::text, ',' ORDER BY n) FROM marker"; }

# stopped DESC: the restored server did not promote, and said why
stopped() {
    local desc=$1 promoted=0
    grep -q "selected new timeline ID" "$RDIR.log" && promoted=1
    is "$promoted" "0" "$desc: it did not promote"
    like "$(grep 'pgdirect: error' "$RDIR.log" | head -1)" "$seg" "$desc: pgdirect's line names $seg"
    like "$(grep FATAL "$RDIR.log" | head -1)" \
        "could not restore file \"$seg\" from archive: child process exited with exit code 254" \
        "$desc: PostgreSQL stopped recovery (FATAL, exit code 254)"
}

# damaged DESC REPO DAMAGE REPAIR: restore, damage the repository, start; repair, start again
damaged() {
    local desc=$1 repo=$2 damage=$3 repair=$4 rc
    restore_to "$repo"
    eval "$damage"
    start_restored
    rc=$?
    is "$rc" "1" "$desc: the restored server stops instead of finishing recovery"
    stopped "$desc"
    eval "$repair"
    start_restored
    ok $? "$desc, repaired: the same restored directory recovers to the end"
    is "$(markers)" "1,2,3" "$desc, repaired: every marker row is there"
    pg_stop "$RDIR" 2>/dev/null
}

obj="$REPO/wal/00000001/$seg.lz4"
cp "$obj" "$T/keep.lz4"
size=$(stat -c %s "$obj")
damaged "truncated .lz4 segment" "$REPO" "truncate -s $((size / 2)) '$obj'" "cp '$T/keep.lz4' '$obj'"
damaged "a byte changed in a .lz4 segment" "$REPO" \
    "flip_byte '$obj' $((size / 2))" "cp '$T/keep.lz4' '$obj'"
damaged "empty .lz4 object" "$REPO" ": >'$obj'" "cp '$T/keep.lz4' '$obj'"
damaged "unreadable .lz4 object" "$REPO" "chmod 000 '$obj'" "chmod 640 '$obj'"

raw="$RN/wal/00000001/$seg"
cp "$raw" "$T/keep.raw"
damaged "truncated uncompressed segment" "$RN" "truncate -s 9000000 '$raw'" "cp '$T/keep.raw' '$raw'"
# the first record's xl_xid, under its CRC (the segment follows a switch: no continuation)
damaged "a byte changed in a record of an uncompressed segment" "$RN" \
    "flip_byte '$raw' 44" "cp '$T/keep.raw' '$raw'"

restore_to "$REPO"
start_restored
ok $? "the intact archive: recovery reaches the end"
is "$(markers)" "1,2,3" "the intact archive: every marker row is there"
pg_stop "$RDIR"

# S3: recover up to the first marker and shut down (the backup's WAL is replayed), stop
# S3, then let recovery go on: it must stop, not take the unreachable repository for
# the end of the archive
# the restore reaches S3 through the fault proxy (its restore_command carries the proxy's
# endpoint), so the repository can go away and come back without losing what it holds
proxy_start
AWS_ENDPOINT_URL=$PROXY_URL restore_to "$S3REPO" --target-name after1 --target-action shutdown
as_pg "$PG_BIN/pg_ctl" -D "$RDIR" -l "$RDIR.log" -w -t 120 start >/dev/null 2>&1
for _ in $(seq 1 600); do [ -f "$RDIR/postmaster.pid" ] || break; sleep 0.2; done
ok $([ ! -f "$RDIR/postmaster.pid" ] && echo 0 || echo 1) "S3: recovery reached the first marker and shut down"
like "$(cat "$RDIR.log")" "recovery stopping at restore point \"after1\"" "S3: (at the restore point)"
sed -i "/^recovery_target/d" "$RDIR/postgresql.auto.conf"
proxy_rules '[{"fault": "503"}]'
start_restored
is "$?" "1" "S3 repository gone: the restored server stops instead of finishing recovery"
promoted=0
grep -q "selected new timeline ID" "$RDIR.log" && promoted=1
is "$promoted" "0" "S3 repository gone: it did not promote"
like "$(grep 'pgdirect: error' "$RDIR.log" | tail -1)" "[0-9A-F]{8}([0-9A-F]{16}|\.history).* in s3://$S3_BUCKET" \
    "S3 repository gone: pgdirect's line names the segment and the repository"
like "$(grep FATAL "$RDIR.log" | tail -1)" "from archive: child process exited with exit code 254" \
    "S3 repository gone: PostgreSQL stopped recovery (FATAL, exit code 254)"
cmp_ok "$(proxy_count fault=503)" ">" 0 "S3 repository gone: every request was refused (503)"
proxy_rules '[]'
start_restored
ok $? "S3 back: the same restored directory recovers to the end"
is "$(markers)" "1,2,3" "S3 back: every marker row is there"
pg_stop "$RDIR"
done_testing
