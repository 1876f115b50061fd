#!/usr/bin/env bash
# A failure never looks like success (issue 32, items 10 to 12):
# - a tar entry whose header declares more than the manifest's size (the
#   extra bytes there, the partition's own size and CRC-32C right) is
#   damage: verify exits 3 naming the backup, the partition and the file;
#   restore fails naming them and leaves no target directory;
# - verify ID of a backup whose sentinel is corrupt exits 3, as verify --all
#   does; 1 stays for "could not run" (a repository that cannot be read);
# - a newest backup whose manifest.json is cut short or missing is damaged (retention too),
#   as a damaged sentinel makes it: list says so (text and --json), restore
#   LATEST passes it over with a warning for the older good backup, verify
#   LATEST reports it (exit 3). A manifest that cannot be read (another
#   owner's, mode 0600) is no verdict: list and restore LATEST fail naming
#   it. list reads only the manifests LATEST depends on: an older backup's
#   unreadable manifest does not stop it.
. "$(dirname "$0")/lib.sh"
setup_tmp
pg_init "$T/data"
pg_start "$T/data"
archive_all "$PGPORT"

backup_id() { sed -n 's/.*backup \([0-9]\{8\}T[0-9]\{6\}F\) complete.*/\1/p' "$1"; }
# uncompressed, in partitions of 1 MiB: a partition is crafted in place, its CRC-32C
# recomputed in Python (forge.py) over a MiB or two
backup() { # backup NAME: the id of a new full backup
    pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --compression none \
        --partition-size 1MiB >/dev/null 2>"$T/$1.err" || bail "backup $1 failed: $(tail -1 "$T/$1.err")"
    backup_id "$T/$1.err"
}
A=$(backup a)
B=$(backup b)
archive_all "$PGPORT"
pg_stop "$T/data"
diag "A=$A B=$B"
cp -a "$REPO/backups/$B" "$T/B.pristine"
pristine_b() { rm -rf "$REPO/backups/$B" && cp -a "$T/B.pristine" "$REPO/backups/$B"; }

# ---- item 10: a tar header that declares more than the manifest ----
out=$(pgd verify "$B" --repo "$REPO" 2>&1)
is "$?" "0" "control: verify of the backup as written exits 0"
like "$out" "backup $B: ok: " "and says ok"

# The 8 KiB file of B's smallest partition that holds one: its header now
# declares 64 KiB more, which follow as zeros; the partition's size and CRC-32C
# in the manifest are made right again. Prints the file and the partition.
read -r F P < <(forge_python - "$REPO/backups/$B" 65536 <<'PY'
import json, os, sys
from forge import crc32c
backup, extra = sys.argv[1], int(sys.argv[2])
mpath = os.path.join(backup, "manifest.json")
m = json.load(open(mpath))
parts = m["partitions"]
files = [f for f in m["files"] if f["type"] == "file" and f["size"] == 8192]
f = min(files, key=lambda f: parts[f["partition"] - 1]["size"])
part = parts[f["partition"] - 1]
ppath = os.path.join(backup, part["name"])
data = bytearray(open(ppath, "rb").read())
off = 0
while True:
    h = data[off:off + 512]
    if len(h) < 512 or h == bytes(512):
        sys.exit("no tar entry for " + f["path"])
    size = int(bytes(h[124:136]).rstrip(b"\0 ") or b"0", 8)
    if h[156:157] == b"0" and bytes(h[0:100]).rstrip(b"\0").decode() == f["path"]:
        break
    off += 512 + (size + 511) // 512 * 512
h[124:136] = b"%011o\0" % (8192 + extra)
h[148:156] = b" " * 8
h[148:156] = b"%06o\0 " % sum(h)
data[off:off + 512] = h
data[off + 512 + 8192:off + 512 + 8192] = bytes(extra)
open(ppath, "wb").write(data)
part["size"] = len(data)
part["crc32c"] = "%08x" % crc32c(bytes(data))
json.dump(m, open(mpath, "w"))
print(f["path"], part["name"])
PY
)
[ -n "$P" ] || bail "could not craft the tar header"
diag "crafted: $F in $P declares 73728 bytes"
what="tar header of file \"$F\" in partition \"$P\" of backup \"$B\" declares 73728 bytes; the manifest says 8192"

out=$(pgd verify "$B" --repo "$REPO" 2>"$T/v10.err")
is "$?" "3" "verify of a backup whose tar header declares more than the manifest exits 3"
like "$out" "^backup $B: DAMAGED: " "it says the backup is damaged"
like "$out" "problem: $what" "naming the file, the partition and the backup, and both sizes"

out=$(pgd restore "$B" --repo "$REPO" --target-dir "$T/r10" 2>&1)
isnt "$?" "0" "restore of that backup fails"
is "$(grep -c '^pgdirect: error:' <<<"$out")" "1" "with one error line"
like "$(grep '^pgdirect: error:' <<<"$out")" "restore of backup $B failed: $what" \
    "naming the file, the partition and the backup"
ok $([ ! -e "$T/r10" ] && echo 0 || echo 1) "and leaves no target directory"

pristine_b
out=$(pgd restore "$B" --repo "$REPO" --target-dir "$T/r10_control" 2>&1)
is "$?" "0" "control: restore of the backup as written succeeds"
is "$(stat -c %s "$T/r10_control/$F" 2>/dev/null)" "8192" "and leaves the file, of 8192 bytes"
rm -rf "$T/r10_control"

# ---- item 11: verify ID of a backup whose sentinel is corrupt ----
cp -p "$REPO/backups/$B.done.json" "$T/B.sentinel"
printf '{"id": "%s", "type": "fu' "$B" >"$REPO/backups/$B.done.json"
out=$(pgd verify "$B" --repo "$REPO" 2>"$T/v11.err")
is "$?" "3" "verify ID of a backup whose sentinel is corrupt exits 3 (damaged), not 1"
like "$out" "^backup $B: DAMAGED: " "it says the backup is damaged"
like "$out" "problem: could not parse sentinel \"backups/$B.done.json\"" "naming the sentinel"
like "$(cat "$T/v11.err")" "^pgdirect: error: 1 of 1 backups verified are damaged$" "one error line says so"
pgd verify --all --repo "$REPO" >/dev/null 2>&1
is "$?" "3" "verify --all says the same (exit 3)"
pgd verify "$A" --repo "$REPO" >/dev/null 2>&1
is "$?" "0" "control: verify of the good backup exits 0"
chmod 000 "$REPO"
out=$(pgd verify "$B" --repo "$REPO" 2>&1)
is "$?" "1" "a repository that cannot be read: verify ID exits 1 (could not run)"
like "$out" "^pgdirect: error: .*Permission denied" "and says why"
chmod 700 "$REPO"
cp -p "$T/B.sentinel" "$REPO/backups/$B.done.json"

# ---- item 12: the newest backup's manifest.json cut short ----
M="$REPO/backups/$B/manifest.json"
cp -p "$M" "$T/B.manifest"
head -c 200 "$T/B.manifest" >"$M"
out=$(pgd list --repo "$REPO" 2>"$T/list.err")
is "$?" "0" "list succeeds when the newest manifest does not parse"
like "$(grep "^$A" <<<"$out")" "^$A +full .* ok$" "the older backup is ok"
like "$(grep "^$B" <<<"$out")" "^$B +- .* damaged: could not parse manifest of backup \"$B\"" \
    "the newest is damaged, with the reason"
like "$(cat "$T/list.err")" "^pgdirect: warning: backup $B is damaged: could not parse manifest of backup \"$B\"" \
    "list warns, naming it"
json=$(pgd list --repo "$REPO" --json 2>/dev/null)
is "$(python3 -c 'import json,sys; print(" ".join(b["id"] + ":" + b["status"] for b in json.load(sys.stdin)))' <<<"$json")" \
    "$A:ok $B:damaged" "--json: the same statuses"
like "$(python3 -c 'import json,sys; print(json.load(sys.stdin)[1]["reason"])' <<<"$json")" \
    "could not parse manifest of backup \"$B\"" "--json: and the reason"

pgd restore LATEST --repo "$REPO" --target-dir "$T/r12" >"$T/r12.log" 2>&1
is "$?" "0" "restore LATEST succeeds"
like "$(cat "$T/r12.log")" "warning: skipping backup $B, newer than $A, because it is damaged: could not parse manifest of backup \"$B\"" \
    "saying it passed over the newest, and why"
like "$(cat "$T/r12.log")" "restoring backup $A " "and restores the older good one"
ok $([ -s "$T/r12/PG_VERSION" ] && echo 0 || echo 1) "whose files are there"
rm -rf "$T/r12"

out=$(pgd verify --repo "$REPO" 2>/dev/null)
is "$?" "3" "verify LATEST exits 3: a newer backup is damaged"
like "$out" "backup $A: ok: " "it verifies the backup LATEST restores"
like "$out" "^backup $B: DAMAGED: " "and reports the damaged newer one"
like "$out" "^  problem: could not parse manifest of backup \"$B\"" "with the reason (the only problem found)"

out=$(pgd delete --repo "$REPO" --retain-full 1 --dry-run 2>/dev/null)
like "$(grep " $A:" <<<"$out")" "^would keep backup $A: " \
    "retention keeps the older good backup, not the newest whose manifest is damaged"

rm "$M"
out=$(pgd list --repo "$REPO" 2>/dev/null)
like "$(grep "^$B" <<<"$out")" "^$B .* damaged: manifest of backup \"$B\" is missing from repository" \
    "a missing manifest: damaged too"

# ---- a manifest that cannot be read is no verdict ----
cp -p "$T/B.manifest" "$M"
chown root "$M" && chmod 600 "$M"
out=$(pgd list --repo "$REPO" 2>&1)
is "$?" "1" "list fails when the newest manifest cannot be read"
like "$out" "^pgdirect: error: nothing can be said of backup $B, whose manifest cannot be read .*backups/$B/manifest.json.*Permission denied" \
    "naming it and the cause"
expect_error "restore LATEST with an unreadable newest manifest" "backups/$B/manifest.json.*Permission denied" \
    pgd restore LATEST --repo "$REPO" --target-dir "$T/r_unread"
ok $([ ! -e "$T/r_unread" ] && echo 0 || echo 1) "and restores nothing (not the older $A)"
chown postgres "$M"

# ---- list reads only the manifests LATEST depends on ----
chown root "$REPO/backups/$A/manifest.json" && chmod 600 "$REPO/backups/$A/manifest.json"
out=$(pgd list --repo "$REPO" 2>&1)
is "$?" "0" "list succeeds while an older backup's manifest cannot be read (it is not read)"
is "$(grep -cE "^($A|$B) .* ok$" <<<"$out")" "2" "and both backups are ok"
done_testing
