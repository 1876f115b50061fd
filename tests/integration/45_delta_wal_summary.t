#!/usr/bin/env bash
# backup --delta from PostgreSQL's WAL summaries (17 and later, summarize_wal = on).
# On pgbench scale 10 (a 128 MiB pgbench_accounts):
# - summarize_wal off: the delta uses the page-LSN scan, one log line says so, and the
#   sentinel's delta_method is "page-scan";
# - summarize_wal turned on after the parent (a checkpoint between): the summaries begin
#   after the parent's start LSN, so again the page scan, with the line saying why;
# - with summaries from before the parent: after a contiguous 1 % update of
#   pgbench_accounts and a table cut by VACUUM and grown again (its limit block), a delta
#   taken under pgbench load (20 tps) says it used the WAL summaries
#   (delta_method "wal-summary") and reads at most 10 % of the bytes that the page-scan
#   delta of the same parent reads; restored (chain of two) to a restore point after it,
#   the pgbench tables and the cut table equal the source's there;
# - the summarizer stopped (SIGSTOP) so it cannot reach the backup's start within
#   --delta-summary-wait 2: the page scan, the line naming the LSN and the wait;
# - the restored cluster, promoted onto timeline 2 and archiving into the same repository:
#   a delta of it on the timeline-1 parent uses the page scan (summaries are followed on one
#   timeline), saying so, and its chain restores to the end of timeline 2 equal.
# On PostgreSQL 14 to 16 (the main suite's 15 among them): the delta says the server keeps
# no WAL summaries and uses the page scan; the rest is skipped.
. "$(dirname "$0")/lib.sh"
setup_tmp
pg_init "$T/data"
pg_start "$T/data"

sentinel() { jq -r ".$2" "$REPO/backups/$1.done.json"; }
newest() { ls "$REPO/backups" | sed -n 's/\.done\.json$//p' | sort | tail -1; }
# backup_as NAME [OPTIONS]: a backup (of $BACKUP_PGDATA, else $T/data), its log in $T/NAME.err, exit status in $RC, id in $ID,
# wall time in $SECS
backup_as() {
    local name=$1 t0
    shift
    t0=$(date +%s.%N)
    pgd backup --repo "$REPO" --pgdata "${BACKUP_PGDATA:-$T/data}" --checkpoint fast "$@" >/dev/null 2>"$T/$name.err"
    RC=$?
    SECS=$(echo "$(date +%s.%N) - $t0" | bc)
    ID=$(newest)
}
method_lines() { grep -c 'delta method: ' "$T/$1.err"; }
method_line() { grep 'delta method: ' "$T/$1.err"; }

if [ "$PG_MAJOR" -lt 17 ]; then
    as_pg "$PG_BIN/pgbench" -i -s 1 -q >/dev/null 2>&1 || bail "pgbench -i failed"
    backup_as f0
    is "$RC" "0" "full backup"
    q "UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid <= 1000"
    backup_as d0 --delta
    is "$RC/$(sentinel "$ID" type)" "0/delta" "a delta on PostgreSQL $PG_MAJOR"
    is "$(method_lines d0)" "1" "one line says how it finds its pages"
    like "$(method_line d0)" "page-LSN scan.*PostgreSQL $PG_MAJOR[.0-9]* keeps no WAL summaries" \
        "the page scan, because PostgreSQL $PG_MAJOR keeps no WAL summaries"
    is "$(sentinel "$ID" delta_method)" "page-scan" "the sentinel records the page scan"
    for t in "summarize_wal off" "parent before the summaries" "WAL summaries under load" \
        "restore of the summary delta"; do
        tap_skip "$t" "PostgreSQL $PG_MAJOR has no WAL summaries (17 and later)"
    done
    done_testing
    exit
fi

as_pg "$PG_BIN/pgbench" -i -s 10 -q >/dev/null 2>&1 || bail "pgbench -i failed"
q "VACUUM (FREEZE) pgbench_accounts"
archive_all "$PGPORT"

# ---- summarize_wal off: the page scan ----
backup_as f1
is "$RC/$(sentinel "$ID" type)" "0/full" "full backup with summarize_wal off"
F1=$ID
backup_as d1 --delta
is "$RC/$(sentinel "$ID" parent)" "0/$F1" "the delta backup succeeds"
is "$(method_lines d1)" "1" "one line says how it finds its pages"
like "$(method_line d1)" "page-LSN scan.*: summarize_wal is off" "the page scan, because summarize_wal is off"
is "$(sentinel "$ID" delta_method)" "page-scan" "the sentinel records the page scan"
like "$(jq -c '.[0]' <(pgd list --repo "$REPO" --json 2>/dev/null | jq "[.[] | select(.id == \"$ID\")]"))" \
    '"delta_method":"page-scan"' "list --json shows the method"

# ---- turned on after the parent: the summaries begin after its start LSN ----
q "CHECKPOINT"
reload_and_wait summarize_wal on
backup_as d2 --delta
is "$RC/$(sentinel "$ID" delta_method)" "0/page-scan" "summaries that begin after the parent: the page scan"
is "$(method_lines d2)" "1" "one line says so"
like "$(method_line d2)" "page-LSN scan.*the WAL summaries on timeline [0-9]+ begin at [0-9A-F/]+, after $(sentinel "$(sentinel "$ID" parent)" start_lsn)" \
    "saying the summaries begin after the parent's start LSN"

# ---- summaries from before the parent: only the changed blocks are read ----
# t_shrink: cut by VACUUM after the parent and grown again (a limit block); t_gone: dropped
q "CREATE TABLE t_shrink (id int, v text) WITH (fillfactor = 50);
   INSERT INTO t_shrink SELECT g, md5(g::text) FROM generate_series(1, 10000) g;
   CREATE TABLE t_gone AS SELECT g FROM generate_series(1, 1000) g"
gone_node=$(q "SELECT relfilenode FROM pg_class WHERE relname = 't_gone'")
backup_as f3
is "$RC/$(sentinel "$ID" type)" "0/full" "full backup with summarize_wal on"
F3=$ID
q "UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid BETWEEN 500001 AND 510000"
shrink_pages=$(q "SELECT pg_relation_size('t_shrink') / 8192")
q "DELETE FROM t_shrink WHERE id > 5000"
q "VACUUM t_shrink"
cut_pages=$(q "SELECT pg_relation_size('t_shrink') / 8192")
q "INSERT INTO t_shrink SELECT g, 'again' FROM generate_series(5001, 7500) g"
grown_pages=$(q "SELECT pg_relation_size('t_shrink') / 8192")
cmp_ok "$cut_pages" "<" "$shrink_pages" "VACUUM cut t_shrink ($shrink_pages -> $cut_pages pages, then $grown_pages)"
q "DROP TABLE t_gone"
PGBENCH=""
# at 20 transactions a second: enough to write during the backup, too few to swamp the 1 % that
# the comparison below is about (each one changes a few random pages before the backup's start)
load_start() {
    as_pg "$PG_BIN/pgbench" -n -c 2 -R 20 -T 900 >>"$T/pgbench.log" 2>&1 &
    PGBENCH=$!
    pgbench_wait_writing "$PGPORT"
}
load_stop() {
    q "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'pgbench'" >/dev/null
    wait "$PGBENCH" 2>/dev/null
    PGBENCH=""
}
load_start
backup_as d3 --delta
load_stop
D3=$ID
is "$RC/$(sentinel "$D3" type)/$(sentinel "$D3" parent)" "0/delta/$F3" "the delta under pgbench load succeeds, on $F3"
is "$(method_lines d3)" "1" "one line says how it finds its pages"
like "$(method_line d3)" "delta method: WAL summaries from $(sentinel "$F3" start_lsn) to $(sentinel "$D3" start_lsn)" \
    "it uses the WAL summaries from the parent's start to its own"
is "$(sentinel "$D3" delta_method)" "wal-summary" "the sentinel records the WAL summaries"
shrink_hash() { psql_at "$1" "SELECT md5(string_agg(id || ':' || v, ',' ORDER BY id)) FROM t_shrink"; }
HASH="$(pgbench_hash "$PGPORT") $(shrink_hash "$PGPORT")"
shrink_rel=$(q "SELECT pg_relation_filepath('t_shrink')")
shrink_blocks=$(jq -r --arg p "$shrink_rel" '.files[] | select(.path == $p) | .increment.blocks' "$REPO/backups/$D3/manifest.json")
cmp_ok "$shrink_blocks" ">=" "$((grown_pages - cut_pages))" \
    "t_shrink's increment holds at least every block from its limit block on ($shrink_blocks blocks)"
diag "limit rows of the dropped t_gone ($gone_node) in the summaries: $(q "SELECT count(*) FROM pg_available_wal_summaries() s,
    pg_wal_summary_contents(s.tli, s.start_lsn, s.end_lsn) c WHERE c.relfilenode = $gone_node AND c.is_limit_block")"
q "SELECT pg_create_restore_point('rp_summary')" >/dev/null
SUMMARY_SECS=$SECS

# the same parent by the page scan, for comparison
reload_and_wait summarize_wal off
backup_as d4 --delta --delta-from "$F3"
D4=$ID
is "$RC/$(sentinel "$D4" delta_method)/$(sentinel "$D4" parent)" "0/page-scan/$F3" "the page-scan delta of the same parent"
read_summary=$(sentinel "$D3" size)
read_scan=$(sentinel "$D4" size)
diag "bytes read: WAL summaries $read_summary in ${SUMMARY_SECS}s, page scan $read_scan in ${SECS}s (PostgreSQL $PG_MAJOR)"
diag "bytes stored: WAL summaries $(sentinel "$D3" compressed_size), page scan $(sentinel "$D4" compressed_size)"
like "$(grep -o 'is a delta of .*' "$T/d3.err")" "wal-summary\): [0-9.]+ [KMG]?i?B read" "the log reports the bytes read"
cmp_ok "$read_summary" "<=" "$((read_scan / 10))" "the summary delta reads at most 10 % of what the page scan reads"
rel=$(q "SELECT pg_relation_filepath('pgbench_accounts')")
inc=$(jq -r --arg p "$rel" '.files[] | select(.path == $p) | .increment.blocks' "$REPO/backups/$D3/manifest.json")
cmp_ok "$inc" ">=" "$((10000 * 8192 / 8192 / 62))" "pgbench_accounts's increment holds at least the updated pages ($inc blocks)"

# ---- the chain restores to the restore point ----
q "CREATE TABLE t_end ()" # WAL after the last backup's switch, so archive_all's switch ends a segment
archive_all "$PGPORT"
port=$(restore_and_start "$D3" "$T/r3" --target-name rp_summary --target-action promote)
ok $? "restore of $D3 (on $F3) to rp_summary"
is "$(pgbench_hash "$port") $(shrink_hash "$port")" "$HASH" "the restored pgbench tables and t_shrink equal the source's at rp_summary"

# ---- the summarizer does not reach the backup's start in time: the page scan ----
reload_and_wait summarize_wal on
summarizer=""
for _ in $(seq 1 600); do
    summarizer=$(q "SELECT pid FROM pg_stat_activity WHERE backend_type = 'walsummarizer'")
    [ -n "$summarizer" ] && break
    sleep 0.1
done
[ -n "$summarizer" ] || bail "no walsummarizer process after summarize_wal = on"
kill -STOP "$summarizer"
backup_as d5 --delta --delta-from "$F3" --delta-summary-wait 2
kill -CONT "$summarizer"
is "$RC/$(sentinel "$ID" delta_method)/$(sentinel "$ID" parent)" "0/page-scan/$F3" \
    "a summarizer that does not reach the start: the page-scan delta"
is "$(method_lines d5)" "1" "one line says so"
like "$(method_line d5)" "page-LSN scan.*: the WAL summarizer did not reach $(sentinel "$ID" start_lsn) within 2 s \(it is at [0-9A-F]+/[0-9A-F]+\)" \
    "naming the start LSN it waited for and the wait"
out=$(pgd backup --repo "$REPO" --pgdata "$T/data" --delta-summary-wait 5 2>&1)
is "$?" "2" "--delta-summary-wait without --delta: a usage error"
like "$out" '^pgdirect: error: option "--delta-summary-wait" needs --delta$' "saying it needs --delta"
out=$(pgd backup --repo "$REPO" --pgdata "$T/data" --delta --delta-summary-wait 100000 2>&1)
is "$?" "2" "--delta-summary-wait past its maximum: a usage error"
like "$out" '^pgdirect: error: .*delta-summary-wait.*3600' "naming the option and its limit"

# ---- a parent on an earlier timeline: the page scan, and the chain restores ----
# r3 was promoted onto a new timeline at rp_summary, after D3's start; it archives into the
# same repository from here on (its history file pushed by hand, as it was made before)
cat >>"$T/r3/postgresql.auto.conf" <<CONF
archive_mode = on
CONF
pg_stop "$T/r3"
pg_start "$T/r3" "$port"
tli=$(psql_at "$port" "SELECT timeline_id FROM pg_control_checkpoint()")
history=$(printf '%08X.history' "$tli")
as_pg "$PGD" wal-push --repo "$REPO" "$T/r3/pg_wal/$history" || bail "wal-push of $history failed"
psql_at "$port" "CREATE TABLE t_tl AS SELECT g FROM generate_series(1, 5000) g" >/dev/null
PGPORT=$port BACKUP_PGDATA=$T/r3 backup_as d6 --delta --delta-from "$D3"
D6=$ID
is "$RC/$(sentinel "$D6" type)/$(sentinel "$D6" parent)" "0/delta/$D3" "a delta on timeline $tli of $D3 (timeline 1)"
is "$(sentinel "$D6" delta_method)" "page-scan" "across a timeline switch: the page scan"
like "$(method_line d6)" "page-LSN scan.*: the parent was taken on timeline 1, the server is on $tli" \
    "saying the parent is on another timeline"
psql_at "$port" "INSERT INTO t_tl SELECT g FROM generate_series(5001, 6000) g" >/dev/null
TL_HASH="$(pgbench_hash "$port") $(psql_at "$port" "SELECT count(*) || '/' || sum(g) FROM t_tl")"
archive_all "$port"
pg_stop "$T/r3"
port=$(restore_and_start "$D6" "$T/r6")
ok $? "restore of $D6 (on $D3, on $F3) to the end of timeline $tli"
is "$(pgbench_hash "$port") $(psql_at "$port" "SELECT count(*) || '/' || sum(g) FROM t_tl")" "$TL_HASH" \
    "the restored cluster equals timeline $tli's at its end"
pg_stop "$T/r6"
done_testing
