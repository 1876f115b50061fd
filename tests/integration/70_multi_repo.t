#!/usr/bin/env bash
# Several repositories at once (--repo given twice): a local one and an S3 one on moto.
# - archive_command pushes every segment to both (synchronous: durable in each before exit 0);
# - one backup run writes the same backup id to both, reading the data directory once: its own
#   read counter ("size" of --json) and the kernel's count of the bytes the process read
#   (rchar, with the threads engine) are about one pass of the data directory, not two; the
#   positive control is that rchar does count the data files' reads (it is at least their size);
# - the local copy, alone, restores equal to the source;
# - wal-fetch with the S3 repository answering 500s (the fault proxy) takes the segment from
#   the local one, saying so; 1 when every repository answered "not there", 254 when one could
#   not be reached and none had it;
# - a backup during which the S3 repository fails (500s on its partition uploads): exit 1
#   naming it, and the local copy restores equal; the S3 one holds nothing of that id (read
#   from the server directly, with botocore);
# - the local repository removed: wal-fetch and restore continue from the S3 one (the restored
#   server's restore_command names both, and recovery reads the WAL from S3), data equal;
# - list of two repositories: each line, and each --json object, names its repository; one
#   that does not exist is an error naming it (exit 1), and the other is still listed;
# - wal-fetch --prefetch with two repositories, the first not there: the prefetcher reads
#   through both, and the next segment is served from its spool, equal to the archived one.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_s3.sh"
setup_tmp
trap 's3_stop; cleanup_all' EXIT
s3_start
proxy_start
LOCAL="$T/repo"
S3="s3://$S3_BUCKET/multi"
# the S3 repository through the proxy, with no retries: a fault is a failure at once
S3_FAULTY="$S3?s3-endpoint=$PROXY_URL&s3-retries=0"
REPO=$LOCAL
pg_init "$T/data"
cat >>"$T/data/postgresql.conf" <<CONF
archive_command = '"$PGD" wal-push --repo "$LOCAL" --repo "$S3" %p'
CONF
pg_start "$T/data"
as_pg "$PG_BIN/pgbench" -i -s 2 -q >/dev/null 2>&1 || bail "pgbench -i failed"

# ---- one read, two copies ----
# rchar of the shell includes what its reaped child (pgdirect) read with read()/pread()
as_pg bash -c '"$0" "$@" >"'"$T"'/b1.json" 2>"'"$T"'/b1.err"; rc=$?
    awk "/^rchar:/ {print \$2}" /proc/$$/io >"'"$T"'/b1.rchar"; exit $rc' \
    "$PGD" backup --repo "$LOCAL" --repo "$S3" --pgdata "$T/data" --checkpoint fast \
    --io-engine threads --json
ok $? "backup to a local and an S3 repository in one run: exit 0"
ID=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$T/b1.json")
like "$ID" "^[0-9]{8}T[0-9]{6}F$" "it reports one backup id ($ID)"
list_ids() { pgd list --repo "$1" --json | python3 -c 'import json,sys; print(" ".join(b["id"] for b in json.load(sys.stdin) if b.get("status") == "ok"))'; }
is "$(list_ids "$LOCAL")" "$ID" "the local repository lists it"
is "$(list_ids "$S3")" "$ID" "the S3 repository lists it, with the same id"
hash_src=$(pgbench_hash "$PGPORT")
size=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["size"])' "$T/b1.json")
data=$(du -sb --exclude=pg_wal "$T/data" | cut -f1)
rchar=$(cat "$T/b1.rchar")
diag "data directory $data bytes (without pg_wal), backup read counter $size, process rchar $rchar"
cmp_ok "$size" "<=" "$(( data * 11 / 10 ))" "the backup's own counter: one pass of the data directory (<= 1.1 x)"
cmp_ok "$size" ">=" "$(( data * 8 / 10 ))" "and it counted the data directory (>= 0.8 x)"
cmp_ok "$rchar" ">=" "$size" "control: the kernel's rchar counts the data files' reads"
cmp_ok "$rchar" "<" "$(( size * 3 / 2 ))" "the process read the data directory once (rchar < 1.5 x, two passes would be 2 x)"

port=$(restore_and_start "$ID" "$T/r_local")
ok $? "the local copy, from the local repository alone, restores and starts"
is "$(pgbench_hash "$port")" "$hash_src" "restored from the local repository: every pgbench table equals the source"
pg_stop "$T/r_local"

# ---- wal-fetch: a repository answering 500s, then not-found everywhere ----
archive_all "$PGPORT"
seg=$(psql_at "$PGPORT" "SELECT pg_walfile_name(pg_current_wal_lsn())")
seg=$(ls "$LOCAL/wal/${seg:0:8}" | grep -E '^[0-9A-F]{24}(\.lz4|\.zst)?$' | sort | tail -1 | cut -c1-24)
proxy_rules '[{"method": "GET", "fault": "500"}]'
out=$(pgd wal-fetch --repo "$S3_FAULTY" --repo "$LOCAL" "$seg" "$T/seg1" 2>&1)
is "$?" "0" "wal-fetch with the S3 repository answering 500s: exit 0 (from the local one)"
like "$out" "could not read .*$S3.*trying repository \"$LOCAL\"" "it says it passes over the S3 repository"
cmp_ok "$(proxy_count fault=500)" ">=" 1 "the proxy did answer 500"
pgd wal-fetch --repo "$LOCAL" "$seg" "$T/seg_ref"
cmp -s "$T/seg1" "$T/seg_ref"
ok $? "the segment fetched is the archived one"
pgd wal-fetch --repo "$S3" --repo "$LOCAL" 000000010000009900000099 "$T/seg2" 2>/dev/null
is "$?" "1" "a segment neither repository has: exit 1 (not archived)"
pgd wal-fetch --repo "$S3_FAULTY" --repo "$LOCAL" 000000010000009900000099 "$T/seg3" 2>"$T/f3.err"
is "$?" "254" "one repository unreachable and none has it: exit 254, not 1"
proxy_rules '[]'

# ---- one repository fails during a backup ----
# the same two repositories (archive_command's: the backup checks its WAL reaches them), S3 through
# the proxy, which fails every partition upload after the first
proxy_rules '[{"method": "PUT", "path": "/multi/backups/.*/part_", "fault": "500", "from": 2}]'
out=$(pgd backup --repo "$LOCAL" --repo "$S3_FAULTY" \
      --pgdata "$T/data" --checkpoint fast --partition-size 4MiB --json 2>"$T/b2.err")
rc=$?
is "$rc" "1" "a backup during which the S3 repository fails: exit 1"
like "$(cat "$T/b2.err")" "error: backup [0-9T]+F completed, but not in repository \"$S3\", which failed" \
     "the error names the repository that has no backup"
like "$(cat "$T/b2.err")" "warning: repository \"$S3\" failed and leaves this run" \
     "a warning said so when it failed"
cmp_ok "$(proxy_count fault=500)" ">=" 1 "the proxy failed the S3 repository's uploads"
ID2=$(python3 -c 'import json,sys; print(json.load(sys.stdin).get("id", ""))' <<<"$out")
like "$ID2" "^[0-9]{8}T[0-9]{6}F$" "--json still reports the backup ($ID2)"
is "$(list_ids "$LOCAL")" "$ID $ID2" "the local repository holds it, complete"
is "$(list_ids "$S3")" "$ID" "the S3 repository does not"
is "$(/usr/bin/python3 - "$AWS_ENDPOINT_URL" "$S3_BUCKET" "multi/backups/$ID2/" <<'PY'
import os, sys
import botocore.session
s3 = botocore.session.get_session().create_client(
    "s3", endpoint_url=sys.argv[1], region_name="us-east-1",
    aws_access_key_id=os.environ["AWS_ACCESS_KEY_ID"],
    aws_secret_access_key=os.environ["AWS_SECRET_ACCESS_KEY"])
print(len(s3.list_objects_v2(Bucket=sys.argv[2], Prefix=sys.argv[3]).get("Contents", [])))
PY
)" "0" "and what it had written there of $ID2 was removed"
proxy_rules '[]'
port=$(restore_and_start "$ID2" "$T/r_local2")
ok $? "the surviving copy restores and starts"
is "$(pgbench_hash "$port")" "$hash_src" "restored from it: every pgbench table equals the source"
pg_stop "$T/r_local2"

# ---- the local repository removed: S3 serves ----
rm -rf "$LOCAL"
pgd wal-fetch --repo "$LOCAL" --repo "$S3" "$seg" "$T/seg4" 2>/dev/null
is "$?" "0" "local repository removed: wal-fetch continues from S3"
cmp -s "$T/seg1" "$T/seg4"
ok $? "with the same segment"
# archived to S3 only now (wal-push would create the local directory again)
reload_and_wait archive_command "\"$PGD\" wal-push --repo \"$S3\" %p"
as_pg "$PG_BIN/pgbench" -n -c 1 -t 100 >/dev/null 2>&1
hash_end=$(pgbench_hash "$PGPORT")
isnt "$hash_end" "$hash_src" "the data moved on after the backup (recovery must replay WAL from S3)"
seg_end=$(psql_at "$PGPORT" "SELECT pg_walfile_name(pg_switch_wal())")
for _ in $(seq 1 300); do
    pgd wal-fetch --repo "$S3" "$seg_end" "$T/probe" 2>/dev/null && break
    sleep 0.2
done
port=$(restore_and_start "$ID" "$T/r_s3" --repo "$S3")
ok $? "restore with --repo LOCAL --repo S3, the local one removed: starts"
like "$(cat "$T/r_s3.restore.log")" "repository \"$LOCAL\" does not exist" "it says the local repository is not there"
is "$(pgbench_hash "$port")" "$hash_end" "restored from S3 and recovered through its WAL: equal to the source at the end"
like "$(grep restore_command "$T/r_s3/postgresql.auto.conf")" "--repo .*$LOCAL.* --repo .*multi" \
     "the restored server's restore_command names both repositories, in order"
pg_stop "$T/r_s3"

# ---- list per repository ----
mkdir -p "$T/repo_l" && chown postgres "$T/repo_l"
out=$(pgd list --repo "$T/repo_l" --repo "$S3" --json | python3 -c 'import json,sys
print(" ".join(b["repository"] + "=" + b["id"] for b in json.load(sys.stdin) if b["status"] == "ok"))')
is "$out" "$S3=$ID" "list --json with two repositories: each backup names its repository"
out=$(pgd list --repo "$T/repo_l" --repo "$S3" 2>&1)
is "$?" "0" "list of two repositories: exit 0"
like "$out" "^$T/repo_l  \(no backups\)" "the empty local repository's line names it"
like "$out" "^$S3  $ID +full" "the S3 repository's line names it"
out=$(pgd list --repo "$T/nowhere" --repo "$S3" 2>&1)
is "$?" "1" "list of two repositories, one missing: exit 1"
like "$out" "repository \"$T/nowhere\" does not exist" "naming the missing one"
like "$out" "^$S3  $ID +full" "and the other is still listed"

# ---- usage ----
expect_error "a repository setting that is not one" "\"s3-bogus\" is not a repository setting" \
    pgd list --repo "$S3?s3-bogus=1"
expect_error "a command that works on one repository given two" "given 2 times" \
    pgd metrics --repo "$T/other" --repo "$S3"
expect_error "the same repository twice" "names repository \"$T/other\" twice" \
    pgd backup --repo "$T/other" --repo "$T/other?s3-retries=2" --pgdata "$T/data"
ok "$([ -e "$T/other" ] && echo 1 || echo 0)" "and nothing was created"

# ---- wal-fetch --prefetch with two repositories: the prefetcher reads through both ----
# (--archive-async with two repositories: test 71)
mkdir -p "$T/pf" && chown postgres "$T/pf"
next=$(python3 -c 'import sys; s = sys.argv[1]; n = int(s[8:16], 16) * 256 + int(s[16:24], 16) + 1
print("%s%08X%08X" % (s[:8], n // 256, n % 256))' "$seg")
pf_fetch() { (cd "$T/pf" && pgd wal-fetch --prefetch 2 --log-level debug --spool-path "$T/pf/spool" \
    --repo "$T/other" --repo "$S3" "$1" "$2" 2>&1); }
pf_entry() { ls "$T"/pf/spool/fetch-*/"$1".* 2>/dev/null | grep -v '\.part' | head -1; }
out=$(pf_fetch "$seg" "$T/pf/a")
is "$?" "0" "wal-fetch --prefetch with two repositories, the first not there: exit 0"
cmp -s "$T/pf/a" "$T/seg_ref"
ok $? "the segment is the archived one"
for _ in $(seq 1 300); do [ -n "$(pf_entry "$next")" ] && break; sleep 0.1; done
ok "$([ -n "$(pf_entry "$next")" ] && echo 0 || echo 1)" "the prefetcher fetched the next segment, $next, from the S3 repository"
out=$(pf_fetch "$next" "$T/pf/b")
is "$?" "0" "wal-fetch of $next: exit 0"
like "$out" "\"$next\" served from the prefetch spool" "served from the spool"
pgd wal-fetch --repo "$S3" "$next" "$T/pf/b_ref"
cmp -s "$T/pf/b" "$T/pf/b_ref"
ok $? "equal to the archived one"
kill -9 "$(cat "$T"/pf/spool/fetch-*/lock)" 2>/dev/null

done_testing
