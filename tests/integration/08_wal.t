#!/usr/bin/env bash
# wal-push: atomic, idempotent on an identical re-push, an error for different
# content under the same name. wal-fetch: quiet non-zero exit when absent,
# fetches segments and .history files byte-identical.
. "$(dirname "$0")/lib.sh"
setup_tmp
mkdir -p "$T/wal" "$T/out" && chown postgres "$T/wal" "$T/out"
seg=000000010000000000000003
head -c 16777216 /dev/urandom >"$T/wal/$seg"
printf '1\t0/3000000\tno recovery target specified\n' >"$T/wal/00000002.history"
chown postgres "$T/wal"/*

pgd wal-push --repo "$REPO" "$T/wal/$seg"
ok $? "wal-push of a segment succeeds"
ok $([ -f "$REPO/wal/00000001/$seg.lz4" ] && echo 0 || echo 1) "stored as wal/00000001/$seg.lz4"
is "$(ls -A "$REPO/wal/00000001" | grep -c tmp)" "0" "no temporary file left behind"
out=$(pgd wal-push --repo "$REPO" "$T/wal/$seg" 2>&1)
ok $? "re-push of the identical segment succeeds"
like "$out" "already archived with the same content" "and says so"
cp "$T/wal/$seg" "$T/wal/orig" && printf 'X' | dd of="$T/wal/$seg" bs=1 seek=100 conv=notrunc 2>/dev/null
out=$(pgd wal-push --repo "$REPO" "$T/wal/$seg" 2>&1)
isnt "$?" "0" "push of a different segment under the same name fails"
like "$out" "\"$seg\" is already archived .* with different content" "the error names the segment"
out=$(pgd wal-push --repo "$REPO" "$T/wal/orig" 2>&1)
isnt "$?" "0" "push of a file that is not a WAL file name fails"

pgd wal-push --repo "$REPO" --compression zstd "$T/wal/00000002.history"
ok $? "wal-push of a history file (zstd) succeeds"

pgd wal-fetch --repo "$REPO" "$seg" "$T/out/RECOVERYXLOG"
ok $? "wal-fetch of the segment succeeds"
cmp -s "$T/out/RECOVERYXLOG" "$T/wal/orig"
ok $? "fetched segment is byte-identical"
pgd wal-fetch --repo "$REPO" 00000002.history "$T/out/RECOVERYHISTORY"
ok $? "wal-fetch of a .history file succeeds"
cmp -s "$T/out/RECOVERYHISTORY" "$T/wal/00000002.history"
ok $? "fetched history file is byte-identical"
out=$(pgd wal-fetch --repo "$REPO" 000000010000000000000009 "$T/out/X" 2>&1)
rc=$?
is "$rc" "1" "wal-fetch of an absent segment exits 1"
is "$out" "" "and prints nothing"
ok $([ ! -e "$T/out/X" ] && echo 0 || echo 1) "and creates nothing"
out=$(pgd wal-fetch --repo "$REPO" 00000003.history "$T/out/Y" 2>&1)
is "$?" "1" "wal-fetch of an absent history file exits 1 quietly"
done_testing
