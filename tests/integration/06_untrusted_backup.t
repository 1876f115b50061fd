#!/usr/bin/env bash
# A backup is untrusted input. Crafted partitions holding "../escape", an
# absolute path, or a symlink pointing out of the target are refused, and
# nothing is written outside the target directory.
. "$(dirname "$0")/lib.sh"
setup_tmp
pg_init "$T/data"
pg_start "$T/data"
archive_all "$PGPORT"
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --compression none >/dev/null 2>&1
ok $? "a genuine backup to tamper with"
id=$(ls "$REPO/backups" | grep -E 'F$' | tail -1)
mkdir -p "$T/outside" && chown postgres:postgres "$T/outside"

# craft: replace partition 1 with a tar holding one hostile entry, keep the manifest
# consistent for that partition (size and crc32c of the stored bytes) so that the
# path check, not a checksum, is what stops it
craft() { # craft KIND
    forge_python - "$REPO/backups/$id" "$1" "$T/outside" <<'PY'
import io, json, os, sys, tarfile, zlib
from forge import crc32c
backup, kind, outside = sys.argv[1], sys.argv[2], sys.argv[3]
m = json.load(open(os.path.join(backup, "manifest.json")))
part = m["partitions"][0]["name"]
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
    def add_file(name, data=b"pwned\n"):
        ti = tarfile.TarInfo(name); ti.size = len(data); t.addfile(ti, io.BytesIO(data))
    if kind == "dotdot":
        add_file("../escape")
    elif kind == "absolute":
        add_file(outside + "/abs")
    elif kind == "symlink":
        ti = tarfile.TarInfo("evil"); ti.type = tarfile.SYMTYPE; ti.linkname = outside
        t.addfile(ti)
        add_file("evil/through_link")
data = buf.getvalue()
open(os.path.join(backup, part), "wb").write(data)
m["partitions"][0]["size"] = len(data)
m["partitions"][0]["crc32c"] = "%08x" % crc32c(data)
json.dump(m, open(os.path.join(backup, "manifest.json"), "w"))
PY
}

for kind in dotdot absolute symlink; do
    cp -a "$REPO/backups/$id" "$T/pristine" 2>/dev/null || true
    craft "$kind"
    out=$(pgd restore "$id" --repo "$REPO" --target-dir "$T/target_$kind/data" 2>&1)
    rc=$?
    isnt "$rc" "0" "$kind: restore of the crafted backup fails"
    like "$out" "refusing (path|link)" "$kind: the error says what was refused"
    is "$(echo "$out" | grep -c error)" "1" "$kind: one error line"
    is "$(ls -A "$T/outside" | wc -l)" "0" "$kind: nothing was written outside the target"
    ok $([ ! -e "$T/target_$kind/escape" ] && echo 0 || echo 1) "$kind: no ../escape next to the target"
    rm -rf "$REPO/backups/$id" && mv "$T/pristine" "$REPO/backups/$id"
done

# a hostile path in the manifest itself
python3 - "$REPO/backups/$id/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["files"].append({"path": "../../manifest_escape", "type": "dir", "mode": 448, "mtime": 0})
json.dump(m, open(sys.argv[1], "w"))
PY
out=$(pgd restore "$id" --repo "$REPO" --target-dir "$T/target_manifest" 2>&1)
isnt "$?" "0" "a manifest path that leaves the target is refused"
like "$out" "refusing path \"../../manifest_escape\" in the manifest" "the error names the manifest path"
ok $([ ! -e "$T/manifest_escape" ] && echo 0 || echo 1) "nothing was created outside"
done_testing
