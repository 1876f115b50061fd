#!/usr/bin/env bash
# The core scenario against an S3-compatible server: moto checking every
# request's Signature V4 against an IAM access key (S3_SERVER=moto, the
# default), or s3rver (S3_SERVER=s3rver, run by 26_s3_s3rver.t). The
# repository's prefix holds a space, '+', 'é' and '&', so every key is one
# S3 refuses when it is signed other than as sent. WAL archived to S3, a
# backup under pgbench load with small parts (multipart uploads), restore to
# a named restore point through ranged GETs, data equal; a multipart object
# round-trips byte-identical; listing pages past 1,000 keys; bad input.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_s3.sh"
setup_tmp
trap 's3_stop; cleanup_all' EXIT
s3_start
if [ "$S3_SERVER" = s3rver ]; then
    # the server keeps S3's read-after-write promise (lib_s3.sh): a GET never sees part of an object
    raw=$(python3 "$(dirname "$0")/../s3/read_after_write.py" "$S3_PORT" "$S3_BUCKET" 2>&1)
    is "$raw" "short reads: 0 of 3" "s3rver as started here: a GET during a slow PUT never returns part of it"
    # positive control: s3rver as shipped does return a prefix
    rport=$(free_port)
    mkdir "$T/s3raw"
    NODE_OPTIONS=--openssl-legacy-provider "$(dirname "$S3RVER")/node_modules/.bin/s3rver" -d "$T/s3raw" \
        -a 127.0.0.1 -p "$rport" --configure-bucket raw >"$T/s3raw.log" 2>&1 &
    rpid=$!
    s3_wait_port "$rport" || bail "s3rver as shipped did not come up: $(tail -3 "$T/s3raw.log")"
    raw=$(python3 "$(dirname "$0")/../s3/read_after_write.py" "$rport" raw 2>&1)
    kill "$rpid"
    like "$raw" "short reads: [1-9]" "positive control: s3rver as shipped returns part of an object ($raw)"
fi
PREFIX="clu ster+é&1"
REPO="s3://$S3_BUCKET/$PREFIX"
pg_init "$T/data"
# the prefix holds shell metacharacters: quote it for archive_command's shell
cat >>"$T/data/postgresql.conf" <<CONF
archive_command = '"$PGD" wal-push --repo "$REPO" %p'
CONF
pg_start "$T/data"
as_pg "$PG_BIN/pgbench" -i -s 3 -q >/dev/null 2>&1 || bail "pgbench -i failed"
# a segment as the server wrote it (complete once pg_switch_wal returns: the
# switch flushes the padding), then as wal-fetch brings it back from S3
seg=$(psql_at "$PGPORT" "SELECT pg_walfile_name(pg_switch_wal())")
cp "$T/data/pg_wal/$seg" "$T/seg.source"
archive_all "$PGPORT"
pgd wal-fetch --repo "$REPO" "$seg" "$T/seg.fetched"
is "$?" 0 "wal-fetch finds segment $seg that archive_command pushed to $REPO"
cmp -s "$T/seg.source" "$T/seg.fetched"
ok $? "and it is byte-identical to the server's"

as_pg "$PG_BIN/pgbench" -n -c 2 -j 2 -R 200 -T 15 >/dev/null 2>&1 &
load=$!
pgbench_wait_writing "$PGPORT"
out=$(pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --s3-part-size 5MiB \
      --partition-size 16MiB --compression none 2>&1)
ok $? "backup to S3 under pgbench load succeeds"
like "$out" "backup [0-9T]+F complete" "with its summary"
wait $load
parts=$(grep -c "uploadId=" "$S3_LOG")
cmp_ok "$parts" ">" 2 "multipart uploads were used ($parts part requests)"
id=$(pgd list --repo "$REPO" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])')
like "$id" "^[0-9]{8}T[0-9]{6}F$" "list shows the backup in S3"

hash_a=$(pgbench_hash "$PGPORT")
q "SELECT pg_create_restore_point('s3_point')" >/dev/null
as_pg "$PG_BIN/pgbench" -n -c 1 -t 200 >/dev/null 2>&1
isnt "$(pgbench_hash "$PGPORT")" "$hash_a" "the data moved on after the restore point"
archive_all "$PGPORT"
port=$(restore_and_start "$id" "$T/restored" --target-name s3_point --target-action promote \
       --download-concurrency 3)
ok $? "restore from S3 to the restore point starts"
is "$(pgbench_hash "$port")" "$hash_a" "restored from S3: every pgbench table equals the source at the restore point"
pg_stop "$T/restored"

# upload buffers count in the memory cap: peak RSS stays under --max-memory
if [ -n "${PGDIRECT_RELEASE_BIN:-}" ]; then
    cp "$PGDIRECT_RELEASE_BIN" "$T/bin/pgdirect-release" && chmod 755 "$T/bin/pgdirect-release"
    out=$(as_pg "$T/bin/pgdirect-release" backup --repo "s3://$S3_BUCKET/capped" --pgdata "$T/data" \
          --checkpoint fast --archive-check=off --compression none --s3-part-size 8MiB \
          --s3-upload-concurrency 3 --max-memory 64MiB 2>&1)
    ok $? "backup to S3 with 8 MiB parts under --max-memory 64MiB succeeds"
    rss=$(echo "$out" | sed -n 's/.*peak RSS \([0-9]*\) MiB.*/\1/p')
    cmp_ok "$rss" "<" 64 "peak RSS stays under the cap with the upload buffers counted ($rss MiB)"
fi

# a multipart object round-trips byte-identical (16 MiB in 5 MiB parts, stored uncompressed)
seg=00000009000000000000000A
wal_segment_file "$seg" "$T/$seg"
pgd wal-push --repo "$REPO" --compression none --s3-part-size 5MiB "$T/$seg"
ok $? "a 16 MiB object is uploaded in 5 MiB parts"
pgd wal-fetch --repo "$REPO" --download-concurrency 4 "$seg" "$T/fetched"
cmp -s "$T/$seg" "$T/fetched"
ok $? "and downloads byte-identical through ranged GETs"

# listing beyond one page: 1,200 more sentinels written by boto3
"$S3_PYTHON" - "$S3_BUCKET" "$PREFIX" <<'PY'
import json, sys
import boto3
bucket, prefix = sys.argv[1], sys.argv[2]
s3 = boto3.client("s3")  # endpoint and credentials from the AWS_* variables
src = s3.list_objects_v2(Bucket=bucket, Prefix=prefix + "/backups/", Delimiter="/")
key = [c["Key"] for c in src["Contents"] if c["Key"].endswith(".done.json")][0]
info = json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
for i in range(1200):
    bid = "20010101T%06dF" % i
    info["id"] = bid
    s3.put_object(Bucket=bucket, Key="%s/backups/%s.done.json" % (prefix, bid), Body=json.dumps(info))
PY
ok $? "boto3 wrote 1,200 more sentinels"
n=$(pgd list --repo "$REPO" --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
is "$n" "1201" "list pages through ListObjectsV2 continuation tokens (1,201 backups)"

# bad input, one line each, never showing a credential
expect_s3_error() {
    local desc=$1
    expect_error "$@"
    if printf '%s' "$EXPECT_OUT" | grep -qF -e "$AWS_ACCESS_KEY_ID" -e "$AWS_SECRET_ACCESS_KEY"; then
        ok 1 "$desc: no credential in the message"
    else
        ok 0 "$desc: no credential in the message"
    fi
}
expect_s3_error "malformed s3 URI" 'invalid repository "s3://A_B/x"' pgd list --repo "s3://A_B/x"
expect_s3_error "missing credentials" "no credentials for s3://$S3_BUCKET: set AWS_ACCESS_KEY_ID" \
    env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY "$PGD" list --repo "$REPO"
expect_s3_error "nonexistent bucket" 'NoSuchBucket' pgd list --repo "s3://no-such-bucket/x"
expect_s3_error "wrong endpoint" 'failed after 2 tries' \
    pgd list --repo "$REPO" --s3-endpoint "http://127.0.0.1:$(free_port)" --s3-retries 1
expect_s3_error "bad endpoint URL" 'invalid S3 endpoint "ftp://x"' pgd list --repo "$REPO" --s3-endpoint ftp://x
done_testing
