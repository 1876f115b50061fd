#!/usr/bin/env bash
# What S3 says, told apart and named, against moto with IAM authentication:
# a bucket that does not exist is an error, never "not archived" (a HEAD 404
# looks the same for both); AccessDenied and SignatureDoesNotMatch named by
# their codes, without a credential; endpoints: https kept whole, host style
# with an IP address and credentials in the URL refused (never echoed); two
# writers of one WAL name at once, by single PUT and by multipart upload:
# exactly one wins; a backup that fails midway under a prefix with '&'
# removes what it had written (DeleteObjects with its keys escaped); the
# multipart upload of a killed writer aborted once stale; an unknown storage
# class named (InvalidStorageClass).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_s3.sh"
setup_tmp
trap 's3_stop; cleanup_all' EXIT
s3_start
s3_require_storage_tool
REPO="s3://$S3_BUCKET/errors"

no_credential() { # no_credential DESCRIPTION TEXT SECRET...
    local desc=$1 text=$2 s
    shift 2
    for s in "$@"; do
        if printf '%s' "$text" | grep -qF -- "$s"; then
            ok 1 "$desc: no credential in the message"
            return
        fi
    done
    ok 0 "$desc: no credential in the message"
}

seg=000000010000000000000001
wal_segment_file "$seg" "$T/$seg"
pgd wal-push --repo "$REPO" "$T/$seg"
ok $? "a segment is archived"

# ---- missing key, missing bucket ----
out=$(pgd wal-fetch --repo "$REPO" 000000010000000000000009 "$T/f" 2>&1)
is "$?:$out" "1:" "a segment that is not archived: exit 1 without a word (the end of the archive)"
expect_error "wal-fetch from a bucket that does not exist" \
    'bucket "no-such-bucket" does not exist \(HTTP 404 NoSuchBucket' \
    pgd wal-fetch --repo "s3://no-such-bucket/errors" "$seg" "$T/f"
[ ! -e "$T/f" ]
ok $? "and nothing was written"
expect_error "wal-push to a bucket that does not exist" 'NoSuchBucket' \
    pgd wal-push --repo "s3://no-such-bucket/errors" "$T/$seg"

# ---- refusals named by their code ----
denied() {
    AWS_ACCESS_KEY_ID=$MOTO_DENIED_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY=$MOTO_DENIED_SECRET_ACCESS_KEY "$@"
}
expect_error "wal-fetch by a user without permission" \
    "GET of \"wal/00000001/$seg.lz4\" in s3://$S3_BUCKET failed: HTTP 403 AccessDenied" \
    denied pgd wal-fetch --repo "$REPO" "$seg" "$T/f"
no_credential "AccessDenied" "$EXPECT_OUT" "$MOTO_DENIED_ACCESS_KEY_ID" "$MOTO_DENIED_SECRET_ACCESS_KEY"
expect_error "list by a user without permission" 'HTTP 403 AccessDenied' \
    denied pgd list --repo "$REPO"
wrong_secret() { AWS_SECRET_ACCESS_KEY="not-$AWS_SECRET_ACCESS_KEY" "$@"; }
expect_error "wal-fetch with a wrong secret key" 'HTTP 403 SignatureDoesNotMatch: The request signature' \
    wrong_secret pgd wal-fetch --repo "$REPO" "$seg" "$T/f"
no_credential "SignatureDoesNotMatch" "$EXPECT_OUT" "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY"

# ---- endpoints ----
expect_error "an https endpoint" "https://127.0.0.1:$S3_PORT/$S3_BUCKET/errors/" \
    pgd wal-fetch --repo "$REPO" --s3-endpoint "https://127.0.0.1:$S3_PORT" --s3-retries 1 "$seg" "$T/f"
expect_error "host style with an IP address" 'IP address cannot take; use --s3-uri-style path' \
    pgd wal-fetch --repo "$REPO" --s3-uri-style host "$seg" "$T/f"
expect_error "credentials in the endpoint URL" \
    "invalid S3 endpoint \"http://\\*\\*\\*@127.0.0.1:$S3_PORT\": credentials do not belong in the URL" \
    pgd wal-fetch --repo "$REPO" --s3-endpoint "http://AKIDINURL:s3cr3tInUrl@127.0.0.1:$S3_PORT" "$seg" "$T/f"
no_credential "credentials in the endpoint URL" "$EXPECT_OUT" AKIDINURL s3cr3tInUrl

# ---- two writers of one name: exactly one wins ----
# Both hold their whole object before either makes it visible (pgd-storage
# reads it from a FIFO): the race is decided by the request that makes the
# object visible, If-None-Match on the PUT or on CompleteMultipartUpload.
held_race() { # held_race WHAT SIZE [--part-size BYTES]
    local what=$1 size=$2 n=$((++RACES)) rc_a rc_b a b winner
    shift 2
    head -c "$size" /dev/urandom >"$T/race$n.a"
    head -c "$size" /dev/urandom >"$T/race$n.b"
    mkfifo "$T/race$n.fa" "$T/race$n.fb"
    "$PGD_STORAGE" "$@" "$REPO" put "race/$n" no-replace <"$T/race$n.fa" >"$T/race$n.oa" 2>&1 &
    a=$!
    "$PGD_STORAGE" "$@" "$REPO" put "race/$n" no-replace <"$T/race$n.fb" >"$T/race$n.ob" 2>&1 &
    b=$!
    exec 7>"$T/race$n.fa" 8>"$T/race$n.fb"
    cat "$T/race$n.a" >&7
    cat "$T/race$n.b" >&8
    exec 7>&- 8>&- # both see the end of their data now
    wait $a; rc_a=$?
    wait $b; rc_b=$?
    is "$([ $rc_a -eq 0 ] && echo 1 || echo 0)$([ $rc_b -eq 0 ] && echo 1 || echo 0)" \
        "$([ $rc_a -eq 0 ] && echo 10 || echo 01)" "$what: exactly one of two writers succeeds ($rc_a, $rc_b)"
    like "$(cat "$T/race$n.oa" "$T/race$n.ob")" \
        "could not create \"race/$n\" in s3://$S3_BUCKET: it already exists \(HTTP (412 PreconditionFailed|409 ConditionalRequestConflict)" \
        "$what: the other is told the object already exists"
    if [ $rc_a -eq 0 ]; then winner=$T/race$n.a; else winner=$T/race$n.b; fi
    "$PGD_STORAGE" "$REPO" get "race/$n" | cmp -s - "$winner"
    ok $? "$what: the object is the winner's, whole"
}
RACES=0
held_race "single PUT" 1048576
held_race "multipart upload" 12582912 --part-size 5242880
completes=$(grep "^POST /$S3_BUCKET/errors/race/$RACES?uploadId=" "$S3_LOG")
is "$(grep -c ' 200$' <<<"$completes") $(grep -c ' 412$\| 409$' <<<"$completes")" "1 1" \
    "of the two CompleteMultipartUpload requests, the loser's was the one refused"

# the same through wal-push, both started at once (the archive_command of two servers)
race() { # race ROUND ARGS...
    local round=$1 name=00000002000000000000000$1 a b rc_a rc_b stored winners=0
    shift
    mkdir -p "$T/a$round" "$T/b$round"
    wal_segment_file "$name" "$T/a$round/$name"
    wal_segment_file "$name" "$T/b$round/$name"
    chown -R postgres "$T/a$round" "$T/b$round"
    pgd wal-push --repo "$REPO" "$@" "$T/a$round/$name" >"$T/a$round.log" 2>&1 &
    a=$!
    pgd wal-push --repo "$REPO" "$@" "$T/b$round/$name" >"$T/b$round.log" 2>&1 &
    b=$!
    wait $a; rc_a=$?
    wait $b; rc_b=$?
    [ $rc_a -eq 0 ] && winners=$((winners + 1))
    [ $rc_b -eq 0 ] && winners=$((winners + 1))
    is "$winners" "1" "wal-push, $RACE_WHAT, round $round: exactly one of two succeeds ($rc_a, $rc_b)"
    like "$(cat "$T/a$round.log" "$T/b$round.log")" "already archived in repository .* with different content" \
        "wal-push, $RACE_WHAT, round $round: the other says the name holds different content"
    rm -f "$T/fetched"
    pgd wal-fetch --repo "$REPO" "$name" "$T/fetched"
    if [ $rc_a -eq 0 ]; then stored=$T/a$round/$name; else stored=$T/b$round/$name; fi
    cmp -s "$T/fetched" "$stored"
    ok $? "wal-push, $RACE_WHAT, round $round: the archive holds the winner's segment"
}
RACE_WHAT="single PUT" # a 16 MiB segment, lz4, under the 64 MiB part size
for r in 1 2 3; do race $r; done
RACE_WHAT="multipart upload" # uncompressed, in 5 MiB parts
for r in 4 5 6; do race $r --compression none --s3-part-size 5MiB; done
diag "$(grep -c "^POST /$S3_BUCKET/errors/wal/00000002/.*?uploadId=.* 412$" "$S3_LOG") of the multipart rounds were decided by If-None-Match on CompleteMultipartUpload"

# ---- what a killed writer leaves: a multipart upload, aborted once it is stale ----
uploads_left() {
    "$S3_PYTHON" - "$S3_BUCKET" <<'PY'
import sys
import boto3
r = boto3.client("s3").list_multipart_uploads(Bucket=sys.argv[1], Prefix="errors/killed/")
print(len(r.get("Uploads", [])))
PY
}
head -c 6291456 /dev/urandom >"$T/killed.data"
mkfifo "$T/killed.fifo"
"$PGD_STORAGE" --part-size 5242880 "$REPO" put killed/part_0001.tar <"$T/killed.fifo" >/dev/null 2>&1 &
writer=$!
exec 7>"$T/killed.fifo"
cat "$T/killed.data" >&7
deadline=$((SECONDS + 60))
until grep -q "^PUT /$S3_BUCKET/errors/killed/part_0001.tar?partNumber=1&.* 200$" "$S3_LOG" ||
    [ $SECONDS -ge $deadline ]; do sleep 0.1; done
kill -9 $writer
wait $writer 2>/dev/null
exec 7>&-
is "$(uploads_left)" "1" "a writer killed midway leaves its multipart upload"
"$PGD_STORAGE" "$REPO" rm-stale killed 3600
ok $? "removing stale temporary objects older than an hour succeeds"
is "$(uploads_left)" "1" "and keeps the upload: its last part was written just now"
"$PGD_STORAGE" "$REPO" rm-stale killed 0
ok $? "removing those idle for 0 seconds succeeds"
is "$(uploads_left)" "0" "and aborts it"

# ---- a backup that fails midway removes its partitions, under a prefix with '&' ----
REPO="s3://$S3_BUCKET/half&done"
pg_init "$T/data"
cat >>"$T/data/postgresql.conf" <<CONF
archive_command = '"$PGD" wal-push --repo "$REPO" %p'
CONF
pg_start "$T/data"
as_pg "$PG_BIN/pgbench" -i -s 2 -q >/dev/null 2>&1 || bail "pgbench -i failed"
dbdir=$(q "SELECT 'base/' || oid FROM pg_database WHERE datname = 'postgres'")
# a small file nobody may read: the largest files go first, so it fails the backup late
head -c 8192 /dev/zero >"$T/data/$dbdir/99999"
chown root:root "$T/data/$dbdir/99999"
chmod 000 "$T/data/$dbdir/99999"
out=$(pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --archive-check=off \
      --compression none --partition-size 8MiB --s3-part-size 5MiB 2>&1)
isnt "$?" "0" "a backup that cannot read a file fails"
like "$out" "99999" "naming the file"
rm -f "$T/data/$dbdir/99999"
written=$(grep -c "^\(PUT\|POST\) /$S3_BUCKET/half%26done/backups/.*/part_[0-9]*\.tar\(?uploadId=[^ ]*\)\? 200$" "$S3_LOG")
cmp_ok "$written" ">" 0 "partitions were completed before it failed ($written)"
like "$(grep "^POST /$S3_BUCKET?delete " "$S3_LOG" | tail -1)" " 200$" "they were removed with DeleteObjects"
left=$("$S3_PYTHON" - "$S3_BUCKET" <<'PY'
import sys
import boto3
r = boto3.client("s3").list_objects_v2(Bucket=sys.argv[1], Prefix="half&done/backups/")
print(len([o for o in r.get("Contents", []) if "part_" in o["Key"]]))
PY
)
is "$left" "0" "no partition of the failed backup is left in the bucket"

# what the server refuses is named by its code and message
expect_error "a storage class the server does not know" \
    'is not writable: PUT of "\.probe\.[0-9]+" in s3://pgdirect-test failed: HTTP 400 InvalidStorageClass: ' \
    pgd backup --repo "$REPO" --pgdata "$T/data" --s3-storage-class NOPE
done_testing
