#!/usr/bin/env bash
# A restore is on disk before it says "complete", and a failed restore leaves
# what it was given as it was.
#
# Durability cannot be observed without a crash, so this checks what can be:
# under strace every restored regular file and directory, backup_label,
# backup_manifest, postgresql.auto.conf, recovery.signal, the tablespace
# destination, the pg_tblspc directory holding the link and every parent the
# restore created is fsynced (fd -> path); a failed fsync (an LD_PRELOAD shim,
# tests/tools/pgd_failsync.c) fails the restore naming the file and removes
# what was written.
#
# A restore interrupted by SIGTERM cleans up like any failure; one killed
# outright leaves no pg_control, so PostgreSQL refuses to start it; a second
# restore into a directory in use is refused.
#
# A restore that fails midway (a corrupted partition) into a --target-dir that
# is a symlink keeps the symlink and empties the directory it points to; an
# existing empty target or tablespace directory keeps its owner and mode. The
# restores here run as root: that is how the test proves no owner changes.
. "$(dirname "$0")/lib.sh"
setup_tmp
require_pagecache
command -v strace >/dev/null || bail "strace is not installed (apt-get install strace)"
FAILSYNC=${PGD_FAILSYNC:-$(dirname "$PGD_PAGECACHE")/pgd-failsync.so}
[ -f "$FAILSYNC" ] || bail "no fsync-failing shim at $FAILSYNC (built by meson as pgd-failsync.so)"
cp "$FAILSYNC" "$T/bin/pgd-failsync.so"

pg_init "$T/data"
pg_start "$T/data"
mkdir -p "$T/ts1" && chown postgres:postgres "$T/ts1"
q "CREATE TABLESPACE ts1 LOCATION '$T/ts1'"
q "CREATE TABLE spc_t TABLESPACE ts1 AS SELECT g AS id, md5(g::text) AS v FROM generate_series(1, 20000) g"
as_pg "$PG_BIN/pgbench" -i -s 2 -q >/dev/null 2>&1 || bail "pgbench -i failed"
archive_all "$PGPORT"
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --compression none \
    --partition-size 4MiB >/dev/null 2>&1
ok $? "a backup with a tablespace, in several partitions"
id=$(ls "$REPO/backups" | grep -E 'F$' | tail -1)
cmp_ok "$(ls "$REPO/backups/$id"/part_* | wc -l)" ">" 2 "the backup has several partitions"

# ---- every file and directory written is fsynced ----
dir="$T/new/parent/data"
ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0" strace -f -y -qq -e trace=fsync,fdatasync -o "$T/strace.out" \
    "$PGD" restore "$id" --repo "$REPO" --target-dir "$dir" \
    --tablespace-map "$T/ts1=$T/ts_new/ts1" >"$T/restore.log" 2>&1
ok $? "restore under strace succeeds"
# LeakSanitizer cannot run under ptrace; "fsync(7</path>) = 0" or, interrupted by another
# thread, "fsync(7</path> <unfinished ...>"
sed -n 's/^[0-9]* *f\(data\)\{0,1\}sync([0-9]*<\([^>]*\)>.*/\2/p' "$T/strace.out" | sort -u >"$T/synced"
find "$dir" "$T/ts_new/ts1" \( -type f -o -type d \) | sort >"$T/written"
cmp_ok "$(wc -l <"$T/written")" ">" 900 "the restore wrote $(wc -l <"$T/written") files and directories"
is "$(comm -13 "$T/synced" "$T/written" | head -5 | tr '\n' ' ')" "" \
    "every restored file and directory was fsynced"
missing=""
for p in "$dir/backup_label" "$dir/backup_manifest" "$dir/postgresql.auto.conf" \
    "$dir/recovery.signal" "$dir/pg_tblspc" "$dir/global/pg_control" "$T/ts_new/ts1" \
    "$dir" "$T/new/parent" "$T/new" "$T/ts_new" "$T"; do
    grep -qxF "$p" "$T/synced" || missing="$missing $p"
done
is "$missing" "" "the files restore writes itself, the link's directory and the parents it created were fsynced"
like "$(tail -1 "$T/restore.log")" "restore of backup $id complete" "and only then is the restore complete"
"$PG_BIN/pg_verifybackup" -n "$dir" >/dev/null 2>&1
ok $? "pg_verifybackup accepts the restore"

# ---- a failed fsync fails the restore, naming the file, and cleans up ----
# positive control: the shim does fail fsync for the file it is given
echo x >"$T/probe_file"
LD_PRELOAD="$T/bin/pgd-failsync.so" PGD_FAILSYNC_PATH=probe_file \
    python3 -c "import os,sys; os.fsync(os.open(sys.argv[1], os.O_RDONLY))" "$T/probe_file" 2>/dev/null
isnt "$?" "0" "control: the shim makes fsync fail for the file named"
out=$(LD_PRELOAD="$T/bin/pgd-failsync.so" PGD_FAILSYNC_PATH=global/pg_control \
      ASAN_OPTIONS="$ASAN_OPTIONS:verify_asan_link_order=0" \
      "$PGD" restore "$id" --repo "$REPO" --target-dir "$T/failed/data" \
      --tablespace-map "$T/ts1=$T/ts_failed" 2>&1)
isnt "$?" "0" "a restore whose fsync fails exits non-zero"
like "$out" "could not fsync file \"$T/failed/data/global/pg_control\": Input/output error" \
    "the error names the file and the cause"
is "$(echo "$out" | grep -c 'error')" "1" "in one line"
ok $([ ! -e "$T/failed" ] && [ ! -e "$T/ts_failed" ] && echo 0 || echo 1) \
    "the failed restore removed the target, the parent it created and the tablespace directory"
if echo "$out" | grep -q "complete"; then ok 1 "no \"complete\" line"; else ok 0 "no \"complete\" line"; fi

# ---- a restore killed before it completes cannot be started ----
# SIGKILL at the first fsync: everything is extracted, nothing is durable yet
ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0" strace -f -qq -o /dev/null -e trace=fsync \
    -e inject=fsync:signal=KILL:when=1 \
    "$PGD" restore "$id" --repo "$REPO" --target-dir "$T/killed" \
    --tablespace-map "$T/ts1=$T/ts_killed" >/dev/null 2>&1
isnt "$?" "0" "a restore killed at its first fsync dies"
ok $([ -d "$T/killed/base" ] && echo 0 || echo 1) "it had extracted the data files"
ok $([ ! -e "$T/killed/global/pg_control" ] && echo 0 || echo 1) \
    "but pg_control is not there yet: it is renamed into place last"
chown -R postgres:postgres "$T/killed" "$T/ts_killed"
echo "port = $(free_port)" >>"$T/killed/postgresql.auto.conf"
as_pg "$PG_BIN/pg_ctl" -D "$T/killed" -l "$T/killed.log" -w -t 60 start >/dev/null 2>&1
isnt "$?" "0" "PostgreSQL refuses to start the unfinished restore"
as_pg "$PG_BIN/pg_ctl" -D "$T/killed" -m immediate stop >/dev/null 2>&1

# ---- SIGTERM midway (at the 200th write): the restore stops, cleans up and fails ----
out=$(ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0" strace -f -qq -o /dev/null -e trace=write \
      -e inject=write:signal=TERM:when=200 \
      "$PGD" restore "$id" --repo "$REPO" --target-dir "$T/termed" \
      --tablespace-map "$T/ts1=$T/ts_termed" 2>&1)
is "$?" "143" "a restore sent SIGTERM midway fails, and dies of the signal (128 + 15), as backup does"
like "$out" "restore of backup $id failed: interrupted by signal 15" "it says it was interrupted"
ok $([ ! -e "$T/termed" ] && [ ! -e "$T/ts_termed" ] && echo 0 || echo 1) \
    "and removed what it had written"

# ---- another restore into the same directory at the same time is refused ----
mkdir "$T/busy" && chown postgres:postgres "$T/busy"
out=$(flock "$T/busy" "$PGD" restore "$id" --repo "$REPO" --target-dir "$T/busy" \
      --tablespace-map "$T/ts1=$T/ts_busy" 2>&1)
isnt "$?" "0" "a target directory locked by another restore is refused"
like "$out" "target directory \"$T/busy\" is in use by another restore" "the error says so"

# ---- a restore failing midway leaves given directories as they were ----
part=$(ls -S "$REPO/backups/$id"/part_* | head -1)
cp "$part" "$T/part.orig"
read -r fname offset < <(python3 -c "
import tarfile
with tarfile.open('$part') as t:
    m = [m for m in t if m.isfile() and m.size > 8192][-1]
    print(m.name, m.offset_data + m.size // 2)")
python3 - "$part" "$offset" <<'PY'
import sys
with open(sys.argv[1], 'r+b') as f:
    f.seek(int(sys.argv[2])); b = f.read(1); f.seek(int(sys.argv[2])); f.write(bytes([b[0] ^ 1]))
PY

mkdir "$T/real_target" "$T/ts_exist"
chown postgres:postgres "$T/real_target" "$T/ts_exist"
chmod 755 "$T/real_target" "$T/ts_exist"
ln -s "$T/real_target" "$T/link_target"
out=$("$PGD" restore "$id" --repo "$REPO" --target-dir "$T/link_target" \
      --tablespace-map "$T/ts1=$T/ts_exist" 2>&1)
isnt "$?" "0" "symlinked target: the restore of a corrupted backup fails"
like "$out" "checksum mismatch for file \"$fname\"" "symlinked target: it failed on the corrupted file"
ok $([ -L "$T/link_target" ] && [ "$(readlink "$T/link_target")" = "$T/real_target" ] && echo 0 || echo 1) \
    "symlinked target: the target is still the same symlink"
is "$(ls -A "$T/real_target" | wc -l)" "0" "symlinked target: the directory it points to is empty again"
is "$(stat -c '%U %a' "$T/real_target")" "postgres 755" "symlinked target: owner and mode unchanged"
is "$(ls -A "$T/ts_exist" | wc -l)" "0" "existing tablespace directory: emptied"
is "$(stat -c '%U %a' "$T/ts_exist")" "postgres 755" "existing tablespace directory: owner and mode unchanged"

mkdir "$T/empty_target"
chown postgres:postgres "$T/empty_target"
chmod 750 "$T/empty_target"
out=$("$PGD" restore "$id" --repo "$REPO" --target-dir "$T/empty_target" \
      --tablespace-map "$T/ts1=$T/ts_absent" 2>&1)
isnt "$?" "0" "existing empty target: the restore of a corrupted backup fails"
is "$(ls -A "$T/empty_target" | wc -l)" "0" "existing empty target: emptied"
is "$(stat -c '%U %a' "$T/empty_target")" "postgres 750" "existing empty target: owner and mode unchanged"
ok $([ ! -e "$T/ts_absent" ] && echo 0 || echo 1) "a tablespace directory the restore created is removed"
cp "$T/part.orig" "$part"
done_testing
