#!/usr/bin/env bash
# One flipped byte in a stored partition makes restore fail with an error
# naming the backup and the file (uncompressed), or the backup and the
# partition (lz4, whose frame checksum catches it first); the failed restore
# leaves nothing behind.
. "$(dirname "$0")/lib.sh"
setup_tmp
pg_init "$T/data"
pg_start "$T/data"
q "CREATE TABLE t (id int, pad text)"
q "INSERT INTO t SELECT g, repeat('z', 100) FROM generate_series(1, 100000) g"
archive_all "$PGPORT"

for comp in none lz4; do
    pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --compression "$comp" >/dev/null 2>&1
    ok $? "$comp: backup succeeds"
    id=$(ls "$REPO/backups" | grep -E 'F$' | tail -1)
    part=$(ls -S "$REPO/backups/$id"/part_* | head -1)
    if [ "$comp" = none ]; then
        # a data byte in the middle of the partition's first non-empty file
        read -r largest offset < <(python3 -c "
import tarfile
with tarfile.open('$part') as t:
    m = next(m for m in t if m.isfile() and m.size > 0)
    print(m.name, m.offset_data + m.size // 2)")
        flip_byte "$part" "$offset"
    else
        flip_byte "$part" $(( $(stat -c %s "$part") / 2 ))
    fi
    out=$(pgd restore "$id" --repo "$REPO" --target-dir "$T/restore_$comp" 2>&1)
    rc=$?
    isnt "$rc" "0" "$comp: restore of the corrupted backup fails"
    is "$(echo "$out" | grep -c 'error')" "1" "$comp: one error line"
    like "$out" "backup \"?$id" "$comp: the error names the backup"
    if [ "$comp" = none ]; then
        like "$out" "checksum mismatch for file \"$largest\"" "none: the error names the corrupted file"
    else
        like "$out" "$(basename "$part")" "lz4: the error names the corrupted partition"
    fi
    ok $([ ! -e "$T/restore_$comp" ] && echo 0 || echo 1) "$comp: the failed restore removed its target"
done
done_testing
