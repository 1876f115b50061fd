#!/usr/bin/env bash
# Encryption at rest on S3 (moto, checking every signature): the filter sits
# above every driver. WAL pushed encrypted, a full and a delta backup, a
# point-in-time restore equal to the source; no object in the bucket holds
# the marker string, and the same backup into an unencrypted prefix does
# (the positive control, read back with boto3); an object tampered in the
# bucket makes verify exit 3 naming it; a wrong key makes wal-fetch exit
# 254; list without the key says it needs it. The requests a wal-push and
# a list without a key make (the latter: none to look for a keyring). The
# keyring deleted from the bucket: a keyless wal-push stores nothing (the
# marker encryption.pgdirect), list with the key says the keyring is missing.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_s3.sh"
setup_tmp
trap 's3_stop; cleanup_all' EXIT
s3_start
MARKER=PGDIRECT-MARKER-5eed
REPO="s3://$S3_BUCKET/enc"
KEY="$T/keys/repo.key"
mkdir -p "$T/keys"
head -c 32 /dev/urandom >"$KEY"
head -c 32 /dev/urandom >"$T/keys/other.key"
chmod 600 "$KEY" "$T/keys/other.key"
chown -R postgres:postgres "$T/keys"
K=(--encryption-key-file "$KEY")

# the objects under a prefix, as S3 holds them: how many hold the marker, and how many there are
bucket_marker() {
    "$S3_PYTHON" - "$S3_BUCKET" "$1" "$MARKER" <<'PY'
import boto3, sys
bucket, prefix, marker = sys.argv[1], sys.argv[2], sys.argv[3].encode()
s3 = boto3.client("s3")
n = hits = 0
for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix + "/"):
    for o in page.get("Contents", []):
        n += 1
        if marker in s3.get_object(Bucket=bucket, Key=o["Key"])["Body"].read():
            hits += 1
print(hits, n)
PY
}

# wait_archived PORT: switch WAL and wait until wal-fetch (with the key) finds the segment
wait_archived() {
    local seg
    seg=$(psql_at "$1" "SELECT pg_walfile_name(pg_switch_wal())")
    for _ in $(seq 1 600); do
        pgd wal-fetch --repo "$REPO" "${K[@]}" "$seg" "$T/probe_wal" 2>/dev/null && return 0
        sleep 0.2
    done
    bail "segment $seg was not archived"
}

pg_init "$T/data"
cat >>"$T/data/postgresql.conf" <<CONF
archive_command = '$PGD wal-push --repo $REPO --encryption-key-file $KEY %p'
CONF
pg_start "$T/data"
as_pg "$PG_BIN/pgbench" -i -s 1 -q >/dev/null 2>&1 || bail "pgbench -i failed"
q "CREATE TABLE marker AS SELECT i, '$MARKER-' || i AS t FROM generate_series(1, 3000) i" >/dev/null
wait_archived "$PGPORT"

pgd backup --repo "$REPO" "${K[@]}" --pgdata "$T/data" --checkpoint fast --s3-part-size 5MiB \
    --partition-size 8MiB >"$T/full.log" 2>&1
ok $? "encrypted full backup to S3 succeeds"
as_pg "$PG_BIN/pgbench" -n -c 1 -t 200 >/dev/null 2>&1
pgd backup --repo "$REPO" "${K[@]}" --pgdata "$T/data" --checkpoint fast --delta >"$T/delta.log" 2>&1
ok $? "encrypted delta backup to S3 succeeds"
ids=$(pgd list --repo "$REPO" "${K[@]}" --json | python3 -c 'import json,sys; print(" ".join(b["id"] for b in json.load(sys.stdin)))')
like "$ids" "^[0-9T]+F [0-9T]+D$" "list with the key shows the full and the delta"
expect_error "list without the key" "repository \"$REPO\" is encrypted: an encryption key file is needed" \
    pgd list --repo "$REPO"

as_pg "$PG_BIN/pgbench" -n -c 1 -t 200 >/dev/null 2>&1
hash_a=$(pgbench_hash "$PGPORT")
q "SELECT pg_create_restore_point('s3_point')" >/dev/null
as_pg "$PG_BIN/pgbench" -n -c 1 -t 200 >/dev/null 2>&1
wait_archived "$PGPORT"

read -r hits n < <(bucket_marker enc)
is "$hits" "0" "no object of the encrypted prefix holds the marker string"
cmp_ok "$n" ">" 10 "(the prefix holds $n objects)"
pgd backup --repo "s3://$S3_BUCKET/plain" --pgdata "$T/data" --checkpoint fast --archive-check off \
    >/dev/null 2>&1
ok $? "the same backup into an unencrypted prefix succeeds"
read -r hits n < <(bucket_marker plain)
cmp_ok "$hits" ">" 0 "positive control: objects of the unencrypted prefix hold the marker string"

# what a wal-push of a new segment asks of S3, unencrypted and encrypted
mkdir -p "$T/w" && chown postgres "$T/w"
wal_segment_file 000000090000000000000001 "$T/w/000000090000000000000001"
for kind in plain enc; do
    k=()
    [ "$kind" = enc ] && k=("${K[@]}")
    before=$(wc -l <"$S3_LOG")
    pgd wal-push --repo "s3://$S3_BUCKET/$kind" "${k[@]}" "$T/w/000000090000000000000001" 2>/dev/null
    ok $? "wal-push of a new segment to the $kind prefix"
    reqs=$(tail -n +$((before + 1)) "$S3_LOG" | awk '{print $1}' | sort | uniq -c | awk '{printf "%s%s %s", sep, $2, $1; sep=", "}')
    diag "wal-push to the $kind prefix: $reqs"
    n=$(tail -n +$((before + 1)) "$S3_LOG" | wc -l)
    is "$n" "5" "wal-push to the $kind prefix is five requests (the root listed for the keyring and its marker, or the keyring read; GET, PUT, two HEADs)"
done

# what list without a key asks of the unencrypted prefix: no request to look for a keyring (the
# sentinel it reads is sniffed instead)
before=$(wc -l <"$S3_LOG")
pgd list --repo "s3://$S3_BUCKET/plain" >"$T/plain.list" 2>&1
ok $? "list of the unencrypted prefix without a key"
reqs=$(tail -n +$((before + 1)) "$S3_LOG" | awk '{print $1}' | sort | uniq -c | awk '{printf "%s%s %s", sep, $2, $1; sep=", "}')
diag "list of the unencrypted prefix: $reqs"
n=$(tail -n +$((before + 1)) "$S3_LOG" | wc -l)
is "$n" "5" "list of the unencrypted prefix is five requests (six when a root listing looked for a keyring)"

port=$(restore_and_start LATEST "$T/data_pitr" "${K[@]}" --target-name s3_point --target-action promote)
ok $? "restore of the delta from S3 to the restore point starts"
is "$(pgbench_hash "$port")" "$hash_a" "point-in-time restore: tables equal the source then"
pg_stop "$T/data_pitr"

seg=$(psql_at "$PGPORT" "SELECT pg_walfile_name(pg_current_wal_lsn())")
seg=$(printf '%s%08X' "${seg:0:16}" $((16#${seg:16:8} - 1)))
pgd wal-fetch --repo "$REPO" --encryption-key-file "$T/keys/other.key" "$seg" "$T/w.seg" 2>"$T/wf.err"
is "$?" "254" "wal-fetch from S3 with a wrong key exits 254"
like "$(cat "$T/wf.err")" "does not open repository \"$REPO\" \(wrong key\)" "naming the repository"

# a byte flipped in a partition of the full backup, in the bucket
full=${ids%% *}
key=$("$S3_PYTHON" - "$S3_BUCKET" "enc/backups/$full/" <<'PY'
import boto3, sys
s3 = boto3.client("s3")
keys = [o["Key"] for o in s3.list_objects_v2(Bucket=sys.argv[1], Prefix=sys.argv[2])["Contents"]
        if "/part_" in o["Key"]]
k = sorted(keys)[0]
b = bytearray(s3.get_object(Bucket=sys.argv[1], Key=k)["Body"].read())
b[len(b) // 2] ^= 0xFF
s3.put_object(Bucket=sys.argv[1], Key=k, Body=bytes(b))
print(k)
PY
)
like "$key" "part_" "boto3 flipped a byte of $key"
out=$(pgd verify --repo "$REPO" "${K[@]}" "$full" 2>&1)
is "$?" "3" "verify of the tampered backup exits 3"
like "$out" "$(basename "$key")" "naming the object"

# the keyring deleted from the bucket by hand: a keyless wal-push writes nothing (the marker
# says the repository is encrypted), and with the key, list says the keyring is missing
s3obj() { # s3obj get|put|delete KEY [FILE]
    "$S3_PYTHON" - "$S3_BUCKET" "$@" <<'PY'
import boto3, sys
s3 = boto3.client("s3")
bucket, op, key = sys.argv[1], sys.argv[2], sys.argv[3]
if op == "get":
    open(sys.argv[4], "wb").write(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
elif op == "put":
    s3.put_object(Bucket=bucket, Key=key, Body=open(sys.argv[4], "rb").read())
elif op == "delete":
    s3.delete_object(Bucket=bucket, Key=key)
elif op == "exists":
    r = s3.list_objects_v2(Bucket=bucket, Prefix=key)
    sys.exit(0 if r.get("KeyCount", 0) > 0 else 1)
PY
}
s3obj exists enc/encryption.pgdirect
ok $? "the encrypted prefix holds the marker encryption.pgdirect"
s3obj get enc/keyring.pgdirect "$T/keyring.saved" && s3obj delete enc/keyring.pgdirect
ok $? "boto3 deleted the keyring"
wal_segment_file 0000000900000000000000F2 "$T/w/0000000900000000000000F2"
expect_error "wal-push without the key, the keyring deleted" \
    "repository \"$REPO\" is encrypted: an encryption key file is needed" \
    pgd wal-push --repo "$REPO" "$T/w/0000000900000000000000F2"
s3obj exists enc/wal/00000009/0000000900000000000000F2
is "$?" "1" "and stores no plaintext segment"
expect_error "list with the key, the keyring deleted" \
    "the keyring \"keyring.pgdirect\" of repository \"$REPO\" is missing.*restore it from a copy" \
    pgd list --repo "$REPO" "${K[@]}"
s3obj put enc/keyring.pgdirect "$T/keyring.saved"
pgd list --repo "$REPO" "${K[@]}" >/dev/null 2>&1
ok $? "the keyring put back, list with the key works again"

done_testing
