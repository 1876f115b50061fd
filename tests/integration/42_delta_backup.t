#!/usr/bin/env bash
# backup --delta (issue 10, the backup side). On pgbench scale 5, lz4 (the default):
# - the first --delta of an empty repository is a full (id F) with one warning line;
# - after a contiguous 1 % of pgbench_accounts is updated, --delta takes a delta: id ends D,
#   the sentinel and manifest say type, parent, depth and threshold, increments are tar
#   entries INCREMENTAL.<name>, and it stores at most 5 % of the full's bytes;
# - pgbench_accounts reassembled by hand from the full's whole file and the delta's
#   increment, following the README's format, equals the file on disk;
# - list shows type, parent, depth, bytes read and stored;
# - fallbacks to a full, each with its one-line warning: max steps, a damaged newest
#   backup, a backup of another system; --delta-from naming no backup exits 2 and
#   writes nothing; --delta-from ID takes that parent;
# - a file whose changed pages exceed the per-thread buffer (--max-memory 100MiB) is stored
#   whole, read again from its start, and equals the file on disk;
# - the delta backup leaves the page cache as it was (cold stays out, hot stays in);
# - delete never removes the parent of a kept delta.
. "$(dirname "$0")/lib.sh"
setup_tmp
require_pagecache
pg_init "$T/data"
pg_start "$T/data"
as_pg "$PG_BIN/pgbench" -i -s 5 -q >/dev/null 2>&1 || bail "pgbench -i failed"
q "VACUUM (FREEZE) pgbench_accounts"
archive_all "$PGPORT"

sentinel() { jq -r ".$2" "$REPO/backups/$1.done.json"; }
newest() { ls "$REPO/backups" | sed -n 's/\.done\.json$//p' | sort | tail -1; }
# delta_backup NAME [OPTIONS]: backup --delta, stderr in $T/NAME.err, exit status in $RC
delta_backup() {
    local name=$1
    shift
    pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --delta "$@" \
        >/dev/null 2>"$T/$name.err"
    RC=$?
}
warnings() { grep -c ' warning: ' "$T/$1.err"; }

# ---- no earlier backup: a full, one warning ----
delta_backup b0
is "$RC" "0" "--delta on an empty repository succeeds"
F0=$(newest)
like "$F0" '^[0-9]{8}T[0-9]{6}F$' "it is a full backup ($F0)"
is "$(warnings b0)" "1" "with one warning line"
like "$(grep " warning: " "$T/b0.err")" "full backup instead of a delta: no earlier backup" "saying there is no earlier backup"
is "$(sentinel "$F0" type)/$(sentinel "$F0" depth)/$(sentinel "$F0" parent)" "full/0/" "the sentinel says full, depth 0, no parent"

# ---- a contiguous 1 % of pgbench_accounts changes: a delta ----
q "UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid BETWEEN 200001 AND 205000"
rel=$(q "SELECT pg_relation_filepath('pgbench_accounts')")
delta_backup b1
is "$RC" "0" "the delta backup succeeds"
D1=$(newest)
like "$D1" '^[0-9]{8}T[0-9]{6}D$' "its id ends in D ($D1)"
is "$(warnings b1)" "0" "no warning"
is "$(sentinel "$D1" type)/$(sentinel "$D1" depth)/$(sentinel "$D1" parent)" "delta/1/$F0" \
    "the sentinel says delta, depth 1, parent $F0"
is "$(sentinel "$D1" parent_start_lsn)" "$(sentinel "$F0" start_lsn)" "the threshold is the parent's start LSN"
M1="$REPO/backups/$D1/manifest.json"
is "$(jq -c '[.format, .type, .parent]' "$M1")" "[2,\"delta\",\"$F0\"]" "manifest: format 2, type delta, parent"
inc=$(jq -c --arg p "$rel" '.files[] | select(.path == $p) | .increment' "$M1")
like "$inc" '^\{"file_size":[0-9]+,"blocks":[0-9]+\}$' "pgbench_accounts is an increment in the manifest ($inc)"
is "$(jq -r --arg p "$rel" '.files[] | select(.path == $p) | .increment.file_size' "$M1")" \
    "$(stat -c %s "$T/data/$rel")" "its file_size is the file's size"
is "$(jq -r --arg p "$rel" '.files[] | select(.path == $p) | .size' "$M1")" \
    "$(jq -r --arg p "$rel" '.files[] | select(.path == $p) | 40 + 8196 * .increment.blocks' "$M1")" \
    "its size is 40 + 8196 x blocks"
fsm=$(jq -r --arg p "${rel}_fsm" '.files[] | select(.path == $p) | has("increment")' "$M1")
is "$fsm" "false" "the FSM fork is stored whole"
# a partition as plain tar, whatever its compression
untar() { case $1 in *.lz4) lz4 -dc "$1" ;; *.zst) zstd -dc "$1" ;; *) cat "$1" ;; esac; }
entries=$(for p in "$REPO/backups/$D1"/part_*; do untar "$p" | tar -t; done)
like "$entries" "$(dirname "$rel")/INCREMENTAL.$(basename "$rel")" "the tar entry is named INCREMENTAL.<name>"
full_stored=$(sentinel "$F0" compressed_size)
delta_stored=$(sentinel "$D1" compressed_size)
diag "full stored $full_stored bytes, delta stored $delta_stored bytes, read $(sentinel "$D1" size); largest:"
jq -r '.files[] | select(.type == "file") | "\(.size) \(.path) \(.increment // "whole")"' "$M1" | sort -rn | head -8 |
    while read -r l; do diag "  $l"; done
cmp_ok "$delta_stored" "<=" "$((full_stored * 5 / 100))" "the delta stores at most 5 % of the full's bytes"
cmp_ok "$(sentinel "$D1" size)" ">=" "$(($(sentinel "$F0" size) * 9 / 10))" "it read the whole cluster"

# ---- reassembly by hand (README "Delta backups"): the full's file + the increment ----
extract() { # extract BACKUP ENTRY OUT
    local p
    for p in "$REPO/backups/$1"/part_*; do
        untar "$p" | tar -xO "$2" >"$3" 2>/dev/null && [ -s "$3" ] && return 0
    done
    return 1
}
extract "$F0" "$rel" "$T/accounts.full" || bail "no $rel in $F0"
extract "$D1" "$(dirname "$rel")/INCREMENTAL.$(basename "$rel")" "$T/accounts.inc" || bail "no increment in $D1"
python3 - "$T/accounts.full" "$T/accounts.inc" "$T/accounts.out" <<'PY'
import struct, sys
full, inc, out = sys.argv[1:]
d = open(inc, 'rb').read()
magic, page_size, k, file_size, lsn = struct.unpack_from('<8sIIQQ', d, 0)
assert magic == b'PGDINC1\0' and page_size == 8192, (magic, page_size)
blocks = struct.unpack_from('<%dI' % k, d, 32)
f = bytearray(open(full, 'rb').read())
f = f[:file_size] + bytes(max(0, file_size - len(f)))
for i, b in enumerate(blocks):
    page = d[36 + 4 * k + 8192 * i: 36 + 4 * k + 8192 * (i + 1)]
    f[b * 8192:(b + 1) * 8192] = page
open(out, 'wb').write(bytes(f[:file_size]))
print(k)
PY
ok $? "the increment parses as the README describes"
cmp -s "$T/accounts.out" "$T/data/$rel"
ok $? "full + increment, reassembled by hand, equals pgbench_accounts on disk"

# ---- list ----
line=$(pgd list --repo "$REPO" | grep "^$D1")
like "$line" "^$D1 +delta +$F0 +1 " "list shows type, parent and depth"
like "$(pgd list --repo "$REPO" | head -1)" "^ID +TYPE +PARENT +DEPTH .* READ +STORED " "list's columns: type, parent, depth, read, stored"
is "$(pgd list --repo "$REPO" --json | jq -c --arg d "$D1" '.[] | select(.id == $d) | [.type, .parent, .depth, (.size > .compressed_size)]')" \
    "[\"delta\",\"$F0\",1,true]" "list --json: type, parent, depth; read more than stored"

# ---- page cache: a delta leaves it as it was ----
q "CREATE TABLE cold (id int, pad text)"
q "INSERT INTO cold SELECT g, repeat('x', 200) FROM generate_series(1, 100000) g"
q "CREATE TABLE hot (id int, pad text)"
q "INSERT INTO hot SELECT g, repeat('y', 200) FROM generate_series(1, 50000) g"
q "VACUUM (FREEZE) cold"
q "VACUUM (FREEZE) hot"
q "CHECKPOINT"
cold="$T/data/$(q "SELECT pg_relation_filepath('cold')")"
hot="$T/data/$(q "SELECT pg_relation_filepath('hot')")"
sync
"$PC" evict "$cold"
"$PC" load "$hot"
cmp_ok "$("$PC" percent "$cold")" "<=" 1 "before: the cold relation is out of the page cache"
delta_backup b2
is "$RC" "0" "a second delta succeeds"
D2=$(newest)
is "$(sentinel "$D2" parent)/$(sentinel "$D2" depth)" "$D1/2" "on top of the first (depth 2)"
cold_after=$("$PC" percent "$cold")
cmp_ok "$cold_after" "<=" 1 "the delta leaves the cold relation out of the cache ($cold_after %)"
# (>= 97, not 100: the machines this runs on page out page cache that stays idle, with a
# DAMON kdamond — 3.3 % of hot once, in a parallel run; scripts/run_tests.py now pauses it
# for the suite, not for a test run by hand. A backup that dropped or pushed out cached
# pages would take far more.)
hot_after=$("$PC" percent "$hot")
cmp_ok "$hot_after" ">=" 97 "and the hot one cached ($hot_after %)"

# ---- fallback: --delta-max-steps ----
delta_backup b3 --delta-max-steps 2
is "$RC" "0" "--delta at the step limit succeeds"
F3=$(newest)
like "$F3" 'F$' "it is a full backup"
is "$(warnings b3)" "1" "with one warning line"
like "$(grep " warning: " "$T/b3.err")" "the chain of $D2 reached 2 deltas \(--delta-max-steps 2\)" "saying the chain is at its limit"

# ---- --delta-from ----
delta_backup b4 --delta-from 20200101T000000F
is "$RC" "2" "--delta-from naming no backup exits 2"
like "$(tail -1 "$T/b4.err")" 'backup "20200101T000000F" not found' "naming it"
is "$(newest)" "$F3" "and no backup was taken"
is "$(ls "$REPO/backups" | grep -vc done.json)" "$(ls "$REPO/backups" | grep -c done.json)" "nor anything claimed"
out=$(pgd backup --repo "$REPO" --pgdata "$T/data" --delta-from "$D1" 2>&1)
is "$?" "2" "--delta-from without --delta exits 2"
like "$out" 'option "--delta-from" needs --delta' "saying so"
is "$(newest)" "$F3" "and takes no backup"
q "UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid BETWEEN 1 AND 100"
hot_rel=$(q "SELECT pg_relation_filepath('hot')")
q "DROP TABLE hot"
delta_backup b5 --delta-from "$D1"
is "$RC" "0" "--delta-from an older delta succeeds"
D5=$(newest)
is "$(sentinel "$D5" parent)/$(sentinel "$D5" depth)" "$D1/2" "its parent is the one named"
# hot came after D1 (new in D2) and was dropped before D5: gone[] is measured against the
# parent, so a delta on D2 must list it
is "$(jq -r --arg p "$hot_rel" '.files[] | select(.path == $p) | has("increment")' "$REPO/backups/$D2/manifest.json")" \
    "false" "a table new since the parent is stored whole"
delta_backup b5b --delta-from "$D2"
is "$RC" "0" "a delta on top of $D2 succeeds"
is "$(jq -r --arg p "$hot_rel" '[.gone[] | select(. == $p)] | length' "$REPO/backups/$(newest)/manifest.json")" \
    "1" "the dropped table is listed in gone[]"

# ---- fallback: the newest backup damaged ----
D5=$(newest)
cp "$REPO/backups/$D5.done.json" "$T/d5.saved"
echo '{"broken": ' >"$REPO/backups/$D5.done.json"
delta_backup b6
is "$RC" "0" "--delta with a damaged newest backup succeeds"
F6=$(newest)
like "$F6" 'F$' "as a full"
like "$(grep " warning: " "$T/b6.err" | grep -v "is damaged: could not parse" | head -1)$(grep -c 'instead of a delta' "$T/b6.err")" \
    "1$" "one warning says why a full was taken"
like "$(grep 'instead of a delta' "$T/b6.err")" "backup $D5 is damaged" "because $D5 is damaged"
cp "$T/d5.saved" "$REPO/backups/$D5.done.json"

# ---- the buffer bound: half of --max-memory 100MiB split between the reader threads is less
# than the changed pages of pgbench_accounts after half its rows changed: stored whole, equal ----
q "UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid BETWEEN 200001 AND 500000"
q "CHECKPOINT"
delta_backup b7 --max-memory 100MiB
is "$RC" "0" "a delta with --max-memory 100MiB succeeds"
D7=$(newest)
like "$D7" 'D$' "it is a delta"
like "$(cat "$T/b7.err")" "\"$rel\": more changed pages than the delta buffer holds" "it says pgbench_accounts goes whole"
is "$(jq -r --arg p "$rel" '.files[] | select(.path == $p) | has("increment")' "$REPO/backups/$D7/manifest.json")" \
    "false" "the manifest lists it whole"
extract "$D7" "$rel" "$T/accounts.whole" || bail "no $rel in $D7"
cmp -s "$T/accounts.whole" "$T/data/$rel"
ok $? "the whole copy, read again from its start, equals the file on disk"

# ---- fallback: another system ----
MAIN_PORT=$PGPORT
pg_init "$T/data_other"
OTHER_PORT=$PGPORT
PGPORT=$MAIN_PORT
echo "archive_command = '/bin/true'" >>"$T/data_other/postgresql.conf" # its WAL must not mix with ours
pg_start "$T/data_other" "$OTHER_PORT"
PGPORT=$OTHER_PORT pgd backup --repo "$REPO" --pgdata "$T/data_other" --checkpoint fast --compression none \
    --delta --archive-check=off >/dev/null 2>"$T/b8.err"
is "$?" "0" "--delta of another cluster into the same repository succeeds"
F8=$(newest)
like "$F8" 'F$' "as a full"
is "$(warnings b8)" "1" "with one warning line"
like "$(grep " warning: " "$T/b8.err")" "backup $D7 is of another system" "saying the newest is of another system"
pg_stop "$T/data_other"

# ---- delete never removes the parent of a kept delta ----
out=$(pgd delete --repo "$REPO" --backup "$D1" 2>&1)
isnt "$?" "0" "delete of a delta's parent without --with-dependents fails"
like "$out" "with-dependents" "saying --with-dependents"
[ -f "$REPO/backups/$D1.done.json" ]
ok $? "the parent is still there"
done_testing
