#!/usr/bin/env bash
# delete reads the repository again just before each removal: a delta that claimed a parent
# after delete first read the repository keeps that parent.
#
# strace holds delete still right after it has read the repository and planned (it delays the
# first line delete prints, which comes before any removal: --retain-full 1 of F1, F2 plans
# to remove F1); in that window a delta on F1 starts. When delete goes on, it must keep F1,
# say why, and keep all WAL; the delta completes and verifies. The same hold with nothing
# starting in it removes what it planned to (F0 before), so the hold itself changes nothing.
. "$(dirname "$0")/lib.sh"
setup_tmp
command -v strace >/dev/null || bail "strace is missing: run scripts/setup.sh"
pg_init "$T/data"
pg_start "$T/data"
as_pg "$PG_BIN/pgbench" -i -s 2 -q >/dev/null 2>&1 || bail "pgbench -i failed"
archive_all "$PGPORT"

HOLD_S=60 # long enough for the delta, which runs in the hold, on a slow machine
newest() { ls "$REPO/backups" | sed -n 's/\.done\.json$//p' | sort | tail -1; }
backup() { pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --progress off "$@"; }
# the delete runs the release build: AddressSanitizer's leak check cannot run under ptrace
[ -n "${PGDIRECT_RELEASE_BIN:-}" ] || bail "PGDIRECT_RELEASE_BIN must point at a build without sanitizers"
cp "$PGDIRECT_RELEASE_BIN" "$T/bin/pgdirect-release" && chmod 755 "$T/bin/pgdirect-release"
# held_delete LOG SECONDS: delete --retain-full 1, its first write to standard output (after
# the lock file's, the 2nd write) delayed by SECONDS; in the background, PID in DPID
held_delete() {
    as_pg strace -f -o /dev/null -e trace=write -e inject=write:delay_enter=$(($2 * 1000000)):when=2 \
        "$T/bin/pgdirect-release" delete --repo "$REPO" --retain-full 1 >"$1" 2>&1 &
    DPID=$!
}
# held: the delete is stopped entering write(1, ...), its first line: it has read the
# repository and planned, and waits in the hold (syscall 1 is write on x86-64)
held() {
    local p
    for p in $(pgrep -f "pgdirect-release delete"); do
        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = pgdirect-releas ] || continue
        [ "$(cut -d' ' -f1,2 "/proc/$p/syscall" 2>/dev/null)" = "1 0x1" ] && return 0
    done
    return 1
}
exists() { [ -e "$1" ] && echo yes || echo no; }

backup >/dev/null 2>"$T/f0.err" || bail "backup F0 failed: $(tail -1 "$T/f0.err")"
F0=$(newest)
backup >/dev/null 2>"$T/f1.err" || bail "backup F1 failed: $(tail -1 "$T/f1.err")"
F1=$(newest)

# the control: held, nothing starts meanwhile, F0 goes as planned
held_delete "$T/delete0.out" 3
wait "$DPID"
ok $? "a held delete without a concurrent backup exits 0"
like "$(cat "$T/delete0.out")" "removed backup $F0" "and removes $F0 as planned"
is "$(exists "$REPO/backups/$F0.done.json")" "no" "$F0 is gone"

backup >/dev/null 2>"$T/f2.err" || bail "backup F2 failed: $(tail -1 "$T/f2.err")"
F2=$(newest)
isnt "$F2" "$F1" "two full backups ($F1, $F2): --retain-full 1 plans to remove $F1"
held_delete "$T/delete.out" "$HOLD_S"
for _ in $(seq 1 300); do held && break; sleep 0.1; done
ok $(held && echo 0 || echo 1) "delete has planned and is held before its first line"
backup --delta --delta-from "$F1" >/dev/null 2>"$T/d.err"
ok $? "a delta on $F1, started while delete is held, succeeds"
D=$(newest)
like "$D" "D$" "it is a delta ($D)"
kill -0 "$DPID" 2>/dev/null
ok $? "and finished while delete was still held"
wait "$DPID"
ok $? "delete exits 0"
out=$(cat "$T/delete.out")
like "$out" "kept backup $F1: .*$D" "delete keeps $F1 and names the delta that needs it"
like "$out" "keep all WAL: backup $F1 is kept after all \\(the repository changed while delete ran\\)" "and keeps all WAL, saying why"
is "$(printf '%s\n' "$out" | grep -c "removed backup")" "0" "and removes no backup"
is "$(exists "$REPO/backups/$F1.done.json")" "yes" "$F1 is still in the repository"
like "$(pgd list --repo "$REPO" 2>&1 | grep "^$D")" " ok$" "list shows the delta ok"
pgd verify --repo "$REPO" "$D" >"$T/verify.out" 2>&1
ok $? "and verify of the delta exits 0" || diag "$(tail -3 "$T/verify.out")"

done_testing
