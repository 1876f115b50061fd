#!/usr/bin/env bash
# wal-push --archive-async. Under pgbench, with 1 MiB segments (many of them), the background
# pusher is killed (SIGKILL) again and again: the next archive_command starts another, and
# every segment PostgreSQL considers archived (up to pg_stat_archiver.last_archived_wal, and
# every .done file) is in the repository, by listing and by wal-fetch, with the content
# PostgreSQL had. One pusher per data directory and repository, however many commands start
# at once. A file is never acknowledged on a record of other content, nor when the
# repository holds another file under its name. When the backlog passes
# --archive-push-queue-max nothing is dropped or acknowledged unstored: every call warns, and
# everything arrives once the repository works again. A full spool file system makes the
# command archive directly, and say so; so does a spool directory it may not write. The spool
# holds no record of a file PostgreSQL no longer has ready. A server stopped at once in the
# middle of pushes, its pusher killed, archives everything once restarted. An S3 repository
# works the same way.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_s3.sh"
setup_tmp
SPOOL="$T/spool"
FULL="$T/fullspool"
# background processes outlive the commands that start them: stop them with the test
stop_pushers() {
    local l p
    for l in "$SPOOL"/push-*/lock "$FULL"/push-*/lock "$T"/pgdirect-spool/push-*/lock; do
        [ -f "$l" ] && p=$(cat "$l" 2>/dev/null) && [ -n "$p" ] && kill -9 "$p" 2>/dev/null
    done
    return 0
}
# true once no pusher holds a lock under $1
pushers_gone() {
    local l p
    for l in "$1"/push-*/lock; do
        [ -f "$l" ] && p=$(cat "$l" 2>/dev/null) && [ -n "$p" ] && kill -0 "$p" 2>/dev/null && return 1
    done
    return 0
}
trap 'stop_pushers; s3_stop; mountpoint -q "$FULL" && umount -l "$FULL"; cleanup_all' EXIT

pg_init "$T/data"
# 1 MiB segments: many segments for little WAL, the busy-cluster case
as_pg "$PG_BIN/pg_resetwal" --wal-segsize=1 -D "$T/data" >/dev/null 2>&1 || bail "pg_resetwal failed"
ASYNC="--archive-async --archive-push-concurrency 3 --spool-path $SPOOL"
sed -i "s|^archive_command = .*|archive_command = '$PGD wal-push $ASYNC --repo $REPO %p'|" "$T/data/postgresql.conf"
pg_start "$T/data"

out=$(pgd wal-push --help)
like "$out" "--archive-push-concurrency N .*\[default: 4\]" "--help states the pusher's concurrency"
like "$out" "--spool-path DIR .*next to the data directory" "and where the spool is by default"
# without the option every archive_command fails: the rest would only wait for its deadlines
printf '%s' "$out" | grep -q -- "--archive-async" || bail "wal-push has no --archive-async"

# the pusher of the test's cluster (the spool also holds the fake cluster's, later on)
pusher_pid() {
    local d
    for d in "$SPOOL"/push-*; do
        grep -qx "data directory: $T/data" "$d/info" 2>/dev/null && cat "$d/lock" 2>/dev/null
    done | head -1
}
pusher_alive() { local p; p=$(pusher_pid); [ -n "$p" ] && kill -0 "$p" 2>/dev/null; }
# wait_until SECONDS COMMAND...: poll COMMAND until it succeeds; false at the deadline
wait_until() {
    local limit=$(($1 * 10))
    shift
    for _ in $(seq 1 "$limit"); do "$@" && return 0; sleep 0.1; done
    return 1
}
archived() { # archived SEGMENT: pg_stat_archiver has reached it
    local last
    last=$(q "SELECT coalesce(last_archived_wal, '') FROM pg_stat_archiver")
    [[ "$last" > "$1" || "$last" == "$1" ]]
}
repo_holds_more_than() { [ "$(ls "$REPO/wal/00000001" 2>/dev/null | wc -l)" -gt "$1" ]; }
new_pusher_since() { # new_pusher_since PID: another pusher runs
    local p
    p=$(pusher_pid)
    [ -n "$p" ] && [ "$p" != "$1" ] && kill -0 "$p" 2>/dev/null
}
switch_wal() { # a segment with something in it, switched: its name
    q "INSERT INTO pgbench_history SELECT 1, 1, 1, 1, now()" >/dev/null
    q "SELECT pg_walfile_name(pg_switch_wal())"
}
# differs_from_pg_wal FILE SEGMENT: FILE is not what pg_wal holds under SEGMENT's name (a
# segment a checkpoint recycles meanwhile is not compared: cmp's status 2)
differs_from_pg_wal() {
    cmp -s "$1" "$T/data/pg_wal/$2"
    [ $? -eq 1 ]
}
failed_more_than() { [ "$(q "SELECT failed_count FROM pg_stat_archiver")" -gt "$1" ]; }
log_has() { grep -q -- "$1" "$T/data.log"; }

# ---- SIGKILL of the pusher under pgbench ----
as_pg "$PG_BIN/pgbench" -i -s 5 -q >/dev/null 2>&1 || bail "pgbench -i failed"
# pgbench runs until the kills are done (a time limit could end before them on a busy machine)
as_pg "$PG_BIN/pgbench" -n -c 4 -j 2 -T 900 >"$T/pgbench.log" 2>&1 &
bench=$!
pgbench_wait_writing "$PGPORT"
pids="" kills=0
for k in 1 2 3 4; do
    wait_until 60 pusher_alive || break
    p=$(pusher_pid)
    # let it push a little, then kill it in the middle of its work
    wait_until 10 repo_holds_more_than $((k * 5))
    kill -9 "$p" && kills=$((kills + 1)) && pids="$pids $p"
    wait_until 60 new_pusher_since "$p"
done
is "$kills" "4" "the background pusher was killed 4 times under pgbench"
ok $(wait_until 60 pusher_alive && echo 0 || echo 1) "and the next archive_command started another each time"
busy=$(kill -0 "$bench" 2>/dev/null && echo yes || echo no)
is "$busy" "yes" "pgbench was writing through the kills"
q "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'pgbench'" >/dev/null
wait "$bench"
last=$(switch_wal)
ok $(wait_until 120 archived "$last" && echo 0 || echo 1) "PostgreSQL archived everything up to $last"
is "$(q "SELECT failed_count FROM pg_stat_archiver")" "0" "without one failed archive_command"

# every segment up to last_archived_wal, and every .done file, is in the repository
last=$(q "SELECT last_archived_wal FROM pg_stat_archiver")
first=$(ls "$REPO/wal/00000001" | sort | head -1)
n_last=$((16#${last:16:8} + 16#${last:8:8} * 4096))
n_first=$((16#${first:16:8} + 16#${first:8:8} * 4096))
missing=0 bad=0 differ=0 checked=0
mkdir -p "$T/fetched" && chown postgres "$T/fetched"
for n in $(seq "$n_first" "$n_last"); do
    seg=$(printf '00000001%08X%08X' $((n / 4096)) $((n % 4096)))
    ls "$REPO/wal/00000001/$seg".* >/dev/null 2>&1 || { missing=$((missing + 1)); diag "not in the repository: $seg"; }
done
for done_file in "$T"/data/pg_wal/archive_status/*.done; do
    seg=$(basename "$done_file" .done)
    checked=$((checked + 1))
    ls "$REPO/wal/${seg:0:8}/$seg".* >/dev/null 2>&1 || { missing=$((missing + 1)); diag "acknowledged, not in the repository: $seg"; }
    pgd wal-fetch --repo "$REPO" "$seg" "$T/fetched/$seg" || { bad=$((bad + 1)); continue; }
    # the file PostgreSQL acknowledged is the one stored (while it is still in pg_wal)
    differs_from_pg_wal "$T/fetched/$seg" "$seg" && differ=$((differ + 1))
done
cmp_ok "$((n_last - n_first + 1))" ">" "40" "pgbench made more than 40 segments ($((n_last - n_first + 1)))"
is "$missing" "0" "every segment up to last_archived_wal and every .done file is in the repository"
cmp_ok "$checked" ">" "0" "the .done files were looked at ($checked)"
is "$bad" "0" "wal-fetch serves every acknowledged segment (checked on the way)"
is "$differ" "0" "with the content PostgreSQL had"
is "$(ls "$SPOOL"/push-*/out | grep -vc '\.ok$')" "0" "no half-written record left in the spool"
# the spool is bounded: a record lives only while PostgreSQL has its file ready (.done: removed)
stale_records() { # how many records are of files PostgreSQL no longer has ready
    local f n=0
    for f in "$SPOOL"/push-*/out/*.ok; do
        [ -e "$f" ] || continue
        [ -f "$T/data/pg_wal/archive_status/$(basename "$f" .ok).ready" ] || n=$((n + 1))
    done
    echo "$n"
}
no_stale_records() { [ "$(stale_records)" = "0" ]; }
switch_wal >/dev/null # keeps the pusher at work while it tidies
ok $(wait_until 60 no_stale_records && echo 0 || echo 1) \
    "the spool is bounded: no record outlives its .ready file ($(stale_records) left of $(ls "$SPOOL"/push-*/out | wc -l))"

# ---- PostgreSQL stopped at once in the middle of pushes, its pusher killed, restarted ----
# done_in_repo: how many .done segments are missing from the repository or differ from pg_wal
done_in_repo() {
    local f seg n=0
    for f in "$T"/data/pg_wal/archive_status/*.done; do
        seg=$(basename "$f" .done)
        if ! pgd wal-fetch --repo "$REPO" "$seg" "$T/fetched/r.$seg" 2>/dev/null; then
            n=$((n + 1)) && diag "acknowledged, not in the repository: $seg"
        elif differs_from_pg_wal "$T/fetched/r.$seg" "$seg"; then
            n=$((n + 1)) && diag "acknowledged with other content: $seg"
        fi
        rm -f "$T/fetched/r.$seg"
    done
    echo "$n"
}
as_pg "$PG_BIN/pgbench" -n -c 4 -j 2 -T 900 >>"$T/pgbench.log" 2>&1 &
bench=$!
pgbench_wait_writing "$PGPORT"
wait_until 60 pusher_alive
held=$(ls "$REPO/wal/00000001" | wc -l)
wait_until 60 repo_holds_more_than $((held + 3))
p=$(pusher_pid)
as_pg "$PG_BIN/pg_ctl" -D "$T/data" -m immediate stop >/dev/null
kill -9 "$p" 2>/dev/null
wait "$bench" 2>/dev/null
pg_start "$T/data"
last=$(switch_wal)
ok $(wait_until 120 archived "$last" && echo 0 || echo 1) \
    "after an immediate stop mid-push and a killed pusher, the restarted server archives up to $last"
is "$(done_in_repo)" "0" "every .done segment is in the repository, with the content PostgreSQL had"

# ---- one pusher per data directory and repository ----
# a data directory of our own, with ready files and no pusher yet
F="$T/fake"
mkdir -p "$F/pg_wal/archive_status"
for i in 1 2 3 4 5 6; do
    s=$(printf '000000010000000000000%03X' $((0x40 + i)))
    wal_segment_file "$s" "$F/pg_wal/$s"
    touch "$F/pg_wal/archive_status/$s.ready"
done
chown -R postgres "$F"
FR="$T/fake_repo"
fake_push() { (cd "$F" && pgd wal-push $ASYNC --repo "$FR" "pg_wal/$1"); }
rcs=""
for s in $(ls "$F/pg_wal" | grep -v status); do
    fake_push "$s" >"$T/par.$s.out" 2>&1 &
    rcs="$rcs $!"
done
fails=0
for p in $rcs; do wait "$p" || fails=$((fails + 1)); done
is "$fails" "0" "six archive_commands at once for one data directory all succeed"
FS=$(ls -d "$SPOOL"/push-* | while read -r d; do grep -q "$F" "$d/info" && echo "$d"; done)
is "$(grep -c "started" "$FS/log")" "1" "and one pusher did the work (one lock per data directory and repository)"
is "$(ls "$FR/wal/00000001" | wc -l)" "6" "all six are in the repository"

# ---- a spool directory the server may not write: the command archives directly, and says so ----
mkdir -p "$T/rospool" && chmod 755 "$T/rospool" # root's
s=000000010000000000000042
EXPECT_OUT=$(cd "$F" && pgd wal-push --archive-async --spool-path "$T/rospool/spool" --repo "$T/ro_repo" "pg_wal/$s" 2>&1)
is "$?" "0" "with a spool directory it may not create, wal-push --archive-async still archives"
like "$EXPECT_OUT" "warning: .*Permission denied.*archiving \"pg_wal/$s\" directly" "and says why it archived directly"
ls "$T/ro_repo/wal/00000001/$s".* >/dev/null 2>&1
ok $? "$s is in that repository"

# ---- never acknowledged on a record of other content, never over another file ----
s=000000010000000000000041
cp "$F/pg_wal/$s" "$T/$s.orig"
flip_byte "$F/pg_wal/$s" 24 # xlp_sysid: another file
ok $([ -f "$FS/out/$s.ok" ] && echo 0 || echo 1) "the spool holds a record of $s"
EXPECT_OUT=$(fake_push "$s" 2>&1)
rc=$?
isnt "$rc" "0" "a file under an archived name with other content is not acknowledged"
like "$EXPECT_OUT" "record of \"$s\" is of another file" "the record of the other content is not trusted"
like "$EXPECT_OUT" "pgdirect: error: .*\"$s\" is already archived .* with different content" \
    "and the pusher's error for the file is reported"
EXPECT_OUT=$(fake_push "$s" 2>&1)
isnt "$?" "0" "and again on the next attempt"
like "$EXPECT_OUT" "with different content" "with the same cause"
pgd wal-fetch --repo "$FR" "$s" "$T/fetched/back"
cmp -s "$T/fetched/back" "$T/$s.orig"
ok $? "the repository still serves the first file"
# The pusher pushes ready files that have no record on its own, ahead of being asked: the call
# above took its record away, so it may be pushing the changed file again right now. Once that
# push has left its record, nothing pushes the file until asked; only then is it put back (else
# that push, of the old content, could end after the next call began and answer it).
for _ in $(seq 1 100); do [ -f "$FS/out/$s.error" ] && break; sleep 0.1; done
cp "$T/$s.orig" "$F/pg_wal/$s"
fake_push "$s"
ok $? "the original file is acknowledged again"

# ---- new settings in archive_command take effect: the running pusher makes way ----
seg=$(switch_wal) # a pusher at work (they stop 30 s after their last file)
wait_until 60 archived "$seg"
ok $(pusher_alive && echo 0 || echo 1) "a pusher runs with the old settings"
reload_and_wait archive_command "$PGD wal-push $ASYNC --compression zstd --repo $REPO %p"
# Until a command with the new settings reaches the old pusher, that pusher may store the
# segments it finds ready with the old ones (correct: they are archived). So switch segments
# until the old pusher has made way; the segment after that is stored with the new settings.
made_way() { grep -q "stopped: archive_command runs with other settings now" "$SPOOL"/push-*/log 2>/dev/null; }
for _ in $(seq 1 20); do
    seg=$(switch_wal)
    wait_until 60 archived "$seg" || break
    made_way && break
done
ok $(made_way && echo 0 || echo 1) "the pusher started with the old settings made way"
seg=$(switch_wal)
ok $(wait_until 60 archived "$seg" && echo 0 || echo 1) "after archive_command changed, $seg is archived"
ok $([ -f "$REPO/wal/00000001/$seg.zst" ] && echo 0 || echo 1) "with the new compression (zstd)"

# ---- a backlog past --archive-push-queue-max: said on every call, nothing dropped ----
before=$(q "SELECT last_archived_wal FROM pg_stat_archiver")
fails0=$(q "SELECT failed_count FROM pg_stat_archiver")
chmod 000 "$REPO/wal/00000001"
reload_and_wait archive_command "$PGD wal-push $ASYNC --archive-push-queue-max 2MiB --archive-timeout 10 --repo $REPO %p"
for i in 1 2 3 4; do q "INSERT INTO pgbench_history SELECT 1, 1, g, 1, now() FROM generate_series(1, 3000) g; SELECT pg_switch_wal()" >/dev/null; done
stuck=$(switch_wal)
ok $(wait_until 120 log_has "more than --archive-push-queue-max" && echo 0 || echo 1) \
    "a backlog past --archive-push-queue-max is warned about in PostgreSQL's log"
ok $(wait_until 120 failed_more_than "$fails0" && echo 0 || echo 1) \
    "the archive_command fails while the repository refuses"
is "$(q "SELECT last_archived_wal FROM pg_stat_archiver")" "$before" "and nothing more is acknowledged"
like "$(grep 'pgdirect: error' "$T/data.log" | tail -1)" "Permission denied" "the pusher's cause reaches PostgreSQL's log"
ready=$(ls "$T/data/pg_wal/archive_status" | grep -c '\.ready$')
cmp_ok "$ready" ">=" "3" "the segments wait in pg_wal ($ready ready), none dropped"
chmod 750 "$REPO/wal/00000001"
q "INSERT INTO pgbench_history SELECT 1, 1, 1, 1, now(); SELECT pg_switch_wal()" >/dev/null # wakes the archiver
ok $(wait_until 180 archived "$stuck" && echo 0 || echo 1) "once the repository works again, everything is archived"
missing=0
for done_file in "$T"/data/pg_wal/archive_status/*.done; do
    seg=$(basename "$done_file" .done)
    ls "$REPO/wal/00000001/$seg".* >/dev/null 2>&1 || missing=$((missing + 1))
done
is "$missing" "0" "and every .done segment is in the repository"

# ---- a full spool file system: the command archives directly, and says so ----
mkdir -p "$FULL"
if mount -t tmpfs -o size=1m tmpfs "$FULL" 2>/dev/null; then
    chown postgres "$FULL"
    reload_and_wait archive_command "$PGD wal-push --archive-async --spool-path $FULL --repo $REPO %p"
    seg=$(switch_wal)
    ok $(wait_until 60 archived "$seg" && echo 0 || echo 1) "with a spool on a small file system, $seg is archived"
    # A running pusher removes its records as they are read, freeing pages of the
    # full file system under the test (it once let the next call's probe fit):
    # stop it first, so the file system stays full.
    stop_pushers
    wait_until 30 pushers_gone "$FULL" || bail "the pusher on $FULL did not stop"
    # full to the last page: 64 KiB blocks leave up to 64 KiB free, enough for the spool's records
    dd if=/dev/zero of="$FULL/filler" bs=64k 2>/dev/null
    dd if=/dev/zero of="$FULL/filler.4k" bs=4k 2>/dev/null
    dd if=/dev/zero of="$FULL/filler.1" bs=1 2>/dev/null
    seg=$(switch_wal)
    ok $(wait_until 60 archived "$seg" && echo 0 || echo 1) "with that file system full, $seg is still archived"
    like "$(grep "$seg" "$T/data.log" | grep warning | head -1)" "No space left on device.*archiving .*$seg.* directly" \
        "and PostgreSQL's log says the spool is full and the file was archived directly"
    ls "$REPO/wal/00000001/$seg".* >/dev/null 2>&1
    ok $? "$seg is in the repository"
    rm -f "$FULL/filler" "$FULL/filler.4k" "$FULL/filler.1"
    stop_pushers
    umount -l "$FULL"
else
    diag "cannot mount a small tmpfs here: the full-spool case is not tested"
fi

# ---- S3 ----
s3_start
S3REPO="s3://$S3_BUCKET/async"
# the server started before the S3 server: its test credentials go into the command
S3ENV="env AWS_ACCESS_KEY_ID=$AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY AWS_REGION=$AWS_REGION AWS_ENDPOINT_URL=$AWS_ENDPOINT_URL"
reload_and_wait archive_command "$S3ENV $PGD wal-push $ASYNC --repo $S3REPO %p"
for i in 1 2 3 4 5 6; do q "INSERT INTO pgbench_history SELECT 1, 1, g, 1, now() FROM generate_series(1, 3000) g; SELECT pg_switch_wal()" >/dev/null; done
seg=$(switch_wal)
ok $(wait_until 120 archived "$seg" && echo 0 || echo 1) "with an S3 repository, PostgreSQL archives up to $seg"
n=$((16#${seg:16:8} + 16#${seg:8:8} * 4096))
bad=0
for k in 0 1 2 3 4 5; do
    s=$(printf '00000001%08X%08X' $(((n - k) / 4096)) $(((n - k) % 4096)))
    pgd wal-fetch --repo "$S3REPO" "$s" "$T/fetched/s3.$s" || bad=$((bad + 1))
done
is "$bad" "0" "and the last six segments are served from S3"

# the pushers' logs: no sanitizer report from a pusher that stopped by itself
pg_stop "$T/data"
mv "$T/data/pg_wal/archive_status" "$T/status.moved"
mv "$F/pg_wal/archive_status" "$T/fake_status.moved"
pushers_gone() {
    local l p
    for l in "$SPOOL"/push-*/lock; do
        p=$(cat "$l" 2>/dev/null)
        [ -n "$p" ] && kill -0 "$p" 2>/dev/null && return 1
    done
    return 0
}
ok $(wait_until 60 pushers_gone && echo 0 || echo 1) "the pushers stop by themselves once their data directory is gone"
is "$(grep -lE 'Sanitizer|runtime error' "$SPOOL"/push-*/log* 2>/dev/null | wc -l)" "0" \
    "no sanitizer report in the pushers' logs"
like "$(cat "$SPOOL"/push-*/log)" "pusher [0-9]+ stopped" "and their logs say they stopped"
mv "$T/status.moved" "$T/data/pg_wal/archive_status"
done_testing
