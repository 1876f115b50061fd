#!/usr/bin/env bash
# S3 faults, injected request by request by a loopback proxy between pgdirect
# and the S3 server (tests/s3/fault_proxy.py): 503 SlowDown, a connection reset
# in the middle of a part, a response that stalls past the timeout, a server
# that never answers. Each operation either succeeds after retries or fails
# with one clear error naming the object and the cause, and a non-zero exit; a
# failed backup writes no sentinel and removes what it had uploaded, and so
# does one stopped by Ctrl-C while an upload stalls (at once, aborting that
# upload); a WAL segment whose upload failed is never visible to wal-fetch.
#
# Every scenario asserts both sides: from the proxy's log, that its fault was
# applied to the requests it is about (and which requests passed), and the
# outcome. Faults that must hit a backup midway fire on the Nth matching
# request, never on a switch flipped while the backup runs, so a fast backup
# cannot finish first. Results are read from the server directly, not
# through the proxy.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_s3.sh"
setup_tmp
trap 's3_stop; cleanup_all' EXIT
python3 "$(dirname "$0")/../s3/test_fault_proxy.py" >"$T/proxy_selftest.log" 2>&1
rc=$?
ok $rc "the fault proxy passes its own tests (HTTP framing, keep-alive, each fault on its request)"
[ "$rc" -eq 0 ] || sed 's/^/# /' "$T/proxy_selftest.log"
s3_start
proxy_start
REPO="s3://$S3_BUCKET/faults"
via_proxy() { local AWS_ENDPOINT_URL=$PROXY_URL; "$@"; }

# bucket_parts PREFIX: how many partitions are under PREFIX, asked of the server directly
bucket_parts() {
    /usr/bin/python3 - "$AWS_ENDPOINT_URL" "$S3_BUCKET" "$1" <<'PY'
import os, sys
import botocore.session
s3 = botocore.session.get_session().create_client(
    "s3", endpoint_url=sys.argv[1], region_name="us-east-1",
    aws_access_key_id=os.environ["AWS_ACCESS_KEY_ID"],
    aws_secret_access_key=os.environ["AWS_SECRET_ACCESS_KEY"])
r = s3.list_objects_v2(Bucket=sys.argv[2], Prefix=sys.argv[3])
print(len([o for o in r.get("Contents", []) if "/part_" in o["Key"]]))
PY
}

# bucket_objects PREFIX: the keys under PREFIX, one per line; bucket_uploads PREFIX: how many
# multipart uploads are open under it. Both asked of the server directly.
bucket_list() {
    /usr/bin/python3 - "$AWS_ENDPOINT_URL" "$S3_BUCKET" "$1" "$2" <<'PY'
import os, sys
import botocore.session
s3 = botocore.session.get_session().create_client(
    "s3", endpoint_url=sys.argv[1], region_name="us-east-1",
    aws_access_key_id=os.environ["AWS_ACCESS_KEY_ID"],
    aws_secret_access_key=os.environ["AWS_SECRET_ACCESS_KEY"])
if sys.argv[3] == "objects":
    r = s3.list_objects_v2(Bucket=sys.argv[2], Prefix=sys.argv[4])
    print("\n".join(o["Key"] for o in r.get("Contents", [])))
else:
    r = s3.list_multipart_uploads(Bucket=sys.argv[2], Prefix=sys.argv[4])
    print(len(r.get("Uploads", [])))
PY
}
bucket_objects() { bucket_list objects "$1"; }
bucket_uploads() { bucket_list uploads "$1"; }

# fetched_equal SEGMENT: wal-fetch it straight from the server; byte-identical to the local copy?
fetched_equal() {
    rm -f "$T/fetched"
    as_pg "$PGD" wal-fetch --repo "$REPO" "$1" "$T/fetched" && cmp -s "$T/fetched" "$T/$1"
}

# a segment wal-push accepts (valid page headers) filled with random bytes: lz4 cannot
# shrink it, and 16 MiB is more than three 5 MiB parts
new_segment() {
    wal_segment_file "$1" "$T/$1"
}

seg=000000010000000000000011
new_segment $seg
proxy_rules '[{"method": "PUT", "path": "/wal/.*/'$seg'", "fault": "503", "times": 2}]'
out=$(via_proxy as_pg "$PGD" wal-push --repo "$REPO" --s3-retries 3 "$T/$seg" 2>&1)
ok $? "503 SlowDown twice: wal-push succeeds after retries"
is "$(proxy_count method=PUT path~$seg fault=503)" "2" "the first two PUTs of the segment were answered 503"
is "$(proxy_count method=PUT path~$seg fault=pass status=200)" "1" "the third one reached the server and was stored"
fetched_equal $seg
ok $? "and the archived segment is byte-identical"
proxy_explain

seg=000000010000000000000012
new_segment $seg
proxy_rules '[{"method": "PUT", "path": "'$seg'", "query": "^partNumber=", "fault": "reset", "times": 1}]'
out=$(via_proxy as_pg "$PGD" wal-push --repo "$REPO" --compression none --s3-part-size 5MiB "$T/$seg" 2>&1)
ok $? "a connection reset in the middle of a part: the multipart upload succeeds after a retry"
is "$(proxy_count method=PUT path~$seg query~^partNumber= fault=reset body~'^[1-9]')" "1" \
    "one part's PUT was reset after part of its body"
is "$(proxy_count method=PUT path~$seg query~^partNumber= fault=pass status=200)" "4" \
    "each of the 4 parts was stored once"
is "$(proxy_count method=POST path~$seg query~^uploadId= status=200)" "1" "and the upload was completed"
fetched_equal $seg
ok $? "and the object is byte-identical"
proxy_explain

seg=000000010000000000000013
new_segment $seg
proxy_rules '[{"method": "PUT", "path": "'$seg'", "fault": "stall", "times": 1}]'
# (a stall never ends, so any timeout abandons it; a short one could also abandon the retry,
# whose 16 MiB the server may take seconds to store on a loaded machine)
out=$(via_proxy as_pg "$PGD" wal-push --repo "$REPO" --s3-timeout 10 "$T/$seg" 2>&1)
ok $? "a stalled response: abandoned after --s3-timeout, then retried successfully"
is "$(proxy_count method=PUT path~$seg fault=stall)" "1" "the first PUT of the segment got no answer"
is "$(proxy_count method=PUT path~$seg fault=pass status=200)" "1" "the second one was stored"
fetched_equal $seg
ok $? "and the archived segment is byte-identical"
proxy_explain

seg=000000010000000000000014
new_segment $seg
proxy_rules '[{"fault": "503"}]'
# (a push first reads its own object, a GET; the proxy's 503 carries no S3 error code)
expect_error "503 on every request" "GET of .*$seg.* failed after retries: HTTP 503" \
    via_proxy as_pg "$PGD" wal-push --repo "$REPO" --s3-retries 2 "$T/$seg"
is "$(proxy_count method=GET path~$seg.lz4\$ fault=503)" "3" "503 on every request: the first GET was tried 3 times"
is "$(proxy_count fault=pass)" "0" "503 on every request: nothing reached the server"
out=$(as_pg "$PGD" wal-fetch --repo "$REPO" "$seg" "$T/back" 2>&1)
is "$?" "1" "the segment that failed to upload is not in the archive for wal-fetch"
is "$out" "" "(quietly)"
proxy_explain

seg=000000010000000000000016
new_segment $seg
proxy_rules '[{"method": "PUT", "path": "'$seg'", "fault": "503"}]'
expect_error "503 on every PUT" "$seg" via_proxy as_pg "$PGD" wal-push --repo "$REPO" --s3-retries 2 "$T/$seg"
printf '%s' "$EXPECT_OUT" | grep -q "HTTP 503"
ok $? "503 on every PUT: the error gives the cause (HTTP 503)"
is "$(proxy_count method=PUT path~$seg fault=503)" "3" "503 on every PUT: the PUT was tried 3 times"
is "$(proxy_count method=PUT fault=pass)" "0" "503 on every PUT: none reached the server"
out=$(as_pg "$PGD" wal-fetch --repo "$REPO" "$seg" "$T/back" 2>&1)
is "$?" "1" "the segment whose PUTs failed is not in the archive"
proxy_explain

seg=000000010000000000000015
new_segment $seg
proxy_rules '[{"method": "PUT", "path": "'$seg'", "query": "^partNumber=", "fault": "reset"}]'
expect_error "resets on every part" "PUT of \"wal/00000001/$seg\" in s3://$S3_BUCKET failed after 2 tries: .+" \
    via_proxy as_pg "$PGD" wal-push --repo "$REPO" --compression none --s3-part-size 5MiB \
    --s3-retries 1 "$T/$seg"
is "$(proxy_count method=PUT path~$seg query~'^partNumber=1&' fault=reset)" "2" \
    "resets on every part: part 1 was reset on both its tries"
is "$(proxy_count method=PUT path~$seg fault=pass)" "0" "resets on every part: no part reached the server"
is "$(proxy_count method=POST path~$seg query~^uploadId=)" "0" "the upload was not completed"
is "$(proxy_count method=DELETE path~$seg query~^uploadId=)" "1" "but aborted"
out=$(as_pg "$PGD" wal-fetch --repo "$REPO" "$seg" "$T/back" 2>&1)
is "$?" "1" "no partially uploaded segment is visible"
proxy_explain

proxy_rules '[{"fault": "stall"}]'
expect_error "a server that never answers" "failed after 2 tries" \
    via_proxy as_pg "$PGD" list --repo "$REPO" --s3-timeout 1 --s3-retries 1
is "$(proxy_count method=GET query~list-type=2 fault=stall)" "2" \
    "a server that never answers: the listing was tried twice, and both got no answer"
is "$(proxy_count fault=pass)" "0" "and nothing else was asked"
proxy_explain

# a backup that fails midway writes no sentinel: every part from the third on is refused
proxy_rules '[]'
pg_init "$T/data"
pg_start "$T/data"
q "CREATE TABLE t AS SELECT g, repeat('x', 500) AS pad FROM generate_series(1, 60000) g"
archive_all "$PGPORT"
proxy_rules '[{"method": "PUT", "path": "/faults/backups/.*/part_", "query": "^partNumber=",
               "fault": "503", "from": 3}]'
via_proxy as_pg "$PGD" backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast \
    --s3-retries 1 --s3-part-size 5MiB --compression none >"$T/backup.log" 2>&1
isnt "$?" "0" "a backup whose part uploads start failing midway fails"
err=$(grep error "$T/backup.log")
is "$(printf '%s\n' "$err" | wc -l)" "1" "with one error line"
like "$err" "^pgdirect: error: backup [0-9T]+F failed: PUT of \"backups/[0-9T]+F/part_[0-9]+\.tar\" in s3://$S3_BUCKET failed after retries: HTTP 503 SlowDown" \
    "that names the backup, the object and the cause"
obj=$(printf '%s' "$err" | sed -n 's/.*PUT of "\([^"]*\)".*/\1/p')
cmp_ok "$(proxy_count method=PUT path~"/$obj\$" query~^partNumber= fault=503)" ">=" 2 \
    "the object it names had a part refused on both tries"
is "$(proxy_count method=PUT path~/part_ query~^partNumber= fault=pass status=200)" "2" \
    "the first two parts were stored"
is "$(proxy_count method=PUT path~'\.done\.json$')" "0" "no sentinel was written"
n=$(as_pg "$PGD" list --repo "$REPO" --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
is "$n" "0" "list shows no backup"
proxy_explain

# a backup whose partition uploads are reset from the third on removes the two partitions it
# had completed, in one DeleteObjects request, and leaves none in the bucket
REPO2="s3://$S3_BUCKET/faults2"
proxy_rules '[{"method": "PUT", "path": "/faults2/backups/.*/part_", "fault": "reset", "from": 3}]'
via_proxy as_pg "$PGD" backup --repo "$REPO2" --pgdata "$T/data" --checkpoint fast \
    --s3-retries 1 --partition-size 2MiB --compression none --archive-check=off >"$T/backup2.log" 2>&1
isnt "$?" "0" "a backup whose uploads are reset midway fails"
err=$(grep error "$T/backup2.log")
is "$(printf '%s\n' "$err" | wc -l)" "1" "with one error line"
# (the third PUT is a partition or the list of files of one, whichever a reading stream stores first)
like "$err" "^pgdirect: error: backup [0-9T]+F failed: PUT of \"backups/[0-9T]+F/part_[0-9]+\.tar(\.files\.json)?\" in s3://$S3_BUCKET failed after 2 tries: .+" \
    "that names the backup, the object and the cause"
obj=$(printf '%s' "$err" | sed -n 's/.*PUT of "\([^"]*\)".*/\1/p')
is "$(proxy_count method=PUT path~"/$obj\$" fault=reset)" "2" "the object it names was reset on both tries"
is "$(proxy_count method=PUT path~/part_ fault=pass status=200)" "2" "two partitions had been stored"
is "$(proxy_count method=POST query=delete status=200)" "1" "it removed them with one DeleteObjects request"
is "$(proxy_count method=PUT path~'\.done\.json$')" "0" "no sentinel was written"
is "$(bucket_parts faults2/backups/)" "0" "no partition of the failed backup is left in the bucket"
proxy_explain

# the same when the server stored the partitions but their answers were lost (the connection
# reset after the server's reply): the backup cannot know they exist, unless it cleans up by
# name rather than by acknowledgement
proxy_rules '[{"method": "PUT", "path": "/faults3/backups/.*/part_", "fault": "lost", "from": 3}]'
via_proxy as_pg "$PGD" backup --repo "s3://$S3_BUCKET/faults3" --pgdata "$T/data" --checkpoint fast \
    --s3-retries 1 --partition-size 2MiB --compression none --archive-check=off >"$T/backup3.log" 2>&1
isnt "$?" "0" "a backup whose answers are lost midway fails"
cmp_ok "$(proxy_count method=PUT path~/part_ fault=lost)" ">=" 2 \
    "the server stored partitions whose answers never came back"
is "$(proxy_count method=PUT path~'\.done\.json$')" "0" "no sentinel was written"
left=$(bucket_parts faults3/backups/)
[ "$left" = "0" ]
ok $? "no partition of it is left in the bucket ($left left): the failed backup removes everything under its id"
proxy_explain

# ---- Ctrl-C while a part's upload stalls: the run ends then, not after --s3-timeout (an hour
# here, the longest allowed, so that nothing but the signal can end it while the test waits); it
# aborts the multipart upload, removes the partitions it had stored and dies of SIGINT ----
# (one partition and one part at a time, 5 MiB parts: the third part never gets an answer)
proxy_rules '[{"method": "PUT", "path": "/faults4/backups/.*/part_", "query": "^partNumber=",
               "fault": "stall", "from": 3}]'
via_proxy as_pg "$PGD" backup --repo "s3://$S3_BUCKET/faults4" --pgdata "$T/data" --checkpoint fast \
    --s3-timeout 3600 --s3-part-size 5MiB --concurrency 1 --s3-upload-concurrency 1 \
    --compression none --archive-check=off >"$T/backup4.log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do
    [ "$(proxy_count method=PUT path~/part_ fault=stall)" -ge 1 ] && break
    sleep 0.1
done
is "$(proxy_count method=PUT path~/part_ fault=stall)" "1" "Ctrl-C: a part's upload is stalled"
is "$(proxy_count method=PUT path~/part_ query~^partNumber= fault=pass status=200)" "2" \
    "Ctrl-C: two parts had been stored before it"
victim=$(pgdirect_under "$pid")
[ -n "$victim" ] || bail "no pgdirect process under $pid"
kill -INT "$victim"
wait_exit "$pid" 120
ok $? "Ctrl-C: the run ends while its part's upload is still stalled (--s3-timeout 3600)"
wait "$pid"
rc=$?
is "$rc" "130" "Ctrl-C: it dies of SIGINT (exit 130 through runuser)"
err=$(grep '^pgdirect: error: ' "$T/backup4.log")
is "$(printf '%s\n' "$err" | wc -l)" "1" "Ctrl-C: one error line"
like "$err" "^pgdirect: error: backup [0-9T]+F failed: interrupted by SIGINT$" "Ctrl-C: it says so"
like "$(cat "$T/backup4.log")" "removed what backup [0-9T]+F had written" "Ctrl-C: it says it removed what it wrote"
is "$(proxy_count method=DELETE path~/part_ query~^uploadId= status=204)" "1" \
    "Ctrl-C: the stalled multipart upload was aborted"
is "$(proxy_count method=PUT path~'\.done\.json$')" "0" "Ctrl-C: no sentinel was written"
is "$(bucket_objects faults4/)" "" "Ctrl-C: nothing of the backup is left in the bucket"
is "$(bucket_uploads faults4/)" "0" "Ctrl-C: no multipart upload is left open"
proxy_explain

# ---- a worker thread that cannot start ----
# The shim makes the Nth thread the process starts fail with EAGAIN, as at RLIMIT_NPROC. Which
# thread is an upload or a download thread is not fixed (libcurl may start its own), so every N
# from 1 to 6 is tried: each either works, with the right bytes, or fails saying which thread
# could not start, with the exit code its caller acts on; never a crash, never "not archived"
# for a segment that is.
FAILTHREAD=${PGD_FAILTHREAD:-$(dirname "$PGD_PAGECACHE")/pgd-failthread.so}
[ -f "$FAILTHREAD" ] || bail "no thread-failing shim at $FAILTHREAD (built by meson as pgd-failthread.so)"
cp "$FAILTHREAD" "$T/bin/pgd-failthread.so"
failthread() { # failthread N COMMAND...: COMMAND, its Nth pthread_create failing
    local at=$1
    shift
    LD_PRELOAD="$T/bin/pgd-failthread.so" PGD_FAILTHREAD_AT=$at \
        ASAN_OPTIONS="$ASAN_OPTIONS:verify_asan_link_order=0" "$@"
}
python3 -c "import threading; t = threading.Thread(target=print); t.start()" >/dev/null 2>&1
ok $? "control: without the shim a thread starts"
failthread 1 python3 -c "import threading; t = threading.Thread(target=print); t.start()" >/dev/null 2>&1
isnt "$?" "0" "control: the shim makes the first thread fail"

# tally AT GOT FAILED WHAT OUTPUT [OF]: one run with thread AT failing. GOT is "0/0" with the
# segment fetched byte-identical, or FAILED with OUTPUT naming the WHAT thread that could not
# start, of OF (a pattern; default 4), counted in hits; anything else goes into bad.
tally() {
    if [ "$2" = 0/0 ] && cmp -s "$T/fetched" "$T/$seg"; then
        return
    elif [ "$2" = "$3" ] &&
        [[ "$5" =~ could\ not\ start\ $4\ thread\ [1-4]\ of\ ${6:-4}:\ Resource\ temporarily\ unavailable ]]; then
        hits=$((hits + 1))
    else
        bad="$bad [thread $1: $2: $(printf '%s' "$5" | tail -1)]"
    fi
}

# a repository that holds WAL already: for a segment it does not hold, wal-fetch says "not archived"
REPOP="s3://$S3_BUCKET/ftpush"
new_segment 0000000100000000000000F0
as_pg "$PGD" wal-push --repo "$REPOP" "$T/0000000100000000000000F0" >/dev/null 2>&1 ||
    bail "could not push a first segment to $REPOP"
hits=0
bad=""
for at in 1 2 3 4 5 6; do
    seg=0000000100000000000000F$at
    new_segment $seg
    out=$(failthread "$at" "$PGD" wal-push --repo "$REPOP" --s3-part-size 5MiB \
          --s3-upload-concurrency 4 "$T/$seg" 2>&1)
    rc=$?
    rm -f "$T/fetched"
    "$PGD" wal-fetch --repo "$REPOP" "$seg" "$T/fetched" >/dev/null 2>&1
    tally "$at" "$rc/$?" "1/1" upload "$out" # then wal-fetch: 0 (stored) or 1 (not archived)
done
is "$bad" "" "wal-push with a thread that cannot start: stored whole, or exit 1 and not archived"
cmp_ok "$hits" ">=" "1" "an upload thread that could not start was said so ($hits of 6)"

REPOF="s3://$S3_BUCKET/ftfetch"
seg=0000000100000000000000F0
as_pg "$PGD" wal-push --repo "$REPOF" "$T/$seg" >/dev/null 2>&1 || bail "could not push $seg to $REPOF"
hits=0
bad=""
for at in 1 2 3 4 5 6; do
    rm -f "$T/fetched"
    out=$(failthread "$at" "$PGD" wal-fetch --repo "$REPOF" --download-concurrency 4 "$seg" \
          "$T/fetched" 2>&1)
    # GOT: the exit status, then 0 when the file is there
    # (as many download threads as the object has ranges, up to 4)
    tally "$at" "$?/$([ -e "$T/fetched" ] && echo 0 || echo none)" "254/none" download "$out" "[1-4]"
done
is "$bad" "" "wal-fetch with a thread that cannot start: the segment, or exit 254 (recovery stops) and no file"
cmp_ok "$hits" ">=" "1" "a download thread that could not start was said so ($hits of 6)"
done_testing
