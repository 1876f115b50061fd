#!/usr/bin/env bash
# A backup is polite by default, without privilege (it runs as postgres), seen from outside while
# it runs, thread by thread: its reads in the idle I/O class; its reading threads (--cpu-class
# auto) in the idle CPU class (SCHED_IDLE: they run on CPU time the database leaves idle, a
# waking query preempts them), with reserve ones at normal priority that wait, when the other
# processes keep the CPUs busy as the backup begins; reserve ones reading at normal priority in
# their place when the others leave room (a test cannot count on an idle host:
# PGDIRECT_TEST_CPU_LEFT stands for the measurement there), each moved to the idle class when it
# finds itself waiting for a CPU; the thread that talks to the server stays in the normal class.
# --cpu-class idle
# keeps them all idle, --cpu-class normal and --io-class best-effort turn each off; --nice N
# raises every thread's nice value. What was measured to choose this is in bench/polite.sh's
# results (README, "Politeness").
# --deadline: reserve reading threads at normal priority wait (in the normal class) and join
# when the reading would end too late; an unreachable deadline releases them all at once, the
# backup finishes, and says it could not be met; a reachable one needs none. --max-rate auto, the rate
# pacer this replaced, is refused with a word on why.
. "$(dirname "$0")/lib.sh"
unset PGDIRECT_CPU_CLASS # the default, idle, is what this file tests (lib.sh sets normal)
setup_tmp
pg_init "$T/data"
pg_start "$T/data"
# six files of 4 MB: the threads at normal priority read several before the host is made busy
for i in 1 2 3 4 5 6; do
    q "CREATE TABLE t$i (id int, pad text) WITH (autovacuum_enabled = off)"
    q "INSERT INTO t$i SELECT g, repeat('t', 800) FROM generate_series(1, 5000) g"
done
q "CHECKPOINT"
# each backup into a repository of its own, so none waits for WAL archived elsewhere

# polite_backup LOG REPO OPTIONS...: a slow backup (--max-rate) in the background; BG its
# runuser, PID the pgdirect process once its reading threads run
polite_backup() {
    local log=$1 repo=$2
    shift 2
    pgd backup --repo "$repo" --pgdata "$T/data" --checkpoint fast --max-rate 8MiB --archive-check=off "$@" >"$log" 2>&1 &
    BG=$!
    PID=""
    for _ in $(seq 1 1200); do
        PID=$(pgrep -f -- "^[^ ]*pgdirect backup --repo $repo " | head -1)
        [ -n "$PID" ] && grep -q "backup started at WAL location" "$log" && [ "$(ls /proc/"$PID"/task 2>/dev/null | wc -l)" -gt 1 ] &&
            sleep 0.2 && return 0 # (the threads enter their class as their first step)
        kill -0 "$BG" 2>/dev/null || break
        sleep 0.1
    done
    bail "the backup into $repo ended or never started its reading threads: $(tail -3 "$log")"
}

# policies PID: "main=POLICY others=POLICY[,POLICY]": the scheduling policy (/proc .../stat field
# 41: 0 normal, 3 batch, 5 idle) of the main thread and of the others
policy() { sed 's/.*) //' "$1" | awk '{print $39}'; } # field 41 counted from after the command
policies() {
    local pid=$1 main others
    main=$(policy "/proc/$pid/task/$pid/stat")
    others=$(for t in /proc/"$pid"/task/*; do [ "${t##*/}" = "$pid" ] || policy "$t/stat"; done | sort -u | paste -sd, -)
    echo "main=$main others=$others"
}
# the I/O class of every thread of PID, one line per distinct class
io_classes() { for t in /proc/"$1"/task/*; do ionice -p "${t##*/}" 2>&1 | cut -d: -f1; done | sort -u; }

# hogs_start / hogs_stop: three processes spinning for every CPU at normal priority (a busy host)
HOGS=()
hogs_start() { for _ in $(seq $(($(nproc) * 3))); do (while :; do :; done) & HOGS+=($!); done; }
hogs_stop() { kill "${HOGS[@]}" 2>/dev/null; wait "${HOGS[@]}" 2>/dev/null; HOGS=(); }
trap 'hogs_stop; cleanup_all' EXIT # lib.sh's own trap, and the hogs

# a busy host as the backup begins: the reading threads in the idle class, the reserve waiting
hogs_start
polite_backup "$T/default.log" "$T/repo_default"
is "$(policies "$PID")" "main=0 others=0,5" \
    "by default the reading threads run in the idle CPU class (SCHED_IDLE), the main thread and the waiting reserve in the normal one"
is "$(io_classes "$PID")" "idle" "and every thread reads in the idle I/O class"
is "$(nice_values "$PID")" "0" "at the normal nice value"
like "$(cat "$T/default.log")" "politeness: reading threads in the idle CPU class \(SCHED_IDLE.*\), the other processes having left 0\.[0-2] of $(nproc) vCPUs idle in the backup's first [0-9.]+ s, reads in the idle I/O class \(no privilege needed\)" \
    "and the log says which politeness is in force, and why"
hogs_stop
wait "$BG"
ok $? "the backup with default politeness succeeds"
is "$(grep -c warning "$T/default.log")" "0" "and warns about nothing (no privilege needed)"

# room on the host as the backup begins: reading threads at normal priority, until the host is busy
# (a deadline far off, which counts them as its own and adds none, does not keep them there)
PGDIRECT_TEST_CPU_LEFT=64 polite_backup "$T/room.log" "$T/repo_room" --max-rate 5MiB --deadline 1h # long enough for a few windows
is "$(policies "$PID")" "main=0 others=0" "with room on the host the reading threads run at normal priority"
like "$(cat "$T/room.log")" "politeness: ([0-9]+) reading threads? at normal priority and 0 in the idle CPU class \(SCHED_IDLE\), the other processes having left 64\.0 of $(nproc) vCPUs idle in the backup's first [0-9.]+ s" \
    "one for each vCPU (as --max-memory allows), and the log says so"
hogs_start
for _ in $(seq 1 100); do [ "$(policies "$PID")" = "main=0 others=5" ] && break; sleep 0.1; done
is "$(policies "$PID")" "main=0 others=5" "once the host is busy they wait for the CPU, and move to the idle CPU class"
kill -0 "$BG" 2>/dev/null
ok $? "(while the backup still reads)"
hogs_stop
wait "$BG"
ok $? "and the backup succeeds"
like "$(cat "$T/room.log")" "politeness: [0-9]+ reading threads? waited for a CPU more than 50 % of the time (it|they) wanted one over 2 s \(other processes want the CPUs\): (it is|they are) in the idle CPU class now, 0 of [0-9]+ at normal priority" \
    "and the log says when and why"
like "$(cat "$T/room.log")" "politeness: the reading threads at normal priority waited for a CPU [0-9]+-[0-9]+ % of the time they wanted one \([0-9]+ windows of 2 s; over 50 %, a thread moves to the idle class\)" \
    "and how much they waited"
like "$(cat "$T/room.log")" "--deadline 1h00m: read in time, in .*, with the [0-9]+ reading threads? at normal priority that the room on the CPUs allowed, and no more" \
    "and the deadline needed no more than the room's threads"
polite_backup "$T/idle.log" "$T/repo_idle" --cpu-class idle
is "$(policies "$PID")" "main=0 others=5" "--cpu-class idle: the reading threads in the idle class whatever the host"
wait "$BG"
ok $? "and the backup succeeds"

polite_backup "$T/off.log" "$T/repo_off" --cpu-class normal --io-class best-effort
is "$(policies "$PID")" "main=0 others=0" "--cpu-class normal: every thread in the normal CPU class"
like "$(io_classes "$PID")" "^(best-effort|none)$" "--io-class best-effort: every thread in the normal I/O class"
wait "$BG"
ok $? "the backup with politeness off succeeds"
is "$(grep -c "politeness:" "$T/off.log")" "0" "and logs no politeness"

polite_backup "$T/nice.log" "$T/repo_nice" --nice 7
is "$(nice_values "$PID")" "7" "--nice 7: every thread of the backup runs at nice 7"
wait "$BG"
ok $? "the backup with --nice 7 succeeds"
like "$(cat "$T/nice.log")" "running with the nice value raised by 7" "and logs it"

# ---- --deadline ----
polite_backup "$T/reach.log" "$T/repo_reach" --deadline 1h --cpu-class idle
is "$(policies "$PID")" "main=0 others=0,5" "--deadline: idle-class readers, and reserve ones at normal priority waiting"
wait "$BG"
ok $? "a backup with a reachable deadline succeeds"
like "$(cat "$T/reach.log")" "--deadline 1h00m: read on idle CPU time alone" "and needed no reserve thread"
# 45 MB at 8 MiB/s from every thread together takes about 6 s: 3 s cannot be met
pgd backup --repo "$T/repo_late" --pgdata "$T/data" --checkpoint fast --max-rate 8MiB --archive-check=off \
    --deadline 3s --cpu-class idle >"$T/late.log" 2>&1
ok $? "a backup with a deadline it cannot meet still succeeds"
reserve=$(grep -o '[0-9]* more reading threads at normal priority wait' "$T/late.log" | cut -d' ' -f1)
is "$(grep -c "more reading threads at normal priority from now on" "$T/late.log")" "1" \
    "far behind, the reserve threads were released at once"
like "$(cat "$T/late.log")" "$reserve of $reserve more reading threads at normal priority from now on" "all of them"
like "$(cat "$T/late.log")" "warning: --deadline 3(\\.0)?s could not be met: even with every reading thread at normal priority .* it went on at full speed" \
    "and it says the deadline could not be met"
like "$(cat "$T/late.log")" "warning: backup [0-9T]+F took [0-9.]+s, past --deadline 3.0s by [0-9.]+s" "and by how much"
# the room took every reserve thread from the start: the deadline has none left to add
PGDIRECT_TEST_CPU_LEFT=64 pgd backup --repo "$T/repo_late_room" --pgdata "$T/data" --checkpoint fast \
    --max-rate 8MiB --archive-check=off --deadline 3s >"$T/late_room.log" 2>&1
ok $? "a backup whose room took every reserve thread, with a deadline it cannot meet, succeeds"
like "$(cat "$T/late_room.log")" "--deadline: 0 more reading threads at normal priority wait" \
    "the deadline finds none waiting"
like "$(cat "$T/late_room.log")" "warning: --deadline 3(\\.0)?s could not be met: even with every reading thread at normal priority" \
    "and says it could not be met"

expect_error "--max-rate auto" "invalid value \"auto\" for option \"--max-rate\": the pacing it named is gone" \
    pgd backup --repo "$T/repo_bad" --pgdata "$T/data" --max-rate auto
pgd backup --repo "$T/repo_bad" --pgdata "$T/data" --max-rate auto >/dev/null 2>&1
is "$?" "2" "a usage error (exit 2)"
expect_error "--cpu-class fast" "invalid value \"fast\" for option \"--cpu-class\"" \
    pgd backup --repo "$T/repo_bad" --pgdata "$T/data" --cpu-class fast
expect_error "--deadline soon" "invalid value \"soon\" for option \"--deadline\"" \
    pgd backup --repo "$T/repo_bad" --pgdata "$T/data" --deadline soon

done_testing
