#!/usr/bin/env bash
# Direct I/O as fast as the device, politely: both I/O engines restore
# byte-exact (pg_verifybackup), `tune` explains itself, the cache-neutral
# mode leaves the page cache as it found it, --max-rate and --io-class idle
# and --cpu-weight take effect, and peak RSS stays under --max-memory with
# 20,000 small files and a 2 GiB file.
. "$(dirname "$0")/lib.sh"
setup_tmp
require_pagecache
[ -n "${PGDIRECT_RELEASE_BIN:-}" ] || bail "PGDIRECT_RELEASE_BIN must point at a non-sanitizer build"
cp "$PGDIRECT_RELEASE_BIN" "$T/bin/pgdirect-release" && chmod 755 "$T/bin/pgdirect-release"
pg_init "$T/data"
pg_start "$T/data"
q "CREATE TABLE t (id int, pad text) WITH (autovacuum_enabled = off)"
q "INSERT INTO t SELECT g, repeat('t', 300) FROM generate_series(1, 150000) g"
q "CREATE TABLE hot (id int, pad text) WITH (autovacuum_enabled = off)"
q "INSERT INTO hot SELECT g, repeat('h', 300) FROM generate_series(1, 30000) g"
q "VACUUM (FREEZE)"
q "CHECKPOINT"
archive_all "$PGPORT"

# tune
out=$(pgd tune --pgdata "$T/data")
ok $? "tune runs"
like "$out" "data directory $T/data" "tune names the data directory"
like "$out" "decision: +--block-count [0-9]+ \([0-9]+ KiB reads\), concurrency [0-9]+" "tune states its decision"
like "$out" "because: " "and why"
json=$(pgd tune --pgdata "$T/data" --json)
is "$(echo "$json" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["places"][0]["decision"]["block_count"] % 256, d["cpus"] > 0, d["io_engine"] in ("io_uring","threads"))')" \
   "0 True True" "tune --json: block count a multiple of 256 per drive, CPUs and engine reported"
like "$out" "politeness: one reading thread at normal priority for each vCPU the other processes left idle as the backup began, the others in the idle CPU class \(SCHED_IDLE\)" \
    "tune says which politeness a backup takes"
like "$out" "now: +the other processes leave [0-9]+\.[0-9] of $(nproc) vCPUs idle \(over 0\.5 s\): [0-9]+ reading threads would read at normal priority, [0-9]+ in the idle class" \
    "and what it would choose on this host now"
is "$(echo "$json" | python3 -c 'import json,sys; d=json.load(sys.stdin); p=d["politeness"]; print(p["cpu_class"], p["io_class"], 0 <= p["vcpus_left_now"] <= d["cpus"], 0 <= p["normal_threads_now"] <= max(d["cpus"], d["workers"]))')" \
   "auto idle True True" "tune --json: the politeness, and the vCPUs left now"
# the disk's hardware queues, as sysfs lists them (the fewest of an array's drives)
read -r queues disk stacked < <(echo "$json" | python3 -c 'import json,sys; d=json.load(sys.stdin)["places"][0]["device"]; print(d["queues"], d["disk"], "->" in d["stack"])')
if [ "$stacked" = False ]; then
    is "$queues" "$(ls "/sys/block/$disk/mq" 2>/dev/null | wc -l)" "tune --json: the queues of $disk, as /sys/block/$disk/mq lists them"
else
    cmp_ok "$queues" ">=" 0 "tune --json: the queues of the stack over $disk"
fi
if [ "$queues" -gt 0 ]; then
    like "$out" "completions: +$queues hardware queues? for $(nproc) vCPUs?: " "tune: what the queues mean for the queries"
else
    like "$out" "completions: +hardware queues unknown" "tune: the queues unknown"
fi

# both engines, restored and verified by PostgreSQL's own tool
for engine in threads io_uring; do
    out=$(pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --io-engine $engine \
          --concurrency 6 --block-count 16 --compression zstd 2>&1)
    ok $? "$engine: backup with 6 reads in flight of 64 KiB succeeds"
    like "$out" "6 in flight .* $engine engine" "$engine: the log names the engine"
    if [ "$queues" -gt 0 ] && [ "$queues" -lt "$(nproc)" ]; then
        like "$out" "the data directory's disk $disk has $queues hardware queues? for $(nproc) vCPUs: every read completes with an interrupt on" \
            "$engine: the log says the reads' interrupts land on fewer vCPUs than there are"
    else
        is "$(printf '%s' "$out" | grep -c "hardware queue")" 0 "$engine: the log says nothing of queues that serve every vCPU"
    fi
    id=$(ls "$REPO/backups" | grep -E 'F$' | tail -1)
    pgd restore "$id" --repo "$REPO" --target-dir "$T/r_$engine" >/dev/null 2>&1
    ok $? "$engine: restore succeeds"
    as_pg "$PG_BIN/pg_verifybackup" -n "$T/r_$engine" >/dev/null 2>&1
    ok $? "$engine: pg_verifybackup accepts the restored files"
    rm -rf "$T/r_$engine"
done
out=$(pgd backup --repo "$REPO" --pgdata "$T/data" --io-engine aio 2>&1)
like "$out" 'invalid value "aio" for option "--io-engine"' "an unknown engine is refused"

# cache-neutral reads (what pgdirect falls back to where O_DIRECT is refused),
# forced here on ext4, where "not cached" can be observed (tmpfs pages are the
# file itself, and tmpfs accepts O_DIRECT since Linux 6.6)
cold="$T/data/$(q "SELECT pg_relation_filepath('t')")"
hot="$T/data/$(q "SELECT pg_relation_filepath('hot')")"
# (hot: >= 99, not 100, and up to three tries: the machines this runs on page out page
# cache that stays idle, with a DAMON kdamond, which scripts/run_tests.py pauses for the
# suite but not for a test run by hand. A backup that evicted what was cached would do it
# every time; the kernel's evictions of idle pages do not repeat.)
for try in 1 2 3; do
    sync; "$PC" evict "$cold"; "$PC" load "$hot"
    out=$(pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --direct-io=cache-neutral 2>&1)
    rc=$?
    cold_pct=$("$PC" percent "$cold")
    hot_pct=$("$PC" percent "$hot")
    [ "$rc" = 0 ] && awk -v p="$hot_pct" 'BEGIN { exit !(p >= 99) }' && break
    diag "try $try: backup exit $rc, hot $hot_pct % cached after"
done
is "$rc" "0" "cache-neutral backup succeeds"
like "$out" "read mode cache-neutral" "the summary says cache-neutral"
cmp_ok "$cold_pct" "<=" 1 "cache-neutral: a file not cached before is not cached after ($cold_pct %)"
cmp_ok "$hot_pct" ">=" 99 "cache-neutral: a file fully cached before is still cached ($hot_pct %, try $try)"

# --max-rate: the read rate stays under the cap (a lower bound on time, not a timing race)
out=$(pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --max-rate 8MiB 2>&1)
ok $? "backup with --max-rate 8MiB succeeds"
rate=$(echo "$out" | sed -n 's/.*files read at \([0-9.]*\) MB\/s.*/\1/p')
cmp_ok "$rate" "<=" 9.5 "files were read at no more than 8 MiB/s ($rate MB/s)"

# --io-class idle and --cpu-weight, seen from outside while a slow backup runs
# as root, who may create cgroups (the server's files are readable to root too)
env PGHOST="$T" PGPORT="$PGPORT" PGUSER=postgres "$PGD" backup --repo "$T/repo_root" \
    --pgdata "$T/data" --checkpoint fast --max-rate 4MiB --archive-check=off \
    --io-class idle --cpu-weight 50 >"$T/polite.log" 2>&1 &
pid=$!
# both take effect just after "backup started" is logged; the cgroup's line comes last
wait_for_line "$T/polite.log" "running in cgroup|running at the normal CPU weight" "$pid"
like "$(ionice -p $pid)" "^idle" "--io-class idle: the backup reads in the idle class"
like "$(cat /proc/$pid/cgroup)" "pgdirect-$pid" "--cpu-weight: the backup runs in its own cgroup"
shares=$(cat /sys/fs/cgroup/cpu/pgdirect-$pid/cpu.shares 2>/dev/null || cat /sys/fs/cgroup/*/pgdirect-$pid/cpu.weight 2>/dev/null)
like "$shares" "^(512|50)$" "--cpu-weight 50: cpu.shares 512 (v1) or cpu.weight 50 (v2)"
wait $pid
ok $? "the polite backup succeeds"
ok $([ ! -e /sys/fs/cgroup/cpu/pgdirect-$pid ] && echo 0 || echo 1) "its cgroup is removed at the end"
out=$(pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --cpu-weight 50 2>&1)
ok $? "as a user who may not create cgroups, --cpu-weight only warns"
like "$out" "warning: could not create a cgroup .*running at the normal CPU weight" "and says why"

# memory cap: 20,000 small files and a 2 GiB (sparse) file in the data directory
mkdir -p "$T/data/pgdirect_many"
(cd "$T/data/pgdirect_many" && seq -f "f%05g" 1 20000 | xargs touch && for f in f0000*; do echo x >"$f"; done)
truncate -s 2G "$T/data/pgdirect_big"
chown -R postgres:postgres "$T/data/pgdirect_many" "$T/data/pgdirect_big"
# (--cpu-class auto with room for every reserve thread: the most reading threads at once)
out=$(as_pg env PGDIRECT_TEST_CPU_LEFT=64 "$T/bin/pgdirect-release" backup --repo "$REPO" --pgdata "$T/data" \
      --checkpoint fast --max-memory 48MiB --concurrency 64 --block-count 4096 --cpu-class auto 2>&1)
ok $? "backup of 20,000 files and a 2 GiB file under --max-memory 48MiB succeeds"
like "$out" "politeness: [0-9]+ reading threads? at normal priority" "(with the reserve threads reading)"
like "$out" "max-memory 48 MiB: " "the cap shrank the plan and says so"
rss=$(echo "$out" | sed -n 's/.*peak RSS \([0-9]*\) MiB.*/\1/p')
cmp_ok "$rss" "<" 48 "peak RSS stays under the cap ($rss MiB)"
files=$(echo "$out" | sed -n 's/.*, \([0-9]*\) files,.*/\1/p')
cmp_ok "$files" ">" 20000 "all the small files are in the backup ($files)"
done_testing
