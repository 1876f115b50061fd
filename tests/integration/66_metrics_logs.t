#!/usr/bin/env bash
# Monitoring sees pgdirect (issue 37):
# - --metrics-file on backup, wal-push (as archive_command) and verify writes the repository's
#   metrics, atomically (no temporary file left), in Prometheus' text format as
#   tests/tools/prom_check.py checks it (the published format's rules, each tested on a sample
#   that breaks it); the values are the sentinel's; `pgdirect metrics` prints the same families;
#   a metrics file that cannot be written is a warning, not a failed backup.
. "$(dirname "$0")/lib.sh"
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

# ---- wal-push, as archive_command ----
t0=$(date +%s)
archive_all "$PGPORT"
prom_ok "$T/prom/wal.prom" "wal-push's metrics file is valid exposition format"
at=$(sample "$T/prom/wal.prom" pgdirect_wal_last_archived_timestamp_seconds)
cmp_ok "${at:-0}" ">=" "$t0" "it says when wal-push last archived ($at)"
cmp_ok "$(sample "$T/prom/wal.prom" pgdirect_wal_archive_backlog_segments)" ">=" 0 "and the archive backlog"
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
is "$(grep -v timestamp_seconds "$T/prom/metrics.prom" | grep -v '^#')" \
    "$(grep -v timestamp_seconds "$T/prom/verify.prom" | grep -v '^#')" \
    "and the same samples as verify's file"

# ---- a metrics file that cannot be written ----
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --metrics-file "/nonexistent/dir/m.prom" \
    >/dev/null 2>"$T/backup2.err"
is "$?" "0" "a backup whose metrics file cannot be written still succeeds"
like "$(cat "$T/backup2.err")" "warning: could not write the metrics file \"/nonexistent/dir/m.prom\" \(--metrics-file\): could not create file" \
    "and warns, naming the file"
done_testing
