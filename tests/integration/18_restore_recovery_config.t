#!/usr/bin/env bash
# The recovery configuration a restore writes is its own, checked and quoted:
# - recovery targets are validated before anything is written: a bad value
#   exits 2 with one line naming the option and no target directory;
# - a restore point name holding ' and \ reaches the server intact;
# - recovery settings inherited from the backup (a backup of a cluster that
#   was itself restored to a time) are removed: a later "recover to the end"
#   reaches the end; recovery settings in the backup's postgresql.conf are
#   reset to their defaults in postgresql.auto.conf, read after it;
# - restore_command carries the repository options the restore used,
#   resolved (flags, PGDIRECT_*, AWS_*, the config file), never a secret: a
#   restore from S3 given --s3-endpoint as a flag only recovers from S3 in a
#   server without AWS_ENDPOINT_URL; a repository path with spaces, quotes
#   and % works.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_s3.sh"
setup_tmp
trap 's3_stop; cleanup_all' EXIT
# nothing may leave 127.0.0.1: a request meant for AWS goes to a dead proxy instead
export http_proxy=http://127.0.0.1:9 https_proxy=http://127.0.0.1:9 no_proxy=127.0.0.1,localhost
pg_init "$T/data"
pg_start "$T/data"
q "CREATE TABLE t (id int primary key, v text)"
q "INSERT INTO t SELECT g, md5(g::text) FROM generate_series(1, 1000) g"
archive_all "$PGPORT"
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast >/dev/null 2>&1
ok $? "a backup"
id=$(ls "$REPO/backups" | grep -E 'F$' | tail -1)

# ---- bad recovery targets: exit 2, one line naming the option, nothing written ----
bad_target() { # bad_target DESCRIPTION OPTION ARGS...
    local desc=$1 opt=$2 out rc
    shift 2
    out=$(pgd restore "$id" --repo "$REPO" --target-dir "$T/bad/data" "$@" 2>&1)
    rc=$?
    is "$rc" "2" "$desc: exit 2"
    is "$(printf '%s\n' "$out" | wc -l)" "1" "$desc: one line"
    like "$out" "^pgdirect: error: .*\"$opt\"" "$desc: names $opt"
    ok $([ ! -e "$T/bad" ] && echo 0 || echo 1) "$desc: nothing written"
}
bad_target "not a time" --target-time --target-time not-a-time
bad_target "a time without a zone" --target-time --target-time "2026-11-29 21:00:00"
like "$(pgd restore "$id" --repo "$REPO" --target-dir "$T/bad" --target-time "2026-11-29 21:00:00" 2>&1)" \
    "no time zone" "a time without a zone: says a zone is required"
bad_target "no such date" --target-time --target-time "2026-02-30 10:00:00+00"
bad_target "an unknown zone" --target-time --target-time "2026-11-29 21:00:00 Nowhere/Atlantis"
bad_target "an LSN without /" --target-lsn --target-lsn 12345
bad_target "an LSN that is not hex" --target-lsn --target-lsn 0/XYZ
bad_target "an xid that is not a number" --target-xid --target-xid abc
bad_target "a negative xid" --target-xid --target-xid -1
bad_target "an empty restore point" --target-name --target-name ""
bad_target "a restore point of 64 bytes" --target-name --target-name "$(printf 'x%.0s' $(seq 64))"
bad_target "--target-action without a target" --target-action --target-action promote
like "$(pgd restore --help)" "WITH a zone" "--help says a zone is required, and why"

# ---- a restore point named with ' and \ ----
name="it's a \\ point"
q "INSERT INTO t SELECT g, 'before' FROM generate_series(1001, 1500) g"
want_point=$(q "SELECT count(*), md5(string_agg(id || v, ',' ORDER BY id)) FROM t")
q "SELECT pg_create_restore_point(\$\$$name\$\$)" >/dev/null
q "INSERT INTO t SELECT g, 'after' FROM generate_series(1501, 2000) g"
archive_all "$PGPORT"
port=$(restore_and_start "$id" "$T/point" --target-name "$name" --target-action promote)
ok $? "restore to the restore point \"$name\" starts"
is "$(psql_at "$port" "SELECT count(*), md5(string_agg(id || v, ',' ORDER BY id)) FROM t")" \
    "$want_point" "restored to the restore point named with ' and \\: data equal the source then"
pg_stop "$T/point"

# ---- inherited recovery settings ----
next_second
time_1=$(q "SELECT now()")
next_second
q "INSERT INTO t SELECT g, 'later' FROM generate_series(2001, 2500) g"
archive_all "$PGPORT"
port2=$(restore_and_start "$id" "$T/c2" --target-time "$time_1" --target-action promote)
ok $? "cluster 2: restored to a time and promoted"
is "$(psql_at "$port2" "SELECT count(*) FROM t")" "2000" "cluster 2 stopped at the time"
# cluster 2 archives into its own repository; ALTER SYSTEM keeps the recovery settings
REPO2="$T/repo2"
psql_at "$port2" "ALTER SYSTEM SET archive_mode = on" >/dev/null
psql_at "$port2" "ALTER SYSTEM SET archive_command = '$PGD wal-push --repo $REPO2 %p'" >/dev/null
# and a DBA left a recovery target in postgresql.conf (ignored by a running primary)
printf "recovery_target_time = '%s'\nrecovery_target_action = 'promote'\n" "$time_1" >>"$T/c2/postgresql.conf"
pg_stop "$T/c2"
pg_start "$T/c2" "$port2"
grep -qF "recovery_target_time = '$time_1'" "$T/c2/postgresql.auto.conf"
ok $? "cluster 2 carries the old recovery_target_time in its postgresql.auto.conf"
psql_at "$port2" "INSERT INTO t SELECT g, 'c2' FROM generate_series(3001, 3500) g"
PGPORT=$port2 pgd backup --repo "$REPO2" --pgdata "$T/c2" --checkpoint fast >/dev/null 2>"$T/b2.err"
ok $? "a backup of cluster 2" || sed 's/^/# /' "$T/b2.err"
psql_at "$port2" "INSERT INTO t SELECT g, 'c2 after' FROM generate_series(3501, 4000) g"
want_end=$(psql_at "$port2" "SELECT count(*), md5(string_agg(id || v, ',' ORDER BY id)) FROM t")
REPO_SAVED=$REPO
REPO=$REPO2
archive_all "$port2"
port3=$(restore_and_start LATEST "$T/c3")
ok $? "cluster 3: restored from cluster 2's backup to the end of the archive, started"
REPO=$REPO_SAVED
is "$(psql_at "$port3" "SELECT count(*), md5(string_agg(id || v, ',' ORDER BY id)) FROM t")" \
    "$want_end" "cluster 3 reached the end: data equal cluster 2 now"
conf=$(cat "$T/c3/postgresql.auto.conf")
ok $(echo "$conf" | grep -qE "recovery_target_time = '.+'|recovery_target_action = 'promote'" && echo 1 || echo 0) \
    "cluster 3's postgresql.auto.conf holds no inherited recovery target"
is "$(echo "$conf" | grep -c '^restore_command')" "1" "and one restore_command"
like "$(echo "$conf" | grep '^restore_command')" "--repo $REPO2 " "the restore's own"
like "$(cat "$T/c3.restore.log")" \
    "removed recovery settings inherited from the backup's postgresql.auto.conf: .*recovery_target_time" \
    "the restore said which settings it removed"
like "$(cat "$T/c3.restore.log")" \
    "recovery settings of the backup's postgresql.conf overridden in postgresql.auto.conf: recovery_target_time, recovery_target_action" \
    "and which settings of postgresql.conf it overrode"
like "$conf" "recovery_target_time = ''" "postgresql.conf's recovery_target_time is reset in postgresql.auto.conf"
grep -qF "recovery_target_time = '$time_1'" "$T/c3/postgresql.conf"
ok $? "postgresql.conf itself is left as the backup had it"
pg_stop "$T/c3"
pg_stop "$T/c2"

# ---- a repository path with spaces, quotes and % ----
weird="$T/my repo/it's 50%f off"
mkdir -p "$T/my repo" && cp -a "$REPO" "$weird" && chown -R postgres:postgres "$T/my repo"
want_now=$(q "SELECT count(*), md5(string_agg(id || v, ',' ORDER BY id)) FROM t")
REPO=$weird
port=$(restore_and_start "$id" "$T/weird")
ok $? "restore from a repository path with spaces, quotes and % starts"
REPO=$REPO_SAVED
is "$(psql_at "$port" "SELECT count(*), md5(string_agg(id || v, ',' ORDER BY id)) FROM t")" \
    "$want_now" "recovery read the WAL from that path: data equal the source now"
pg_stop "$T/weird"
pg_stop "$T/data"

# ---- S3: the endpoint as a flag only; the server has no AWS_ENDPOINT_URL ----
s3_start
endpoint=$AWS_ENDPOINT_URL
REPO="s3://$S3_BUCKET/c1"
pg_init "$T/s3src"
pg_start "$T/s3src"
q "CREATE TABLE t (id int primary key, v text)"
q "INSERT INTO t SELECT g, md5(g::text) FROM generate_series(1, 1000) g"
archive_all "$PGPORT"
pgd backup --repo "$REPO" --pgdata "$T/s3src" --checkpoint fast >/dev/null 2>&1
ok $? "a backup to S3"
s3id=$(pgd list --repo "$REPO" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])')
q "INSERT INTO t SELECT g, 'after' FROM generate_series(1001, 1500) g"
want_s3=$(q "SELECT count(*), md5(string_agg(id || v, ',' ORDER BY id)) FROM t")
q "SELECT pg_create_restore_point('s3_point')" >/dev/null
q "INSERT INTO t SELECT g, 'later' FROM generate_series(1501, 2000) g"
archive_all "$PGPORT"
port=$(AWS_ENDPOINT_URL= restore_and_start "$s3id" "$T/s3r" --s3-endpoint "$endpoint" \
       --target-name s3_point --target-action promote)
ok $? "restore from S3 with --s3-endpoint as a flag starts without AWS_ENDPOINT_URL"
is "$(psql_at "$port" "SELECT count(*), md5(string_agg(id || v, ',' ORDER BY id)) FROM t")" \
    "$want_s3" "recovery replayed WAL from S3 to the restore point"
conf=$(grep '^restore_command' "$T/s3r/postgresql.auto.conf")
like "$conf" "--s3-endpoint $endpoint " "restore_command carries the endpoint"
is "$(grep -c "$AWS_SECRET_ACCESS_KEY" "$T/s3r/postgresql.auto.conf")" "0" "and no secret"
like "$(cat "$T/s3r.restore.log")" "carries no S3 credentials" "the log says where credentials must come from"
pg_stop "$T/s3r"

# options from PGDIRECT_* variables, AWS_* variables and the config file are resolved to flags
printf 's3-retries = 4\ndownload-concurrency = 3\n' >"$T/pgdirect.conf"
chmod 644 "$T/pgdirect.conf"
PGDIRECT_S3_TIMEOUT=17 pgd restore "$s3id" --repo "$REPO" --config "$T/pgdirect.conf" \
    --target-dir "$T/s3opts" >/dev/null 2>&1
ok $? "restore from S3 with options from the environment and a config file"
conf=$(grep '^restore_command' "$T/s3opts/postgresql.auto.conf")
for want in "--s3-endpoint $endpoint" "--s3-region us-east-1" "--s3-uri-style path" \
    "--s3-retries 4" "--s3-timeout 17" "--download-concurrency 3" "--config $T/pgdirect.conf"; do
    like "$conf" "$want( |')" "restore_command carries $want"
done
is "$(grep -c "$AWS_SECRET_ACCESS_KEY" "$T/s3opts/postgresql.auto.conf")" "0" "and no secret"
done_testing
