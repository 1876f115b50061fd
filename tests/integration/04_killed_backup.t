#!/usr/bin/env bash
# A backup killed with SIGKILL mid-run is shown by list only as interrupted, and the next
# backup succeeds (PostgreSQL ended the killed one with its session).
. "$(dirname "$0")/lib.sh"
setup_tmp
pg_init "$T/data"
pg_start "$T/data"
as_pg "$PG_BIN/pgbench" -i -s 10 -q >/dev/null 2>&1 || bail "pgbench -i failed"
archive_all "$PGPORT"

# --max-rate keeps the backup running long enough to be killed, however fast the machine:
# 150 MiB at 2 MiB/s is over a minute, and it is killed as soon as it writes a partition
as_pg "$PGD" backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --compression zstd \
    --max-rate 2MiB --concurrency 1 >"$T/killed.log" 2>&1 &
pid=$!
started=no
for _ in $(seq 1 1200); do
    if ls "$REPO"/backups/*/part_*.tmp.* >/dev/null 2>&1; then started=yes; break; fi
    sleep 0.1
done
is "$started" "yes" "the backup is writing its first partition"
sigkill "$pid"
grep -q "backup .* complete" "$T/killed.log"
isnt "$?" "0" "the killed backup did not complete"
ok $([ ! -e "$REPO"/backups/*.done.json ] 2>/dev/null && echo 0 || echo 1) "no sentinel was written"
listing=$(pgd list --repo "$REPO")
is "$(echo "$listing" | sed 1d | grep -c .)" "1" "list shows one line besides its header"
like "$(echo "$listing" | sed 1d)" "^[0-9]{8}T[0-9]{6}F .* interrupted: claimed .* which has ended: no sentinel, so garbage$" \
    "the killed backup, as interrupted (no complete backup)"
json=$(pgd list --repo "$REPO" --json)
is "$(echo "$json" | python3 -c 'import json,sys; print([b["status"] for b in json.load(sys.stdin)])')" "['interrupted']" \
    "list --json: the killed backup, interrupted"

# the server forgot the killed backup: a new one starts at once
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast >/dev/null 2>"$T/next.err"
ok $? "the next backup succeeds"
is "$(pgd list --repo "$REPO" --json | python3 -c 'import json,sys; print(sorted(b["status"] for b in json.load(sys.stdin)))')" "['interrupted', 'ok']" \
   "list shows exactly the completed backup, and the interrupted one"
done_testing
