#!/usr/bin/env bash
# pgdirect check proves the set-up end to end, one line per check: it passes
# on a correct set-up (text and --json), and fails, exit 1, naming the cause,
# when archive_command stores WAL in another repository (the settings all
# look right: only the WAL switch it makes shows it), when archive_command
# fails (pg_stat_archiver's last failure named), when full_page_writes is
# off, when the repository is not writable, and when archive_mode is off.
. "$(dirname "$0")/lib.sh"
setup_tmp
pg_init "$T/data"
pg_start "$T/data"
archive_all "$PGPORT"

# check_run OUT ERR ARGS...: run check as postgres, exit status in CHECK_RC
check_run() {
    local out=$1 err=$2
    shift 2
    pgd check --repo "$REPO" "$@" >"$out" 2>"$err"
    CHECK_RC=$?
}
line() { grep -E "^[a-zA-Z]+ +$1 " "$T/out" | head -1; }

# switch_wal: a WAL record first, so that the switch completes a segment (a switch right after
# another one does nothing and archives nothing); echoes the segment's name
switch_wal() {
    q "SELECT txid_current()" >/dev/null
    q "SELECT pg_walfile_name(pg_switch_wal())"
}


# ---- a correct set-up ----
check_run "$T/out" "$T/err"
is "$CHECK_RC" "0" "check passes on a correct set-up"
[ "$CHECK_RC" = 0 ] || sed 's/^/#   /' "$T/out" "$T/err"
like "$(line server)" "^ok +server +PostgreSQL 15" "server: connected, version named"
like "$(line wal_level)" "^ok +wal_level +replica$" "wal_level ok"
like "$(line full_page_writes)" "^ok +full_page_writes +on$" "full_page_writes ok"
like "$(line archive_mode)" "^ok +archive_mode +on$" "archive_mode ok"
like "$(line repository)" "^ok +repository +\"$REPO\" is writable and readable" "repository written, read back, cleaned"
like "$(line "free space")" "^(ok|warning) +free space +.* free on .*the cluster is .*rule: a warning below 1x the cluster size" \
    "free space compared with the cluster, the rule stated"
like "$(line archive_command)" "^ok +archive_command +WAL file \"[0-9A-F]{24}\" reached repository \"$REPO\"" \
    "archive_command: a switched segment reached this repository"
is "$(grep -c . "$T/err")" "0" "nothing on stderr"
ok $([ -z "$(ls -A "$REPO/check" 2>/dev/null)" ] && echo 0 || echo 1) "the probe object is gone"

check_run "$T/json" "$T/err" --json
is "$CHECK_RC" "0" "check --json passes"
is "$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["ok"], " ".join(c["check"] + "=" + c["status"] for c in d["checks"] if c["check"] != "free space"))' "$T/json")" \
    "True server=ok wal_level=ok full_page_writes=ok archive_mode=ok repository=ok cluster=skipped timelines=ok archive backlog=ok archive_command=ok" \
    "--json: ok and every check's status"

# with a backup in the repository, check says whose it is
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast >/dev/null 2>&1 || bail "backup failed"
check_run "$T/out" "$T/err"
like "$(line cluster)" "^ok +cluster +the newest backup, [0-9T]+F, is of this cluster \($(q "SELECT system_identifier FROM pg_control_system()")\)$" \
    "cluster: the repository's newest backup is of this cluster"

# ---- full_page_writes off ----
reload_and_wait full_page_writes off
check_run "$T/out" "$T/err"
is "$CHECK_RC" "1" "full_page_writes off: check fails"
like "$(line full_page_writes)" "^FAILED +full_page_writes +off: pages torn" "the line says why"
like "$(cat "$T/err")" "^pgdirect: error: 1 of [0-9]+ checks failed: full_page_writes$" "stderr names the failed check"
reload_and_wait full_page_writes on

# ---- archive_command pushing into another repository ----
OTHER="$T/other_repo"
reload_and_wait archive_command "$PGD wal-push --repo $OTHER %p"
# the archiver took the new command when a switched segment lands in the other repository
seg=$(switch_wal)
for _ in $(seq 1 300); do ls "$OTHER/wal/${seg:0:8}/$seg"* >/dev/null 2>&1 && break; sleep 0.2; done
check_run "$T/out" "$T/err"
is "$CHECK_RC" "1" "archive_command into another repository: check fails"
like "$(line archive_command)" "^FAILED +archive_command +the server archived WAL file \"[0-9A-F]{24}\" \(pg_stat_archiver\) but it is not in repository \"$REPO\": archive_command = '.*--repo $OTHER %p' stores WAL somewhere else" \
    "the line says the WAL went somewhere else, with the command"
like "$(line archive_mode)" "^ok " "while archive_mode itself looks right"
like "$(cat "$T/err")" "checks failed: archive_command$" "stderr names the failed check"
# positive control: against the repository archive_command does use, the same check passes
pgd check --repo "$OTHER" >"$T/out" 2>"$T/err"
is "$?" "0" "check against the repository archive_command really uses passes"

# ---- archive_command failing ----
reload_and_wait archive_command "false"
before=$(q "SELECT failed_count FROM pg_stat_archiver")
switch_wal >/dev/null
for _ in $(seq 1 300); do
    [ "$(q "SELECT failed_count > $before FROM pg_stat_archiver")" = t ] && break
    sleep 0.2
done
check_run "$T/out" "$T/err" --archive-timeout 3
is "$CHECK_RC" "1" "failing archive_command: check fails"
like "$(line archive_command)" "^FAILED +archive_command +archive_command failed while WAL file \"[0-9A-F]{24}\" waited to reach repository \"$REPO\"; pg_stat_archiver: the last failure was WAL file \"[0-9A-F]{24}\" at .*archive_command = 'false'" \
    "the line says archive_command failed (at once, not after the timeout), pg_stat_archiver's last failure and the command"
reload_and_wait archive_command "$PGD wal-push --repo $REPO %p"
archive_all "$PGPORT"

# ---- a repository that is not writable ----
# as a repository set up by root often is: readable by everyone, writable by root only
chown -R root:root "$REPO"
chmod -R u=rwX,go=rX "$REPO"
check_run "$T/out" "$T/err" --archive-timeout 2 # archive_command cannot store anything either
is "$CHECK_RC" "1" "unwritable repository: check fails"
like "$(line repository)" "^FAILED +repository +repository \"$REPO\": could not write probe object \"check/probe\..*Permission denied" \
    "the line names the probe object and the cause"
chmod -R u+w "$REPO"
chown -R postgres:postgres "$REPO"

# ---- archive_mode off ----
q "ALTER SYSTEM SET archive_mode = off" >/dev/null
pg_stop "$T/data"
pg_start "$T/data"
check_run "$T/out" "$T/err"
is "$CHECK_RC" "1" "archive_mode off: check fails"
like "$(line archive_mode)" "^FAILED +archive_mode +off: WAL is not archived" "the archive_mode line says why"
like "$(line archive_command)" "^FAILED +archive_command +archive_mode is off" "and the archive check says why it cannot pass"
like "$(cat "$T/err")" "^pgdirect: error: 2 of [0-9]+ checks failed: archive_mode, archive_command$" "stderr names both"

# ---- no server ----
pg_stop "$T/data"
check_run "$T/out" "$T/err"
is "$CHECK_RC" "1" "no server: check fails"
like "$(line server)" "^FAILED +server +could not connect to the server" "the server line says why"
like "$(line wal_level)" "^skipped +wal_level +no connection" "the settings are skipped, not passed"
like "$(line repository)" "^ok +repository" "the repository is still checked"
done_testing
