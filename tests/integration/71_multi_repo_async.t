#!/usr/bin/env bash
# wal-push --archive-async with two repositories: a local one and an S3 one on moto, 1 MiB
# segments, a queue bound of 5 MiB (--archive-push-queue-max).
# - moto stopped (SIGSTOP: its requests hang, and --s3-timeout 2 ends them) under pgbench:
#   archiving goes on, the local repository keeps up, the S3 repository's queue fills and
#   `check` shows its backlog; pg_wal's .ready files stay few while the queue is under its
#   bound (the positive control of what follows); at the bound nothing more is acknowledged:
#   .ready files accumulate, and PostgreSQL's log says why, naming the S3 repository; `list
#   --pgdata` shows the S3 repository's backlog though it cannot list it, and the local one's, 0;
# - moto back (SIGCONT) and the S3 pusher killed (SIGKILL) before it drained: the queue is still
#   there (persistent), and the next archive_command's pusher drains it to 0 (check and list
#   --json say so);
# - a restore from the S3 repository alone reaches the end of the WAL: data equal to the source
#   at its last committed transaction; the pushers stop by themselves, their logs clean.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_s3.sh"
setup_tmp
SPOOL="$T/spool"
stop_pushers() {
    local l p
    for l in "$SPOOL"/push-*/lock; do
        [ -f "$l" ] && p=$(cat "$l" 2>/dev/null) && [ -n "$p" ] && kill -9 "$p" 2>/dev/null
    done
    return 0
}
trap '[ -n "$S3_PID" ] && kill -CONT "$S3_PID" 2>/dev/null; stop_pushers; s3_stop; cleanup_all' EXIT
s3_start
LOCAL="$T/repo"
S3="s3://$S3_BUCKET/a71"
REPO=$LOCAL
pg_init "$T/data"
as_pg "$PG_BIN/pg_resetwal" --wal-segsize=1 -D "$T/data" >/dev/null 2>&1 || bail "pg_resetwal failed"
ASYNC="--archive-async --spool-path $SPOOL --archive-push-queue-max 5MiB --archive-timeout 20"
# the S3 repository with its own settings: a request that hangs fails after 2 s, at once
cat >>"$T/data/postgresql.conf" <<CONF
archive_command = '"$PGD" wal-push $ASYNC --repo "$LOCAL" --repo "$S3?s3-retries=0&s3-timeout=2" %p'
CONF
pg_start "$T/data"
as_pg "$PG_BIN/pgbench" -i -s 1 -q >/dev/null 2>&1 || bail "pgbench -i failed"
pgd backup --repo "$LOCAL" --repo "$S3" --pgdata "$T/data" --checkpoint fast >"$T/b.log" 2>&1 ||
    { sed 's/^/# /' "$T/b.log"; tail -5 "$T/data.log" | sed 's/^/# /'; bail "the backup failed"; }
ok 0 "a backup to both repositories, WAL archived asynchronously to both"

wait_until() { # wait_until SECONDS COMMAND...
    local limit=$(($1 * 10))
    shift
    for _ in $(seq 1 "$limit"); do "$@" && return 0; sleep 0.1; done
    return 1
}
switch_wal() { q "INSERT INTO pgbench_history SELECT 1, 1, 1, 1, now()" >/dev/null; q "SELECT pg_walfile_name(pg_switch_wal())"; }
ready_count() { ls "$T/data/pg_wal/archive_status" | grep -c '\.ready$'; }
archived_count() { q "SELECT archived_count FROM pg_stat_archiver"; }
archived() { # archived SEGMENT: pg_stat_archiver has reached it
    local last
    last=$(q "SELECT coalesce(last_archived_wal, '') FROM pg_stat_archiver")
    [[ "$last" > "$1" || "$last" == "$1" ]]
}
in_local() { ls "$LOCAL/wal/00000001" 2>/dev/null | grep -Eq "^$1(\.lz4|\.zst)?\$"; }
s3_spool() { dirname "$(grep -El "^repository: $S3( at .*)?\$" "$SPOOL"/push-*/info)"; }
queued() { ls "$(s3_spool)/queue" | grep -c '^0'; }
backlog() { # backlog: the S3 repository's backlog line of check --json
    pgd check --json --repo "$S3?s3-retries=0&s3-timeout=2" --spool-path "$SPOOL" --archive-timeout 1 2>/dev/null |
        python3 -c 'import json,sys; print(" ".join(c["detail"] for c in json.load(sys.stdin)["checks"] if c["check"] == "archive backlog"))'
}

# ---- moto stopped under pgbench ----
# at a modest rate: the segments come from the test's switches, a few at a time
as_pg "$PG_BIN/pgbench" -n -c 2 -R 20 -T 600 >"$T/pgbench.log" 2>&1 &
bench=$!
pgbench_wait_writing "$PGPORT"
kill -STOP "$S3_PID"
before=$(archived_count)
max_ready=0
for i in 1 2 3; do
    seg=$(switch_wal)
    wait_until 15 in_local "$seg"
    r=$(ready_count)
    [ "$r" -gt "$max_ready" ] && max_ready=$r
    sleep 0.5
done
ok $(in_local "$seg" && echo 0 || echo 1) "moto stopped: the local repository keeps up ($seg archived there)"
wait_until 20 archived "$seg"
ok $? "PostgreSQL's archiving goes on: $seg acknowledged"
cmp_ok "$(archived_count)" ">=" "$((before + 3))" "pg_stat_archiver.archived_count grew by 3 or more"
cmp_ok "$(queued)" ">=" 1 "the S3 repository's queue holds the segments it has not got"
cmp_ok "$max_ready" "<=" 3 "under the queue bound, .ready files stay few (at most $max_ready)"
like "$(backlog)" "repository \"$S3\": [1-9][0-9]* WAL files behind .* the oldest \"0000000100" "check shows the S3 repository's backlog"
# past the bound (5 MiB: 5 segments of 1 MiB)
for i in 1 2 3 4 5 6; do switch_wal >/dev/null; sleep 0.3; done
wait_until 30 grep -q "queue of repository \"$S3\" is full" "$T/data.log"
ok $? "at the bound, PostgreSQL's log says why, naming the repository"
cmp_ok "$(ready_count)" ">=" 4 "and nothing more is acknowledged: .ready files accumulate ($(ready_count))"
cmp_ok "$(queued)" "<=" 5 "the queue stays within its bound ($(queued) segments of 1 MiB)"
out=$(pgd list --repo "$LOCAL" --repo "$S3?s3-retries=0&s3-timeout=2" --pgdata "$T/data" --spool-path "$SPOOL" 2>&1)
like "$out" "$S3  archive backlog: [1-9][0-9]* WAL files \([0-9.]+ MiB\), the oldest \"0000000100" "list --pgdata: the S3 repository's backlog, though it cannot be listed"
like "$out" "$LOCAL  archive backlog: 0 WAL files" "and the local repository's, 0"

# ---- moto back; the S3 pusher killed before it drained; the queue persists, then drains ----
kill -CONT "$S3_PID"
p=$(cat "$(s3_spool)/lock")
kill -9 "$p"
n=$(queued)
cmp_ok "$n" ">=" 3 "the S3 pusher killed with its queue waiting: the queue is still there ($n)"
switch_wal >/dev/null
wait_until 40 bash -c '[ "$(ls "'"$(s3_spool)"'/queue" | grep -c "^0")" = 0 ]'
ok $? "the next archive_command's pusher drains it"
q "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'pgbench'" >/dev/null
wait "$bench"
wait_until 30 bash -c '[ "$(ls "'"$T"'/data/pg_wal/archive_status" | grep -c "\.ready$")" = 0 ]'
ok $? "every .ready file is acknowledged again"
backlog_zero() { [[ "$(backlog)" == *"repository \"$S3\": 0 WAL files behind"* ]]; }
wait_until 20 backlog_zero
ok $? "check: the S3 repository's backlog is 0 ($(backlog))"
is "$(pgd list --json --repo "$S3" --pgdata "$T/data" --spool-path "$SPOOL" |
    python3 -c 'import json,sys; print([o["archive_backlog"]["files"] for o in json.load(sys.stdin) if "archive_backlog" in o])')" \
    "[0]" "list --json --pgdata: its backlog is 0"

# ---- a restore from the S3 repository alone reaches the end of the WAL ----
hash_src=$(pgbench_hash "$PGPORT")
REPO=$S3
archive_all "$PGPORT"
ID=$(pgd list --repo "$S3" --json | python3 -c 'import json,sys; print([b["id"] for b in json.load(sys.stdin) if b.get("status") == "ok"][-1])')
port=$(restore_and_start "$ID" "$T/r_s3")
ok $? "restore from the S3 repository alone, recovery to the end of its WAL"
is "$(pgbench_hash "$port")" "$hash_src" "the restored data equals the source at its last commit"
pg_stop "$T/r_s3"
pg_stop "$T/data"
# stopped by themselves, not killed: their logs are complete (and coverage counters written)
rm -rf "$T/data/pg_wal/archive_status"
pushers_gone() {
    local l p
    for l in "$SPOOL"/push-*/lock; do
        p=$(cat "$l" 2>/dev/null) && [ -n "$p" ] && kill -0 "$p" 2>/dev/null && return 1
    done
    return 0
}
wait_until 10 pushers_gone
ok $? "both pushers stop by themselves once archive_status is gone"
is "$(cat "$SPOOL"/push-*/log* | grep -cE 'Sanitizer|runtime error')" "0" "no sanitizer report in the pushers' logs"
done_testing
