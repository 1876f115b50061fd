#!/usr/bin/env bash
# WAL archiving on the PostgreSQL version under test (PGDIRECT_TEST_PG; the
# version matrix runs it on 14 to 18): the server's archive_command
# (wal-push) takes every segment, wal-fetch gives back the very bytes the
# server wrote, and both accept that version's WAL page magic (wal-push and
# wal-fetch check every page header). A segment that is not archived is
# exit 1 and silence, which is how recovery finds the end of the archive.
. "$(dirname "$0")/lib.sh"
setup_tmp
pg_init "$T/data"
# the segments compared below stay in pg_wal
echo "wal_keep_size = '1GB'" >>"$T/data/postgresql.conf"
pg_start "$T/data"
major=$(q "SELECT current_setting('server_version_num')::int / 10000")
is "$major" "$PG_MAJOR" "the server is PostgreSQL $PG_MAJOR"

q "CREATE TABLE w AS SELECT g, md5(g::text) AS h FROM generate_series(1, 50000) g"
seg=$(q "SELECT pg_walfile_name(pg_current_wal_lsn())")
archive_all "$PGPORT"
cp "$T/data/pg_wal/$seg" "$T/written"

# XLOG_PAGE_MAGIC (src/include/access/xlog_internal.h) of each release
declare -A page_magic=([14]=D10D [15]=D110 [16]=D113 [17]=D116 [18]=D118)
magic=$(python3 -c 'import struct, sys
print("%04X" % struct.unpack_from("<H", open(sys.argv[1], "rb").read(2))[0])' "$T/written")
is "$magic" "${page_magic[$major]}" "PostgreSQL $major writes WAL page magic 0x${page_magic[$major]}"

pgd wal-fetch --repo "$REPO" "$seg" "$T/fetched" >"$T/fetch.out" 2>&1
ok $? "wal-fetch serves the segment the server archived with wal-push"
cmp -s "$T/written" "$T/fetched"
ok $? "the fetched segment equals the one the server wrote, byte for byte"
failed=$(q "SELECT failed_count FROM pg_stat_archiver")
is "$failed" "0" "the server's archive_command never failed"

# several segments in a row: each archived, each fetched equal
q "INSERT INTO w SELECT g, md5(g::text) FROM generate_series(50001, 150000) g"
segs=$(q "SELECT pg_walfile_name(pg_current_wal_lsn())")
archive_all "$PGPORT"
first=$((16#${seg:16:8})) last=$((16#${segs:16:8}))
bad=0
for n in $(seq "$first" "$last"); do
    s=$(printf '%s%08X' "${seg:0:16}" "$n")
    [ -f "$T/data/pg_wal/$s" ] || continue
    pgd wal-fetch --repo "$REPO" "$s" "$T/f_$s" >/dev/null 2>&1 && cmp -s "$T/data/pg_wal/$s" "$T/f_$s" ||
        { diag "segment $s differs or could not be fetched"; bad=$((bad + 1)); }
done
cmp_ok "$last" ">" "$first" "the insert spanned several segments ($seg to $segs)"
is "$bad" "0" "every one of them comes back from the archive equal"

next=$(printf '%s%08X' "${segs:0:16}" $((last + 40)))
out=$(pgd wal-fetch --repo "$REPO" "$next" "$T/none" 2>&1)
rc=$?
is "$rc" "1" "a segment that is not archived: exit 1 (the end of the archive)"
is "$out" "" "and nothing printed"
[ -e "$T/none" ]
isnt "$?" "0" "and no file written"

done_testing
