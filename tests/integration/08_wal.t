#!/usr/bin/env bash
# wal-push: atomic, idempotent on an identical re-push, an error for different
# content under the same name (whatever the compression), and only for a file
# that is the WAL file its name says (.partial and other segment sizes push).
# wal-fetch: exit 1 quietly only when the repository is there and the file is
# not; every other failure (a corrupt, truncated, empty or unreadable object,
# compressed or not; a missing or empty repository; a usage error) prints one
# line naming the file and exits 254, which makes PostgreSQL stop recovery
# instead of promoting.
. "$(dirname "$0")/lib.sh"
setup_tmp
pg_init "$T/data"
pg_start "$T/data"
q "CREATE TABLE t AS SELECT g, repeat('x', g % 100) AS pad FROM generate_series(1, 50000) g"
archive_all "$PGPORT"
mkdir -p "$T/wal" "$T/out" "$T/other" "$T/misnamed" "$T/sb" && touch "$T/sb/standby.signal"
chown -R postgres "$T/wal" "$T/out" "$T/other" "$T/misnamed" "$T/sb"

# a complete segment PostgreSQL wrote, and a second valid one under the same name
seg=$(ls "$REPO/wal/00000001" | sed -n 's/\.lz4$//p' | head -1)
next=$(printf '%08X%016X' 1 $((16#${seg:8} + 1)))
pgd wal-fetch --repo "$REPO" "$seg" "$T/wal/$seg"
ok $? "wal-fetch of a segment archived by PostgreSQL succeeds"
cp "$T/wal/$seg" "$T/other/$seg"
flip_byte "$T/other/$seg" 24 # xlp_sysid
printf '1\t0/3000000\tno recovery target specified\n' >"$T/wal/00000002.history"
chown postgres "$T/wal"/* "$T/other"/*
R="$T/r2"

pgd wal-push --repo "$R" "$T/wal/$seg"
ok $? "wal-push of a segment succeeds"
ok $([ -f "$R/wal/00000001/$seg.lz4" ] && echo 0 || echo 1) "stored as wal/00000001/$seg.lz4"
is "$(ls -A "$R/wal/00000001" | grep -c tmp)" "0" "no temporary file left behind"
out=$(pgd wal-push --repo "$R" "$T/wal/$seg" 2>&1)
ok $? "re-push of the identical segment succeeds"
like "$out" "already archived with the same content" "and says so"
out=$(pgd wal-push --repo "$R" --compression zstd "$T/wal/$seg" 2>&1)
ok $? "re-push of the identical segment with another compression succeeds"
like "$out" "already archived with the same content" "and says so"
expect_error "push of a different segment under the same name" \
    "\"$seg\" is already archived .* with different content" pgd wal-push --repo "$R" "$T/other/$seg"
expect_error "push of a different segment under the same name with another compression" \
    "with different content \\(as \"$seg.lz4\"\\)" \
    pgd wal-push --repo "$R" --compression zstd "$T/other/$seg"
is "$(ls "$R/wal/00000001" | tr '\n' ' ')" "$seg.lz4 " "only the first segment stands"
cp "$T/wal/$seg" "$T/wal/orig" && chown postgres "$T/wal/orig"
expect_error "push of a file that is not a WAL file name" "not a WAL file name" \
    pgd wal-push --repo "$R" "$T/wal/orig"

# the content must be the file the name says
cp "$T/wal/$seg" "$T/misnamed/$next" && chown postgres "$T/misnamed/$next"
expect_error "push of a segment under the name of the next one" \
    "refusing to archive .*$next.*not the segment its name says" \
    pgd wal-push --repo "$R" "$T/misnamed/$next"
head -c 8000000 "$T/wal/$seg" >"$T/misnamed/$seg" && chown postgres "$T/misnamed/$seg"
expect_error "push of a truncated segment" "\"$seg\" is truncated" \
    pgd wal-push --repo "$R" --compression none "$T/misnamed/$seg"
ok $([ ! -e "$R/wal/00000001/$seg" ] && echo 0 || echo 1) "and nothing is stored for it"

# .partial: the end of a timeline, garbage after its last record
cp "$T/wal/$seg" "$T/wal/$seg.partial"
head -c 1000000 /dev/urandom | dd of="$T/wal/$seg.partial" bs=1M seek=15 conv=notrunc 2>/dev/null
chown postgres "$T/wal/$seg.partial"
pgd wal-push --repo "$R" "$T/wal/$seg.partial"
ok $? "wal-push of a .partial segment (garbage after its last record) succeeds"
pgd wal-fetch --repo "$R" "$seg.partial" "$T/out/partial"
cmp -s "$T/out/partial" "$T/wal/$seg.partial"
ok $? "and it is fetched byte-identical"

pgd wal-push --repo "$R" --compression zstd "$T/wal/00000002.history"
ok $? "wal-push of a history file (zstd) succeeds"
printf 'garbage\n' >"$T/misnamed/00000003.history" && chown postgres "$T/misnamed/00000003.history"
expect_error "push of a history file that is not one" "syntax error in line 1" \
    pgd wal-push --repo "$R" "$T/misnamed/00000003.history"

# a cluster with 1 MiB segments archives into the same repository
as_pg "$PG_BIN/initdb" -D "$T/small" -U postgres --wal-segsize=1 -A trust >/dev/null 2>&1
port2=$(free_port)
cat >>"$T/small/postgresql.conf" <<CONF
port = $port2
listen_addresses = ''
unix_socket_directories = '$T'
archive_mode = on
archive_command = '$PGD wal-push --repo $T/small_repo %p'
CONF
pg_start "$T/small" "$port2"
small=$(psql_at "$port2" "SELECT pg_walfile_name(pg_switch_wal())")
for _ in $(seq 1 300); do [ -e "$T/small_repo/wal/00000001/$small.lz4" ] && break; sleep 0.2; done
ok $([ -e "$T/small_repo/wal/00000001/$small.lz4" ] && echo 0 || echo 1) \
    "a 1 MiB segment of another cluster is archived"
pgd wal-fetch --repo "$T/small_repo" "$small" "$T/out/small"
is "$(stat -c %s "$T/out/small")" "1048576" "and fetched whole"
pg_stop "$T/small"

pgd wal-fetch --repo "$R" "$seg" "$T/out/RECOVERYXLOG"
ok $? "wal-fetch of the segment succeeds"
cmp -s "$T/out/RECOVERYXLOG" "$T/wal/orig"
ok $? "fetched segment is byte-identical"
pgd wal-fetch --repo "$R" 00000002.history "$T/out/RECOVERYHISTORY"
ok $? "wal-fetch of a .history file succeeds"
cmp -s "$T/out/RECOVERYHISTORY" "$T/wal/00000002.history"
ok $? "fetched history file is byte-identical"
out=$(pgd wal-fetch --repo "$R" 000000010000000000000099 "$T/out/X" 2>&1)
rc=$?
is "$rc" "1" "wal-fetch of an absent segment exits 1"
is "$out" "" "and prints nothing"
ok $([ ! -e "$T/out/X" ] && echo 0 || echo 1) "and creates nothing"
out=$(pgd wal-fetch --repo "$R" 00000003.history "$T/out/Y" 2>&1)
is "$?" "1" "wal-fetch of an absent history file exits 1 quietly"

# every other failure: exit 254 (PostgreSQL stops recovery) and one line naming the file
fetch_fails() { # fetch_fails DESCRIPTION REGEX FETCH-ARGS...
    local desc=$1 re=$2 rc
    shift 2
    rm -f "$T/out/F"
    EXPECT_OUT=$(pgd wal-fetch "$@" 2>&1)
    rc=$?
    is "$rc" "254" "$desc: exit 254"
    is "$(printf '%s\n' "$EXPECT_OUT" | wc -l)" "1" "$desc: one line"
    like "$EXPECT_OUT" "^pgdirect: error: .*$re" "$desc: says why"
    ok $([ ! -e "$T/out/F" ] && echo 0 || echo 1) "$desc: leaves nothing at the destination"
}
obj="$R/wal/00000001/$seg.lz4"
cp "$obj" "$T/obj.keep"
truncate -s $(($(stat -c %s "$obj") / 2)) "$obj"
fetch_fails "truncated .lz4 object" "$seg.*truncated" --repo "$R" "$seg" "$T/out/F"
cp "$T/obj.keep" "$obj"
flip_byte "$obj" $(($(stat -c %s "$obj") / 2))
fetch_fails "a byte changed in a .lz4 object" "$seg.*(corrupt|checksum)" --repo "$R" "$seg" "$T/out/F"
: >"$obj"
fetch_fails "empty .lz4 object" "$seg.*truncated" --repo "$R" "$seg" "$T/out/F"
# the object: an lz4 frame without content checksum, then pgdirect's CRC-32C trailer in a
# skippable frame (24 bytes: magic 0x184D2A5D, length 16, "PGDC", CRC-32C, size), which the lz4
# tool passes over
size=$(stat -c %s "$T/obj.keep")
flg=$(od -An -tu1 -j4 -N1 "$T/obj.keep" | tr -d ' ')
is "$((flg & 4))" "0" "the archived lz4 frame has no content checksum (FLG $flg)"
is "$(tail -c 24 "$T/obj.keep" | head -c 8 | od -An -tx1 | tr -d ' \n')" "5d2a4d1810000000" \
    "it ends with the trailer's skippable frame"
like "$(tail -c 16 "$T/obj.keep" | head -c 4)" "^PGDC$" "whose body starts PGDC"
lz4 -dc "$T/obj.keep" | cmp -s - "$T/wal/orig"
ok $? "lz4 -dc of the object gives the segment"
head -c $((size - 24)) "$T/obj.keep" >"$obj"
fetch_fails "an object cut where its lz4 frame ends (the trailer lost)" \
    "$seg.*corrupt or cut short: it ends without pgdirect's CRC-32C trailer" --repo "$R" "$seg" "$T/out/F"
cp "$T/obj.keep" "$obj"
printf '\x01' | dd of="$obj" bs=1 seek=$((size - 8)) conv=notrunc status=none
fetch_fails "the size in the trailer changed" "$seg.*corrupt: 16777216 bytes of content, its trailer says" \
    --repo "$R" "$seg" "$T/out/F"
# as releases before the trailer (and the lz4 tool) wrote it: the frame's own checksum
lz4 -q -c "$T/wal/orig" >"$obj"
flg=$(od -An -tu1 -j4 -N1 "$obj" | tr -d ' ')
is "$((flg & 4))" "4" "an object written by the lz4 tool has the content checksum (FLG $flg)"
pgd wal-fetch --repo "$R" "$seg" "$T/out/old" && cmp -s "$T/out/old" "$T/wal/orig"
ok $? "and is fetched byte-identical"
cp "$T/obj.keep" "$obj" && chmod 000 "$obj"
fetch_fails "unreadable object" "$seg.*Permission denied" --repo "$R" "$seg" "$T/out/F"
chmod 640 "$obj"
flip_byte "$obj" $(($(stat -c %s "$obj") / 2))
EXPECT_OUT=$(cd "$T/sb" && pgd wal-fetch --repo "$R" "$seg" "$T/out/F" 2>&1)
is "$?" "254" "in standby mode (standby.signal) corruption is still fatal"
cp "$T/obj.keep" "$obj"

# uncompressed objects get the same protection
N="$T/r_none"
pgd wal-push --repo "$N" --compression none "$T/wal/$seg"
ok $? "wal-push --compression none succeeds"
raw="$N/wal/00000001/$seg"
cmp -s "$raw" "$T/wal/$seg"
ok $? "and stores the segment as it is"
truncate -s 16000000 "$raw"
fetch_fails "truncated uncompressed segment" "$seg.*truncated" --repo "$N" "$seg" "$T/out/F"
cp "$T/wal/$seg" "$raw"
# a byte inside the 5th record (its xl_xid, under the record's CRC)
lsn=$("$PG_BIN/pg_waldump" "$raw" 2>/dev/null | sed -n '5s/.*lsn: \([0-9A-F]*\/[0-9A-F]*\),.*/\1/p')
off=$(( (16#${lsn#*/}) % 16777216 + 4 ))
lsn=$(printf '%X/%X' $((16#${lsn%/*})) $((16#${lsn#*/})))
flip_byte "$raw" $off
fetch_fails "a byte changed in a record of an uncompressed segment" \
    "$seg.*corrupt: incorrect checksum of the record at $lsn" --repo "$N" "$seg" "$T/out/F"
cp "$T/wal/$seg" "$raw"
pgd wal-fetch --repo "$N" "$seg" "$T/out/raw" && cmp -s "$T/out/raw" "$T/wal/$seg"
ok $? "the intact uncompressed segment is fetched byte-identical"

# a repository that is not there is not an archive that ends here
fetch_fails "missing repository" \
    "$seg.*repository \"$T/nowhere\" does not exist \\(--repo; backups and archive_command create it\\)" \
    --repo "$T/nowhere" "$seg" "$T/out/F"
mkdir -p "$T/empty" && chown postgres "$T/empty"
fetch_fails "empty repository (not mounted)" "holds no WAL and no backups" \
    --repo "$T/empty" "$seg" "$T/out/F"
chmod 000 "$R"
fetch_fails "unreadable repository" "Permission denied" --repo "$R" "$seg" "$T/out/F"
chmod 750 "$R"

# usage and configuration errors are not "not archived" either
EXPECT_OUT=$(pgd wal-fetch --repo "$R" --no-such-option "$seg" "$T/out/F" 2>&1)
is "$?" "254" "unknown option: exit 254"
like "$EXPECT_OUT" "no-such-option" "and names it"
EXPECT_OUT=$(pgd wal-fetch --repo "$R" "$seg" 2>&1)
is "$?" "254" "a missing argument: exit 254"
EXPECT_OUT=$(pgd wal-fetch --repo "$R" --log-level loud "$seg" "$T/out/F" 2>&1)
is "$?" "254" "an invalid option value: exit 254"
out=$(pgd wal-fetch --help)
ok $? "wal-fetch --help exits 0"
like "$out" "254 +anything else" "and explains the exit statuses"
like "$out" "standby.signal" "and the standby rule"
done_testing
