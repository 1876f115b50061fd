#!/usr/bin/env bash
# S3 faults, injected by a loopback proxy between pgdirect and s3rver:
# 503 SlowDown, a connection reset in the middle of a part, a response that
# stalls past the timeout. Each operation either succeeds after retries or
# fails with one clear error and a non-zero exit; a failed backup writes no
# sentinel; a WAL segment whose upload failed is never visible to wal-fetch.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_s3.sh"
setup_tmp
trap 's3_stop; cleanup_all' EXIT
s3_start
proxy_start
DIRECT_URL=$AWS_ENDPOINT_URL
REPO="s3://$S3_BUCKET/faults"
via_proxy() { local AWS_ENDPOINT_URL=$PROXY_URL; "$@"; }
control() { echo "$1" >"$PROXY_CONTROL"; }

seg=000000010000000000000011
head -c 16777216 /dev/urandom >"$T/$seg"
chown postgres "$T/$seg"

control "503 2"
out=$(via_proxy as_pg "$PGD" wal-push --repo "$REPO" --s3-retries 3 "$T/$seg" 2>&1)
ok $? "503 SlowDown twice: wal-push succeeds after retries"
is "$(cat "$PROXY_CONTROL")" "503 0" "both injected 503s were met"

seg2=000000010000000000000012
cp "$T/$seg" "$T/$seg2"
control "reset-put 1"
out=$(via_proxy as_pg "$PGD" wal-push --repo "$REPO" --compression none --s3-part-size 5MiB "$T/$seg2" 2>&1)
ok $? "a connection reset in the middle of a part: the multipart upload succeeds after a retry"
is "$(cat "$PROXY_CONTROL")" "reset-put 0" "the reset was injected"
as_pg "$PGD" wal-fetch --repo "$REPO" "$seg2" "$T/back2"
cmp -s "$T/back2" "$T/$seg2"
ok $? "and the object is byte-identical"

seg3=000000010000000000000013
cp "$T/$seg" "$T/$seg3"
control "stall 1"
out=$(via_proxy as_pg "$PGD" wal-push --repo "$REPO" --s3-timeout 2 "$T/$seg3" 2>&1)
ok $? "a stalled response: abandoned after --s3-timeout, then retried successfully"
is "$(cat "$PROXY_CONTROL")" "stall 0" "the stall was injected"

seg4=000000010000000000000014
cp "$T/$seg" "$T/$seg4"
control "503 always"
out=$(via_proxy as_pg "$PGD" wal-push --repo "$REPO" --s3-retries 2 "$T/$seg4" 2>&1)
isnt "$?" "0" "503 on every try: wal-push fails"
is "$(printf '%s\n' "$out" | wc -l)" "1" "with one line"
like "$out" "^pgdirect: error: (HEAD|PUT) of .*000000010000000000000014.* failed after retries: HTTP 503" "that names the object and the failure"
out=$(as_pg "$PGD" wal-fetch --repo "$REPO" "$seg4" "$T/back4" 2>&1)
is "$?" "1" "the segment that failed to upload is not in the archive for wal-fetch"
is "$out" "" "(quietly)"

seg5=000000010000000000000015
cp "$T/$seg" "$T/$seg5"
control "reset-put always"
out=$(via_proxy as_pg "$PGD" wal-push --repo "$REPO" --compression none --s3-part-size 5MiB \
      --s3-retries 1 "$T/$seg5" 2>&1)
isnt "$?" "0" "resets on every part: the multipart upload fails"
out=$(as_pg "$PGD" wal-fetch --repo "$REPO" "$seg5" "$T/back5" 2>&1)
is "$?" "1" "no partially uploaded segment is visible"

control "stall always"
out=$(via_proxy as_pg "$PGD" list --repo "$REPO" --s3-timeout 1 --s3-retries 1 2>&1)
isnt "$?" "0" "a server that never answers: list fails"
like "$out" "^pgdirect: error: .*failed after 2 tries" "after its retries, saying so"

# a backup that fails midway writes no sentinel
control "pass"
pg_init "$T/data"
pg_start "$T/data"
q "CREATE TABLE t AS SELECT g, repeat('x', 500) AS pad FROM generate_series(1, 60000) g"
archive_all "$PGPORT"
via_proxy as_pg "$PGD" backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast \
    --max-rate 4MiB --s3-retries 1 --s3-part-size 5MiB --compression none >"$T/backup.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do grep -q "backup started" "$T/backup.log" && break; sleep 0.1; done
sleep 2
control "503 always"
wait $pid
rc=$?
isnt "$rc" "0" "a backup whose uploads start failing midway fails"
# (the proxy answers 503 before reading a part's body, so curl may see the refusal as a failed send)
like "$(grep error "$T/backup.log")" "^pgdirect: error: backup [0-9T]+F failed: (PUT|POST|HEAD) of \"backups/.*\" in s3://$S3_BUCKET failed (after [0-9]+ tries|after retries: HTTP 503)" \
    "with one error naming the backup, the object and the cause"
control "pass"
n=$(as_pg "$PGD" list --repo "$REPO" --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
is "$n" "0" "no sentinel was written: list shows no backup"

# a backup whose object uploads start failing (PUTs reset) removes the partitions it had
# completed, in one batched DeleteObjects request
REPO2="s3://$S3_BUCKET/faults2"
via_proxy as_pg "$PGD" backup --repo "$REPO2" --pgdata "$T/data" --checkpoint fast \
    --max-rate 4MiB --s3-retries 1 --partition-size 2MiB --compression none \
    --archive-check=off >"$T/backup2.log" 2>&1 &
pid=$!
for _ in $(seq 1 200); do
    [ "$(grep -c 'faults2/backups/.*part_' "$T/s3rver.log")" -ge 2 ] && break
    sleep 0.1
done
control "reset-put always"
wait $pid
isnt "$?" "0" "a backup whose uploads are reset midway fails"
control "pass"
like "$(grep -c 'POST.*delete\|?delete' "$T/s3rver.log")" "^[1-9]" "it removed its completed partitions with DeleteObjects"
left=$(/usr/bin/python3 - "$AWS_ENDPOINT_URL" "$S3_BUCKET" <<'PY'
import sys
import botocore.session
s3 = botocore.session.get_session().create_client(
    "s3", endpoint_url=sys.argv[1], region_name="us-east-1",
    aws_access_key_id="S3RVER", aws_secret_access_key="S3RVER")
r = s3.list_objects_v2(Bucket=sys.argv[2], Prefix="faults2/backups/")
print(len([o for o in r.get("Contents", []) if "part_" in o["Key"]]))
PY
)
is "$left" "0" "no partition of the failed backup is left in the bucket"
done_testing
