#!/usr/bin/env bash
# A backup is polite by default: its reads in the idle I/O class (measured:
# query p99 during a backup, see README), seen from outside while it runs,
# in every thread, with no privilege (the backup runs as postgres);
# `--io-class best-effort` turns it off; `--nice N` raises the nice value of
# every thread. Its read rate is paced by default (--max-rate auto): beside
# processes that keep every CPU busy it slows down and says so; --max-rate 0
# and a fixed rate turn the pacing off.
. "$(dirname "$0")/lib.sh"
unset PGDIRECT_MAX_RATE # the default, auto, is what this file tests (lib.sh sets 0)
setup_tmp
pg_init "$T/data"
pg_start "$T/data"
q "CREATE TABLE t (id int, pad text) WITH (autovacuum_enabled = off)"
q "INSERT INTO t SELECT g, repeat('t', 300) FROM generate_series(1, 60000) g"
q "CHECKPOINT"
# each backup into a repository of its own, so none waits for WAL archived elsewhere

# polite_backup LOG REPO OPTIONS...: a slow backup (--max-rate) in the background; BG its
# runuser, PID the pgdirect process once its reader threads run (politeness is applied before
# they start, so from then on what the process shows is what it chose)
polite_backup() {
    local log=$1 repo=$2
    shift 2
    pgd backup --repo "$repo" --pgdata "$T/data" --checkpoint fast --max-rate 2MiB --archive-check=off "$@" >"$log" 2>&1 &
    BG=$!
    PID=""
    for _ in $(seq 1 1200); do
        PID=$(pgrep -f -- "^[^ ]*pgdirect backup --repo $repo " | head -1)
        [ -n "$PID" ] && [ "$(ls /proc/"$PID"/task 2>/dev/null | wc -l)" -gt 1 ] && return 0
        kill -0 "$BG" 2>/dev/null || break
        sleep 0.1
    done
    bail "the backup into $repo ended or never started its reader threads: $(tail -3 "$log")"
}

# the I/O class of every thread of PID, one line per distinct class
io_classes() { for t in /proc/"$1"/task/*; do ionice -p "${t##*/}" 2>&1 | cut -d: -f1; done | sort -u; }

polite_backup "$T/default.log" "$T/repo_default"
threads=$(ls /proc/"$PID"/task | wc -l)
cmp_ok "$threads" ">" 1 "the default backup runs reader threads ($threads threads)"
is "$(io_classes "$PID")" "idle" "by default every thread of the backup reads in the idle I/O class"
is "$(nice_values "$PID")" "0" "and runs at the normal nice value"
wait "$BG"
ok $? "the backup with default politeness succeeds"
like "$(cat "$T/default.log")" "reading in the idle I/O class" "and logs its I/O class"
is "$(grep -c warning "$T/default.log")" "0" "and warns about nothing (no privilege needed)"

polite_backup "$T/off.log" "$T/repo_off" --io-class best-effort
like "$(io_classes "$PID")" "^(best-effort|none)$" "--io-class best-effort: every thread in the normal I/O class"
wait "$BG"
ok $? "the backup with politeness off succeeds"
is "$(grep -E "idle I/O class|nice value raised" "$T/off.log")" "" "and logs no politeness"

polite_backup "$T/nice.log" "$T/repo_nice" --nice 7
is "$(nice_values "$PID")" "7" "--nice 7: every thread of the backup runs at nice 7"
wait "$BG"
ok $? "the backup with --nice 7 succeeds"
like "$(cat "$T/nice.log")" "running with the nice value raised by 7" "and logs it"

# ---- --max-rate auto, the default: beside one spinning process per CPU ----
# ~50 MB more to read, so that pacing (first look after 0.1 s, then every 0.25 s) holds most of
# the read back rather than a few intervals of it: at the 16 MiB/s floor about 3 s
q "CREATE TABLE pace_filler AS SELECT g, repeat('p', 800) AS pad FROM generate_series(1, 60000) g"
q "CHECKPOINT"
HOGS=()
stop_hogs() { [ ${#HOGS[@]} -eq 0 ] || kill "${HOGS[@]}" 2>/dev/null; wait "${HOGS[@]}" 2>/dev/null; HOGS=(); }
trap 'stop_hogs; cleanup_all' EXIT
for _ in $(seq 1 "$(nproc)"); do
    sh -c 'while :; do :; done' &
    HOGS+=($!)
done
# each hog has run (10 clock ticks of user time) before the backup starts
for h in "${HOGS[@]}"; do
    for _ in $(seq 1 600); do
        [ "$(awk '{print $14}' "/proc/$h/stat" 2>/dev/null || echo 0)" -ge 10 ] && break
        sleep 0.05
    done
done
pgd backup --repo "$T/repo_paced" --pgdata "$T/data" --checkpoint fast --archive-check=off >"$T/paced.log" 2>&1
ok $? "beside busy CPUs, the default backup succeeds"
like "$(cat "$T/paced.log")" "read slowed for [0-9.]+ s of [0-9.]+ s, down to [0-9.]+ MiB/s, while other processes kept the CPUs busy \(up to [0-9.]+ CPUs\); --max-rate auto, the default: --max-rate 0 reads at full speed" \
    "and says it slowed its reads, how far, why, and how to stop it"
# (that it slowed, not for how long: the files beside this one in the suite take CPU time too,
# so how much of the read was paced is a matter of timing)
slowed=$(sed -nE 's/.*read slowed for ([0-9.]+) s of ([0-9.]+) s.*/\1/p' "$T/paced.log")
cmp_ok "${slowed:-0}" ">" 0 "it was slowed ($slowed s)"
pgd backup --repo "$T/repo_full" --pgdata "$T/data" --checkpoint fast --archive-check=off --max-rate 0 >"$T/full.log" 2>&1
ok $? "--max-rate 0 beside busy CPUs succeeds"
is "$(grep -cE "read slowed|read at full speed" "$T/full.log")" "0" "and paces nothing"
pgd backup --repo "$T/repo_fixed" --pgdata "$T/data" --checkpoint fast --archive-check=off --max-rate 64MiB >"$T/fixed.log" 2>&1
ok $? "--max-rate 64MiB beside busy CPUs succeeds"
is "$(grep -cE "read slowed|read at full speed" "$T/fixed.log")" "0" "and paces nothing either"
stop_hogs
expect_error "--max-rate fast" "invalid value \"fast\" for option \"--max-rate\"" \
    pgd backup --repo "$T/repo_bad" --pgdata "$T/data" --max-rate fast
pgd backup --repo "$T/repo_bad" --pgdata "$T/data" --max-rate fast >/dev/null 2>&1
is "$?" "2" "a --max-rate that is neither auto nor a size is a usage error (exit 2)"
pgd backup --repo "$T/repo_quiet" --pgdata "$T/data" --checkpoint fast --archive-check=off >"$T/quiet.log" 2>&1
ok $? "after the busy processes stop, the default backup succeeds"
like "$(cat "$T/quiet.log")" "read (at full speed \(--max-rate auto: other processes used at most [0-9.]+ CPUs\)|slowed for)" \
    "and reports its pace"

done_testing
