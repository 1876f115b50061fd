#!/usr/bin/env bash
# The core promise on the PostgreSQL version under test (PGDIRECT_TEST_PG;
# `make integration-matrix` runs this on 14, 16, 17 and 18, `make
# integration` on 15): a backup under pgbench load, taken with that
# version's backup functions; a backup_manifest in that version's format,
# which its pg_verifybackup accepts; restores to a restore point and to the
# end of the archive whose tables equal the source, with intact indexes.
. "$(dirname "$0")/lib.sh"
setup_tmp
pg_init "$T/data"
# the server log then shows which backup functions pgdirect called
echo "log_statement = 'all'" >>"$T/data/postgresql.conf"
pg_start "$T/data"

major=$(q "SELECT current_setting('server_version_num')::int / 10000")
is "$major" "$PG_MAJOR" "the server is PostgreSQL $PG_MAJOR ($(q 'SHOW server_version'))"
is "$(q 'SHOW data_checksums')" "on" "the cluster has data checksums"

as_pg "$PG_BIN/pgbench" -i -s 2 -q >/dev/null 2>&1 || bail "pgbench -i failed"
archive_all "$PGPORT"
as_pg "$PG_BIN/pgbench" -n -c 2 -j 2 -R 200 -T 900 >"$T/pgbench.log" 2>&1 &
load=$!
pgbench_wait_writing "$PGPORT"
out=$(pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --partition-size 8MiB \
      --label "matrix $PG_MAJOR" 2>&1)
ok $? "backup under pgbench load succeeds"
busy=$(kill -0 $load 2>/dev/null && echo yes || echo no)
is "$busy" "yes" "pgbench was still writing when the backup finished"
q "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'pgbench'" >/dev/null
wait $load
id=$(ls "$REPO/backups" | grep -E '^[0-9]{8}T[0-9]{6}F$' | tail -1)
[ -n "$id" ] || { diag "$out"; bail "no backup in the repository"; }

# the backup functions of this version: pg_start_backup/pg_stop_backup
# (non-exclusive) before 15, which has neither name of the other kind
if [ "$major" -ge 15 ]; then
    calls="pg_backup_start pg_backup_stop" absent="pg_start_backup|pg_stop_backup"
else
    calls="pg_start_backup pg_stop_backup" absent="pg_backup_start|pg_backup_stop"
fi
for f in $calls; do
    grep -Eq "(execute|statement).*pg_catalog\.$f\(" "$T/data.log"
    ok $? "the backup called $f, the function of PostgreSQL $major"
done
grep -Eq "$absent" "$T/data.log"
isnt "$?" "0" "and none of the other versions' names ($absent)"
label=$(cat "$REPO/backups/$id/backup_label")
like "$label" "BACKUP METHOD: streamed" "the stop call's backup_label is stored (non-exclusive backup)"
like "$label" "START TIMELINE: 1" "with its start timeline"
like "$label" "LABEL: matrix $PG_MAJOR" "and our label"
sentinel_ver=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["pg_version_num"])' \
    "$REPO/backups/$id.done.json")
is "$sentinel_ver" "$(q 'SHOW server_version_num')" "the sentinel records the server's version"

# backup_manifest: version 1 up to 16, version 2 with the System-Identifier from 17
sysid=$(q "SELECT system_identifier FROM pg_control_system()")
read -r mver msysid < <(python3 -c 'import json, sys
m = json.load(open(sys.argv[1]))
print(m["PostgreSQL-Backup-Manifest-Version"], m.get("System-Identifier", "none"))' \
    "$REPO/backups/$id/backup_manifest")
if [ "$major" -ge 17 ]; then
    is "$mver" "2" "backup_manifest is version 2, as PostgreSQL $major writes it"
    is "$msysid" "$sysid" "with the cluster's System-Identifier"
else
    is "$mver" "1" "backup_manifest is version 1, as PostgreSQL $major writes it"
    is "$msysid" "none" "without a System-Identifier"
fi

# PostgreSQL's verifier of this version accepts the restored files (before any recovery)
pgd restore "$id" --repo "$REPO" --target-dir "$T/data_verify" >/dev/null 2>&1
ok $? "restore for pg_verifybackup succeeds"
if verify=$(pg_tool pg_verifybackup); then
    out=$(as_pg "$verify" -n "$T/data_verify" 2>&1)
    ok $? "pg_verifybackup accepts the restored directory"
    like "$out" "backup successfully verified" "pg_verifybackup says so"
else
    tap_skip "pg_verifybackup $major accepts the restored directory" "$(pg_tool_missing pg_verifybackup)"
    # What can be checked without it. The version-2 header by the rules of
    # PostgreSQL 17's parser (src/common/parse_manifest.c) and verifier
    # (pg_verifybackup.c: the System-Identifier equals the one in the
    # restored global/pg_control), then every file by Debian's
    # pg_verifybackup 15, given the same manifest with its header rewritten
    # to version 1.
    cat >"$T/check_v2.py" <<'PY'
import hashlib, json, struct, sys
path, datadir, want_sysid, v1_out = sys.argv[1:5]
raw = open(path, "rb").read()
pairs = json.loads(raw, object_pairs_hook=lambda p: p)
keys = [k for k, _ in pairs]
doc = dict(pairs)
assert keys[0] == "PostgreSQL-Backup-Manifest-Version", "expected version indicator first"
assert set(keys) <= {"PostgreSQL-Backup-Manifest-Version", "System-Identifier", "Files",
                     "WAL-Ranges", "Manifest-Checksum"}, "unrecognized top-level field"
assert doc["PostgreSQL-Backup-Manifest-Version"] == 2, "manifest version is not 2"
sysid = doc["System-Identifier"]
assert isinstance(sysid, int) and 0 <= sysid < 2**64, "system identifier not an integer"
control = struct.unpack_from("<Q", open(datadir + "/global/pg_control", "rb").read())[0]
assert sysid == control, f"manifest system identifier is {sysid}, but control file has {control}"
assert str(sysid) == want_sysid, f"manifest system identifier is {sysid}, the server's {want_sysid}"
assert raw.endswith(b"\n") and raw.count(b"\n") >= 2
body = raw[: raw.rstrip(b"\n").rfind(b"\n") + 1]
assert hashlib.sha256(body).hexdigest() == doc["Manifest-Checksum"], "manifest checksum mismatch"
v1 = body.replace(b'"PostgreSQL-Backup-Manifest-Version": 2,\n"System-Identifier": %d,\n' % sysid,
                  b'"PostgreSQL-Backup-Manifest-Version": 1,\n', 1)
assert v1 != body, "header not in PostgreSQL's layout"
v1 += b'"Manifest-Checksum": "%s"}\n' % hashlib.sha256(v1).hexdigest().encode()
open(v1_out, "wb").write(v1)
PY
    out=$(python3 "$T/check_v2.py" "$T/data_verify/backup_manifest" "$T/data_verify" "$sysid" \
        "$T/manifest_v1" 2>&1)
    rc=$?
    ok $rc "the version-2 header follows PostgreSQL $major's parser and matches global/pg_control"
    [ $rc -eq 0 ] || diag "$(printf '%s\n' "$out" | tail -1)"
    chown postgres "$T/manifest_v1" 2>/dev/null
    out=$(as_pg "$PG_DEBIAN_BIN/pg_verifybackup" -n -m "$T/manifest_v1" "$T/data_verify" 2>&1)
    ok $? "pg_verifybackup 15 accepts every restored file of it (header rewritten to version 1)"
    # positive control: the checker can fail
    sed 's/"System-Identifier": [0-9]*/"System-Identifier": 1/' "$T/data_verify/backup_manifest" \
        >"$T/manifest_badsysid"
    python3 "$T/check_v2.py" "$T/manifest_badsysid" "$T/data_verify" "$sysid" "$T/unused" \
        >/dev/null 2>&1
    isnt "$?" "0" "control: the check refuses a manifest with another System-Identifier"
    verify="$PG_DEBIAN_BIN/pg_verifybackup -m $T/manifest_v1"
fi
victim=$(cd "$T/data_verify" && ls base/*/* | head -1)
printf 'X' | dd of="$T/data_verify/$victim" bs=1 seek=10 conv=notrunc 2>/dev/null
# shellcheck disable=SC2086
as_pg $verify -n "$T/data_verify" >/dev/null 2>&1
isnt "$?" "0" "pg_verifybackup catches a byte changed after the restore (the manifest is meaningful)"
rm -rf "$T/data_verify"

# a restore point after the backup, then more writes
hash_a=$(pgbench_hash "$PGPORT")
q "SELECT pg_create_restore_point('after_load')" >/dev/null
as_pg "$PG_BIN/pgbench" -n -c 1 -t 200 >/dev/null 2>&1
hash_b=$(pgbench_hash "$PGPORT")
isnt "$hash_a" "$hash_b" "the two points differ"
archive_all "$PGPORT"

port=$(restore_and_start "$id" "$T/data_name" --target-name after_load --target-action promote)
ok $? "restore to the restore point starts"
is "$(pgbench_hash "$port")" "$hash_a" "restored to the restore point: tables equal the source then"
pg_stop "$T/data_name"

port=$(restore_and_start "$id" "$T/data_end")
ok $? "restore to the end of the archive starts"
is "$(pgbench_hash "$port")" "$hash_b" "restored to the end: tables equal the source now"
is "$(psql_at "$port" 'SHOW data_checksums')" "on" "the restored cluster has data checksums"
psql_at "$port" "CREATE EXTENSION amcheck" >/dev/null &&
    psql_at "$port" "SELECT bt_index_check('pgbench_accounts_pkey', true)" >/dev/null
ok $? "amcheck: the restored primary key index matches its table"
pg_stop "$T/data_end"

done_testing
