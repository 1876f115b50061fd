#!/usr/bin/env bash
# Monitoring sees pgdirect (issue 37):
# - --metrics-file on backup, wal-push (as archive_command) and verify writes the repository's
#   metrics, atomically (no temporary file left), in Prometheus' text format as
#   tests/tools/prom_check.py checks it (the published format's rules, each tested on a sample
#   that breaks it); the values are the sentinel's; `pgdirect metrics` prints the same families;
#   a metrics file that cannot be written is a warning, not a failed backup;
# - --log-format json: every message is one JSON object (time, level, command, backup_id once
#   known, message), on stderr and appended to --log-file; text stays the default; a bad
#   --log-format is a usage error;
# - backup --annotation KEY=VALUE (repeatable) is shown by list and list --json; pgdirect
#   annotate ID KEY=VALUE --remove KEY rewrites the sentinel (atomically: nothing left beside
#   it; the backup still verifies); a bad key and an unknown backup are refused;
# - the page cache evictions a backup measured are in its sentinel and exported; `pgdirect
#   metrics` says when the newest WAL segment was archived, where it ends (pg_stat_archiver's
#   last segment) and the backlog then, from what wal-push --metrics-file recorded; none of
#   that where no wal-push wrote it;
# - a drill works from an S3 repository (moto) as from a local one: exit 0, and the scratch
#   server's wal-fetch found the WAL there (WAL replayed > 0).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_s3.sh"
setup_tmp
PROM_CHECK="$FORGE_DIR/../tools/prom_check.py"
pg_init "$T/data"
pg_start "$T/data"
mkdir "$T/prom" && chown postgres "$T/prom"
reload_and_wait archive_command "$PGD wal-push --repo $REPO --metrics-file $T/prom/wal.prom %p"
archive_all "$PGPORT"

prom_ok() { # prom_ok FILE DESCRIPTION: the checker passes the file
    local out
    out=$(python3 "$PROM_CHECK" "$1" 2>&1)
    is "$?:$out" "0:" "$2"
}
sample() { # sample FILE NAME{LABELS}: the value of one sample
    awk -v k="$2" '$1 == k { print $2 }' "$1"
}

# ---- backup ----
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --metrics-file "$T/prom/backup.prom" \
    >/dev/null 2>"$T/backup.err"
is "$?" "0" "backup --metrics-file succeeds"
B=$(sed -n 's/.*backup \([0-9]\{8\}T[0-9]\{6\}F\) complete.*/\1/p' "$T/backup.err")
prom_ok "$T/prom/backup.prom" "backup's metrics file is valid exposition format"
sentinel() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$REPO/backups/$B.done.json" "$1"; }
stop=$(python3 -c 'import json, sys, datetime
s = json.load(open(sys.argv[1]))["stop_time"]
print(s if isinstance(s, int) else int(datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()))' "$REPO/backups/$B.done.json")
is "$(sample "$T/prom/backup.prom" 'pgdirect_backup_last_end_timestamp_seconds{type="full"}')" "$stop" \
    "the last full backup's end time is the sentinel's"
is "$(sample "$T/prom/backup.prom" 'pgdirect_backup_last_read_bytes{type="full"}')" "$(sentinel size)" \
    "bytes read are the sentinel's"
is "$(sample "$T/prom/backup.prom" 'pgdirect_backup_last_stored_bytes{type="full"}')" "$(sentinel compressed_size)" \
    "bytes stored are the sentinel's"
is "$(sample "$T/prom/backup.prom" 'pgdirect_backup_last_checksum_errors{type="full"}')" "0" "no checksum errors"
is "$(sample "$T/prom/backup.prom" 'pgdirect_backups{state="complete"}')" "1" "one complete backup"
is "$(ls "$T/prom" | grep -c '\.tmp\.')" "0" "no temporary file left beside it"
evicted=$(sentinel pages_evicted 2>&1)
like "$evicted" '^[0-9]+$' "the sentinel keeps the page cache evictions the backup measured ($evicted)"
is "$(sample "$T/prom/backup.prom" 'pgdirect_backup_last_evicted_pages{type="full"}')" "$evicted" \
    "exported per type as pgdirect_backup_last_evicted_pages"

# ---- wal-push, as archive_command ----
t0=$(date +%s)
q "CREATE TABLE new_wal AS SELECT 1 AS x" >/dev/null # a segment to switch away from
archive_all "$PGPORT"
# the segment is in the repository before its wal-push writes the metrics: wait for them
for _ in $(seq 1 100); do
    at=$(sample "$T/prom/wal.prom" pgdirect_wal_last_archived_timestamp_seconds)
    [ "${at:-0}" -ge "$t0" ] && break
    sleep 0.1
done
prom_ok "$T/prom/wal.prom" "wal-push's metrics file is valid exposition format"
cmp_ok "${at:-0}" ">=" "$t0" "it says when wal-push last archived ($at)"
cmp_ok "$(sample "$T/prom/wal.prom" pgdirect_wal_archive_backlog_segments)" ">=" 0 "and the archive backlog"
is "$(sample "$T/prom/wal.prom" pgdirect_wal_last_archived_timeline)" "1" "and the timeline of what it archived"
is "$(sample "$T/prom/wal.prom" 'pgdirect_backups{state="complete"}')" "1" "with the repository's state"

# ---- verify, and pgdirect metrics ----
pgd verify --repo "$REPO" --metrics-file "$T/prom/verify.prom" >/dev/null 2>&1
is "$?" "0" "verify --metrics-file succeeds"
prom_ok "$T/prom/verify.prom" "verify's metrics file is valid exposition format"
is "$(sample "$T/prom/verify.prom" pgdirect_verify_last_ok)" "1" "the last verify was good"
is "$(sample "$T/prom/verify.prom" pgdirect_verify_last_problems)" "0" "with no problems"
pgd metrics --repo "$REPO" >"$T/prom/metrics.prom" 2>"$T/metrics.err"
is "$?" "0" "pgdirect metrics succeeds"
prom_ok "$T/prom/metrics.prom" "its output is valid exposition format"
# on demand, from what the last wal-push with --metrics-file recorded in the repository: the
# newest segment PostgreSQL says it archived, where it ends, and when
seg_end=$(q "SELECT last_archived_wal || ' ' || setting FROM pg_stat_archiver, pg_settings WHERE name = 'wal_segment_size'" |
    python3 -c 'import sys; n, s = sys.stdin.read().split(); s = int(s)
print((int(n[8:16], 16) * (2**32 // s) + int(n[16:24], 16) + 1) * s)')
is "$(sample "$T/prom/metrics.prom" pgdirect_wal_last_archived_end_lsn_bytes)" "$seg_end" \
    "pgdirect metrics: where the newest archived segment ends (pg_stat_archiver's last)"
cmp_ok "$(sample "$T/prom/metrics.prom" pgdirect_wal_last_archived_timestamp_seconds)" ">=" "$t0" \
    "and when it was archived"
cmp_ok "$(sample "$T/prom/metrics.prom" pgdirect_wal_archive_backlog_segments)" ">=" 0 "and the backlog then"
is "$(grep -v timestamp_seconds "$T/prom/metrics.prom" | grep -v '^#')" \
    "$(grep -v timestamp_seconds "$T/prom/verify.prom" | grep -v '^#')" \
    "and the same samples as verify's file"

# ---- a metrics file that cannot be written ----
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --metrics-file "/nonexistent/dir/m.prom" \
    >/dev/null 2>"$T/backup2.err"
is "$?" "0" "a backup whose metrics file cannot be written still succeeds"
like "$(cat "$T/backup2.err")" "warning: could not write the metrics file \"/nonexistent/dir/m.prom\" \(--metrics-file\): could not create file" \
    "and warns, naming the file"
# ---- structured logs ----
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --log-format json \
    --log-file "$T/prom/log.json" --annotation ticket=OPS-1 --annotation "why=before upgrade" \
    >/dev/null 2>"$T/json.err"
is "$?" "0" "backup --log-format json --log-file succeeds"
B3=$(python3 -c 'import json, sys
for line in open(sys.argv[1]):
    o = json.loads(line)
    if o["message"].startswith("backup ") and " complete: " in o["message"]:
        print(o["backup_id"])' "$T/json.err" 2>&1)
like "$B3" '^[0-9]{8}T[0-9]{6}F$' "the completion message carries the backup id ($B3)"
is "$(python3 -c 'import json, sys
bad = [l for l in open(sys.argv[1]) if set(json.loads(l)) - {"time", "level", "command", "backup_id", "message"}
       or not {"time", "level", "command", "message"} <= set(json.loads(l)) or json.loads(l)["command"] != "backup"]
print(len(bad))' "$T/json.err" 2>&1)" "0" "every stderr line is a JSON object with time, level, command, message"
like "$(head -1 "$T/json.err")" '^\{"time":"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]{12}Z","level":"info"' \
    "time in UTC with milliseconds, then the level"
is "$(cat "$T/prom/log.json")" "$(cat "$T/json.err")" "--log-file holds the same lines"
pgd list --repo "$REPO" --log-file "$T/prom/log.json" >/dev/null 2>&1
pgd list --repo /nonexistent --log-file "$T/prom/log.json" >/dev/null 2>&1
like "$(tail -1 "$T/prom/log.json")" '^pgdirect: error: repository "/nonexistent" does not exist' \
    "--log-file appends, in text by default"
is "$(grep -c . "$T/prom/log.json")" "$(( $(grep -c . "$T/json.err") + 1 ))" "after what was there"
expect_error "--log-format xml" 'invalid value "xml" for option "--log-format"' pgd list --repo "$REPO" --log-format xml

# ---- annotations ----
out=$(pgd list --repo "$REPO")
like "$(grep -A1 "^$B3" <<<"$out" | tail -1)" "^  annotations: ticket=OPS-1, why=before upgrade$" \
    "list shows the annotations under the backup"
ann() { pgd list --repo "$REPO" --json | python3 -c 'import json, sys
print(json.dumps(next(b for b in json.load(sys.stdin) if b["id"] == sys.argv[1]).get("annotations"), sort_keys=True))' "$1"; }
is "$(ann "$B3")" '{"ticket": "OPS-1", "why": "before upgrade"}' "list --json has them"
is "$(ann "$B")" "null" "control: a backup without annotations has none"
pgd annotate "$B3" owner=dba --remove ticket --repo "$REPO" >/dev/null 2>"$T/ann.err"
is "$?" "0" "annotate adds one and removes one"
is "$(ann "$B3")" '{"owner": "dba", "why": "before upgrade"}' "list --json shows the change"
is "$(ls "$REPO/backups" | grep -vcE '^[0-9]{8}T[0-9]{6}[FD](\.done\.json)?$')" "0" \
    "nothing but backups and sentinels left in backups/"
pgd verify "$B3" --repo "$REPO" >/dev/null 2>&1
is "$?" "0" "the rewritten sentinel's backup still verifies"
expect_error "annotate with a bad key" 'invalid annotation "bad key=1"' pgd annotate "$B3" 'bad key=1' --repo "$REPO"
is "$(pgd annotate "$B3" 'bad key=1' --repo "$REPO" >/dev/null 2>&1; echo $?)" "2" "a usage error (2)"
expect_error "annotate of a backup that is not there" "backup 20200101T000000F is not in repository" \
    pgd annotate 20200101T000000F a=b --repo "$REPO"
# a backup without a sentinel (a copy of one's directory: its claim names a process that ended)
cp -a "$REPO/backups/$B" "$REPO/backups/20200102T000000F"
like "$(pgd list --repo "$REPO" 2>/dev/null)" "20200102T000000F .* interrupted: claimed" "control: list shows it interrupted"
expect_error "annotate of an interrupted backup" \
    "backup 20200102T000000F is incomplete: its run was interrupted \(.*\); it cannot be restored, so it is not annotated \(pgdirect delete --garbage removes it\)" \
    pgd annotate 20200102T000000F a=b --repo "$REPO"
ok $([ ! -e "$REPO/backups/20200102T000000F.done.json" ] && echo 0 || echo 1) "and no sentinel was written for it"
rm -rf "$REPO/backups/20200102T000000F"
# C1 controls (U+0080-U+009F) and bytes that are not UTF-8: refused, naming the key, not echoed
for v in $'\xc2\x9b31mred' $'a\xc2\x85b' $'\xff\xfe' $'a\xc3'; do
    out=$(pgd annotate "$B3" "note=$v" --repo "$REPO" 2>&1)
    is "$?:$out" "2:pgdirect: error: invalid annotation \"note\": its value must be UTF-8 text without control characters (C0, DEL or C1), at most 256 bytes" \
        "annotate note=$(printf '%q' "$v"): a usage error naming the key, the value not echoed"
done
out=$(pgd backup --repo "$REPO" --pgdata "$T/data" --annotation $'note=\xc2\x9b' 2>&1)
is "$?" "2" "backup --annotation with a C1 control: a usage error"
pgd annotate "$B3" $'note=\xc2\xa0caf\xc3\xa9' --repo "$REPO" >/dev/null 2>&1
is "$?" "0" "control: the character after C1 (U+00A0) and other UTF-8 are accepted"
is "$(ann "$B3")" '{"note": "\u00a0caf\u00e9", "owner": "dba", "why": "before upgrade"}' "and kept as given"
# ---- a drill from an S3 repository ----
s3_start
pg_stop "$T/data"
pg_start "$T/data" # the archiver needs the AWS_* credentials in its environment (as_pg)
LOCAL_REPO=$REPO
REPO="s3://$S3_BUCKET/drill"
reload_and_wait archive_command "$PGD wal-push --repo $REPO %p"
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast >/dev/null 2>"$T/s3backup.err" ||
    bail "backup to S3 failed: $(tail -1 "$T/s3backup.err")"
q "CREATE TABLE s3_wal AS SELECT 1 AS x" >/dev/null
archive_all "$PGPORT"
out=$(pgd drill --repo "$REPO" --pg-bin "$PG_BIN" --json 2>"$T/s3drill.err")
is "$?" "0" "a drill from an S3 repository exits 0"
[ -n "$out" ] || sed 's/^/# /' "$T/s3drill.err" | tail -5
cmp_ok "$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["wal_replayed_bytes"])' "$out" 2>/dev/null || echo 0)" \
    ">" 0 "its server fetched WAL from the bucket"
pgd metrics --repo "$REPO" >"$T/prom/s3.prom" 2>&1
is "$?:$(grep -c '^pgdirect_wal_' "$T/prom/s3.prom")" "0:0" \
    "no WAL samples where no wal-push ran with --metrics-file (control of the ones above)"
cmp_ok "$(sample "$T/prom/s3.prom" 'pgdirect_backups{state="complete"}')" ">=" 1 "though the backups are there"
s3_stop
REPO=$LOCAL_REPO
done_testing
