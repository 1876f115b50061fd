#!/usr/bin/env bash
# A backup is untrusted input, also where it names places and modes (the
# style of 06_untrusted_backup.t: the manifest or a partition is crafted,
# keeping checksums consistent, so that the check under test is what stops
# the restore):
# - each tablespace destination is logged before anything is written to it
#   and must be absolute, absent or empty, and neither inside nor around the
#   target directory or another tablespace's destination;
# - modes are masked: no set-id or sticky bits, at most 0750 / 0640 (the
#   restore runs as root here, where set-uid files would matter most);
# - partition names must be part_NNNN.tar<suffix>: a crafted name is not
#   opened, even when it names a valid partition outside the backup;
# - the tar reader refuses numeric fields that do not parse and pax sizes
#   that overflow.
. "$(dirname "$0")/lib.sh"
setup_tmp
pg_init "$T/data"
pg_start "$T/data"
mkdir -p "$T/ts1" && chown postgres:postgres "$T/ts1"
q "CREATE TABLESPACE ts1 LOCATION '$T/ts1'"
q "CREATE TABLE spc_t TABLESPACE ts1 AS SELECT g AS id, md5(g::text) AS v FROM generate_series(1, 5000) g"
archive_all "$PGPORT"
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --compression none >/dev/null 2>&1
ok $? "a backup with a tablespace to tamper with"
id=$(ls "$REPO/backups" | grep -E 'F$' | tail -1)
B="$REPO/backups/$id"
cp -a "$B" "$T/pristine"
pg_stop "$T/data"

# craft KIND [ARG...]: edit the manifest (and partition 1), keeping sizes and crc32c consistent
craft() {
    forge_python - "$B" "$@" <<'PY'
import io, json, os, sys, tarfile
from forge import crc32c
backup, kind, args = sys.argv[1], sys.argv[2], sys.argv[3:]
mpath = os.path.join(backup, "manifest.json")
m = json.load(open(mpath))
def header(name, typ, size_field, uid=b"0000000"):
    h = bytearray(512)
    h[0:len(name)] = name
    h[100:107] = b"0000644"; h[108:108 + len(uid)] = uid; h[116:123] = b"0000000"
    h[124:124 + len(size_field)] = size_field; h[136:147] = b"00000000000"
    h[156:157] = typ; h[257:263] = b"ustar\0"; h[263:265] = b"00"
    h[148:156] = b" " * 8
    h[148:155] = b"%06o\0" % sum(h)
    return bytes(h)
def set_partition(data):
    p = m["partitions"][0]
    open(os.path.join(backup, p["name"]), "wb").write(data)
    p["size"] = len(data)
    p["crc32c"] = "%08x" % crc32c(data)
if kind == "spc_location":
    m["tablespaces"][0]["location"] = args[0]
elif kind == "add_spc":
    m["tablespaces"].append({"oid": int(args[0]), "name": "evil", "location": args[1]})
elif kind == "modes":
    for f in m["files"]:
        f["mode"] = 0o7777
elif kind == "part_name":
    m["partitions"][0]["name"] = args[0]
elif kind == "tar_uid":
    # a first entry whose uid field is not a number (the header checksum is right)
    set_partition(header(b"PG_VERSION", b"0", b"00000000003", uid=b"00x0000") + b"15\n".ljust(512, b"\0") + b"\0" * 1024)
elif kind == "pax_size":
    body = b" size=99999999999999999999\n"
    rec = b"%d" % (len(body) + 2) + body  # the length counts its own two digits
    set_partition(header(b"././@PaxHeader", b"x", b"%011o" % len(rec)) + rec.ljust(512, b"\0")
                  + header(b"PG_VERSION", b"0", b"00000000003") + b"15\n".ljust(512, b"\0") + b"\0" * 1024)
json.dump(m, open(mpath, "w"))
PY
    [ $? -eq 0 ] || bail "craft $1 failed"
}
pristine() { rm -rf "$B" && cp -a "$T/pristine" "$B"; }
restore_to() { # restore_to TARGET [options...]: as root; output in OUT, exit status in RC
    local target=$1
    shift
    OUT=$("$PGD" restore "$id" --repo "$REPO" --target-dir "$target" "$@" 2>&1)
    RC=$?
}
spc_oid=$(python3 -c "import json; print(json.load(open('$B/manifest.json'))['tablespaces'][0]['oid'])")

# ---- tablespace destinations ----
mkdir -p "$T/outside" && echo keep >"$T/outside/file"
craft spc_location "$T/outside"
restore_to "$T/t_nonempty"
isnt "$RC" "0" "a tablespace location that is not empty is refused"
like "$OUT" "tablespace $spc_oid .* is restored to \"$T/outside\"" "the destination is logged"
like "$OUT" "tablespace directory \"$T/outside\" is not empty" "the error names it"
is "$(ls -A "$T/outside")" "file" "nothing was written there"
ok $([ ! -e "$T/t_nonempty" ] && echo 0 || echo 1) "and no target directory is left"
pristine

craft spc_location "$T/t_inside/data/pg_wal_ts"
restore_to "$T/t_inside/data"
isnt "$RC" "0" "a tablespace location inside the target directory is refused"
like "$OUT" "overlaps the target directory" "the error says why"
ok $([ ! -e "$T/t_inside" ] && echo 0 || echo 1) "nothing was written"
pristine

craft spc_location "$T/t_dotdot/x/../data/base"
restore_to "$T/t_dotdot/data"
isnt "$RC" "0" "a location that reaches into the target through .. is refused"
like "$OUT" "overlaps the target directory" "the error says why"
pristine

craft spc_location "$T/t_around"
restore_to "$T/t_around/data"
isnt "$RC" "0" "a tablespace location that contains the target directory is refused"
like "$OUT" "overlaps the target directory" "the error says why"
ok $([ ! -e "$T/t_around" ] && echo 0 || echo 1) "nothing was written"
pristine

craft add_spc 99999 "$T/ts1/nested"
restore_to "$T/t_nested"
isnt "$RC" "0" "two tablespaces with nested destinations are refused"
like "$OUT" "tablespaces [0-9]+ and [0-9]+ would be restored to overlapping directories" "the error says why"
ok $([ ! -e "$T/t_nested" ] && echo 0 || echo 1) "nothing was written"
pristine

craft spc_location "relative/ts"
restore_to "$T/t_relative"
isnt "$RC" "0" "a relative tablespace location is refused (this already worked)"
like "$OUT" "relative location" "the error says why"
pristine

# a legitimate destination: logged before the restore writes anything
restore_to "$T/t_ok" --tablespace-map "$T/ts1=$T/ts_ok"
is "$RC" "0" "a restore to an absent tablespace destination succeeds"
first=$(echo "$OUT" | grep -n "is restored to \"$T/ts_ok\"" | cut -d: -f1)
start=$(echo "$OUT" | grep -n "restoring backup" | cut -d: -f1)
cmp_ok "${first:-99}" "<" "${start:-0}" "the tablespace destination is logged before the restore starts writing"

# ---- modes ----
craft modes
restore_to "$T/t_modes" --tablespace-map "$T/ts1=$T/ts_modes"
is "$RC" "0" "a manifest asking for mode 07777 everywhere restores"
is "$(find "$T/t_modes" "$T/ts_modes" -perm /7000 | wc -l)" "0" "no set-uid, set-gid or sticky bit"
is "$(find "$T/t_modes" "$T/ts_modes" -type f -perm /0137 | wc -l)" "0" "files at most 0640"
is "$(find "$T/t_modes" "$T/ts_modes" -mindepth 1 -type d -perm /0027 | wc -l)" "0" "directories at most 0750"
is "$(stat -c %a "$T/t_modes/global/pg_control")" "640" "group read kept as PostgreSQL allows it"
pristine

# ---- partition names ----
cp "$B/part_0001.tar" "$T/outside_part.tar"
craft part_name "../../../outside_part.tar"
restore_to "$T/t_partname" --tablespace-map "$T/ts1=$T/ts_partname"
isnt "$RC" "0" "a partition name that is a path is refused"
like "$OUT" "refusing partition \"../../../outside_part.tar\" in the manifest" "the error names it"
ok $([ ! -e "$T/t_partname" ] && [ ! -e "$T/ts_partname" ] && echo 0 || echo 1) "nothing was written"
pristine

# ---- tar numbers ----
craft tar_uid
restore_to "$T/t_uid" --tablespace-map "$T/ts1=$T/ts_uid"
isnt "$RC" "0" "a tar header whose uid is not a number is refused"
like "$OUT" "corrupt header \\(bad number\\)" "the error says why"
ok $([ ! -e "$T/t_uid" ] && echo 0 || echo 1) "the failed restore left nothing"
pristine

craft pax_size
restore_to "$T/t_pax" --tablespace-map "$T/ts1=$T/ts_pax"
isnt "$RC" "0" "a pax size that overflows 64 bits is refused"
like "$OUT" "invalid pax size \"99999999999999999999\"" "the error says why"
ok $([ ! -e "$T/t_pax" ] && echo 0 || echo 1) "the failed restore left nothing"
pristine
done_testing
