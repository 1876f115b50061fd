#!/usr/bin/env bash
# Retention on a repository with 5 full backups and WAL throughout.
# delete --retain-full 2 --dry-run lists exactly what delete then removes,
# and removes nothing; delete --retain-full 2 removes the 3 oldest backups
# (every object of each) and the WAL before the oldest kept backup's start
# on every timeline, keeping .history files and every segment from that
# start on; each kept backup still restores to its end and to a point
# inside its window, data equal. The newest backup is never removed; a
# lease held by another delete stops a run, an expired one is taken over.
# A backup running during delete keeps all WAL, completes and restores.
. "$(dirname "$0")/lib.sh"
setup_tmp
pg_init "$T/data"
pg_start "$T/data"
as_pg "$PG_BIN/pgbench" -i -s 1 -q >/dev/null 2>&1 || bail "pgbench -i failed"
archive_all "$PGPORT"

backup_id() { sed -n 's/.*backup \([0-9]\{8\}T[0-9]\{6\}F\) complete.*/\1/p' "$1"; }
json_field() { # json_field ID FIELD: a field of a backup in list --json
    pgd list --repo "$REPO" --json | python3 -c 'import json,sys
for b in json.load(sys.stdin):
    if b["id"] == sys.argv[1]: print(b[sys.argv[2]])' "$1" "$2"
}
wal_files() { (cd "$REPO/wal" && find . -type f ! -name '*.tmp.*' | sed 's|^\./||' | sort); }
repo_files() { (cd "$REPO" && find . -type f | sort); }

# ---- five full backups, each with a restore point at its end and one inside its window ----
declare -a ID HASH_END HASH_MID
for i in 1 2 3 4 5; do
    as_pg "$PG_BIN/pgbench" -n -t 100 >/dev/null 2>&1 || bail "pgbench failed"
    pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast >/dev/null 2>"$T/b$i.err" ||
        bail "backup $i failed: $(tail -1 "$T/b$i.err")"
    ID[$i]=$(backup_id "$T/b$i.err")
    q "SELECT pg_create_restore_point('end_$i')" >/dev/null
    HASH_END[$i]=$(pgbench_hash "$PGPORT")
    as_pg "$PG_BIN/pgbench" -n -t 100 >/dev/null 2>&1 || bail "pgbench failed"
    q "SELECT pg_create_restore_point('mid_$i')" >/dev/null
    HASH_MID[$i]=$(pgbench_hash "$PGPORT")
    archive_all "$PGPORT"
done
diag "backups: ${ID[*]}"
is "$(pgd list --repo "$REPO" --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" "5" \
    "five backups to start with"

# another timeline: its history file stays; its segments before the cutoff go, after it stay
mkdir -p "$T/tl2"
printf '1\t0/3000000\tno recovery target specified\n' >"$T/tl2/00000002.history"
wal_segment_file 000000020000000000000001 "$T/tl2/000000020000000000000001"
wal_segment_file 0000000200000000000000FF "$T/tl2/0000000200000000000000FF"
chown -R postgres "$T/tl2"
for f in 00000002.history 000000020000000000000001 0000000200000000000000FF; do
    pgd wal-push --repo "$REPO" "$T/tl2/$f" || bail "could not push $f"
done

start4=$(json_field "${ID[4]}" start_wal)
diag "oldest kept backup ${ID[4]} starts at $start4"
wal_files >"$T/wal_before"
repo_files >"$T/repo_before"
# what must go: segments (and .partial/.backup) of segment numbers below start4's
python3 - "$start4" "$T/wal_before" >"$T/wal_expected" <<'PY'
import re, sys
cut = sys.argv[1][8:24]
for line in open(sys.argv[2]):
    name = line.strip().split("/")[1]
    base = re.sub(r"\.(lz4|zst)$", "", name)
    if re.fullmatch(r"[0-9A-F]{24}(\.partial|\.[0-9A-F]{8}\.backup)?", base) and base[8:24] < cut:
        print(line.strip())
PY
cmp_ok "$(wc -l <"$T/wal_expected")" ">" 3 "there is WAL before the oldest kept backup to remove ($(wc -l <"$T/wal_expected") files)"

# ---- --dry-run: exactly what would go, nothing gone ----
pgd delete --repo "$REPO" --retain-full 2 --dry-run >"$T/dry.out" 2>"$T/dry.err"
is "$?" "0" "delete --retain-full 2 --dry-run succeeds"
is "$(sed -n 's/^would remove backup \([0-9T]*F\):.*/\1/p' "$T/dry.out" | tr '\n' ' ')" \
    "${ID[3]} ${ID[2]} ${ID[1]} " "dry run: the three oldest backups would go, newest first"
is "$(sed -n 's/^would keep backup \([0-9T]*F\):.*/\1/p' "$T/dry.out" | tr '\n' ' ')" \
    "${ID[4]} ${ID[5]} " "dry run: the two newest would stay"
sed -n 's|^would remove WAL file wal/||p' "$T/dry.out" | sort >"$T/wal_dry"
is "$(diff "$T/wal_expected" "$T/wal_dry" && echo same)" "same" "dry run: exactly the WAL before $start4 would go"
is "$(repo_files | diff "$T/repo_before" - && echo same)" "same" "dry run: nothing was removed"

# ---- the real run ----
pgd delete --repo "$REPO" --retain-full 2 >"$T/del.out" 2>"$T/del.err"
rc=$?
is "$rc" "0" "delete --retain-full 2 succeeds"
[ "$rc" = 0 ] || sed 's/^/#   /' "$T/del.err"
is "$(sed -n 's/^removed backup \([0-9T]*F\):.*/\1/p' "$T/del.out" | tr '\n' ' ')" \
    "${ID[3]} ${ID[2]} ${ID[1]} " "the three oldest backups were removed"
is "$(pgd list --repo "$REPO" --json | python3 -c 'import json,sys; print(" ".join(b["id"] for b in json.load(sys.stdin)))')" \
    "${ID[4]} ${ID[5]}" "list shows the two newest"
for i in 1 2 3; do
    ok $([ ! -e "$REPO/backups/${ID[$i]}" ] && [ ! -e "$REPO/backups/${ID[$i]}.done.json" ] && echo 0 || echo 1) \
        "every object of removed backup ${ID[$i]} is gone"
done
for i in 4 5; do
    is "$(cd "$REPO/backups/${ID[$i]}" && ls | grep -c .)" "$(grep -c "^./backups/${ID[$i]}/" "$T/repo_before")" \
        "kept backup ${ID[$i]} has all its objects"
done
wal_files >"$T/wal_after"
is "$(comm -23 "$T/wal_before" "$T/wal_after" | diff "$T/wal_expected" - && echo same)" "same" \
    "exactly the WAL the dry run listed was removed"
like "$(cat "$T/del.out")" "removed WAL of timeline 00000001: [0-9]+ files before segment $start4" "the run says so"
ok $(grep -q '^00000002/00000002.history' "$T/wal_after" && echo 0 || echo 1) "the timeline history file stays"
ok $(grep -q '^00000002/000000020000000000000001' "$T/wal_after" && echo 1 || echo 0) "another timeline's WAL before the cutoff goes"
ok $(grep -q '^00000002/0000000200000000000000FF' "$T/wal_after" && echo 0 || echo 1) "another timeline's WAL after the cutoff stays"
# every segment of timeline 1 from the oldest kept backup's start to the newest is there
python3 - "$start4" "$T/wal_after" >"$T/gaps" <<'PY'
import re, sys
start = int(sys.argv[1][8:24], 16)
segs = sorted(int(m.group(1), 16) for m in (re.match(r"00000001/00000001([0-9A-F]{16})(\.lz4|\.zst)?$", l.strip()) for l in open(sys.argv[2])) if m)
print(" ".join("%X" % s for s in range(start, segs[-1] + 1) if s not in set(segs)) if segs and segs[0] == start else "first segment missing")
PY
is "$(cat "$T/gaps")" "" "no gap in timeline 1's WAL from $start4 on"
# the made-up timeline 2 forks where no restore below could follow it: it has done its part
rm -rf "$REPO/wal/00000002"

# ---- every kept backup restores to its end and to a point inside its window ----
for i in 4 5; do
    for point in end mid; do
        port=$(restore_and_start "${ID[$i]}" "$T/r_${i}_$point" --target-name "${point}_$i" --target-action promote)
        ok $? "backup ${ID[$i]} restores to ${point}_$i"
        if [ "$point" = end ]; then want=${HASH_END[$i]}; else want=${HASH_MID[$i]}; fi
        [ -n "$port" ] && is "$(pgbench_hash "$port")" "$want" "backup ${ID[$i]} at ${point}_$i: tables equal the source then"
        [ -n "$port" ] && pg_stop "$T/r_${i}_$point"
        rm -rf "$T/r_${i}_$point"
    done
done

# ---- again: nothing more goes ----
pgd delete --repo "$REPO" --retain-full 2 >"$T/again.out" 2>&1
is "$?" "0" "a second delete --retain-full 2 succeeds"
is "$(grep -c '^removed' "$T/again.out")" "0" "and removes nothing"

# ---- the newest backup is never removed; unknown ids and bad usage are refused ----
expect_error "--backup of the newest" "backup ${ID[5]} is the newest usable backup" \
    pgd delete --repo "$REPO" --backup "${ID[5]}"
expect_error "--backup of an unknown id" "backup \"20000101T000000F\" not found" \
    pgd delete --repo "$REPO" --backup 20000101T000000F
pgd delete --repo "$REPO" >/dev/null 2>"$T/usage.err"
is "$?" "2" "delete with nothing to do is a usage error (exit 2)"
like "$(cat "$T/usage.err")" "nothing to do: give --retain-full" "and says what to give"
pgd delete --repo "$REPO" --retain-since "2027-01-15 08:00" >/dev/null 2>"$T/usage.err"
is "$?" "2" "a --retain-since without a zone is refused (exit 2)"
like "$(cat "$T/usage.err")" "with a zone" "and says why"

# ---- --retain-since: the newest backup finished by then, and what follows ----
stop5=$(json_field "${ID[5]}" stop_time)
since=$(date -u -d "@$((stop5 + 1))" '+%Y-%m-%d %H:%M:%S+00')
pgd delete --repo "$REPO" --retain-since "$since" --dry-run >"$T/since.out" 2>&1
is "$(sed -n 's/^would remove backup \([0-9T]*F\):.*/\1/p' "$T/since.out" | tr '\n' ' ')" "${ID[4]} " \
    "--retain-since just after the newest backup finished: only the older one would go"
since=$(date -u -d "@$((stop5 - 1))" '+%Y-%m-%d %H:%M:%S+00')
pgd delete --repo "$REPO" --retain-since "$since" --dry-run >"$T/since.out" 2>&1
is "$(grep -c '^would remove backup' "$T/since.out")" "0" "a second before it finished, both are needed"

# ---- the lease: another delete's stops this one; an expired one is taken over ----
mkdir -p "$REPO/lock"
cat >"$REPO/lock/delete.0000000100.json" <<JSON
{"lock": "delete", "generation": 100, "host": "elsewhere", "pid": 4242, "token": "ab",
 "expires": $(($(date +%s) + 300)), "released": false}
JSON
chown -R postgres "$REPO/lock"
expect_error "delete while another holds the lease" "is locked by another delete run \(host elsewhere, pid 4242\) until" \
    pgd delete --repo "$REPO" --retain-full 2
pgd delete --repo "$REPO" --retain-full 2 --dry-run >/dev/null 2>&1
is "$?" "0" "a dry run needs no lease"
sed -i "s/\"expires\": [0-9]*/\"expires\": $(($(date +%s) - 1))/" "$REPO/lock/delete.0000000100.json"
pgd delete --repo "$REPO" --retain-full 2 >/dev/null 2>"$T/lease.err"
is "$?" "0" "an expired lease is taken over"
ok $([ -e "$REPO/lock/delete.0000000101.json" ] && [ ! -e "$REPO/lock/delete.0000000100.json" ] && echo 0 || echo 1) \
    "by the next generation, the old one removed"
like "$(cat "$REPO/lock/delete.0000000101.json")" '"released": true' "and released at the end"

# ---- a backup running during delete ----
as_pg "$PG_BIN/pgbench" -n -t 100 >/dev/null 2>&1
# --max-rate keeps it running while delete runs: 20 MiB at 1 MiB/s
as_pg "$PGD" backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --compression none \
    --max-rate 1MiB --concurrency 1 >/dev/null 2>"$T/b6.err" &
b6=$!
started=no
for _ in $(seq 1 1200); do
    if ls "$REPO"/backups/*/part_*.tmp.* >/dev/null 2>&1; then started=yes; break; fi
    sleep 0.1
done
is "$started" "yes" "a sixth backup is writing"
wal_files >"$T/wal_b6"
pgd delete --repo "$REPO" --retain-full 1 >"$T/run.out" 2>"$T/run.err"
is "$?" "0" "delete --retain-full 1 while it runs succeeds"
like "$(cat "$T/run.out")" "keep all WAL: backup [0-9T]+F may still be running \(no sentinel yet\)" \
    "and keeps all WAL, naming the running backup"
is "$(sed -n 's/^removed backup \([0-9T]*F\):.*/\1/p' "$T/run.out" | tr '\n' ' ')" "${ID[4]} " \
    "it removes the older complete backup"
is "$(wal_files | comm -23 "$T/wal_b6" -)" "" "no WAL was removed"
wait $b6
is "$?" "0" "the backup that ran during delete completes"
ID6=$(backup_id "$T/b6.err")
hash_final=$(pgbench_hash "$PGPORT")
archive_all "$PGPORT"
pgd delete --repo "$REPO" --retain-full 1 >"$T/after.out" 2>&1
is "$(sed -n 's/^removed backup \([0-9T]*F\):.*/\1/p' "$T/after.out" | tr '\n' ' ')" "${ID[5]} " \
    "once it is done, the next delete keeps only it"
like "$(cat "$T/after.out")" "removed WAL of timeline 00000001" "and removes the WAL before it"
port=$(restore_and_start "$ID6" "$T/r6")
ok $? "the backup that ran during delete restores"
[ -n "$port" ] && is "$(pgbench_hash "$port")" "$hash_final" "its data equals the source"
pg_stop "$T/r6"
done_testing
