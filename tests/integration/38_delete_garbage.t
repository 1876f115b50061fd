#!/usr/bin/env bash
# delete --garbage removes what SIGKILLed backups left (their claim, their
# partitions, their temporary files; on S3 their unfinished multipart
# uploads) once their claim is older than --garbage-age, and leaves a
# running backup's objects alone: younger than --garbage-age, or claimed by
# a live process of this host even with --garbage-age 0. That backup then
# completes (and, locally, restores). Leftovers without a claim (their age
# is unknown) are left alone with a warning, until named with --backup.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_s3.sh"
setup_tmp
trap 's3_stop; cleanup_all' EXIT
s3_require_storage_tool
s3_start
pg_init "$T/data"
pg_start "$T/data"
as_pg "$PG_BIN/pgbench" -i -s 5 -q >/dev/null 2>&1 || bail "pgbench -i failed"
archive_all "$PGPORT"

backup_id() { sed -n 's/.*backup \([0-9]\{8\}T[0-9]\{6\}F\) complete.*/\1/p' "$1"; }

# slow_backup REPO LOG [options]: a backup kept running by --max-rate, in the background ($!)
slow_backup() {
    local repo=$1 log=$2
    shift 2
    as_pg "$PGD" backup --repo "$repo" --pgdata "$T/data" --checkpoint fast --compression none \
        --concurrency 1 --archive-check=off "$@" >/dev/null 2>"$log" &
}

# wait_until DESCRIPTION COMMAND...: poll (60 s at most)
wait_until() {
    local what=$1
    shift
    for _ in $(seq 1 600); do "$@" && return 0; sleep 0.1; done
    bail "timed out waiting for $what"
}

# age_claim TEXT: the claim's JSON with its start two days earlier
age_claim() {
    python3 -c 'import json,sys; c=json.load(sys.stdin); c["start_time"] -= 2*86400; print(json.dumps(c))'
}

# ids of local backup directories without a sentinel
incomplete() {
    for d in "$REPO"/backups/*/; do
        d=$(basename "$d")
        [ -e "$REPO/backups/$d.done.json" ] || echo "$d"
    done
}

# ======== a local repository ========
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast >/dev/null 2>"$T/a.err" || bail "backup A failed"
A=$(backup_id "$T/a.err")

slow_backup "$REPO" "$T/k1.err" --max-rate 2MiB
k1=$!
wait_until "the first backup's partition" bash -c "ls '$REPO'/backups/*/part_*.tmp.* >/dev/null 2>&1"
sigkill $k1
K1=$(incomplete)
like "$K1" "^[0-9]{8}T[0-9]{6}F$" "a SIGKILLed backup left $K1 without a sentinel"
ok $(ls "$REPO/backups/$K1"/*.tmp.* >/dev/null 2>&1 && echo 0 || echo 1) "with a temporary file"
age_claim <"$REPO/backups/$K1/claim.json" >"$T/claim" && cp "$T/claim" "$REPO/backups/$K1/claim.json"

# leftovers of a run that made no claim
U=20200101T000000F
mkdir -p "$REPO/backups/$U"
echo old >"$REPO/backups/$U/part_0001.tar.lz4"
chown -R postgres "$REPO/backups"

slow_backup "$REPO" "$T/r1.err" --max-rate 4MiB
r1=$!
wait_until "the running backup's partition" bash -c "ls '$REPO'/backups/*/part_*.tmp.* 2>/dev/null | grep -v '/$K1/' | grep -q ."
R1=$(incomplete | grep -v "^$K1$" | grep -v "^$U$")
like "$R1" "^[0-9]{8}T[0-9]{6}F$" "backup $R1 is running"
ls -R "$REPO/backups/$K1" "$REPO/backups/$U" >"$T/before"

pgd delete --repo "$REPO" --garbage --dry-run >"$T/dry.out" 2>"$T/dry.err"
is "$?" "0" "delete --garbage --dry-run succeeds"
like "$(grep "$K1" "$T/dry.out")" "^would remove incomplete backup $K1: claimed 2d00h ago by process [0-9]+ of this host, which has ended: no sentinel, so garbage$" \
    "dry run: the killed backup would go, and why"
like "$(grep "$R1" "$T/dry.out")" "^would leave running backup $R1: claimed [0-9]+s ago by process [0-9]+ of this host, still running" \
    "dry run: the running one would stay, and why"
is "$(ls -R "$REPO/backups/$K1" "$REPO/backups/$U" | diff "$T/before" - && echo same)" "same" "dry run: nothing removed"

pgd delete --repo "$REPO" --garbage >"$T/del.out" 2>"$T/del.err"
is "$?" "0" "delete --garbage succeeds"
ok $([ ! -e "$REPO/backups/$K1" ] && echo 0 || echo 1) "every object of the killed backup is gone, temporary files too"
like "$(cat "$T/del.out")" "^removed incomplete backup $K1:" "the run says so"
ok $([ -e "$REPO/backups/$R1/claim.json" ] && ls "$REPO/backups/$R1"/*.tmp.* >/dev/null 2>&1 && echo 0 || echo 1) \
    "the running backup's claim and partition are there"
is "$(cat "$REPO/backups/$U/part_0001.tar.lz4")" "old" "leftovers without a claim are left alone"
like "$(cat "$T/del.err")" "warning: left backups/$U/ alone: no claim, so its age is unknown \(if no backup is writing it, remove it with pgdirect delete --backup $U\)" \
    "with a warning that says how to remove them"
ok $([ -e "$REPO/backups/$A.done.json" ] && echo 0 || echo 1) "the complete backup is untouched"

pgd delete --repo "$REPO" --garbage --garbage-age 0 >"$T/zero.out" 2>&1
is "$?" "0" "delete --garbage --garbage-age 0 succeeds"
like "$(grep "$R1" "$T/zero.out")" "^left running backup $R1: claimed .* by process [0-9]+ of this host, still running" \
    "even then the running backup stays: its process is alive"

wait $r1
is "$?" "0" "the running backup completes"
R1_done=$(backup_id "$T/r1.err")
is "$R1_done" "$R1" "under the id delete left alone"
hash_src=$(pgbench_hash "$PGPORT")
archive_all "$PGPORT"
port=$(restore_and_start "$R1" "$T/r1_restored")
ok $? "it restores"
[ -n "$port" ] && is "$(pgbench_hash "$port")" "$hash_src" "its data equals the source"
[ -n "$port" ] && pg_stop "$T/r1_restored"

pgd delete --repo "$REPO" --backup "$U" >"$T/u.out" 2>&1
is "$?" "0" "delete --backup removes leftovers without a claim when named"
ok $([ ! -e "$REPO/backups/$U" ] && echo 0 || echo 1) "they are gone"

# ======== an S3 repository: unfinished multipart uploads ========
S3REPO="s3://$S3_BUCKET/garbage"
uploads_under() { # uploads_under ID: unfinished multipart uploads under backups/ID/
    "$S3_PYTHON" - "$S3_BUCKET" "garbage/backups/$1/" <<'PY'
import sys
import boto3
r = boto3.client("s3").list_multipart_uploads(Bucket=sys.argv[1], Prefix=sys.argv[2])
print(len(r.get("Uploads", [])))
PY
}
objects_under() {
    "$S3_PYTHON" - "$S3_BUCKET" "garbage/backups/$1" <<'PY'
import sys
import boto3
r = boto3.client("s3").list_objects_v2(Bucket=sys.argv[1], Prefix=sys.argv[2])
print(len(r.get("Contents", [])))
PY
}
s3_incomplete() {
    "$PGD_STORAGE" "$S3REPO" list backups | python3 -c '
import sys
names = [l.split()[0] for l in sys.stdin]
for n in names:
    if n.endswith("/") and n[:-1] + ".done.json" not in names: print(n[:-1])'
}
first_part_of() { grep -q "^PUT /$S3_BUCKET/garbage/backups/$1/part_0001.tar?partNumber=1&.* 200$" "$S3_LOG"; }
any_first_part() { grep -q "^PUT /$S3_BUCKET/garbage/backups/[0-9T]*F/part_0001.tar?partNumber=1&.* 200$" "$S3_LOG"; }

slow_backup "$S3REPO" "$T/k2.err" --max-rate 2MiB --s3-part-size 5MiB --partition-size 1GiB
k2=$!
wait_until "the first part of the killed backup's partition" any_first_part
sigkill $k2
K2=$(s3_incomplete)
like "$K2" "^[0-9]{8}T[0-9]{6}F$" "S3: a SIGKILLed backup left $K2 without a sentinel"
is "$(uploads_under "$K2")" "1" "S3: and an unfinished multipart upload"
"$PGD_STORAGE" "$S3REPO" get "backups/$K2/claim.json" | age_claim | "$PGD_STORAGE" "$S3REPO" put "backups/$K2/claim.json" ||
    bail "could not age the claim on S3"

slow_backup "$S3REPO" "$T/r2.err" --max-rate 4MiB --s3-part-size 5MiB --partition-size 1GiB
r2=$!
wait_until "the first part of the running backup" bash -c "grep -v '/$K2/' '$S3_LOG' | grep -q '^PUT /$S3_BUCKET/garbage/backups/[0-9T]*F/part_0001.tar?partNumber=1&.* 200$'"
R2=$(s3_incomplete | grep -v "^$K2$")
like "$R2" "^[0-9]{8}T[0-9]{6}F$" "S3: backup $R2 is running"

pgd delete --repo "$S3REPO" --garbage >"$T/s3.out" 2>"$T/s3.err"
rc=$?
is "$rc" "0" "S3: delete --garbage succeeds"
[ "$rc" = 0 ] || sed 's/^/#   /' "$T/s3.err"
is "$(objects_under "$K2")" "0" "S3: every object of the killed backup is gone"
is "$(uploads_under "$K2")" "0" "S3: its unfinished multipart upload is aborted"
cmp_ok "$(grep -c "^DELETE /$S3_BUCKET/garbage/backups/$K2/[^ ]*uploadId=" "$S3_LOG")" ">=" 1 \
    "S3: the abort is in the server's log (what the next check looks for)"
cmp_ok "$(objects_under "$R2")" ">=" 1 "S3: the running backup's claim is there"
# (whether the upload is still open now depends on how fast the backup ran meanwhile: the
# log says whether delete aborted it, and the backup completing below says it went on)
is "$(grep -c "^DELETE /$S3_BUCKET/garbage/backups/$R2/[^ ]*uploadId=" "$S3_LOG")" "0" \
    "S3: its multipart upload was not aborted"
wait $r2
is "$?" "0" "S3: the running backup completes"
is "$(backup_id "$T/r2.err")" "$R2" "S3: under the id delete left alone"
is "$(pgd list --repo "$S3REPO" --json | python3 -c 'import json,sys; print(" ".join(b["id"] + ":" + b["status"] for b in json.load(sys.stdin)))')" \
    "$R2:ok" "S3: list shows it complete, and nothing of the killed one"
done_testing
