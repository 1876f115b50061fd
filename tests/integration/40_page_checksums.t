#!/usr/bin/env bash
# Data page checksums verified as the pages stream past (issue 12).
# (a) Two pages of a cold table corrupted with dd while the cluster is down
#     (pg_checksums, the independent checker, names the same blocks): the
#     backup reports exactly those blocks of that relation file, in its log,
#     summary, manifest.json, sentinel, list and list --json; the default
#     (warn) exits 0; --checksum-errors fail completes, exits 3, marks the
#     backup, and restore LATEST passes it over; --no-verify-checksums does
#     not look. A cluster without checksums: one INFO line.
# (b) No false positives: 20 backups while pgbench writes, 500 transactions a
#     second (full_page_writes on, 1MB of shared buffers so dirty pages are
#     written out while the backups read them), each reporting 0 bad pages.
#     The load is paced, not flat out: the test files that run beside this one
#     (scripts/run_tests.py) keep their share of the two CPUs.
. "$(dirname "$0")/lib.sh"
setup_tmp
pg_init "$T/data"
pg_start "$T/data"
is "$(q 'SHOW full_page_writes')" "on" "full_page_writes is on"
is "$(q 'SHOW data_checksums')" "on" "the test cluster has data checksums"

# ---- (a) two corrupt pages in a cold table ----
q "CREATE TABLE cold AS SELECT g AS id, repeat('x', 200) AS pad FROM generate_series(1, 20000) g" >/dev/null
rel=$(q "SELECT pg_relation_filepath('cold')")
pages=$(q "SELECT pg_relation_size('cold') / 8192")
cmp_ok "$pages" ">" 20 "the cold table has $pages pages"
q "CHECKPOINT" >/dev/null
pg_stop "$T/data"
for blk in 5 17; do # 16 bytes in the middle of each page's tuples
    printf '\xde\xad\xbe\xef\xde\xad\xbe\xef\xde\xad\xbe\xef\xde\xad\xbe\xef' |
        dd of="$T/data/$rel" bs=1 seek=$((blk * 8192 + 4000)) conv=notrunc status=none
done
if pg_checksums=$(pg_tool pg_checksums); then
    checker=$(as_pg "$pg_checksums" --check -D "$T/data" 2>&1)
    like "$checker" "Bad checksums: +2" "pg_checksums finds 2 bad pages"
    is "$(grep -o 'file "[^"]*", block [0-9]*' <<<"$checker" | sed 's/.*\(base[^"]*\)", block /\1 /' | sort | tr '\n' ' ')" \
        "$rel 17 $rel 5 " "pg_checksums names blocks 5 and 17 of $rel"
else
    tap_skip "pg_checksums finds 2 bad pages" "$(pg_tool_missing pg_checksums)"
    tap_skip "pg_checksums names blocks 5 and 17 of $rel" "$(pg_tool_missing pg_checksums)"
fi
pg_start "$T/data"
archive_all "$PGPORT"

backup() { # backup NAME OPTIONS...: stderr in $T/NAME.err, exit status in $rc
    local name=$1
    shift
    pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast "$@" >/dev/null 2>"$T/$name.err"
    rc=$?
}
newest() { ls "$REPO/backups" | grep 'done.json$' | sort | tail -1 | sed 's/\.done\.json$//'; }

backup warn
is "$rc" "0" "a backup that finds bad pages succeeds by default (--checksum-errors warn)"
is "$(grep -c 'page checksum verification failed' "$T/warn.err")" "1" "one warning line for the one file"
like "$(cat "$T/warn.err")" \
    "pgdirect: warning: page checksum verification failed for 2 pages of file \"$rel\": blocks 5, 17\$" \
    "it names the relation file and blocks 5 and 17"
like "$(cat "$T/warn.err")" "complete: .*page checksums: [0-9]+ pages verified, 2 bad in 1 files \\(2 read again\\)" \
    "the summary line counts them"
A=$(newest)
man=$(cat "$REPO/backups/$A/manifest.json")
is "$(jq -c --arg p "$rel" '.files[] | select(.path == $p) | [.checksum_errors, .bad_blocks]' <<<"$man")" \
    "[2,[5,17]]" "manifest.json: the file's checksum_errors and bad_blocks"
is "$(jq '[.files[] | select(.checksum_errors != null)] | length' <<<"$man")" "1" \
    "manifest.json: no other file has bad pages"
is "$(jq -c '[.page_checksums, .checksum_errors, .checksum_error_files, .checksum_failed]' "$REPO/backups/$A.done.json")" \
    '["verified",2,1,false]' "the sentinel counts them; the backup is not marked"
is "$(jq --argjson p "$pages" '.pages_checked > $p' "$REPO/backups/$A.done.json")" "true" \
    "the sentinel counts the pages verified (more than the cold table's)"

backup fail --checksum-errors fail
is "$rc" "3" "--checksum-errors fail: exit 3"
like "$(cat "$T/fail.err")" "complete: .*2 bad in 1 files" "the backup completed"
like "$(tail -1 "$T/fail.err")" \
    "^pgdirect: error: backup [0-9T]+F completed, but 2 pages in 1 files failed their data checksum \(--checksum-errors fail\)" \
    "and the last line says why it exits non-zero"
B=$(newest)
isnt "$B" "$A" "the marked backup exists"
is "$(jq -c '[.checksum_errors, .checksum_failed]' "$REPO/backups/$B.done.json")" '[2,true]' "the sentinel marks it"
list=$(pgd list --repo "$REPO")
like "$(grep "^$A" <<<"$list")" " 2  ok\$" "list: 2 bad pages, status ok"
like "$(grep "^$B" <<<"$list")" " 2  checksum errors \(--checksum-errors fail\)\$" "list: the marked one"
like "$list" "BAD PAGES  STATUS" "list has a BAD PAGES column"
is "$(pgd list --repo "$REPO" --json | jq -c --arg b "$B" '.[] | select(.id == $b) | [.checksum_errors, .status]')" \
    '[2,"checksum errors"]' "list --json: count and status"
pgd restore LATEST --repo "$REPO" --target-dir "$T/r_latest" >"$T/r_latest.log" 2>&1
ok $? "restore LATEST succeeds"
like "$(cat "$T/r_latest.log")" "warning: skipping backup $B, newer than $A, because 2 pages failed their data checksum" \
    "restore LATEST passes over the marked backup, saying why"
pgd restore "$B" --repo "$REPO" --target-dir "$T/r_marked" >/dev/null 2>&1
ok $? "the marked backup restores by id"
cmp "$T/r_marked/$rel" "$T/data/$rel" >/dev/null
ok $? "with the pages as they are on disk (corrupt, not altered)"

backup noverify --no-verify-checksums
is "$rc" "0" "--no-verify-checksums: backup succeeds"
is "$(grep -c 'page checksum verification failed' "$T/noverify.err")" "0" "and reports no pages"
like "$(cat "$T/noverify.err")" "page checksums: not verified" "its summary says so"
is "$(jq -c '[.page_checksums, .pages_checked]' "$REPO/backups/$(newest).done.json")" '["not verified",0]' \
    "the sentinel says so"

# ---- a cluster without data checksums ----
pg_stop "$T/data"
port_a=$PGPORT
REPO_MAIN=$REPO
REPO=$T/repo_nock
mkdir -p "$REPO" && chown postgres "$REPO"
pg_init "$T/data_nock" --no-data-checksums
pg_start "$T/data_nock"
archive_all "$PGPORT"
pgd backup --repo "$REPO" --pgdata "$T/data_nock" --checkpoint fast >/dev/null 2>"$T/nock.err"
ok $? "a cluster without data checksums backs up"
is "$(grep -c 'no data checksums' "$T/nock.err")" "1" "one line says it"
like "$(cat "$T/nock.err")" "pgdirect: info: the cluster has no data checksums \(data_checksums = off\): pages not verified" \
    "at INFO"
is "$(jq -r .page_checksums "$REPO/backups/$(newest).done.json")" "off" "the sentinel says off"
like "$(pgd list --repo "$REPO" | tail -1)" " off  ok\$" "list shows off"
pg_stop "$T/data_nock"
REPO=$REPO_MAIN
PGPORT=$port_a
export PGPORT

# ---- (b) no false positives under a steady write load ----
# shared_buffers far smaller than the tables: pgbench's dirty pages are
# written out (evicted) all the time, so pages are being written while the
# backup reads them, not only at checkpoints
cat >>"$T/data/postgresql.conf" <<CONF
shared_buffers = 1MB
CONF
pg_start "$T/data"
is "$(q 'SHOW shared_buffers')" "1MB" "(b) runs with 1MB of shared buffers"
as_pg "$PG_BIN/pgbench" -i -s 2 -q >/dev/null 2>&1 || bail "pgbench -i failed"
q "DROP TABLE cold" >/dev/null # its bad pages are not what (b) is about
archive_all "$PGPORT"
as_pg "$PG_BIN/pgbench" -n -c 4 -j 2 -R 500 -T 3000 >"$T/pgbench.log" 2>&1 &
load=$!
pgbench_wait_writing "$PGPORT"
bad_runs=0 failed_runs=0 checked=0 reread=0
for i in $(seq 1 20); do
    backup "load$i" --archive-check=off --partition-size 64MiB
    [ "$rc" = 0 ] || { failed_runs=$((failed_runs + 1)); sed 's/^/# /' "$T/load$i.err"; }
    grep -q 'page checksums: [0-9]* pages verified, 0 bad in 0 files' "$T/load$i.err" ||
        { bad_runs=$((bad_runs + 1)); grep -E 'warning|page checksums' "$T/load$i.err" | sed 's/^/# /'; }
    n=$(jq '.pages_checked // 0' "$REPO/backups/$(newest).done.json")
    checked=$((checked + n))
    r=$(sed -n 's/.*page checksums: .* (\([0-9]*\) read again).*/\1/p' "$T/load$i.err")
    reread=$((reread + ${r:-0}))
done
diag "pages that failed as first read and passed when read again: $reread"
busy=$(kill -0 $load 2>/dev/null && echo yes || echo no)
q "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'pgbench'" >/dev/null
wait $load 2>/dev/null
is "$busy" "yes" "pgbench was writing through all 20 backups"
is "$failed_runs" "0" "all 20 backups under load succeed"
is "$bad_runs" "0" "none of the 20 reports a bad page"
cmp_ok "$checked" ">" 20000 "while verifying $checked pages"
done_testing
