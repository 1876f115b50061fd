#!/usr/bin/env bash
# pgdirect drill (issue 37): a restore that starts and holds the right data, proved.
# - a drill of a good backup taken and drilled under pgbench load: exit 0, and every field of
#   --json present and plausible (restore seconds > 0, WAL replayed > 0, pages checked > 0);
#   the production cluster beside it untouched: still answering on its port (PGPORT, which the
#   drill avoids), the same postmaster.pid, no file of the drill in its data directory; the
#   scratch directory removed, --keep keeps it (with the server stopped);
# - a page of a table damaged in the repository, the backup's own CRC-32Cs recomputed so that
#   restore passes it (damage only PostgreSQL can see): exit 3, naming the relation;
# - a --check-sql statement that returns false (or no row): exit 3 naming it; one that holds: 0;
# - a scratch directory that is not empty is refused before anything runs (exit 1), and so is a
#   --pg-bin without postgres; a backup whose WAL is gone does not restore (exit 3, with the
#   server's FATAL line);
# - LATEST with a --target-time before the newest backup's end drills the older backup that
#   ended before it, as restore chooses (exit 0, recovery stopped at the target); the control:
#   restore of the newest one with that target is refused;
# - a partition damaged in the repository (its CRC-32Cs left as they were): restore --json
#   says "error_kind": "damaged" (control: a refused target is "failed"), and a drill exits 3.
. "$(dirname "$0")/lib.sh"
setup_tmp
pg_init "$T/data"
pg_start "$T/data"
PGBIN_ARGS=(--pg-bin "$PG_BIN")
as_pg "$PG_BIN/pgbench" -i -s 2 -q >/dev/null 2>&1 || bail "pgbench -i failed"
q "CREATE TABLE victim AS SELECT g AS id, md5(g::text) AS v FROM generate_series(1, 5000) g;
   CREATE INDEX victim_id ON victim (id); CHECKPOINT" >/dev/null
VICTIM=$(q "SELECT pg_relation_filepath('victim')")
archive_all "$PGPORT"

backup_id() { sed -n 's/.*backup \([0-9]\{8\}T[0-9]\{6\}F\) complete.*/\1/p' "$1"; }
# load during the backup and the drill
as_pg "$PG_BIN/pgbench" -T 600 -c 2 -n >/dev/null 2>&1 &
LOAD=$!
pgbench_wait_writing "$PGPORT"
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --compression none \
    --partition-size 1MiB >/dev/null 2>"$T/backup.err" || bail "backup failed: $(tail -1 "$T/backup.err")"
B=$(backup_id "$T/backup.err")
# a restore point, then a table it does not have
q "SELECT pg_create_restore_point('drill_rp')" >/dev/null
q "CREATE TABLE after_rp AS SELECT 1 AS x" >/dev/null
archive_all "$PGPORT"
diag "backup $B, victim $VICTIM"

pid_before=$(md5sum <"$T/data/postmaster.pid")
ls -a "$T/data" | sort >"$T/prod.before"
t0=$(date +%s.%N)
mkdir "$T/prom" && chown postgres "$T/prom"
out=$(pgd drill "$B" --repo "$REPO" "${PGBIN_ARGS[@]}" --json --metrics-file "$T/prom/d1.prom" 2>"$T/drill1.err")
rc=$?
t1=$(date +%s.%N)
diag "drill under load: $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s"
is "$rc" "0" "a drill of a good backup under load exits 0"
[ "$rc" = 0 ] || sed 's/^/# /' "$T/drill1.err"
field() { python3 -c 'import json, sys
o = json.loads(sys.argv[1])
for k in sys.argv[2].split("."):
    o = o[k]
print(o)' "$out" "$1" 2>/dev/null; }
is "$(field ok)" "True" "--json: ok"
is "$(field backup)" "$B" "--json: the backup drilled"
cmp_ok "$(field restore_seconds)" ">" 0 "--json: restore seconds > 0"
cmp_ok "$(field replay_seconds)" ">" 0 "--json: replay seconds > 0"
cmp_ok "$(field wal_replayed_bytes)" ">" 0 "--json: WAL replayed > 0"
cmp_ok "$(field time_to_consistency_seconds)" ">=" "$(field restore_seconds)" \
    "--json: time to consistency includes the restore"
cmp_ok "$(field relations_checked)" ">" 100 "--json: relations checked by amcheck (catalogs, pgbench, victim)"
cmp_ok "$(field pages_checked)" ">" 0 "--json: pages checked > 0"
cmp_ok "$(field page_checksums.pages)" ">" 0 "--json: page checksums checked"
is "$(field amcheck.ran)" "True" "--json: amcheck ran"
is "$(field problems)" "[]" "--json: no problems"
is "$(field system_identifier)" "$(q "SELECT system_identifier FROM pg_control_system()")" \
    "--json: the production cluster's system identifier"
SCRATCH=$(field scratch_dir)
ok $([ -n "$SCRATCH" ] && [ ! -e "$SCRATCH" ] && echo 0 || echo 1) "the scratch directory is removed"
like "$(cat "$T/drill1.err")" "scratch server .* started on port [0-9]+, socket in \"$SCRATCH\" only" \
    "the scratch server listened on a socket in the scratch directory"
port=$(sed -n 's/.*started on port \([0-9]*\),.*/\1/p' "$T/drill1.err")
isnt "$port" "$PGPORT" "on another port than production's (PGPORT, which the drill avoids)"

# the verdict, for monitoring
prom() { awk -v k="$2" '$1 == k { print $2 }' "$1"; }
is "$(python3 "$FORGE_DIR/../tools/prom_check.py" "$T/prom/d1.prom" 2>&1; echo $?)" "0" \
    "drill's metrics file is valid exposition format"
is "$(prom "$T/prom/d1.prom" pgdirect_drill_last_ok)" "1" "metrics: the last drill held"
cmp_ok "$(prom "$T/prom/d1.prom" pgdirect_drill_last_recovery_seconds)" ">" 0 \
    "metrics: the drill's measured recovery time"

# production untouched
is "$(q "SELECT 1")" "1" "production still answers on its port"
is "$(md5sum <"$T/data/postmaster.pid")" "$pid_before" "production's postmaster.pid is the same"
ls -a "$T/data" | sort >"$T/prod.after"
is "$(diff "$T/prod.before" "$T/prod.after")" "" "nothing new in production's data directory"
ok $(kill -0 "$LOAD" 2>/dev/null && echo 0 || echo 1) "pgbench ran through the drill"
kill "$LOAD" 2>/dev/null
wait "$LOAD" 2>/dev/null

# ---- LATEST with a --target-time before the newest backup's end: the older backup ----
sleep 1.1 # past the second backup B ended in
TT=$(q "SELECT now()::timestamptz(0)")
sleep 1.1
q "CREATE TABLE after_tt AS SELECT 1 AS x" >/dev/null # a commit after the target, and a table
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --compression none >/dev/null 2>"$T/backup2.err" ||
    bail "second backup failed: $(tail -1 "$T/backup2.err")"
B2=$(backup_id "$T/backup2.err")
archive_all "$PGPORT"
printf "SELECT to_regclass('after_tt') IS NULL;\nSELECT count(*) = 5000 FROM victim;\n" >"$T/tt.sql"
chown postgres "$T/tt.sql"
expect_error "control: backup $B2 itself ends after the target" "backup $B2 ended at .* after the recovery target" \
    pgd restore "$B2" --repo "$REPO" --target-dir "$T/tt_restore" --target-time "$TT"
out=$(pgd drill LATEST --repo "$REPO" "${PGBIN_ARGS[@]}" --target-time "$TT" --check-sql "$T/tt.sql" \
    --json 2>"$T/drill_tt.err")
is "$?" "0" "drill LATEST --target-time before the newest backup's end exits 0"
[ -n "$out" ] || sed 's/^/# /' "$T/drill_tt.err" | tail -5
is "$(field backup)" "$B" "it drilled the newest backup that ended before the target, as restore takes"
is "$(field checks_run):$(field problems)" "2:[]" "and recovery stopped at the target (after_tt not there)"
like "$(cat "$T/drill_tt.err")" "restoring backup $B, the newest that ended before the recovery target" \
    "saying which backup and why"

# ---- --check-sql ----
printf -- '-- the data the DBA expects\nSELECT count(*) = 5000 FROM victim;\nSELECT 1\n  FROM pgbench_branches;\nSELECT to_regclass('"'after_rp'"') IS NOT NULL;\n' >"$T/good.sql"
printf "SELECT to_regclass('after_rp') IS NULL;\n" >"$T/target.sql"
printf 'SELECT count(*) = 4999 FROM victim;\nSELECT id FROM victim WHERE id < 0;\n' >"$T/bad.sql"
chown postgres "$T"/*.sql
out=$(pgd drill "$B" --repo "$REPO" "${PGBIN_ARGS[@]}" --check-sql "$T/good.sql" 2>"$T/drill2.err")
is "$?" "0" "control: --check-sql whose statements hold exits 0"
like "$out" "^drill of backup $B: ok: .* 3 checks of --check-sql; 0 problems" "the summary line says all ran"
out=$(pgd drill "$B" --repo "$REPO" "${PGBIN_ARGS[@]}" --target-name drill_rp --check-sql "$T/target.sql" 2>"$T/drill_t.err")
is "$?" "0" "a drill to --target-name stops there: the table made after the restore point is not there"
out=$(pgd drill "$B" --repo "$REPO" "${PGBIN_ARGS[@]}" --check-sql "$T/bad.sql" --keep \
    --scratch-dir "$T/kept" --metrics-file "$T/prom/d3.prom" 2>"$T/drill3.err")
is "$?" "3" "--check-sql returning false exits 3"
like "$out" "problem: check \"SELECT count\(\*\) = 4999 FROM victim;\" \(.*bad.sql line 1\) does not hold: false" \
    "naming the statement that returned false"
like "$out" "problem: check \"SELECT id FROM victim WHERE id < 0;\" .*line 2\) does not hold: no rows" \
    "and the one that returned no row"
like "$(grep -v '^pgdirect: info' "$T/drill3.err")" "^pgdirect: error: drill of backup $B found 2 problems$" "one error line"
is "$(prom "$T/prom/d3.prom" pgdirect_drill_last_ok):$(prom "$T/prom/d3.prom" pgdirect_drill_last_problems)" \
    "0:2" "metrics: the last drill did not hold, 2 problems"
ok $([ -s "$T/kept/data/PG_VERSION" ] && [ ! -e "$T/kept/data/postmaster.pid" ] && echo 0 || echo 1) \
    "--keep keeps the scratch directory, its server stopped"
expect_error "a scratch directory that is not empty" "scratch directory \"$T/kept\" is not empty" \
    pgd drill "$B" --repo "$REPO" "${PGBIN_ARGS[@]}" --scratch-dir "$T/kept"
rm -rf "$T/kept"
expect_error "a drill without a server program" "no PostgreSQL server program \"$T/postgres\" for backup $B" \
    pgd drill "$B" --repo "$REPO" --pg-bin "$T"
is "$(pgd drill "$B" --repo "$REPO" --pg-bin "$T" >/dev/null 2>&1; echo $?)" "1" "exit 1: the drill could not run"

# ---- a drill interrupted (SIGTERM, SIGINT): its server stopped, its scratch directory removed,
# ---- exit 128+signal; one killed (SIGKILL) leaves it, and the next drill removes it, saying so ----
mkdir "$T/tmp" && chown postgres "$T/tmp"
t_int=$SECONDS
# scratch_servers: how many postgres processes run on a data directory under $T/tmp
scratch_servers() { ps -eo args | grep -c "^[^ ]*postgres .*$T/tmp/"; }
# drill_bg LOG: a drill in the background (DRILL_BG), its scratch directory made in $T/tmp
drill_bg() {
    as_pg env TMPDIR="$T/tmp" "$PGD" drill "$B" --repo "$REPO" "${PGBIN_ARGS[@]}" >/dev/null 2>"$1" &
    DRILL_BG=$!
}
# interrupted SIGNAL CODE REGEX DESCRIPTION: SIGNAL once the drill's log says REGEX
interrupted() {
    local sig=$1 code=$2 re=$3 desc=$4 victim rc
    drill_bg "$T/int_$sig.err"
    wait_for_line "$T/int_$sig.err" "$re" "$DRILL_BG" ||
        bail "$desc: the drill did not get to \"$re\": $(tail -2 "$T/int_$sig.err")"
    victim=$(pgdirect_under "$DRILL_BG")
    [ -n "$victim" ] || bail "$desc: no drill process"
    [ -n "${5:-}" ] && is "$(scratch_servers)" "1" "control: its scratch server runs ($desc)"
    kill -"$sig" "$victim"
    wait_exit "$DRILL_BG" 60 || bail "$desc: the drill did not end"
    wait "$DRILL_BG"
    rc=$?
    is "$rc" "$code" "$desc: exit $code"
    is "$(ls -A "$T/tmp")" "" "$desc: its scratch directory is removed"
    is "$(scratch_servers)" "0" "$desc: its scratch server is stopped"
    like "$(cat "$T/int_$sig.err")" "error: drill of backup $B: interrupted by SIG$sig" "$desc: says it was interrupted"
}
interrupted TERM 143 "scratch server .* started on port" "SIGTERM while the server recovers" server
interrupted INT 130 "drill of backup $B in " "SIGINT during the restore"
# SIGKILL: nothing can be done then; the server follows its drill, the directory stays
drill_bg "$T/killed.err"
wait_for_line "$T/killed.err" "scratch server .* started on port" "$DRILL_BG" || bail "no scratch server"
killed_pid=$(pgdirect_under "$DRILL_BG")
sigkill "$DRILL_BG"
stale=$(ls -d "$T/tmp"/pgdirect-drill-*)
ok $([ -d "$stale/data" ] && echo 0 || echo 1) "control: a drill killed by SIGKILL leaves its scratch directory"
for _ in $(seq 1 100); do [ "$(scratch_servers)" = 0 ] && break; sleep 0.1; done
is "$(scratch_servers)" "0" "and its scratch server ends with it"
# the next drill (here one that then stops: no server program) removes it first
out=$(as_pg env TMPDIR="$T/tmp" "$PGD" drill "$B" --repo "$REPO" --pg-bin "$T" 2>"$T/after_kill.err")
is "$?" "1" "the next drill runs (and stops: no server program in --pg-bin)"
like "$(cat "$T/after_kill.err")" \
    "removed scratch directory \"$stale\" of drill process $killed_pid, which ended without removing it" \
    "and removes the stale scratch directory, saying so"
is "$(ls -A "$T/tmp")" "" "nothing is left in the scratch directories' place"
diag "interrupted drills: $((SECONDS - t_int)) s"

# ---- the backup's WAL gone: it does not restore ----
mkdir "$T/wal.away" && mv "$REPO/wal/00000001"/* "$T/wal.away/"
out=$(pgd drill "$B" --repo "$REPO" "${PGBIN_ARGS[@]}" 2>"$T/drill5.err")
is "$?" "3" "a drill of a backup whose WAL is gone exits 3"
like "$(grep '^pgdirect: error' "$T/drill5.err")" \
    "^pgdirect: error: drill of backup $B: the backup does not restore: the scratch server exited during recovery: FATAL: " \
    "saying the backup does not restore, with the server's FATAL line"
mv "$T/wal.away"/* "$REPO/wal/00000001/"

# ---- a page damaged in the repository, its CRC-32Cs made right ----
pg_stop "$T/data"
read -r P < <(forge_python - "$REPO/backups/$B" "$VICTIM" <<'PY'
import json, os, sys
from forge import crc32c
backup, victim = sys.argv[1], sys.argv[2]
mpath = os.path.join(backup, "manifest.json")
m = json.load(open(mpath))
f = next(f for f in m["files"] if f["path"] == victim)
part = m["partitions"][f["partition"] - 1]
ppath = os.path.join(backup, part["name"])
data = bytearray(open(ppath, "rb").read())
off = 0
while True:
    h = data[off:off + 512]
    if len(h) < 512 or h == bytes(512):
        sys.exit("no tar entry for " + victim)
    size = int(bytes(h[124:136]).rstrip(b"\0 ") or b"0", 8)
    if h[156:157] == b"0" and bytes(h[0:100]).rstrip(b"\0").decode() == victim:
        break
    off += 512 + (size + 511) // 512 * 512
# block 1, in its tuples (not the header): the page checksum no longer matches
at = off + 512 + 8192 + 6000
for i in range(16):
    data[at + i] ^= 0xFF
body = bytes(data[off + 512:off + 512 + size])
f["crc32c"] = "%08x" % crc32c(body)
open(ppath, "wb").write(data)
part["size"] = len(data)
part["crc32c"] = "%08x" % crc32c(bytes(data))
json.dump(m, open(mpath, "w"))
print(part["name"])
PY
)
[ -n "$P" ] || bail "could not damage the victim's page"
diag "damaged block 1 of $VICTIM in $P"
out=$(pgd verify "$B" --repo "$REPO" 2>/dev/null)
like "$out" "backup $B: ok" "control: pgdirect's own CRCs pass the damaged backup"
out=$(pgd drill "$B" --repo "$REPO" "${PGBIN_ARGS[@]}" 2>"$T/drill4.err")
is "$?" "3" "a drill of the backup with a damaged page exits 3"
diag "$out"
like "$out" "problem: relation public.victim in database \"postgres\": .*block 1" \
    "amcheck names the relation and the block"
like "$out" "problem: page checksum of block 1 of file \"$VICTIM\" does not match" \
    "the page checksum pass names its file"
like "$(cat "$T/drill4.err")" "^pgdirect: error: drill of backup $B found [0-9]+ problems$" "one error line"

# ---- the repository's data damaged (its CRC-32Cs not made right): restore fails, exit 3 ----
python3 - "$REPO/backups/$B/$P" <<'PY'
import sys
p = sys.argv[1]
d = bytearray(open(p, "rb").read())
for i in range(len(d) // 2, len(d) // 2 + 64):
    d[i] ^= 0x5A
open(p, "wb").write(d)
PY
out=$(pgd restore "$B" --repo "$REPO" --target-dir "$T/r_damaged" --json 2>/dev/null)
is "$?" "1" "restore of the damaged partition fails"
is "$(field error_kind)" "damaged" "its --json says the kind: damaged"
out=$(pgd restore "$B" --repo "$REPO" --target-dir "$T" --json 2>/dev/null)
is "$(field error_kind)" "failed" "control: a restore refused for its target is of another kind"
out=$(pgd drill "$B" --repo "$REPO" "${PGBIN_ARGS[@]}" 2>"$T/drill6.err")
is "$?" "3" "a drill of a backup whose repository data is damaged exits 3"
like "$(grep '^pgdirect: error' "$T/drill6.err")" \
    "^pgdirect: error: drill of backup $B: the backup does not restore: restore of backup $B into .* failed: .*(checksum mismatch|corrupt|truncated|ends early)" \
    "saying the backup does not restore, and why"
done_testing
