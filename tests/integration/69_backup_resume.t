#!/usr/bin/env bash
# backup --resume (issue 38): an interrupted full backup is finished by the next one.
#
# A cluster whose files are idle (pgbench tables and a second table, checkpointed), backed up
# with small partitions and --max-rate so that it can be killed (SIGKILL) at three points:
# after its first partition is stored, in the middle, and before its sentinel (archive_command
# held back, so the backup waits for its WAL with everything else written). Each time
# backup --resume finishes it as a new backup with its own id, reading measurably less from
# the data directory than a fresh full backup (the sentinel's "size", bytes read), saying how
# many partitions it reused, and the result restores with data equal to the source. A leftover
# with one byte flipped in a partition: that partition is not reused (named, with why), the
# rest is, and the result restores equal. Without --resume a leftover is garbage: the next
# backup reads everything. With --delta, --resume is refused.
. "$(dirname "$0")/lib.sh"
setup_tmp
pg_init "$T/data"
pg_start "$T/data"
as_pg "$PG_BIN/pgbench" -i -s 1 -q >/dev/null 2>&1 || bail "pgbench -i failed"
q "CREATE TABLE t AS SELECT g, md5(g::text) AS v FROM generate_series(1, 50000) g"
src_hash="$(pgbench_hash "$PGPORT") $(q "SELECT md5(string_agg(v, ',' ORDER BY g)) FROM t")"
q "CHECKPOINT" # the hint bits the hashes set, written now, not by a backup's checkpoint
archive_all "$PGPORT"
sleep 3 # every file idle for longer than resume's quiet time before it is read

OPTS=(--repo "$REPO" --pgdata "$T/data" --checkpoint fast --partition-size 2MiB --compression lz4)
size_of() { # size_of ID: bytes the backup read (its sentinel's size)
    pgd list --repo "$REPO" --json | python3 -c 'import json,sys
print([b["size"] for b in json.load(sys.stdin) if b["id"] == sys.argv[1]][0])' "$1"
}
new_id() { sed -n 's/.*backup \([0-9]\{8\}T[0-9]\{6\}F\) complete.*/\1/p' "$1"; }
# killed_backup NAME TEST: a throttled backup, SIGKILLed once TEST (a shell condition on $d,
# the new backup's directory) holds; echoes its id
killed_backup() {
    local name=$1 cond=$2 pid before d=""
    before=$(ls "$REPO/backups")
    next_second
    as_pg "$PGD" backup "${OPTS[@]}" --max-rate 10MiB --concurrency 1 >"$T/$name.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 1200); do
        [ -z "$d" ] && d=$(comm -13 <(echo "$before") <(ls "$REPO/backups") | grep -E 'F$' | head -1)
        [ -n "$d" ] && eval "$cond" && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    [ -n "$d" ] && eval "$cond" || { sed 's/^/# /' "$T/$name.log" >&2; bail "$name: the backup never got there"; }
    sigkill "$pid"
    grep -q "backup .* complete" "$T/$name.log" && bail "$name: the backup completed before the kill"
    echo "$d"
}
records() { ls "$REPO"/backups/"$1"/ 2>/dev/null | grep -c '\.files\.json$'; }
# restores_equal ID: restore, start, compare with the source
restores_equal() {
    local port
    port=$(restore_and_start "$1" "$T/r_$1") || return 1
    [ "$(pgbench_hash "$port") $(psql_at "$port" "SELECT md5(string_agg(v, ',' ORDER BY g)) FROM t")" = "$src_hash" ]
    local rc=$?
    pg_stop "$T/r_$1"
    return $rc
}

# ---- a fresh full backup: what resume must beat ----
pgd backup "${OPTS[@]}" >"$T/fresh.log" 2>&1 || bail "fresh backup failed: $(tail -2 "$T/fresh.log")"
fresh=$(new_id "$T/fresh.log")
fresh_size=$(size_of "$fresh")
fresh_parts=$(records "$fresh")
diag "a fresh full backup reads $fresh_size bytes into $fresh_parts partitions"
cmp_ok "$fresh_parts" ">=" 6 "the fresh backup has several partitions, each with its record"

resume_after() { # resume_after LEFTOVER NAME: --resume; checks; echoes nothing
    local left=$1 name=$2 id size reused rc
    pgd backup "${OPTS[@]}" --resume >"$T/$name.log" 2>&1
    rc=$?
    ok $rc "$name: backup --resume completes"
    [ $rc -eq 0 ] || sed 's/^/# /' "$T/$name.log"
    id=$(new_id "$T/$name.log")
    isnt "$id" "$left" "$name: as a backup of its own id"
    reused=$(sed -n 's/.*--resume: \([0-9]*\) of [0-9]* partitions of interrupted backup '"$left"' reused.*/\1/p' "$T/$name.log")
    cmp_ok "${reused:-0}" ">=" 1 "$name: it reused partitions of $left ($reused)"
    size=$(size_of "$id")
    cmp_ok "$size" "<" "$fresh_size" "$name: it read less than a fresh full backup ($size of $fresh_size bytes)"
    restores_equal "$id"
    ok $? "$name: the resumed backup restores equal to the source"
    LAST_SIZE=$size
}

# ---- killed after its first partition ----
k1=$(killed_backup k1 '[ "$(records "$d")" -ge 1 ]')
diag "k1 ($k1): killed with $(records "$k1") partitions stored"
resume_after "$k1" "after the first partition"

# ---- killed in the middle ----
half=$((fresh_parts / 2))
k2=$(killed_backup k2 '[ "$(records "$d")" -ge '"$half"' ]')
diag "k2 ($k2): killed with $(records "$k2") partitions stored"
resume_after "$k2" "in the middle"
mid_size=$LAST_SIZE

# ---- killed before the sentinel: everything written, the WAL held back ----
reload_and_wait archive_command "false"
k3=$(killed_backup k3 '[ -e "$REPO/backups/$d/manifest.json" ]')
reload_and_wait archive_command "$PGD wal-push --repo $REPO %p"
archive_all "$PGPORT"
diag "k3 ($k3): killed with its manifest written, $(records "$k3") partitions"
ok "$([ ! -e "$REPO/backups/$k3.done.json" ]; echo $?)" "k3 has no sentinel"
resume_after "$k3" "before the sentinel"
cmp_ok "$LAST_SIZE" "<" "$mid_size" "resuming from a complete leftover reads less than from a half one"

# ---- a leftover with one byte flipped ----
k4=$(killed_backup k4 '[ "$(records "$d")" -ge '"$half"' ]')
part=$(ls "$REPO/backups/$k4" | grep -E '^part_[0-9]+\.tar\.lz4$' | sort | head -1)
flip_byte "$REPO/backups/$k4/$part" $(($(stat -c %s "$REPO/backups/$k4/$part") / 2))
pgd backup "${OPTS[@]}" --resume >"$T/flip.log" 2>&1
ok $? "with a flipped byte: backup --resume completes"
like "$(cat "$T/flip.log")" "partition \"$part\" of interrupted backup $k4 is not reused: it does not read back as recorded" \
    "the damaged partition is named and not reused"
id=$(new_id "$T/flip.log")
restores_equal "$id"
ok $? "with a flipped byte: the resumed backup restores equal to the source"

# ---- without --resume a leftover is garbage ----
pgd backup "${OPTS[@]}" >"$T/plain.log" 2>&1
ok $? "a backup without --resume after a kill"
unlike_resume=$(grep -c -- "--resume" "$T/plain.log")
is "$unlike_resume" "0" "it says nothing of resuming"
plain_size=$(size_of "$(new_id "$T/plain.log")")
cmp_ok "$plain_size" ">=" "$((fresh_size * 99 / 100))" "and reads as much as a fresh full backup ($plain_size)"

expect_error "--resume with --delta" "--resume resumes a full backup" \
    pgd backup "${OPTS[@]}" --resume --delta
done_testing
