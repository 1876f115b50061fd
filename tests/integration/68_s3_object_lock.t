#!/usr/bin/env bash
# S3 Object Lock (issue 38) on moto, which implements it: a bucket created with
# ObjectLockEnabledForBucket.
#
# With --s3-object-lock governance --s3-lock-days N, every object pgdirect writes (WAL from
# archive_command, a backup's partitions and sentinel) carries the lock mode and a
# retain-until date N after it was written (boto3's HeadObject, the independent checker), a
# multipart upload's object too.
# Three full backups: B1 locked for a day, B2 and B3 for a few seconds. delete --retain-full 1
# while B1 and B2 are locked: each is reported with its date, nothing is removed, and --strict
# exits 1 (without it: 0 and a warning). A direct DeleteObject of B2's sentinel version
# (boto3) is refused by the store. Once B2's short lock has passed, retention removes it and
# keeps the still-locked B1 with the WAL from B1's start on; B1 annotated without a lock (its
# sentinel rewritten unlocked) is still kept. check reports whether the bucket
# has Object Lock and its default retention, and fails --s3-object-lock on a bucket without
# it, and a lock asked for on a local repository is refused. Positive control: a backup written
# without --s3-object-lock has no lock and goes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_s3.sh"
setup_tmp
trap 's3_stop; cleanup_all' EXIT
s3_start
LOCKB=pgdirect-lock
"$S3_PYTHON" - "$LOCKB" <<'PY' || bail "could not create the Object Lock bucket"
import sys, boto3
boto3.client("s3").create_bucket(Bucket=sys.argv[1], ObjectLockEnabledForBucket=True)
PY
REPO="s3://$LOCKB/clu"
LONG=(--s3-object-lock governance --s3-lock-days 1)
# long enough for B2 and B3, their checks and the first delete on a loaded machine (12 s was not)
SHORT_S=24
SHORT=(--s3-object-lock governance --s3-lock-days ${SHORT_S}s)
pg_init "$T/data"
cat >>"$T/data/postgresql.conf" <<CONF
archive_command = '"$PGD" wal-push --repo "$REPO" --s3-object-lock governance --s3-lock-days ${SHORT_S}s %p'
CONF
pg_start "$T/data"
q "CREATE TABLE t AS SELECT g FROM generate_series(1, 10000) g"
archive_all "$PGPORT"

# s3py SCRIPT ARGS...: boto3 against the bucket, with the credentials of the test's user
s3py() { "$S3_PYTHON" - "$LOCKB" "$@"; }
backup() { # backup LOG OPTIONS...: echo the new id
    local log=$1
    shift
    pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast "$@" >"$T/$log" 2>&1 ||
        { sed 's/^/# /' "$T/$log" >&2; return 1; }
    sed -n 's/.*backup \([0-9]\{8\}T[0-9]\{6\}F\) complete.*/\1/p' "$T/$log"
}
ids() { pgd list --repo "$REPO" --json | python3 -c 'import json,sys; print(" ".join(b["id"] for b in json.load(sys.stdin)))'; }

# ---- every object written is locked ----
# B1 in one uncompressed partition larger than a part: a multipart upload, locked at its creation
B1=$(backup b1.log "${LONG[@]}" --compression none --s3-part-size 5MiB) || bail "backup B1 failed"
cmp_ok "$(grep -c 'uploadId=' "$S3_LOG")" ">" 1 "B1's partition went up as a multipart upload"
next_second
B2=$(backup b2.log "${SHORT[@]}") || bail "backup B2 failed"
next_second
B3=$(backup b3.log "${SHORT[@]}") || bail "backup B3 failed"
t_written=$(date +%s)
diag "backups $B1 (a day), $B2, $B3 ($SHORT_S s)"
s3py "clu/backups/$B1" "clu/backups/$B2.done.json" "clu/wal/" <<'PY' >"$T/heads" 2>&1
import sys, time, boto3
s3 = boto3.client("s3")
bucket, b1dir, b2sentinel, waldir = sys.argv[1:5]
def lock(key):
    h = s3.head_object(Bucket=bucket, Key=key)
    until = h.get("ObjectLockRetainUntilDate")
    return h.get("ObjectLockMode"), (until.timestamp() - time.time()) if until else None
part = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix=b1dir + "/part_")["Contents"]][0]
wal = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix=waldir)["Contents"]][0]
for name, key in (("b1part", part), ("b2sentinel", b2sentinel), ("wal", wal)):
    mode, left = lock(key)
    print(name, mode, int(left) if left is not None else "none")
PY
diag "$(tr '\n' ';' <"$T/heads")"
like "$(grep b1part "$T/heads")" "^b1part GOVERNANCE (8[5-6][0-9]{3})$" \
    "a partition of B1 is locked (GOVERNANCE) for a day"
like "$(grep b2sentinel "$T/heads")" "^b2sentinel GOVERNANCE ([0-9]|1[0-9]|2[0-4])$" \
    "B2's sentinel is locked for $SHORT_S seconds at most"
like "$(grep '^wal' "$T/heads")" "^wal GOVERNANCE -?[0-9]+$" "archived WAL is locked too"

# ---- delete while locked: reported, nothing removed; --strict fails ----
out=$(pgd delete --repo "$REPO" --retain-full 1 --strict 2>&1)
rc=$?
is "$rc" "1" "delete --strict with locked backups exits 1"
like "$out" "kept backup $B1: locked by S3 Object Lock until [0-9-]+ [0-9:]+ UTC" \
    "B1 is reported locked, with its date"
like "$out" "kept backup $B2: locked by S3 Object Lock until" "B2 is reported locked"
like "$out" "error: 2 backups that retention would remove are locked by S3 Object Lock" \
    "--strict says why it failed"
is "$(ids)" "$B1 $B2 $B3" "nothing locked was removed"
s3py "clu/backups/$B2.done.json" <<'PY' >"$T/direct" 2>&1
import sys, boto3, botocore
s3 = boto3.client("s3")
bucket, key = sys.argv[1:3]
v = s3.list_object_versions(Bucket=bucket, Prefix=key)["Versions"][0]["VersionId"]
try:
    s3.delete_object(Bucket=bucket, Key=key, VersionId=v)
    print("deleted")
except botocore.exceptions.ClientError as e:
    print("refused", e.response["Error"]["Code"])
PY
like "$(cat "$T/direct")" "^refused AccessDenied" "a direct DeleteObject of B2's sentinel version is refused"

# ---- once B2's lock has passed, retention removes it and keeps B1 ----
while [ "$(date +%s)" -le $((t_written + SHORT_S + 1)) ]; do sleep 1; done
out=$(pgd delete --repo "$REPO" --retain-full 1 2>&1)
rc=$?
is "$rc" "0" "delete after B2's lock passed exits 0"
like "$out" "removed backup $B2" "B2 is removed"
like "$out" "kept backup $B1: locked by S3 Object Lock until" "B1 is still kept"
like "$out" "warning: 1 backups that retention would remove are locked" "with a warning"
is "$(ids)" "$B1 $B3" "B1 (locked) and B3 (the newest) are left"
start1=$(pgd list --repo "$REPO" --json | python3 -c 'import json,sys
print([b["start_wal"] for b in json.load(sys.stdin) if b["id"] == sys.argv[1]][0])' "$B1")
pgd wal-fetch --repo "$REPO" "$start1" "$T/start1.wal" "${SHORT[@]}"
ok $? "the WAL of B1's start is kept"
# annotate rewrites B1's sentinel, here without a lock: B1's objects stay locked, and so does B1
pgd annotate "$B1" reason=audit --repo "$REPO" >/dev/null 2>&1
ok $? "annotate B1 without --s3-object-lock"
out=$(pgd delete --repo "$REPO" --retain-full 1 2>&1)
like "$out" "kept backup $B1: locked by S3 Object Lock until" \
    "B1 annotated (its sentinel rewritten unlocked) is still kept: its manifest is locked"
is "$(ids)" "$B1 $B3" "delete after annotate removed nothing"

# ---- positive control: without --s3-object-lock nothing is locked ----
B4=$(backup b4.log) || bail "backup B4 failed"
next_second
B5=$(backup b5.log) || bail "backup B5 failed"
out=$(pgd delete --repo "$REPO" --backup "$B4" 2>&1)
ok $? "control: a backup written without --s3-object-lock is deleted"
like "$out" "removed backup $B4" "control: B4 removed"
# versions: the bucket keeps them, so a delete without a version id would only add a marker
# and leave the data (billed); what delete removes goes with every version
versions() { s3py "$1" <<'PY'
import sys, boto3
r = boto3.client("s3").list_object_versions(Bucket=sys.argv[1], Prefix=sys.argv[2])
print(len([v for v in r.get("Versions", []) if "/part_" in v["Key"] or v["Key"].endswith("manifest.json")]))
PY
}
is "$(versions "clu/backups/$B4/")" "0" "no version of B4's partitions or manifest is left in the bucket"
cmp_ok "$(versions "clu/backups/$B5/")" ">" 0 "control: B5's are there, counted the same way"

# WAL still locked (a day), removed with its timeline: refused by the store, so kept, whole and
# visible (a delete without a version id would have hidden it behind a marker and said nothing)
SEG2=000000020000000000000003
wal_segment_file "$SEG2" "$T/$SEG2"
pgd wal-push --repo "s3://$LOCKB/tl2" "${LONG[@]}" "$T/$SEG2" || bail "wal-push of $SEG2 failed"
out=$(pgd delete --repo "s3://$LOCKB/tl2" --timeline 2 2>&1)
is "$?" "0" "delete --timeline of WAL still locked exits 0 (locked: kept, as a locked backup is)"
like "$out" "warning: kept 1 object that S3 Object Lock retains until [0-9-]+ [0-9:]+ UTC at the latest \(\"wal/00000002/$SEG2[^\"]*\"\): a later delete removes them" \
    "saying how many objects are kept, until when, and which"
pgd wal-fetch --repo "s3://$LOCKB/tl2" "$SEG2" "$T/$SEG2.back" && cmp -s "$T/$SEG2" "$T/$SEG2.back"
ok $? "and the segment is still there, whole (no delete marker hides it)"
# the control: the same unlocked goes, every version with it
pgd wal-push --repo "s3://$LOCKB/tl2u" "$T/$SEG2" || bail "wal-push of $SEG2 failed"
out=$(pgd delete --repo "s3://$LOCKB/tl2u" --timeline 2 2>&1)
is "$?" "0" "control: delete --timeline of unlocked WAL exits 0"
is "$(s3py tl2u/wal/ <<'PY'
import sys, boto3
r = boto3.client("s3").list_object_versions(Bucket=sys.argv[1], Prefix=sys.argv[2])
print(len(r.get("Versions", [])), len(r.get("DeleteMarkers", [])))
PY
)" "0 0" "and leaves neither a version nor a delete marker"
# a bucket with versions but no Object Lock: its owner's own safety net, left as it works (a marker)
"$S3_PYTHON" - pgdirect-versions <<'PY' || bail "could not create the versioned bucket"
import sys, boto3
s3 = boto3.client("s3")
s3.create_bucket(Bucket=sys.argv[1])
s3.put_bucket_versioning(Bucket=sys.argv[1], VersioningConfiguration={"Status": "Enabled"})
PY
pgd wal-push --repo "s3://pgdirect-versions/v" "$T/$SEG2" || bail "wal-push of $SEG2 failed"
pgd delete --repo "s3://pgdirect-versions/v" --timeline 2 >/dev/null 2>&1
is "$?:$("$S3_PYTHON" - pgdirect-versions v/wal/ <<'PY'
import sys, boto3
r = boto3.client("s3").list_object_versions(Bucket=sys.argv[1], Prefix=sys.argv[2])
print(len(r.get("Versions", [])), len(r.get("DeleteMarkers", [])))
PY
)" "0:1 1" "a versioned bucket without Object Lock: the delete leaves its version behind a marker"

# ---- check ----
out=$(pgd check --repo "$REPO" "${SHORT[@]}" 2>&1)
like "$out" "ok +object lock +the bucket has Object Lock enabled, no default retention; pgdirect locks each object it writes \\(governance" \
    "check: Object Lock enabled, no default retention"
# moto sets a default retention only on an empty bucket (AWS on any): a second one
s3py <<'PY' || bail "could not set a default retention"
import sys, boto3
s3 = boto3.client("s3")
s3.create_bucket(Bucket=sys.argv[1] + "-default", ObjectLockEnabledForBucket=True)
s3.put_object_lock_configuration(Bucket=sys.argv[1] + "-default", ObjectLockConfiguration={
    "ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": {"Mode": "COMPLIANCE", "Days": 3}}})
PY
out=$(pgd check --repo "s3://$LOCKB-default/clu" 2>&1)
like "$out" "ok +object lock +the bucket has Object Lock enabled, default retention COMPLIANCE for 3 days" \
    "check: the bucket's default retention"
out=$(pgd check --repo "s3://$S3_BUCKET/x" 2>&1)
like "$out" "ok +object lock +the bucket has no Object Lock" "check: a bucket without Object Lock"
out=$(pgd check --repo "s3://$S3_BUCKET/x" "${SHORT[@]}" 2>&1)
like "$out" "FAILED +object lock +the bucket has no Object Lock, and --s3-object-lock governance asks for it" \
    "check: --s3-object-lock on a bucket without it fails"
expect_error "--s3-lock-days alone" '"--s3-object-lock" and "--s3-lock-days" go together' \
    pgd list --repo "$REPO" --s3-lock-days 3
expect_error "--s3-object-lock on a local repository" 'needs an S3 repository' \
    pgd list --repo "$T/local" --s3-object-lock governance --s3-lock-days 3

done_testing
