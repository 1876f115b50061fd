#!/usr/bin/env bash
# wal-push under pressure. Two pushes of different files under one name with
# different compressions, started together, again and again: never both
# succeed, and exactly one file stands, the one wal-fetch serves. A push
# killed midway leaves a temporary file that a later push of a segment whose
# number is a multiple of 64 removes once it is stale (a fresh one is left
# alone). A push that fails says why: no space,
# permission, a bucket that does not exist. A repository created in a directory
# the user may write to but not read works (its new directories are fsynced in
# their parents where that can be done).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_s3.sh"
setup_tmp
FULL="$T/full"
trap 's3_stop; mountpoint -q "$FULL" && umount "$FULL"; cleanup_all' EXIT
seg=000000010000000000000021
mkdir -p "$T/a" "$T/b" && chown postgres "$T/a" "$T/b"
wal_segment_file "$seg" "$T/a/$seg"

# root's drop directory, mode 0733: postgres may create in it, not list it
mkdir -m 0733 "$T/droponly"
pgd wal-push --repo "$T/droponly/repo" "$T/a/$seg" >"$T/drop.out" 2>&1
ok $? "wal-push creates a repository in a directory it may write but not read" ||
    diag "$(cat "$T/drop.out")"
pgd wal-fetch --repo "$T/droponly/repo" "$seg" "$T/a/fetched.drop" && cmp -s "$T/a/fetched.drop" "$T/a/$seg"
ok $? "and the segment is served from it"
cp "$T/a/$seg" "$T/b/$seg" # the same name, another file: xlp_sysid differs
flip_byte "$T/b/$seg" 24
chown postgres "$T/b/$seg"

runs=20 both=0 neither=0 not_one=0 wrong=0
for i in $(seq 1 $runs); do
    R="$T/race$i"
    pgd wal-push --repo "$R" --compression lz4 "$T/a/$seg" >"$T/a.out" 2>&1 &
    pa=$!
    pgd wal-push --repo "$R" --compression zstd "$T/b/$seg" >"$T/b.out" 2>&1 &
    pb=$!
    wait $pa
    ra=$?
    wait $pb
    rb=$?
    [ $ra = 0 ] && [ $rb = 0 ] && both=$((both + 1))
    [ $ra != 0 ] && [ $rb != 0 ] && neither=$((neither + 1))
    stored=$(ls "$R/wal/00000001" 2>/dev/null | grep -vc '\.tmp\.')
    [ "$stored" = 1 ] || { not_one=$((not_one + 1)); diag "run $i: $stored objects: $(ls "$R/wal/00000001" | tr "\n" " ")"; }
    winner=a
    [ $rb = 0 ] && winner=b
    pgd wal-fetch --repo "$R" "$seg" "$T/fetched" 2>/dev/null && cmp -s "$T/fetched" "$T/$winner/$seg" ||
        { wrong=$((wrong + 1)); diag "run $i: wal-fetch does not serve the file of the push that succeeded"; }
    rm -f "$T/fetched"
done
is "$both" "0" "$runs concurrent pushes of two files under one name: never both succeed"
is "$neither" "0" "and never both fail"
is "$not_one" "0" "exactly one object stands afterwards"
is "$wrong" "0" "and wal-fetch serves the file of the push that succeeded"
like "$(cat "$T/a.out" "$T/b.out")" "already archived .* with different content" \
    "the other push says why it failed"

# a push killed midway (zstd at level 19 on incompressible data takes seconds)
seg2=000000010000000000000022
seg3=000000010000000000000023
seg4=000000010000000000000040 # a push of every 64th segment sweeps (WAL_SWEEP_EVERY)
wal_segment_file "$seg2" "$T/$seg2"
wal_segment_file "$seg3" "$T/$seg3"
wal_segment_file "$seg4" "$T/$seg4"
S="$T/stale"
"$PGD" wal-push --repo "$S" --compression zstd --compression-level 19 "$T/$seg2" &
pid=$!
tmp=""
for _ in $(seq 1 1200); do
    tmp=$(ls "$S/wal/00000001/"*.tmp.* 2>/dev/null | head -1)
    [ -n "$tmp" ] && break
    sleep 0.05
done
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
ok $([ -n "$tmp" ] && [ -e "$tmp" ] && echo 0 || echo 1) "a push killed midway leaves $(basename "$tmp")"
touch -d '2 hours ago' "$tmp"
fresh="$S/wal/00000001/$seg4.tmp.4242.0"
echo "a push still writing" >"$fresh"
"$PGD" wal-push --repo "$S" "$T/$seg3"
ok $? "the next push succeeds"
ok $([ -e "$tmp" ] && echo 0 || echo 1) "and, as segment 0x23, does not look for what killed pushes left"
"$PGD" wal-push --repo "$S" "$T/$seg4"
ok $? "the push of segment 0x40 succeeds"
ok $([ ! -e "$tmp" ] && echo 0 || echo 1) "and removes the temporary file idle for two hours"
ok $([ -e "$fresh" ] && echo 0 || echo 1) "but leaves a fresh one alone"
"$PGD" wal-push --repo "$S" "$T/$seg2"
ok $? "the segment whose push was killed is pushed again"

# the cause of a failed push
mkdir -p "$FULL"
if mount -t tmpfs -o size=4m tmpfs "$FULL" 2>/dev/null; then
    chown postgres "$FULL"
    expect_error "push into a full file system" "No space left on device" \
        pgd wal-push --repo "$FULL/repo" --compression none "$T/a/$seg"
    is "$(find "$FULL/repo" -type f | wc -l)" "0" "and it leaves nothing behind"
else
    diag "cannot mount a small tmpfs here: the no-space case is not tested"
fi
P="$T/perm"
pgd wal-push --repo "$P" "$T/$seg2" && chmod 555 "$P/wal/00000001"
expect_error "push into a directory it may not write" "Permission denied" \
    pgd wal-push --repo "$P" "$T/$seg3"
# the file is mapped, not read: what cannot be mapped is named, and nothing is stored
mkdir -p "$T/dirs/$seg3"
expect_error "push of a directory named like a segment" "WAL file \"$T/dirs/$seg3\" is not a regular file" \
    pgd wal-push --repo "$T/dirs/repo" "$T/dirs/$seg3"
is "$(find "$T/dirs/repo" -type f 2>/dev/null | wc -l)" 0 "(nothing stored)"
mkdir -p "$T/fifo" && mkfifo "$T/fifo/$seg3"
expect_error "push of a FIFO named like a segment (refused, not waited on)" "WAL file \"$T/fifo/$seg3\" is not a regular file" \
    timeout 10 "$PGD" wal-push --repo "$T/fifo/repo" "$T/fifo/$seg3"

s3_start
expect_error "push into a bucket that does not exist" "NoSuchBucket" \
    pgd wal-push --repo "s3://no-such-bucket-$$/wal" --s3-retries 1 "$T/$seg2"
# and wal-fetch from it is not "not archived" (a 404 there is NoSuchBucket, or has no body)
out=$(pgd wal-fetch --repo "s3://no-such-bucket-$$/wal" --s3-retries 1 "$seg2" "$T/f" 2>&1)
is "$?" "254" "wal-fetch from a bucket that does not exist: exit 254"
like "$out" "^pgdirect: error: .*$seg2.*NoSuchBucket" "and one line that says so"

# in standby mode, an S3 repository that keeps failing after retries (503) is worth waiting
# for: exit 1 with a warning, and PostgreSQL asks again (the S3 driver marks errors that
# outlast their retries transient).
proxy_start
proxy_rules '[{"fault": "503"}]'
mkdir -p "$T/sb" && touch "$T/sb/standby.signal" && chown -R postgres "$T/sb"
out=$(cd "$T/sb" && AWS_ENDPOINT_URL=$PROXY_URL pgd wal-fetch --repo "s3://$S3_BUCKET/wal" \
      --s3-retries 1 "$seg2" "$T/f" 2>&1)
rc=$?
is "$rc" "1" "standby, S3 unavailable: exit 1 (PostgreSQL asks again)"
like "$out" "^pgdirect: warning: .*$seg2.*503.*standby" "and one warning line naming the file"
is "$(printf '%s\n' "$out" | wc -l)" "1" "(one line)"
out=$(AWS_ENDPOINT_URL=$PROXY_URL pgd wal-fetch --repo "s3://$S3_BUCKET/wal" --s3-retries 1 \
      "$seg2" "$T/f" 2>&1)
is "$?" "254" "not in standby mode, S3 unavailable: exit 254"
like "$out" "^pgdirect: error: .*$seg2.*HTTP 503" "and one line that says so"
done_testing
