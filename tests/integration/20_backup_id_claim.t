#!/usr/bin/env bash
# Backups started at the same instant never share an id: each run claims its
# id create-exclusively (backups/<id>/claim.json) before writing anything
# under it and, when that second is taken, uses the next one at once. Every
# run succeeds, every backup restores to the data it was taken from, and no
# run touches another's objects. (--concurrent: a second backup of one cluster into one
# repository is refused by default, test 53.)
. "$(dirname "$0")/lib.sh"
setup_tmp
pg_init "$T/data"
pg_start "$T/data"
as_pg "$PG_BIN/pgbench" -i -s 2 -q >/dev/null 2>&1 || bail "pgbench -i failed"
archive_all "$PGPORT"
src_hash=$(pgbench_hash "$PGPORT")

# ---- several runs released together, just after a second starts ----
N=3
for i in $(seq 1 $N); do
    (
        for _ in $(seq 1 6000); do [ -e "$T/go" ] && break; sleep 0.01; done
        pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --concurrent >"$T/run$i.out" 2>"$T/run$i.err"
        echo $? >"$T/run$i.rc"
    ) &
done
for _ in $(seq 1 300); do # the barrier: at most 0.1 s into a second
    [ "$(date +%N | sed 's/^0*//;s/^$/0/')" -lt 100000000 ] && break
    sleep 0.01
done
touch "$T/go"
wait

ids=""
for i in $(seq 1 $N); do
    is "$(cat "$T/run$i.rc")" "0" "concurrent backup $i succeeds"
    [ "$(cat "$T/run$i.rc")" = 0 ] || sed 's/^/#   /' "$T/run$i.err"
    id=$(sed -n 's/.*backup \([0-9]\{8\}T[0-9]\{6\}F\) complete.*/\1/p' "$T/run$i.err")
    ids="$ids $id"
done
is "$(echo $ids | tr ' ' '\n' | sort -u | grep -c .)" "$N" "the $N runs got $N distinct ids ($ids )"
listed=$(pgd list --repo "$REPO" --json | python3 -c 'import json,sys; print(" ".join(sorted(b["id"] for b in json.load(sys.stdin))))')
is "$listed" "$(echo $ids | tr ' ' '\n' | sort | tr '\n' ' ' | sed 's/ $//')" "list shows exactly those backups"
for id in $ids; do
    is "$(ls "$REPO/backups/$id" | grep -c '^claim.json$')" "1" "backup $id holds its claim"
done

# each backup restores to the source's data (its partitions are its own)
n=0
for id in $ids; do
    n=$((n + 1))
    port=$(restore_and_start "$id" "$T/restore$n")
    ok $? "backup $id restores and recovers"
    [ -n "$port" ] && is "$(pgbench_hash "$port")" "$src_hash" "backup $id: restored data equals the source"
    [ -n "$port" ] && pg_stop "$T/restore$n"
done

# ---- a second that is taken is skipped at once, and the taker's objects are left alone ----
# another run's claims for the next 20 seconds, one of them with a partition
now=$(date -u +%s)
for k in $(seq -1 20); do
    foreign=$(date -u -d "@$((now + k))" +%Y%m%dT%H%M%SF)
    mkdir -p "$REPO/backups/$foreign"
    echo "{\"id\": \"$foreign\"}" >"$REPO/backups/$foreign/claim.json"
done
echo theirs >"$REPO/backups/$foreign/part_0001.tar.lz4"
last=$foreign
chown -R postgres:postgres "$REPO/backups"
out=$(pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast 2>&1)
ok $? "a backup whose seconds are all claimed by another run succeeds"
id=$(printf '%s\n' "$out" | sed -n 's/.*backup \([0-9]\{8\}T[0-9]\{6\}F\) complete.*/\1/p')
cmp_ok "${id%F}" ">" "${last%F}" "it takes the first free second ($id after $last)"
is "$(cat "$REPO/backups/$last/part_0001.tar.lz4")" "theirs" "the other run's partition is untouched"
is "$(cat "$REPO/backups/$last/claim.json")" "{\"id\": \"$last\"}" "and so is its claim"
ok $([ ! -e "$REPO/backups/$last.done.json" ] && echo 0 || echo 1) "no sentinel appeared for a claimed id"
done_testing
