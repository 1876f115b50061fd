#!/usr/bin/env bash
# Backup under a concurrent pgbench write load, then point-in-time restores to
# a named restore point, a time and an LSN created after the backup: every
# pgbench table in each restored cluster equals the source at that point.
. "$(dirname "$0")/lib.sh"
setup_tmp
pg_init "$T/data"
pg_start "$T/data"

as_pg "$PG_BIN/pgbench" -i -s 5 -q >/dev/null 2>&1 || bail "pgbench -i failed"
archive_all "$PGPORT"

# load during the backup: from pgbench's first commit until it is stopped after the backup
# (-T only bounds it), however long the backup takes on a loaded machine
as_pg "$PG_BIN/pgbench" -n -c 2 -j 2 -R 200 -T 900 >"$T/pgbench.log" 2>&1 &
load=$!
pgbench_wait_writing "$PGPORT"
out=$(pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --concurrency 3 \
      --partition-size 16MiB 2>&1)
rc=$?
ok $rc "backup under pgbench load succeeds"
like "$out" "backup [0-9]{8}T[0-9]{6}F complete: .* read mode direct" "summary line names the read mode"
busy=$(kill -0 $load 2>/dev/null && echo yes || echo no)
is "$busy" "yes" "pgbench was still writing when the backup finished"
q "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'pgbench'" >/dev/null
wait $load
id=$(pgd list --repo "$REPO" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])')
like "$id" "^[0-9]{8}T[0-9]{6}F$" "list --json shows the backup"
parts=$(ls "$REPO/backups/$id"/part_*.tar.lz4 | wc -l)
cmp_ok "$parts" ">" 1 "several lz4 partitions were written ($parts)"
table=$(pgd list --repo "$REPO")
like "$table" "$id +full" "list shows the backup in its table"
# start and stop are whole seconds: the duration says so ("<1s", "3s"), not "0.0s"
like "$table" "$id +full +- +0 +[0-9-]+ [0-9:]+ +(<1s|[1-9][0-9]?s|[0-9]+m[0-9]{2}s) " \
    "its duration is in whole seconds"

# PostgreSQL's own verifier agrees with the restored files (before any recovery)
pgd restore "$id" --repo "$REPO" --target-dir "$T/data_verify" >/dev/null 2>&1
ok $? "restore for pg_verifybackup succeeds"
out=$(as_pg "$PG_BIN/pg_verifybackup" -n "$T/data_verify" 2>&1)
ok $? "pg_verifybackup accepts the restored directory"
like "$out" "backup successfully verified" "pg_verifybackup says so"
# the partitions are plain lz4 frames of tar: the lz4 and tar tools alone give the same relation
# files (pgbench_accounts spans many 1 MiB lz4 blocks, each compressed straight from a read)
mkdir "$T/by_tools"
for p in "$REPO/backups/$id"/part_*.tar.lz4; do
    lz4 -dc "$p" | tar -xf - -C "$T/by_tools" || bail "lz4 -dc $p | tar x failed"
done
accounts=$(q "SELECT pg_relation_filepath('pgbench_accounts')")
cmp_ok "$(stat -c %s "$T/by_tools/$accounts")" ">" $((8 * 1024 * 1024)) "pgbench_accounts is larger than 8 MiB"
diff -r "$T/by_tools/base" "$T/data_verify/base" >/dev/null
ok $? "lz4 -dc PART | tar x gives the relation files restore gives"
rm -rf "$T/by_tools"
victim=$(cd "$T/data_verify" && ls base/*/* | head -1)
printf 'X' | dd of="$T/data_verify/$victim" bs=1 seek=10 conv=notrunc 2>/dev/null
out=$(as_pg "$PG_BIN/pg_verifybackup" -n "$T/data_verify" 2>&1)
isnt "$?" "0" "pg_verifybackup catches a byte changed after the restore (the manifest is meaningful)"
rm -rf "$T/data_verify"

# three points after the backup
hash_a=$(pgbench_hash "$PGPORT")
q "SELECT pg_create_restore_point('after_load')" >/dev/null
as_pg "$PG_BIN/pgbench" -n -c 1 -t 300 >/dev/null 2>&1
hash_b=$(pgbench_hash "$PGPORT")
next_second
time_b=$(q "SELECT now()")
next_second
as_pg "$PG_BIN/pgbench" -n -c 1 -t 300 >/dev/null 2>&1
hash_c=$(pgbench_hash "$PGPORT")
lsn_c=$(q "SELECT pg_current_wal_lsn()")
as_pg "$PG_BIN/pgbench" -n -c 1 -t 300 >/dev/null 2>&1
hash_d=$(pgbench_hash "$PGPORT")
isnt "$hash_a" "$hash_b" "the points differ (a/b)"
isnt "$hash_c" "$hash_d" "the points differ (c/d)"
archive_all "$PGPORT"

port=$(restore_and_start "$id" "$T/data_name" --target-name after_load --target-action promote)
ok $? "restore to the named restore point starts"
is "$(pgbench_hash "$port")" "$hash_a" "restored to the restore point: tables equal the source then"
pg_stop "$T/data_name"

port=$(restore_and_start LATEST "$T/data_time" --target-time "$time_b" --target-action promote)
ok $? "restore to a time starts"
is "$(pgbench_hash "$port")" "$hash_b" "restored to a time: tables equal the source then"
pg_stop "$T/data_time"

port=$(restore_and_start "$id" "$T/data_lsn" --target-lsn "$lsn_c" --target-action promote)
ok $? "restore to an LSN starts"
is "$(pgbench_hash "$port")" "$hash_c" "restored to an LSN: tables equal the source then"
mode=$(stat -c %a "$T/data_lsn")
is "$mode" "700" "restored data directory has mode 0700"
pg_stop "$T/data_lsn"

port=$(restore_and_start "$id" "$T/data_end")
ok $? "restore to the end of the archive starts"
is "$(pgbench_hash "$port")" "$hash_d" "restored to the end of the archive: tables equal the source now"
pg_stop "$T/data_end"

done_testing
