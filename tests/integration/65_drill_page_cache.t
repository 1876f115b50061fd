#!/usr/bin/env bash
# A restore, and a restore drill, leave the page cache as they found it (issue 37):
# - restore drops what it wrote once it is on disk: after a restore, the restored cluster's
#   files are (next to) not cached, and the production cluster's warmed table still is. The
#   positive control: the same bytes copied with cp (buffered writes, nothing dropped) stay
#   cached, so the measurement can see written pages;
# - a drill run as root puts its scratch server, amcheck and the checksum pass in a memory
#   cgroup of --drill-memory and empties it when it ends: amcheck read every page of the
#   restored cluster through the server, and after the drill (--keep) those pages are not
#   cached; the warmed table still is. The positive control: the same drill run as postgres,
#   which cannot make a cgroup (it says so in one line and goes on), leaves what amcheck read
#   cached;
# - a drill killed with SIGKILL leaves its memory cgroup (the control), and the next drill
#   removes it and says so.
. "$(dirname "$0")/lib.sh"
setup_tmp
require_pagecache
pg_init "$T/data"
pg_start "$T/data"
q "CREATE TABLE hot WITH (autovacuum_enabled = off) AS SELECT g AS id, repeat('h', 200) AS pad FROM generate_series(1, 50000) g"
q "CREATE TABLE big WITH (autovacuum_enabled = off) AS SELECT g AS id, repeat('b', 200) AS pad FROM generate_series(1, 250000) g"
q "VACUUM (FREEZE) hot"
q "VACUUM (FREEZE) big"
q "CHECKPOINT"
archive_all "$PGPORT"
hot="$T/data/$(q "SELECT pg_relation_filepath('hot')")"
BIG=$(q "SELECT pg_relation_filepath('big')")
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast >/dev/null 2>"$T/backup.err" ||
    bail "backup failed: $(tail -1 "$T/backup.err")"
diag "big: $BIG ($(stat -c %s "$T/data/$BIG") bytes), hot: $(stat -c %s "$hot") bytes"

warm() { sync; "$PC" load "$hot"; }
cached_pct() { "$PC" total $(find "$1" -type f) | awk '{print $3}'; }

# ---- restore ----
warm
is "$("$PC" percent "$hot")" "100.00" "before: the warmed table is fully cached"
t0=$(date +%s.%N)
pgd restore LATEST --repo "$REPO" --target-dir "$T/r1" >/dev/null 2>"$T/r1.err"
is "$?" "0" "restore succeeds"
diag "restore: $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }') s"
pct=$("$PC" percent "$T/r1/$BIG")
cmp_ok "$pct" "<=" 5 "restore: the largest restored file is not cached ($pct %)"
pct=$(cached_pct "$T/r1")
cmp_ok "$pct" "<=" 5 "restore: the restored cluster as a whole is not cached ($pct %)"
pct=$("$PC" percent "$hot")
cmp_ok "$pct" ">=" 97 "restore: the warmed table is still cached ($pct %)"
cp "$T/r1/$BIG" "$T/copy"
pct=$("$PC" percent "$T/copy")
cmp_ok "$pct" ">=" 90 "control: the same bytes written by cp stay cached ($pct %)"
rm -rf "$T/r1" "$T/copy"

# ---- a drill killed with SIGKILL leaves its cgroup: the next one removes it ----
PGPORT=$PGPORT "$PGD" drill --repo "$REPO" --pg-bin "$PG_BIN" --scratch-dir "$T/k" 2>"$T/k.err" >/dev/null &
KILLED=$!
for _ in $(seq 1 300); do
    grep -q 'drill runs in memory cgroup' "$T/k.err" && break
    sleep 0.1
done
STALE=$(sed -n 's/.*drill runs in memory cgroup "\([^"]*\)".*/\1/p' "$T/k.err")
kill -9 "$KILLED"
wait "$KILLED" 2>/dev/null
for _ in $(seq 1 100); do # its scratch server follows it out
    [ -n "$STALE" ] && [ ! -s "$STALE/cgroup.procs" ] && break
    sleep 0.1
done
ok $([ -n "$STALE" ] && [ -d "$STALE" ] && echo 0 || echo 1) \
    "control: a drill killed with SIGKILL leaves its memory cgroup (${STALE:-none})"
rm -rf "$T/k"

# ---- a drill, as root: in a memory cgroup ----
warm
out=$(PGPORT=$PGPORT "$PGD" drill --repo "$REPO" --pg-bin "$PG_BIN" --keep --scratch-dir "$T/d1" \
    --drill-memory 96MiB 2>"$T/d1.err")
is "$?" "0" "a drill run as root succeeds"
like "$(cat "$T/d1.err")" "drill runs in memory cgroup \"[^\"]+\", bounded to 96" "in a memory cgroup of --drill-memory"
ok $([ -n "$STALE" ] && [ ! -e "$STALE" ] && echo 0 || echo 1) "the next drill removed the killed one's cgroup"
like "$(cat "$T/d1.err")" "info: removed 1 memory cgroups of drills that ended without removing them" "and said so"
is "$(stat -c %U "$T/d1/data")" "postgres" "its scratch cluster belongs to postgres, who ran the server"
pages=$(sed -n 's/.*amcheck checked [0-9]* relations (\([0-9]*\) pages).*/\1/p' <<<"$out")
cmp_ok "${pages:-0}" ">" "$(($(stat -c %s "$T/data/$BIG") / 8192 - 1))" "amcheck read every page of big ($pages pages in all)"
pct=$("$PC" percent "$T/d1/data/$BIG")
cmp_ok "$pct" "<=" 5 "drill: what amcheck read is not cached after the drill ($pct %)"
pct=$("$PC" percent "$hot")
cmp_ok "$pct" ">=" 97 "drill: the warmed table is still cached ($pct %)"
rm -rf "$T/d1"

# ---- the control: as postgres, no cgroup ----
warm
out=$(pgd drill --repo "$REPO" --pg-bin "$PG_BIN" --keep --scratch-dir "$T/d2" 2>"$T/d2.err")
is "$?" "0" "a drill run as postgres succeeds"
like "$(cat "$T/d2.err")" "no memory cgroup for the drill \(.*\): going on without a bound" \
    "without a cgroup, in one line"
pct=$("$PC" percent "$T/d2/data/$BIG")
cmp_ok "$pct" ">=" 50 "control: without the cgroup what amcheck read stays cached ($pct %)"
done_testing
