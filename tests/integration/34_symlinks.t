#!/usr/bin/env bash
# Symbolic links inside PGDATA (other than pg_tblspc/*) are stored as links,
# as pg_basebackup stores them: a link entry in the tar partition and a
# "link" entry in the manifest. "ln -s . loop" no longer makes every backup
# fail; a postgresql.conf linked into another directory is restored as that
# link, not as a copy of the file. pg_wal as a link is stored as a
# directory (its contents are left out anyway).
#
# Restore recreates the links last. A link that points outside the target
# directory is refused, naming it, unless --allow-external-links is given;
# a crafted backup with a file beneath a link is refused even then (the
# style of 06_untrusted_backup.t), and nothing is written outside.
. "$(dirname "$0")/lib.sh"
setup_tmp
pg_init "$T/data"
pg_start "$T/data"
q "CREATE TABLE t AS SELECT g AS id, md5(g::text) AS v FROM generate_series(1, 20000) g"
archive_all "$PGPORT"
# a backup without links, for the crafted cases at the end
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --compression none >/dev/null 2>&1
ok $? "a backup without links, to craft links into"
id0=$(ls "$REPO/backups" | grep -E 'F$' | tail -1)
pg_stop "$T/data"

mkdir -p "$T/etc" "$T/wal_elsewhere" "$T/outside"
mv "$T/data/postgresql.conf" "$T/etc/postgresql.conf"
ln -s "$T/etc/postgresql.conf" "$T/data/postgresql.conf"
ln -s . "$T/data/loop"
ln -s pg_hba.conf "$T/data/hba_alias"
long_target="$(printf './%.0s' $(seq 1 80))PG_VERSION" # longer than ustar's 100 bytes: pax
ln -s "$long_target" "$T/data/long_link"
mv "$T/data/pg_wal"/* "$T/wal_elsewhere"/ && rmdir "$T/data/pg_wal"
ln -s "$T/wal_elsewhere" "$T/data/pg_wal"
chown -R postgres:postgres "$T/etc" "$T/wal_elsewhere" "$T/outside"
chown -h postgres:postgres "$T/data/postgresql.conf" "$T/data/loop" "$T/data/hba_alias" \
    "$T/data/long_link" "$T/data/pg_wal"
pg_start "$T/data"
q "INSERT INTO t SELECT g, 'after' FROM generate_series(20001, 20100) g"
want=$(q "SELECT count(*), md5(string_agg(id || v, ',' ORDER BY id)) FROM t")
archive_all "$PGPORT"

out=$(pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --compression none 2>&1)
ok $? "a backup of a data directory holding links succeeds"
[ -n "${out##*complete*}" ] && printf '%s\n' "$out" | sed 's/^/# /'
id=$(ls "$REPO/backups" | grep -E 'F$' | tail -1)
B="$REPO/backups/$id"
isnt "$id" "$id0" "it is a backup of its own"

# what the manifest and the partition hold
entries=$(python3 - "$B" <<'PY' 2>&1
import json, os, sys, tarfile
b = sys.argv[1]
m = json.load(open(os.path.join(b, "manifest.json")))
by = {f["path"]: f for f in m["files"]}
def show(p):
    f = by.get(p)
    return "-" if f is None else f["type"] + ("=" + f["target"] if f["type"] == "link" else "")
print("manifest", show("loop"), show("hba_alias"), show("pg_wal"), show("pg_wal/archive_status"),
      show("loop/PG_VERSION"))
print("conf", show("postgresql.conf"))
print("long", show("long_link"))
tar = {}
for p in m["partitions"]:
    with tarfile.open(os.path.join(b, p["name"])) as t:
        for e in t.getmembers():
            tar[e.name] = e
def entry(p):
    e = tar.get(p)
    return "-" if e is None else ("link=" + e.linkname if e.issym() else "dir" if e.isdir() else "file")
print("tar", entry("loop"), entry("hba_alias"), entry("pg_wal"))
print("tarconf", entry("postgresql.conf"))
print("tarlong", entry("long_link"))
PY
)
is "$(echo "$entries" | sed -n 's/^manifest //p')" "link=. link=pg_hba.conf dir dir -" \
    "the manifest records loop and hba_alias as links, pg_wal as a directory, nothing through loop"
is "$(echo "$entries" | sed -n 's/^conf //p')" "link=$T/etc/postgresql.conf" \
    "the linked postgresql.conf is recorded as a link to its file"
is "$(echo "$entries" | sed -n 's/^long //p')" "link=$long_target" "a long link target is kept whole"
is "$(echo "$entries" | sed -n 's/^tar //p')" "link=. link=pg_hba.conf dir" \
    "the partition holds them as tar link entries (type 2) and pg_wal as a directory"
is "$(echo "$entries" | sed -n 's/^tarconf //p')" "link=$T/etc/postgresql.conf" \
    "the partition holds postgresql.conf as a link"
is "$(echo "$entries" | sed -n 's/^tarlong //p')" "link=$long_target" \
    "the long target survives the tar round trip (pax linkpath)"

# without the option, the link into $T/etc is refused, by name, and nothing stays behind
out=$(pgd restore "$id" --repo "$REPO" --target-dir "$T/r_refused" 2>&1)
isnt "$?" "0" "a restore with a link pointing out of the target fails without --allow-external-links"
like "$out" "refusing link \"postgresql.conf\" -> \"$T/etc/postgresql.conf\".*--allow-external-links" \
    "the error names the link, its target and the option"
is "$(printf '%s\n' "$out" | grep -c 'error')" "1" "one error line"
ok $([ ! -e "$T/r_refused" ] && echo 0 || echo 1) "the refused restore left no target directory"

port=$(restore_and_start "$id" "$T/r" --allow-external-links)
ok $? "with --allow-external-links the restore succeeds and the server recovers"
is "$(readlink "$T/r/loop")" "." "loop is restored as the link it was"
is "$(readlink "$T/r/hba_alias")" "pg_hba.conf" "a link to a file inside is restored as a link"
is "$(readlink "$T/r/postgresql.conf")" "$T/etc/postgresql.conf" \
    "postgresql.conf is restored as the link into $T/etc"
is "$(readlink "$T/r/long_link")" "$long_target" "the long link is restored whole"
ok $([ -d "$T/r/pg_wal" ] && [ ! -L "$T/r/pg_wal" ] && echo 0 || echo 1) \
    "pg_wal is restored as a directory"
like "$(cat "$T/r.restore.log")" "link \"postgresql.conf\" -> \"$T/etc/postgresql.conf\" points outside" \
    "the restore says which link points outside"
[ -n "$port" ] && got=$(psql_at "$port" "SELECT count(*), md5(string_agg(id || v, ',' ORDER BY id)) FROM t")
is "${got:-}" "$want" "the restored table equals the source"
[ -n "$port" ] && as_pg "$PG_BIN/pg_ctl" -D "$T/r" -m fast -w stop >/dev/null

# links internal to the data directory need no option
pg_stop "$T/data"
rm "$T/data/postgresql.conf" && cp "$T/etc/postgresql.conf" "$T/data/postgresql.conf"
chown postgres:postgres "$T/data/postgresql.conf"
pg_start "$T/data"
archive_all "$PGPORT"
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --compression none >/dev/null 2>&1
ok $? "a second backup, with only links inside the data directory"
id2=$(ls "$REPO/backups" | grep -E 'F$' | tail -1)
pgd restore "$id2" --repo "$REPO" --target-dir "$T/r2" >"$T/r2.log" 2>&1
ok $? "its restore needs no option"
is "$(readlink "$T/r2/loop") $(readlink "$T/r2/hba_alias")" ". pg_hba.conf" "and recreates the links"
pg_stop "$T/data"

# craft KIND: the manifest and partition 1 of the backup without links, given links the
# restore must refuse, checksums kept consistent so the link check, not a checksum, is what
# stops it
B2="$REPO/backups/$id0"
cp -a "$B2" "$T/pristine"
craft() {
    forge_python - "$B2" "$1" "$T/outside" <<'PY'
import io, json, os, sys, tarfile
from forge import crc32c
backup, kind, outside = sys.argv[1], sys.argv[2], sys.argv[3]
mpath = os.path.join(backup, "manifest.json")
m = json.load(open(mpath))
part = m["partitions"][0]["name"]
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
    def link(name, target):
        ti = tarfile.TarInfo(name); ti.type = tarfile.SYMTYPE; ti.linkname = target; t.addfile(ti)
        m["files"].append({"path": name, "type": "link", "target": target, "mode": 511,
                           "mtime": 0, "partition": 1})
    def file(name, data=b"pwned\n"):
        ti = tarfile.TarInfo(name); ti.size = len(data); t.addfile(ti, io.BytesIO(data))
        m["files"].append({"path": name, "type": "file", "mode": 384, "mtime": 0,
                           "size": len(data), "crc32c": "%08x" % crc32c(data), "partition": 1})
    if kind == "below_external":
        link("evil", outside)
        file("evil/through_link")
    elif kind == "below_internal":
        link("evil", "base")
        file("evil/through_link")
    elif kind == "climbs_out":
        link("up", "base/../../outside")
    elif kind == "climbs_through_link":
        # lexically inside; the kernel resolves m first: base/1/m -> base, base/.. -> the
        # target, and one more .. leaves it
        link("base/1/m", "..")
        link("esc", "base/1/m/../..")
data = buf.getvalue()
open(os.path.join(backup, part), "wb").write(data)
m["partitions"][0]["size"] = len(data)
m["partitions"][0]["crc32c"] = "%08x" % crc32c(data)
json.dump(m, open(mpath, "w"))
PY
}

check_refused() { # check_refused KIND REGEX [restore options...]
    local kind=$1 re=$2
    shift 2
    craft "$kind"
    out=$(pgd restore "$id0" --repo "$REPO" --target-dir "$T/c_$kind" "$@" 2>&1)
    isnt "$?" "0" "$kind: the crafted backup is refused"
    like "$out" "$re" "$kind: the error says why"
    is "$(printf '%s\n' "$out" | grep -c error)" "1" "$kind: one error line"
    is "$(ls -A "$T/outside" | wc -l)" "0" "$kind: nothing was written outside the target"
    ok $([ ! -e "$T/c_$kind" ] && echo 0 || echo 1) "$kind: no target directory is left"
    rm -rf "$B2" && cp -a "$T/pristine" "$B2"
}
check_refused below_external "refusing \"evil/through_link\" in backup \"$id0\": it lies below the link \"evil\"" \
    --allow-external-links
check_refused below_internal "refusing \"evil/through_link\" in backup \"$id0\": it lies below the link \"evil\""
check_refused climbs_out "refusing link \"up\" -> \"base/../../outside\" in backup \"$id0\": it points outside"
check_refused climbs_through_link "refusing link \"esc\" -> \"base/1/m/../..\" in backup \"$id0\": it points outside"
done_testing
