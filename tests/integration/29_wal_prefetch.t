#!/usr/bin/env bash
# wal-fetch --prefetch N. A restore from S3 with PGDIRECT_PREFETCH in the server's
# environment (no change to restore_command) reaches its restore point with data equal to
# the source, its segments served from the spool. By hand, against S3 and a local
# repository: a prefetched file corrupted or truncated in the spool between two calls is
# detected, removed and fetched again, never served; a prefetched file of another database
# system is not served; the prefetcher runs 10 nice levels below replay; the end of the archive
# still exits 1, quietly, and the same segment is served once it is archived (a miss of the
# prefetcher is no verdict); a timeline switch serves the new timeline's segment, never the
# old one the prefetcher had.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_s3.sh"
setup_tmp
stop_fetchers() {
    local l p
    for l in "$T"/*/fetch-*/lock; do
        [ -f "$l" ] && p=$(cat "$l" 2>/dev/null) && [ -n "$p" ] && kill -9 "$p" 2>/dev/null
    done
    return 0
}
trap 'stop_fetchers; s3_stop; cleanup_all' EXIT
wait_until() { # wait_until SECONDS COMMAND...: poll until COMMAND succeeds; false at the deadline
    local limit=$(($1 * 10))
    shift
    for _ in $(seq 1 "$limit"); do "$@" && return 0; sleep 0.1; done
    return 1
}
out=$(pgd wal-fetch --help)
like "$out" "--prefetch N .*\[default: 0\]" "wal-fetch --help states --prefetch and its default"
like "$out" "PGDIRECT_PREFETCH" "and how to turn it on without changing restore_command"
printf '%s' "$out" | grep -q -- "--prefetch" || bail "wal-fetch has no --prefetch"
s3_start
REPO="s3://$S3_BUCKET/cluster"
pg_init "$T/data"
as_pg "$PG_BIN/pg_resetwal" --wal-segsize=1 -D "$T/data" >/dev/null 2>&1 || bail "pg_resetwal failed"
pg_start "$T/data"
as_pg "$PG_BIN/pgbench" -i -s 3 -q >/dev/null 2>&1 || bail "pgbench -i failed"
archive_all "$PGPORT"
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast >"$T/backup.log" 2>&1 ||
    bail "backup failed: $(tail -1 "$T/backup.log")"
id=$(pgd list --repo "$REPO" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])')
# at least 30 segments of WAL to replay, however slow the machine: pgbench in 5 s rounds
wal_from=$(q "SELECT pg_current_wal_lsn()")
wal_enough() { [ "$(q "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '$wal_from') >= 30 * 1024 * 1024")" = t ]; }
for _ in $(seq 1 60); do
    as_pg "$PG_BIN/pgbench" -n -c 2 -j 2 -T 5 >/dev/null 2>&1 || bail "pgbench failed"
    wal_enough && break
done
wal_enough || bail "pgbench wrote less than 30 MiB of WAL in 5 minutes"
hash_a=$(pgbench_hash "$PGPORT")
q "SELECT pg_create_restore_point('p29')" >/dev/null
as_pg "$PG_BIN/pgbench" -n -c 1 -t 300 >/dev/null 2>&1
isnt "$(pgbench_hash "$PGPORT")" "$hash_a" "the data moved on after the restore point"
archive_all "$PGPORT"

# ---- a restore with prefetch: PGDIRECT_PREFETCH in the server's environment ----
port=$(PGDIRECT_PREFETCH=8 PGDIRECT_LOG_LEVEL=debug restore_and_start "$id" "$T/restored" --target-name p29 --target-action promote)
ok $? "a restore with PGDIRECT_PREFETCH=8 reaches its restore point and promotes"
is "$(pgbench_hash "$port")" "$hash_a" "every pgbench table equals the source at the restore point"
served=$(grep -c "served from the prefetch spool" "$T/restored.log")
cmp_ok "$served" ">" "10" "segments were served from the spool ($served)"
is "$(grep -cE "is corrupt|pgdirect: error" "$T/restored.log")" "0" "no corrupt prefetched file, no error"
ok $([ -d "$T/pgdirect-spool" ] && echo 0 || echo 1) "the default spool is next to the data directory"
# replay is the critical path: the prefetcher, still waiting for requests, yields the CPU to it
# (its nice value 10 above the server's, 19 at most)
fetcher=$(cat "$T"/pgdirect-spool/fetch-*/lock 2>/dev/null | head -1)
server_nice=$(ps -o ni= -p "$(head -1 "$T/restored/postmaster.pid")" | tr -d ' ')
want_nice=$((server_nice + 10 > 19 ? 19 : server_nice + 10))
is "$(nice_values "$fetcher")" "$want_nice" "every thread of the prefetcher runs 10 nice levels below the server ($want_nice)"
pg_stop "$T/restored"

# ---- by hand, against a repository: corruption, end of archive ----
# run_fetch REPO DIR NAME DEST [options]: wal-fetch --prefetch 3 from DIR (restore_command's
# working directory); output in FETCH_OUT, exit status returned
FETCH_OUT=""
run_fetch() {
    local repo=$1 dir=$2 name=$3 dest=$4 rc
    shift 4
    FETCH_OUT=$(cd "$dir" && pgd wal-fetch --prefetch 3 --log-level debug --spool-path "$dir/spool" \
                --repo "$repo" "$@" "$name" "$dest" 2>&1)
    rc=$?
    return $rc
}
entry() { ls "$1"/spool/fetch-*/"$2".* 2>/dev/null | grep -v '\.part' | head -1; }
has_entry() { [ -n "$(entry "$1" "$2")" ]; }
made_way() {
    grep -qE "prefetcher [0-9]+ stopped: restore_command runs with other settings now \(the next wal-fetch starts a prefetcher with those\); spool emptied" \
        "$1"/spool/fetch-*/log 2>/dev/null
}
fetcher_tried() { grep -q "\"$2\" is not in the repository (yet)" "$1"/spool/fetch-*/log 2>/dev/null; }
seg_after() { # seg_after NAME K: the K-th segment after NAME (1 MiB segments)
    local n=$((16#${1:16:8} + 16#${1:8:8} * 4096 + $2))
    printf '%s%08X%08X' "${1:0:8}" $((n / 4096)) $((n % 4096))
}

# the source's segments after the backup, and a local repository holding 10 of them
L0=$(seg_after "$(q "SELECT last_archived_wal FROM pg_stat_archiver")" -12)
LOCAL="$T/local_repo"
mkdir -p "$T/copy" && chown postgres "$T/copy"
for k in $(seq 0 9); do
    s=$(seg_after "$L0" "$k")
    pgd wal-fetch --repo "$REPO" "$s" "$T/copy/$s" && pgd wal-push --repo "$LOCAL" "$T/copy/$s" ||
        bail "could not copy $s to the local repository"
done

check_repo() { # check_repo LABEL REPO LAST: LAST is the last segment REPO holds
    local label=$1 repo=$2 last=$3 D="$T/hand_$1" s1 s2 s3 e next
    mkdir -p "$D/pg_wal" && chown -R postgres "$D"
    run_fetch "$repo" "$D" "$L0" pg_wal/RECOVERYXLOG
    is "$?" "0" "$label: wal-fetch --prefetch 3 of $L0 succeeds"
    cmp -s "$D/pg_wal/RECOVERYXLOG" "$T/copy/$L0"
    ok $? "$label: and serves it byte-identical"
    s1=$(seg_after "$L0" 1) s2=$(seg_after "$L0" 2) s3=$(seg_after "$L0" 3)
    # downloaded at once: each is published when its own download ends, in any order
    ok $(wait_until 60 has_entry "$D" "$s1" && wait_until 60 has_entry "$D" "$s2" &&
        wait_until 60 has_entry "$D" "$s3" && echo 0 || echo 1) "$label: the next three segments are prefetched"

    e=$(entry "$D" "$s1")
    flip_byte "$e" 500000
    run_fetch "$repo" "$D" "$s1" pg_wal/RECOVERYXLOG
    is "$?" "0" "$label: a prefetched file corrupted in the spool: wal-fetch still succeeds"
    like "$FETCH_OUT" "warning: prefetched WAL file \"$s1\" .* is corrupt \\(CRC-32C" "$label: and says it found it corrupt"
    cmp -s "$D/pg_wal/RECOVERYXLOG" "$T/copy/$s1"
    ok $? "$label: what it serves is the repository's file, not the corrupted copy"
    ok $([ ! -e "$e" ] && echo 0 || echo 1) "$label: the corrupted copy is gone"

    e=$(entry "$D" "$s2")
    truncate -s 100000 "$e"
    run_fetch "$repo" "$D" "$s2" pg_wal/RECOVERYXLOG
    is "$?" "0" "$label: a truncated prefetched file: wal-fetch still succeeds"
    like "$FETCH_OUT" "is corrupt \\(100000 bytes where 1048576 were downloaded\\)" "$label: and says it is truncated"
    cmp -s "$D/pg_wal/RECOVERYXLOG" "$T/copy/$s2"
    ok $? "$label: and serves the repository's file"

    ok $(wait_until 60 has_entry "$D" "$s3" && echo 0 || echo 1) "$label: $s3 is prefetched"
    run_fetch "$repo" "$D" "$s3" pg_wal/RECOVERYXLOG
    is "$?" "0" "$label: an intact prefetched file is served"
    like "$FETCH_OUT" "\"$s3\" served from the prefetch spool" "$label: from the spool"
    cmp -s "$D/pg_wal/RECOVERYXLOG" "$T/copy/$s3"
    ok $? "$label: byte-identical"

    # a prefetched file of another database system (another cluster restored here) is not served
    s4=$(seg_after "$L0" 4)
    ok $(wait_until 60 has_entry "$D" "$s4" && echo 0 || echo 1) "$label: $s4 is prefetched"
    mkdir -p "$D/global" && printf '\x01\x02\x03\x04\x05\x06\x07\x08' >"$D/global/pg_control"
    run_fetch "$repo" "$D" "$s4" pg_wal/RECOVERYXLOG
    is "$?" "0" "$label: with another system in pg_control, wal-fetch still succeeds"
    like "$FETCH_OUT" "\"$s4\" .* is of database system [0-9]+, this one is 578437695752307201: removed" \
        "$label: and does not serve the prefetched file of another system"
    rm -rf "$D/global"

    # the end of the archive
    run_fetch "$repo" "$D" "$last" pg_wal/RECOVERYXLOG
    is "$?" "0" "$label: the last archived segment is served"
    next=$(seg_after "$last" 1)
    ok $(wait_until 60 fetcher_tried "$D" "$next" && echo 0 || echo 1) "$label: the prefetcher looked for $next and did not find it"
    run_fetch "$repo" "$D" "$next" pg_wal/RECOVERYXLOG --log-level info
    is "$?" "1" "$label: the segment after the last one: exit 1"
    is "$FETCH_OUT" "" "$label: quietly"
}

check_repo local "$LOCAL" "$(seg_after "$L0" 9)"
s=$(seg_after "$L0" 10)
pgd wal-fetch --repo "$REPO" "$s" "$T/copy/$s" && pgd wal-push --repo "$LOCAL" "$T/copy/$s"
run_fetch "$LOCAL" "$T/hand_local" "$s" pg_wal/RECOVERYXLOG --log-level info
is "$?" "0" "local: once it is archived, the segment the prefetcher missed is served"
cmp -s "$T/hand_local/pg_wal/RECOVERYXLOG" "$T/copy/$s"
ok $? "local: byte-identical"
# that call ran with another --log-level: the prefetcher makes way, and its log says why
ok $(wait_until 30 made_way "$T/hand_local" && echo 0 || echo 1) \
    "local: the prefetcher stops for one with the call's new settings, and says so"

s3last=$(q "SELECT last_archived_wal FROM pg_stat_archiver")
check_repo s3 "$REPO" "$s3last"
q "INSERT INTO pgbench_history SELECT 1, 1, 1, 1, now()" >/dev/null
archive_all "$PGPORT"
s=$(seg_after "$s3last" 1)
run_fetch "$REPO" "$T/hand_s3" "$s" pg_wal/RECOVERYXLOG --log-level info
is "$?" "0" "s3: once it is archived, the segment the prefetcher missed is served"
ok $(wait_until 30 made_way "$T/hand_s3" && echo 0 || echo 1) \
    "s3: the prefetcher stops for one with the call's new settings, and says so"

# ---- a timeline switch ----
TL="$T/tl_repo"
D="$T/hand_tl"
mkdir -p "$T/tl" "$D/pg_wal" && chown -R postgres "$T/tl" "$D"
for n in 21 22 23 24 25 26; do wal_segment_file "0000000100000000000000$n" "$T/tl/0000000100000000000000$n"; done
for n in 24 25 26 27; do wal_segment_file "0000000200000000000000$n" "$T/tl/0000000200000000000000$n"; done
printf '1\t0/24000000\tno recovery target specified\n' >"$T/tl/00000002.history"
chown postgres "$T/tl"/*
for f in "$T/tl"/*; do pgd wal-push --repo "$TL" "$f" || bail "could not push $f"; done
run_fetch "$TL" "$D" 000000010000000000000022 pg_wal/RECOVERYXLOG
is "$?" "0" "timeline 1: segment 22 is served"
ok $(wait_until 60 has_entry "$D" 000000010000000000000025 && echo 0 || echo 1) "timeline 1: 23 to 25 are prefetched"
run_fetch "$TL" "$D" 00000002.history pg_wal/RECOVERYHISTORY
is "$?" "0" "the history file of timeline 2 is served"
run_fetch "$TL" "$D" 000000030000000000000024 pg_wal/RECOVERYXLOG
is "$?" "1" "a timeline that does not exist: exit 1"
run_fetch "$TL" "$D" 000000020000000000000024 pg_wal/RECOVERYXLOG
is "$?" "0" "timeline 2: segment 24 is served"
cmp -s "$D/pg_wal/RECOVERYXLOG" "$T/tl/000000020000000000000024"
ok $? "it is timeline 2's segment, not the prefetched one of timeline 1"
no_tli1() { [ "$(ls "$D"/spool/fetch-*/ | grep -c '^00000001')" = 0 ]; }
ok $(wait_until 60 no_tli1 && echo 0 || echo 1) "timeline 1's prefetched files are gone"
ok $(wait_until 60 has_entry "$D" 000000020000000000000026 && echo 0 || echo 1) "timeline 2's next segments are prefetched"

# a fetcher whose request is gone stops by itself (and the sanitizers look for leaks then)
rm -f "$T"/pgdirect-spool/fetch-*/request "$T"/hand_*/spool/fetch-*/request
fetchers_gone() {
    local l p
    for l in "$T"/pgdirect-spool/fetch-*/lock "$T"/hand_*/spool/fetch-*/lock; do
        p=$(cat "$l" 2>/dev/null)
        [ -n "$p" ] && kill -0 "$p" 2>/dev/null && return 1
    done
    return 0
}
ok $(wait_until 60 fetchers_gone && echo 0 || echo 1) "the prefetchers stop once there is no request"
is "$(ls "$T"/pgdirect-spool/fetch-*/ "$T"/hand_*/spool/fetch-*/ | grep -c '^0000')" "0" \
    "and leave no WAL in the spool"
is "$(cat "$T"/pgdirect-spool/fetch-*/log* "$T"/hand_*/spool/fetch-*/log* 2>/dev/null | grep -cE 'Sanitizer|runtime error')" "0" \
    "no sanitizer report in the prefetchers' logs"
done_testing
