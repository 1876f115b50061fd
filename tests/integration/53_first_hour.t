#!/usr/bin/env bash
# A DBA's first hour (issue 32): the usual mistakes of a new user, each answered before it
# costs a day later.
# - A test restore, started and promoted, archives nothing into the production repository:
#   restore writes archive_mode = off (the positive control, --archive-mode preserve, does
#   archive a new timeline). The stray timeline such a restore leaves is named by check and
#   backup; restore LATEST of a later backup refuses it (PostgreSQL would not start);
#   delete --timeline N removes it (refused while a backup is on it), and the restore works.
# - A recovery target before a backup's end: restore LATEST takes the newest backup that ended
#   before it, and says which; an id that ended after it is refused, and so is a target before
#   every backup (PostgreSQL itself, given such a target, stops with FATAL: the control).
# - A second backup of the same cluster into the same repository while one runs is refused,
#   naming the running one (--concurrent allows it); a backup killed by kill -9 is garbage at
#   once (its claim names a process of this host and boot that is gone), so delete removes it
#   and keeps no WAL for it. list shows the running backup (host, pid), then the interrupted one.
# - Scripts can read the result: backup, restore and delete --json print one object (ok, ids,
#   sizes, what was removed; ok false and the error when they fail); list shows each backup's
#   last verify verdict; --progress writes plain lines, no control codes, into a log file (the
#   control: on a terminal, script(1)'s, the line is redrawn with them).
# - Ownership: a backup run as root into the postgres user's repository leaves only postgres's
#   objects (postgres can list and delete them after); into root's own repository, root's (the
#   control). A restore run as root gives the cluster to the target's owner, and the server
#   starts; into a directory root owns it is refused before anything is written.
. "$(dirname "$0")/lib.sh"
setup_tmp
pg_init "$T/data"
pg_start "$T/data"

newest() { pgd list --repo "$REPO" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])'; }
rows() { psql_at "$1" "SELECT count(*) || ' ' || sum(i) FROM t"; }
# start_restored DIR: start a restored cluster on a new port (PORT_R) as restore left it, and
# wait until its recovery has ended (no target: it promotes at the end of the archive)
start_restored() {
    PORT_R=$(free_port)
    echo "port = $PORT_R" >>"$1/postgresql.auto.conf"
    pg_start "$1" "$PORT_R"
    for _ in $(seq 1 600); do
        [ "$(psql_at "$PORT_R" "SELECT pg_is_in_recovery()" 2>/dev/null)" = "f" ] && return
        sleep 0.1
    done
    bail "the server in $1 did not leave recovery"
}

q "CREATE TABLE t (i int)"
q "INSERT INTO t SELECT generate_series(1, 1000)"
archive_all "$PGPORT"
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast >/dev/null 2>"$T/b1.err" ||
    bail "backup 1 failed: $(cat "$T/b1.err")"
B1=$(newest)

# ---- a test restore does not archive into the repository ----
pgd restore "$B1" --repo "$REPO" --target-dir "$T/r1" >"$T/r1.restore.log" 2>&1
ok $? "a test restore with the defaults"
like "$(cat "$T/r1.restore.log")" "the restored cluster will not archive WAL \(archive_mode = off" \
    "it says the restored cluster will not archive, and why"
is "$(grep -c "^archive_mode = 'off'$" "$T/r1/postgresql.auto.conf")" "1" \
    "postgresql.auto.conf sets archive_mode = off"
start_restored "$T/r1"
is "$(psql_at "$PORT_R" "SHOW archive_mode")" "off" "the started test restore does not archive"
is "$(psql_at "$PORT_R" "SELECT timeline_id FROM pg_control_checkpoint()")" "2" \
    "it was promoted onto timeline 2"
psql_at "$PORT_R" "INSERT INTO t VALUES (-1); SELECT pg_switch_wal()" >/dev/null
pg_stop "$T/r1" # a fast shutdown archives what is ready first, where archiving is on
is "$(ls "$REPO/wal" | tr '\n' ' ')" "00000001 " "and the repository holds no timeline 2"

# the control: the same steps with --archive-mode preserve archive timeline 2
pgd restore "$B1" --repo "$REPO" --target-dir "$T/r2" --archive-mode preserve >"$T/r2.restore.log" 2>&1
ok $? "a restore with --archive-mode preserve"
is "$(grep -c "archive_mode = 'off'" "$T/r2/postgresql.auto.conf")" "0" "writes no archive_mode"
start_restored "$T/r2"
R2_PORT=$PORT_R
psql_at "$R2_PORT" "INSERT INTO t VALUES (-2); SELECT pg_switch_wal()" >/dev/null
for _ in $(seq 1 300); do [ -e "$REPO/wal/00000002/00000002.history.lz4" ] && break; sleep 0.1; done
ok $([ -e "$REPO/wal/00000002/00000002.history.lz4" ] && echo 0 || echo 1) \
    "the control: started and promoted, it archives timeline 2's history into the repository"

# a backup on timeline 2 (of the promoted control), which will keep it from delete --timeline
pgd backup --repo "$REPO" --pgdata "$T/r2" --checkpoint fast --dbname "port=$R2_PORT" >/dev/null 2>"$T/b3.err" ||
    bail "backup of timeline 2 failed: $(cat "$T/b3.err")"
B3=$(newest)

# ---- the stray timeline is named, and refused by restore ----
q "INSERT INTO t SELECT generate_series(1001, 2000)"
archive_all "$PGPORT"
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast >/dev/null 2>"$T/b2.err"
ok $? "production's next backup succeeds"
like "$(cat "$T/b2.err")" "warning: repository \"$REPO\" holds timeline 2 \(00000002.history\), newer than the server's timeline 1: .*pgdirect delete --timeline 2" \
    "and warns of the stray timeline, saying how to remove it"
B2=$(newest)
out=$(pgd check --repo "$REPO" 2>&1)
like "$out" "warning +timelines +repository \"$REPO\" holds timeline 2" "check warns of it too"
expect_error "restore LATEST across the stray timeline" \
    "recovery would follow timeline 2, the newest PostgreSQL finds in the repository, which leaves the backup's timeline 1" \
    pgd restore LATEST --repo "$REPO" --target-dir "$T/r3"

# ---- delete --timeline ----
expect_error "delete --timeline 2 while a backup is on it" "timeline 2 not removed: backup $B3 is on it" \
    pgd delete --repo "$REPO" --timeline 2
pg_stop "$T/r2"
out=$(pgd delete --repo "$REPO" --backup "$B3" 2>&1) || bail "could not delete $B3: $out"
expect_error "--timeline 1" "invalid value \"1\" for option \"--timeline\"" pgd delete --repo "$REPO" --timeline 1
pgd delete --repo "$REPO" --timeline 1 >/dev/null 2>&1
is "$?" "2" "--timeline 1 is a usage error (exit 2)"
out=$(pgd delete --repo "$REPO" --timeline 2 --dry-run 2>&1)
ok $? "delete --timeline 2 --dry-run"
like "$out" "would remove wal/00000002/00000002.history.lz4" "lists the history file"
ok $([ -e "$REPO/wal/00000002/00000002.history.lz4" ] && echo 0 || echo 1) "and removes nothing"
out=$(pgd delete --repo "$REPO" --timeline 2 2>&1)
ok $? "delete --timeline 2" || diag "$out"
like "$out" "removed timeline 2: [0-9]+ files" "says what it removed"
ok $([ ! -e "$REPO/wal/00000002" ] || [ -z "$(ls "$REPO/wal/00000002")" ] && echo 0 || echo 1) \
    "timeline 2's directory is empty"
expect_error "delete --timeline 2 again" "holds nothing of timeline 2" pgd delete --repo "$REPO" --timeline 2
out=$(pgd check --repo "$REPO" 2>&1)
like "$out" "ok +timelines +no timeline newer than the server's \(1\)" "check: no stray timeline now"
pgd restore LATEST --repo "$REPO" --target-dir "$T/r4" >"$T/r4.restore.log" 2>&1
ok $? "restore LATEST works again" || sed 's/^/# /' "$T/r4.restore.log"
start_restored "$T/r4"
is "$(rows "$PORT_R")" "$(rows "$PGPORT")" "and recovers production's data, not the test restore's"
pg_stop "$T/r4"

# ---- a recovery target before a backup's end ----
next_second
q "INSERT INTO t SELECT generate_series(3001, 3100)"
next_second
T_MID=$(date -u '+%Y-%m-%d %H:%M:%S+00')
LSN_MID=$(q "SELECT pg_current_wal_lsn()")
T_MID_RE=${T_MID//+/\\+} # as a regular expression
want_mid=$(rows "$PGPORT")
next_second
q "INSERT INTO t SELECT generate_series(3101, 3200)"
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast >/dev/null 2>"$T/b4.err" ||
    bail "backup 4 failed: $(cat "$T/b4.err")"
B4=$(newest)
archive_all "$PGPORT"
pgd restore LATEST --repo "$REPO" --target-dir "$T/r5" --target-time "$T_MID" --target-action promote \
    >"$T/r5.restore.log" 2>&1
ok $? "restore LATEST --target-time before the newest backup's end" || sed 's/^/# /' "$T/r5.restore.log"
like "$(cat "$T/r5.restore.log")" "restoring backup $B2, the newest that ended before the recovery target \(recovery_target_time = '$T_MID_RE'\): the newer $B4 ended at" \
    "takes the newest backup that ended before the target, and says which"
start_restored "$T/r5"
is "$(rows "$PORT_R")" "$want_mid" "and recovers to the target"
pg_stop "$T/r5"
out=$(pgd restore LATEST --repo "$REPO" --target-dir "$T/r6" --target-lsn "$LSN_MID" 2>&1)
ok $? "restore LATEST --target-lsn before the newest backup's end"
like "$out" "restoring backup $B2, the newest that ended before the recovery target \(recovery_target_lsn" \
    "an LSN target chooses the same way"
rm -rf "$T/r6"
expect_error "an id that ended after the target" \
    "backup $B4 ended at [0-9: -]+\+00, after the recovery target recovery_target_time = '$T_MID_RE': PostgreSQL would stop with FATAL" \
    pgd restore "$B4" --repo "$REPO" --target-dir "$T/r7" --target-time "$T_MID"
ok $([ ! -e "$T/r7" ] && echo 0 || echo 1) "refused before anything is written"
expect_error "a target before every backup" \
    "the recovery target recovery_target_time = '2000-01-01 00:00:00\+00' is before the end of every backup in repository \"$REPO\": the oldest, $B1, ended at" \
    pgd restore LATEST --repo "$REPO" --target-dir "$T/r7" --target-time "2000-01-01 00:00:00+00"
# the control: PostgreSQL given such a target for that backup (an LSN: a time target stops only
# at a commit, and an idle cluster commits nothing during a backup)
pgd restore "$B4" --repo "$REPO" --target-dir "$T/r8" >/dev/null 2>&1 || bail "restore of $B4 failed"
printf "port = %s\nrecovery_target_lsn = '%s'\nrecovery_target_action = 'promote'\n" "$(free_port)" "$LSN_MID" \
    >>"$T/r8/postgresql.auto.conf"
as_pg "$PG_BIN/pg_ctl" -D "$T/r8" -l "$T/r8.log" -w -t 60 start >/dev/null 2>&1
for _ in $(seq 1 300); do grep -q "before consistent recovery point" "$T/r8.log" && break; sleep 0.1; done
like "$(cat "$T/r8.log")" "FATAL: +requested recovery stop point is before consistent recovery point" \
    "the control: PostgreSQL itself stops with FATAL on such a target"

# ---- two backups at once; a backup killed by kill -9 ----
running_id() { # the id of the backup directory without a sentinel
    for d in "$REPO"/backups/*/; do
        d=$(basename "$d")
        [ -e "$REPO/backups/$d.done.json" ] || { [ -e "$REPO/backups/$d/claim.json" ] && echo "$d"; }
    done
}
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --max-rate 1MiB >"$T/slow.log" 2>&1 &
SLOW=$!
for _ in $(seq 1 600); do [ -n "$(running_id)" ] && grep -q "backup started" "$T/slow.log" && break; sleep 0.1; done
RUNNING=$(running_id)
[ -n "$RUNNING" ] || bail "the slow backup did not claim an id: $(cat "$T/slow.log")"
line=$(pgd list --repo "$REPO" | grep "^$RUNNING ")
like "$line" "running: claimed [0-9smh]+ ago by process [0-9]+ of this host, still running$" \
    "list shows the running backup, with its process"
is "$(pgd list --repo "$REPO" --json | python3 -c "import json,sys; b=[x for x in json.load(sys.stdin) if x['id'] == '$RUNNING'][0]; print(b['status'], b['host'] == '$(hostname)', b['pid'] > 0)")" \
    "running True True" "list --json: status running, host and pid"
expect_error "a second backup of the cluster while one runs" \
    "backup $RUNNING of this cluster \(system [0-9]+\) is running into repository \"$REPO\" \(claimed [0-9smh]+ ago by process [0-9]+ of this host, still running\): a second one would read the cluster twice at once; --concurrent allows it" \
    pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast
is "$(running_id)" "$RUNNING" "the refused backup left nothing behind"
out=$(pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --concurrent 2>&1)
ok $? "--concurrent allows it" || diag "$out"
out=$(pgd delete --repo "$REPO" --garbage --dry-run 2>&1)
like "$out" "would leave running backup $RUNNING: claimed .* by process [0-9]+ of this host, still running" \
    "delete leaves the running backup alone"
sigkill "$SLOW"
like "$(pgd list --repo "$REPO" | grep "^$RUNNING ")" "interrupted: claimed .* which has ended: no sentinel, so garbage$" \
    "after kill -9, list shows it interrupted"
out=$(pgd delete --repo "$REPO" --garbage 2>&1)
ok $? "after kill -9, delete --garbage with the default --garbage-age" || diag "$out"
like "$out" "removed incomplete backup $RUNNING: claimed [0-9smh]+ ago by process [0-9]+ of this host, which has ended: no sentinel, so garbage" \
    "removes the killed backup at once, saying why"
ok $([ ! -e "$REPO/backups/$RUNNING" ] && echo 0 || echo 1) "and its directory is gone"

# ---- results scripts can read ----
out=$(pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --json 2>/dev/null)
ok $? "backup --json"
is "$(echo "$out" | python3 -c 'import json,sys; b=json.load(sys.stdin); print(b["ok"], b["type"], b["size"] > 0, b["compressed_size"] > 0, b["seconds"] > 0, b["id"].endswith("F"))')" \
    "True full True True True True" "one object: ok, type, sizes, seconds and the id"
B5=$(echo "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
out=$(pgd restore "$B5" --repo "$REPO" --target-dir "$T/r9" --json 2>/dev/null)
ok $? "restore --json"
is "$(echo "$out" | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["ok"], r["backup"], r["bytes"] > 0, r["archive_mode"], r["recovery"]["target"])')" \
    "True $B5 True off None" "one object: ok, the backup, the bytes, archive_mode, the recovery target"
out=$(pgd restore "$B5" --repo "$REPO" --target-dir "$T/r9" --json 2>/dev/null)
is "$?" "1" "restore --json into a directory that is not empty fails"
is "$(echo "$out" | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["ok"], r["exit_code"], "not empty" in r["error"])')" \
    "False 1 True" "and says so in its object: ok false, the exit code and the error"
rm -rf "$T/r9"
out=$(pgd delete --repo "$REPO" --retain-full 1 --dry-run --json 2>/dev/null)
ok $? "delete --json --dry-run"
is "$(echo "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["ok"], d["dry_run"], sorted({a["action"] for a in d["actions"]}), any("keep WAL" in n for n in d["notes"]))')" \
    "True True ['would keep', 'would remove'] True" "one object: the backups it would keep and remove, the WAL note"
out=$(pgd verify "$B5" --repo "$REPO" 2>&1)
ok $? "verify of the newest backup" || diag "$out"
like "$(pgd list --repo "$REPO" | grep "^$B5 ")" " good $(date -u +%Y-%m-%d) " "list shows its verdict and the day"
is "$(pgd list --repo "$REPO" --json | python3 -c "import json,sys; b=[x for x in json.load(sys.stdin) if x['id'] == '$B5'][0]; print(b['verified']['status'], b['verified']['problems'])")" \
    "good 0" "list --json: the verdict"
like "$(pgd list --repo "$REPO" | grep "^$B1 ")" " - +[0-9-]+ +ok$" "a backup never verified shows -"

# --progress into a log file: lines, no control codes; on a terminal (the control): redrawn
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --progress on >/dev/null 2>"$T/progress.log"
ok $? "backup --progress on into a file"
like "$(cat "$T/progress.log")" "pgdirect: progress: [0-9.]+ [KMG]?i?B / " "it writes progress lines"
is "$(tr -d '\n' <"$T/progress.log" | tr -cd '\r\033' | wc -c)" "0" "with no carriage return or escape code"
as_pg script -qec "$PGD backup --repo $REPO --pgdata $T/data --checkpoint fast --progress on" /dev/null \
    >"$T/progress.tty" 2>&1
is "$(tr -cd '\033' <"$T/progress.tty" | wc -c | awk '{print ($1 > 0)}')" "1" \
    "the control: on a terminal the line is redrawn with control codes"

# ---- ownership ----
as_root() { env PGHOST="$T" PGPORT="$PGPORT" PGUSER=postgres "$PGD" "$@"; }
out=$(as_root backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast 2>&1)
ok $? "a backup run as root into postgres's repository" || diag "$out"
is "$(find "$REPO" ! -user postgres | head -3)" "" "leaves nothing in it that postgres does not own"
out=$(pgd delete --repo "$REPO" --retain-full 1 2>&1)
ok $? "postgres can then delete what root wrote (--retain-full 1)" || diag "$out"
mkdir "$T/rootrepo" && chown root:root "$T/rootrepo"
out=$(as_root backup --repo "$T/rootrepo" --pgdata "$T/data" --checkpoint fast --archive-check off 2>&1)
ok $? "the control: a backup run as root into root's repository" || diag "$out"
is "$(find "$T/rootrepo/backups" -user root -type f | grep -c .)" "$(find "$T/rootrepo/backups" -type f | grep -c .)" \
    "the control: its objects are root's"
out=$(as_root restore LATEST --repo "$REPO" --target-dir "$T/r10" 2>&1)
ok $? "a restore run as root into a directory of postgres's" || diag "$out"
like "$out" "restored files given to user $(id -u postgres) \(group $(id -g postgres)\)" "says who owns the files"
is "$(find "$T/r10" ! -user postgres | head -3)" "" "every restored file is postgres's"
start_restored "$T/r10"
is "$(rows "$PORT_R")" "$(rows "$PGPORT")" "and the server starts on it"
pg_stop "$T/r10"
mkdir -p "$T/rootowned" && chown root:root "$T/rootowned"
expect_error "a restore run as root into a directory root owns" \
    "restore run as root into \"$T/rootowned/r\", which root owns, would leave a data directory owned by root" \
    as_root restore LATEST --repo "$REPO" --target-dir "$T/rootowned/r"
ok $([ ! -e "$T/rootowned/r" ] && echo 0 || echo 1) "refused before anything is written"

done_testing
