#!/usr/bin/env bash
# verify re-reads a backup without restoring it. On a good backup it exits 0
# and prints the WAL window; it finds a flipped byte in a partition, a
# missing partition, a file whose checksum is not the manifest's, a missing
# WAL segment between start and stop (named), and reports a gap after the
# stop as the end of the point-in-time window (the backup is still good).
# Damage exits 3, an operational error 1. It writes nothing (listing and
# mtimes equal before and after; it runs on a read-only copy) and leaves
# the partitions it read out of the page cache.
# On S3 the same backup verifies through ranged GETs with no write request,
# and a missing partition object is found.
# (Delta backups do not exist yet, so there is no broken delta chain to find.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_s3.sh"
setup_tmp
trap 's3_stop; cleanup_all' EXIT
s3_require_storage_tool
require_pagecache
pg_init "$T/data"
pg_start "$T/data"
as_pg "$PG_BIN/pgbench" -i -s 1 -q >/dev/null 2>&1 || bail "pgbench -i failed"
archive_all "$PGPORT"

backup_id() { sed -n 's/.*backup \([0-9]\{8\}T[0-9]\{6\}F\) complete.*/\1/p' "$1"; }
# everything but the verdicts verify records (backups/<id>/verify.json), which list shows
# (and the mtimes of the directories that hold them)
snapshot() { (cd "$1" && find . ! -name verify.json \( -type d -printf '%p %m\n' -o -printf '%p %s %T@ %m\n' \) | sort); }
copy_repo() { rm -rf "$1"; cp -a "$REPO" "$1"; }
seg_add() { # seg_add NAME N: the segment N after NAME (16 MiB segments)
    python3 -c 'import sys
n = sys.argv[1]; tli, no = n[:8], int(n[8:16], 16) * 256 + int(n[16:24], 16) + int(sys.argv[2])
print("%s%08X%08X" % (tli, no // 256, no % 256))' "$1" "$2"
}
wal_obj() { ls "$1/wal/${2:0:8}/" | grep -E "^$2(\.lz4|\.zst)?\$"; }
more_wal() { # more_wal TAG N: N more segments archived, each holding a row tagged TAG
    for i in $(seq 1 "$2"); do
        q "INSERT INTO pgbench_history VALUES ($1, $1, $i, 0, now())" >/dev/null
        archive_all "$PGPORT"
    done
}
# the newest backup's start and stop segments
newest_wal() { pgd list --repo "$REPO" --json | python3 -c 'import json,sys
b = json.load(sys.stdin)[-1]; print(b["start_wal"], b["stop_wal"])'; }

# ---- a backup whose WAL spans several segments: switches while it runs ----
as_pg "$PGD" backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --max-rate 2MiB \
    --concurrency 1 >/dev/null 2>"$T/b.err" &
bpid=$!
started=no
for _ in $(seq 1 1200); do
    if ls "$REPO"/backups/*/part_*.tmp.* >/dev/null 2>&1; then started=yes; break; fi
    sleep 0.1
done
is "$started" "yes" "the backup is writing"
for i in 1 2 3; do
    q "INSERT INTO pgbench_history VALUES (1, 1, $i, 0, now())" >/dev/null
    q "SELECT pg_switch_wal()" >/dev/null
done
wait $bpid
ok $? "backup completes" || sed 's/^/# /' "$T/b.err"
ID=$(backup_id "$T/b.err")
# WAL after the stop: five more segments
more_wal 2 5
read -r START STOP < <(newest_wal)
diag "backup $ID: WAL $START to $STOP"
cmp_ok "$(( 16#${STOP:16:8} - 16#${START:16:8} ))" ">=" 2 "its WAL spans at least three segments"

# ---- a good backup ----
sync
for p in "$REPO/backups/$ID"/part_*; do "$PC" evict "$p"; done
snapshot "$REPO" >"$T/snap_before"
pgd verify --repo "$REPO" >"$T/good.out" 2>"$T/good.err"
is "$?" "0" "verify of a good backup exits 0"
sed 's/^/# /' "$T/good.out"
like "$(cat "$T/good.out")" "^backup $ID: ok: " "it names the backup (LATEST by default) and says ok"
like "$(cat "$T/good.out")" "WAL: restorable: $START to $STOP present and checked" \
    "the WAL from start to stop is there"
last=$(ls "$REPO/wal/${START:0:8}/" | grep -E '^[0-9A-F]{24}(\.lz4|\.zst)?$' | sort | tail -1)
like "$(cat "$T/good.out")" "point-in-time window: from .* to [0-9A-F]+/[0-9A-F]+ \(the end of segment ${last:0:24}\)" \
    "the window reaches the last archived segment"
snapshot "$REPO" >"$T/snap_after"
is "$(diff "$T/snap_before" "$T/snap_after")" "" "verify wrote nothing but its verdicts: listing, sizes, mtimes and modes unchanged"
ok $(ls "$REPO"/backups/*/verify.json >/dev/null 2>&1 && echo 0 || echo 1) "and it did record its verdicts"
part=$(ls -S "$REPO/backups/$ID"/part_* | head -1)
pct=$("$PC" percent "$part")
cmp_ok "$pct" "<=" 5 "the largest partition it read is not left in the page cache ($pct %)"
cat "$part" >/dev/null
pct=$("$PC" percent "$part")
cmp_ok "$pct" ">=" 90 "control: reading it with cat does leave it cached ($pct %)"

pgd verify --all --json --repo "$REPO" >"$T/good.json" 2>/dev/null
is "$?" "0" "verify --all --json exits 0"
is "$(python3 -c 'import json,sys
d = json.load(open(sys.argv[1])); b = d["backups"][0]
print(d["ok"], b["status"], b["wal"]["restorable"], b["window"]["gap_segment"])' "$T/good.json")" \
    "True ok True None" "the JSON says ok, restorable, no gap"

# a read-only copy, verified as a user that could not write to it anyway
copy_repo "$T/ro"
chown -R root:root "$T/ro"
chmod -R a-w,a+rX "$T/ro"
pgd verify --repo "$T/ro" "$ID" >/dev/null 2>"$T/ro.err"
is "$?" "0" "verify of a read-only repository copy succeeds" || sed 's/^/# /' "$T/ro.err"

# ---- damage: each in its own copy ----
verify_copy() { # verify_copy DIR: exit status in RC, stdout in OUT
    OUT=$(pgd verify --repo "$1" "$ID" 2>"$1.err")
    RC=$?
    printf '%s\n' "$OUT" | sed 's/^/# /'
}

copy_repo "$T/flip"
python3 - "$T/flip/backups/$ID/$(basename "$part")" <<'PY'
import sys
p = sys.argv[1]; f = open(p, "r+b"); f.seek(4096); b = f.read(1); f.seek(4096)
f.write(bytes([b[0] ^ 0x01])); f.close()
PY
verify_copy "$T/flip"
is "$RC" "3" "a flipped byte in a partition: exit 3 (damaged)"
like "$OUT" "^backup $ID: DAMAGED" "the backup is reported damaged"
like "$OUT" "problem: .*$(basename "$part")" "the problem names the partition"
like "$(cat "$T/flip.err")" "1 of 1 backups verified are damaged" "and stderr sums it up"

copy_repo "$T/nopart"
rm "$T/nopart/backups/$ID/$(basename "$part")"
verify_copy "$T/nopart"
is "$RC" "3" "a missing partition: exit 3"
like "$OUT" "problem: partition \"$(basename "$part")\" of backup \"$ID\" is missing from repository \"" \
    "the missing partition is named"

copy_repo "$T/filecrc"
victim=$(python3 - "$T/filecrc/backups/$ID/manifest.json" <<'PY'
import json, sys
p = sys.argv[1]; m = json.load(open(p))
f = next(f for f in m["files"] if f.get("type", "file") == "file" and f.get("size", 0) > 0)
f["crc32c"] = "%08x" % (int(f["crc32c"], 16) ^ 1)
json.dump(m, open(p, "w")); print(f["path"])
PY
)
verify_copy "$T/filecrc"
is "$RC" "3" "a file whose CRC-32C is not the manifest's: exit 3"
like "$OUT" "checksum mismatch for file \"$victim\"" "the file is named"

mid=$(seg_add "$START" 1)
copy_repo "$T/nowal"
rm "$T/nowal/wal/${mid:0:8}/$(wal_obj "$T/nowal" "$mid")"
verify_copy "$T/nowal"
is "$RC" "3" "a WAL segment missing between start and stop: exit 3"
like "$OUT" "WAL segment $mid \(between the backup's start $START and stop $STOP\) is missing" \
    "the missing segment is named"
like "$OUT" "WAL: NOT restorable" "and the backup is said not to be restorable"

copy_repo "$T/cutwal"
obj="$T/cutwal/wal/${mid:0:8}/$(wal_obj "$T/cutwal" "$mid")"
case $obj in
*.lz4 | *.zst) truncate -s -24 "$obj" ;; # its CRC-32C trailer lost: the codec's frame still ends
*) bail "$obj: expected a compressed WAL object" ;;
esac
verify_copy "$T/cutwal"
is "$RC" "3" "a WAL segment between start and stop without its trailer: exit 3"
like "$OUT" "$mid.* is corrupt or cut short: it ends without pgdirect's CRC-32C trailer" \
    "the segment is named, and what is wrong with it"
like "$OUT" "WAL: NOT restorable" "and the backup is said not to be restorable"

gap=$(seg_add "$STOP" 2)
copy_repo "$T/gap"
rm "$T/gap/wal/${gap:0:8}/$(wal_obj "$T/gap" "$gap")"
verify_copy "$T/gap"
is "$RC" "0" "a gap after the stop: the backup is still good (exit 0)"
like "$OUT" "point-in-time window: from .* \(the end of segment $(seg_add "$STOP" 1)\)" \
    "the window ends just before the gap"
like "$OUT" "WAL gap: segment $gap is missing .*resumes at $(seg_add "$STOP" 3)" \
    "the gap is named, and where WAL resumes"

# a damaged segment after the stop: the backup is good, the window ends before it, exit 3
bad=$(seg_add "$STOP" 2)
copy_repo "$T/badwin"
obj="$T/badwin/wal/${bad:0:8}/$(wal_obj "$T/badwin" "$bad")"
truncate -s -24 "$obj"
verify_copy "$T/badwin"
is "$RC" "3" "a damaged WAL segment after the stop: exit 3"
like "$OUT" "^backup $ID: ok: " "the backup itself is still good"
like "$OUT" "WAL: restorable: $START to $STOP present and checked" "and restorable"
like "$OUT" "point-in-time window: from .* \(the end of segment $(seg_add "$STOP" 1)\)" \
    "the window ends just before the damaged segment"
like "$OUT" "WAL DAMAGED: segment $bad \(the window ends before it\): .*corrupt or cut short" \
    "the damaged segment is named, with what is wrong with it"
like "$(cat "$T/badwin.err")" "damaged WAL after the stop of 1 of 1 backups" "and stderr sums it up"
OUT=$(pgd verify --all --json --repo "$T/badwin" 2>/dev/null)
is "$?" "3" "--all --json: exit 3 too"
is "$(printf '%s' "$OUT" | python3 -c 'import json,sys
d = json.load(sys.stdin); b = d["backups"][-1]
print(d["ok"], b["status"], b["window"]["damaged_segment"], "cut short" in b["window"]["damaged_reason"])')" \
    "False ok $bad True" "the JSON says not ok, the backup ok, and names the damaged segment and why"

copy_repo "$T/sentinel"
: >"$T/sentinel/backups/$ID.done.json"
OUT=$(pgd verify --repo "$T/sentinel" --all 2>&1)
is "$?" "3" "--all with a damaged sentinel: exit 3"
like "$OUT" "backup $ID: DAMAGED" "the damaged backup is listed"

# ---- operational errors and usage ----
copy_repo "$T/perm"
chmod 000 "$T/perm/backups/$ID/$(basename "$part")"
pgd verify --repo "$T/perm" "$ID" >/dev/null 2>"$T/perm.err"
is "$?" "1" "a partition that cannot be opened (permission): exit 1, not 3"
like "$(cat "$T/perm.err")" "^pgdirect: error: verify of backup $ID failed: could not open file .*Permission denied" \
    "and it says why"
pgd verify --repo "$T/nonexistent" >/dev/null 2>"$T/op.err"
is "$?" "1" "a repository that is not there: exit 1, not 3"
pgd verify --repo "$REPO" --all "$ID" >/dev/null 2>&1
is "$?" "2" "an id and --all together: usage error"
expect_error "an unknown backup id" "20000101T000000F" pgd verify --repo "$REPO" 20000101T000000F

# ---- a long window, read --concurrency segments at a time: it ends where a serial read ends ----
more_wal 3 40
last=$(ls "$REPO/wal/${STOP:0:8}/" | grep -E '^[0-9A-F]{24}(\.lz4|\.zst)?$' | sort | tail -1 | cut -c1-24)
cmp_ok "$(( 16#${last:16:8} - 16#${STOP:16:8} ))" ">=" 40 "at least 40 segments after the stop"
OUT=$(pgd verify --repo "$REPO" --concurrency 3 "$ID" 2>/dev/null)
is "$?" "0" "a long intact window, 3 at a time: exit 0"
like "$OUT" "point-in-time window: from .* \(the end of segment $last\)" "it reaches the last segment"
bad=$(seg_add "$STOP" 30)
after=$(seg_add "$STOP" 33)
copy_repo "$T/long"
truncate -s -24 "$T/long/wal/${bad:0:8}/$(wal_obj "$T/long" "$bad")"
# unreadable, but after the damaged one: a serial read never gets there
chmod 000 "$T/long/wal/${after:0:8}/$(wal_obj "$T/long" "$after")"
for c in 1 3 8; do
    OUT=$(pgd verify --repo "$T/long" --concurrency $c "$ID" 2>/dev/null)
    is "$?" "3" "--concurrency $c: a damaged segment 30 after the stop, an unreadable one after it: exit 3"
    like "$OUT" "point-in-time window: from .* \(the end of segment $(seg_add "$STOP" 29)\)" \
        "--concurrency $c: the window ends just before the damaged segment"
    like "$OUT" "WAL DAMAGED: segment $bad \(the window ends before it\)" "--concurrency $c: it is named"
done
early=$(seg_add "$STOP" 20)
chmod 000 "$T/long/wal/${early:0:8}/$(wal_obj "$T/long" "$early")"
for c in 1 3; do
    pgd verify --repo "$T/long" --concurrency $c "$ID" >/dev/null 2>"$T/long.err"
    is "$?" "1" "--concurrency $c: an unreadable segment before the damaged one: exit 1 (verify could not run)"
    like "$(cat "$T/long.err")" "$early.*Permission denied" "--concurrency $c: and the segment is named"
done

# ---- verify --all: what one backup's window read is judged again for the next backup's system ----
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast >/dev/null 2>"$T/b2.err"
ok $? "a second backup" || sed 's/^/# /' "$T/b2.err"
ID2=$(backup_id "$T/b2.err")
more_wal 4 5
read -r START2 STOP2 < <(newest_wal)
# the second backup made another system's: its sentinel and its start..stop segments say so
copy_repo "$T/two"
n2=$(( 16#${STOP2:16:8} - 16#${START2:16:8} ))
for k in $(seq 0 "$n2"); do
    s2=$(seg_add "$START2" "$k")
    pgd wal-fetch --repo "$T/two" "$s2" "$T/seg2" || bail "could not fetch $s2"
    other=$(python3 -c 'import struct,sys
p = sys.argv[1]; d = bytearray(open(p, "rb").read())
v = (struct.unpack_from("<Q", d, 24)[0] + 1) % 2**64; struct.pack_into("<Q", d, 24, v)
open(p, "wb").write(d); print(v)' "$T/seg2")
    rm "$T/two/wal/${s2:0:8}/$(wal_obj "$T/two" "$s2")"
    cp "$T/seg2" "$T/two/wal/${s2:0:8}/$s2"
done
chown -R postgres: "$T/two"
python3 -c 'import json,sys
p = sys.argv[1]; d = json.load(open(p)); d["system_identifier"] = sys.argv[2]; json.dump(d, open(p, "w"))' \
    "$T/two/backups/$ID2.done.json" "$other"
OUT=$(pgd verify --repo "$T/two" "$ID2" 2>/dev/null)
is "$?" "3" "the second backup alone: its window holds the first system's WAL: exit 3"
like "$OUT" "WAL DAMAGED: segment $(seg_add "$STOP2" 1) \(the window ends before it\): .*of another system" \
    "its window ends at its stop: the next segment is another system's"
for c in 1 8; do
    OUT=$(pgd verify --repo "$T/two" --all --concurrency $c 2>/dev/null)
    is "$?" "3" "--all --concurrency $c: exit 3"
    OUT=$(printf '%s\n' "$OUT" | sed -n "/^backup $ID2:/,\$p") # the second backup's lines
    like "$OUT" "WAL DAMAGED: segment $(seg_add "$STOP2" 1) \(the window ends before it\): .*of another system \(system identifier [0-9]+, not the backup's $other\)" \
        "--all --concurrency $c: the segments the first backup's window read are judged for the second backup's system"
done

# ---- S3: the same repository, uploaded object by object ----
s3_start
S3REPO="s3://$S3_BUCKET/verify"
(cd "$REPO" && find . -type f ! -name '*.tmp.*' ! -path './lock/*' | sed 's|^\./||') | while read -r f; do
    "$PGD_STORAGE" "$S3REPO" put "$f" <"$REPO/$f" || bail "could not upload $f"
done
before=$(wc -l <"$S3_LOG")
OUT=$("$PGD" verify --repo "$S3REPO" "$ID" 2>"$T/s3.err")
is "$?" "0" "S3: verify of the good backup exits 0" || sed 's/^/# /' "$T/s3.err"
like "$OUT" "WAL: restorable: $START to $STOP" "S3: the same WAL found"
tail -n +"$((before + 1))" "$S3_LOG" >"$T/s3_requests"
ok $(grep -q "^GET /$S3_BUCKET/verify/backups/$ID/$(basename "$part")" "$T/s3_requests" && echo 0 || echo 1) \
    "S3: the partition was read with GET"
is "$(grep -Ev '^(GET|HEAD) ' "$T/s3_requests" | grep -Ev "^PUT /$S3_BUCKET/verify/backups/$ID/verify.json " | head -3)" "" \
    "S3: no request but GET and HEAD, and the PUT of the verdict (nothing of the backup written)"
"$PGD_STORAGE" "$S3REPO" rm "backups/$ID/$(basename "$part")" || bail "could not remove the partition"
OUT=$("$PGD" verify --repo "$S3REPO" "$ID" 2>/dev/null)
is "$?" "3" "S3: a missing partition object: exit 3"
like "$OUT" "partition \"$(basename "$part")\" of backup \"$ID\" is missing from repository \"s3://" "S3: and it is named"
# ---- S3: a request that stalls gives way to Ctrl-C at once (not after --s3-timeout and retries) ----
proxy_start
proxy_rules '[{"method": "GET", "path": "/wal/", "fault": "stall"}]'
# (--s3-timeout 3600, the longest allowed: nothing but the signal can end it while the test waits)
AWS_ENDPOINT_URL=$PROXY_URL "$PGD" verify --repo "$S3REPO" --s3-timeout 3600 "$ID" >/dev/null 2>"$T/stall.err" &
vpid=$!
for _ in $(seq 1 300); do
    [ "$(proxy_count method=GET path~/wal/ fault=stall)" -ge 1 ] && break
    sleep 0.1
done
kill -INT "$vpid"
wait_exit "$vpid" 120
ok $? "S3: verify ends on Ctrl-C while its WAL read is still stalled (--s3-timeout 3600)"
wait "$vpid"
is "$?" "1" "S3: verify interrupted while a WAL read stalls: exit 1"
like "$(cat "$T/stall.err")" "interrupted by SIGINT" "S3: and it says it was interrupted"
proxy_explain
done_testing
