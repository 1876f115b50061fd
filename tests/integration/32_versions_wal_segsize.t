#!/usr/bin/env bash
# A cluster with 64 MiB WAL segments (initdb --wal-segsize 64) and without
# data checksums, on the PostgreSQL version under test (PGDIRECT_TEST_PG;
# the version matrix runs it on 14 to 18; 18's initdb turns checksums on
# unless told not to): backup, archive, restore to the end of the archive,
# data equal. The WAL names the backup records are those of 64 MiB
# segments, and the archive holds whole 64 MiB segments.
. "$(dirname "$0")/lib.sh"
setup_tmp
pg_init "$T/data" --wal-segsize=64 --no-data-checksums
pg_start "$T/data"
major=$(q "SELECT current_setting('server_version_num')::int / 10000")
is "$major" "$PG_MAJOR" "the server is PostgreSQL $PG_MAJOR"
is "$(q 'SHOW wal_segment_size')" "64MB" "the cluster has 64 MiB WAL segments"
is "$(q 'SHOW data_checksums')" "off" "and no data checksums"

# (the load during a backup is test 30's: this one is about the segment size)
as_pg "$PG_BIN/pgbench" -i -s 1 -q >/dev/null 2>&1 || bail "pgbench -i failed"
archive_all "$PGPORT"
out=$(pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast 2>&1)
ok $? "backup succeeds"
id=$(ls "$REPO/backups" | grep -E '^[0-9]{8}T[0-9]{6}F$' | tail -1)
[ -n "$id" ] || { diag "$out"; bail "no backup in the repository"; }

# the sentinel's WAL names are the server's own for its LSNs
read -r start_lsn stop_lsn start_wal stop_wal < <(python3 -c 'import json, sys
b = json.load(open(sys.argv[1]))
print(b["start_lsn"], b["stop_lsn"], b["start_wal"], b["stop_wal"])' "$REPO/backups/$id.done.json")
is "$start_wal" "$(q "SELECT pg_walfile_name('$start_lsn')")" "the backup's first WAL segment is named for 64 MiB segments"
# the stop LSN may sit exactly on a segment boundary: the last segment is the one ending there
is "$stop_wal" "$(q "SELECT pg_walfile_name('$stop_lsn'::pg_lsn - 1)")" "and so is its last"

as_pg "$PG_BIN/pgbench" -n -c 1 -t 200 >/dev/null 2>&1
hash=$(pgbench_hash "$PGPORT")
seg=$(q "SELECT pg_walfile_name(pg_current_wal_lsn())")
archive_all "$PGPORT"
out=$(pgd wal-fetch --repo "$REPO" "$seg" "$T/seg" 2>&1)
rc=$?
ok $rc "wal-fetch serves a 64 MiB segment"
[ $rc -eq 0 ] || diag "wal-fetch $seg: exit $rc: $out"
is "$(stat -c %s "$T/seg")" "67108864" "whole: 64 MiB"

port=$(restore_and_start "$id" "$T/data_end")
ok $? "restore to the end of the archive starts"
is "$(pgbench_hash "$port")" "$hash" "restored to the end: tables equal the source now"
is "$(psql_at "$port" 'SHOW wal_segment_size')" "64MB" "the restored cluster has 64 MiB segments"
is "$(psql_at "$port" 'SHOW data_checksums')" "off" "and no data checksums, like its source"
pg_stop "$T/data_end"

done_testing
