#!/usr/bin/env bash
# make_seeds.sh - the seed corpus of each fuzz target (tests/fuzz/corpus/<target>/), made from
# the objects a real run writes: a throwaway PostgreSQL 15 cluster (tests/integration/lib.sh)
# backed up full and delta with lz4 and zstd, its WAL archived by wal-push; and the S3 answers
# of tests/data/s3. Kilobytes per target: long objects are cut (a cut one is a seed too: the
# parsers must refuse it). Run as root under the integration lock, from the checkout:
#   flock /tmp/pgd-integration.lock bash tests/fuzz/make_seeds.sh build/pgdirect
# then commit tests/fuzz/corpus. The first byte of some targets' inputs chooses a mode (see
# each fuzz_<target>.c); their seeds carry it.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export PGDIRECT_BIN=${1:-$ROOT/build/pgdirect}
OUT=$ROOT/tests/fuzz/corpus
. "$ROOT/tests/integration/lib.sh"
setup_tmp
set +u

# seed TARGET NAME: stdin into corpus/TARGET/NAME
seed() { mkdir -p "$OUT/$1"; cat >"$OUT/$1/$2"; }
# prefixed BYTE: stdin after one byte (the octal escape of printf)
prefixed() { printf "\\$1"; cat; }

pg_init "$T/data"
pg_start "$T/data"
q "CREATE TABLE t AS SELECT g AS id, md5(g::text) AS v FROM generate_series(1, 20000) g"
q "CHECKPOINT"
archive_all "$PGPORT"
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast >/dev/null 2>&1 || bail "backup failed"
q "UPDATE t SET v = 'x' WHERE id BETWEEN 100 AND 300"
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --delta >/dev/null 2>&1 ||
    bail "delta backup failed"
pgd backup --repo "$T/repo_zst" --pgdata "$T/data" --checkpoint fast --compression zstd --archive-check off \
    >/dev/null 2>&1 || bail "zstd backup failed"
archive_all "$PGPORT"
FULL=$(ls "$REPO/backups" | sed -n 's/F\.done\.json$/F/p' | head -1)
DELTA=$(ls "$REPO/backups" | sed -n 's/D\.done\.json$/D/p' | head -1)
ZST=$(ls "$T/repo_zst/backups" | sed -n 's/\.done\.json$//p' | head -1)
[ -n "$FULL" ] && [ -n "$DELTA" ] && [ -n "$ZST" ] || bail "backups missing"
rm -rf "$OUT"
mkdir -p "$OUT"

# manifest.json: the first files of each (a whole manifest lists every file of the cluster)
for b in "$REPO/backups/$FULL" "$REPO/backups/$DELTA" "$T/repo_zst/backups/$ZST"; do
    jq -c '.files |= (map(select(.increment != null))[:3] + map(select(.increment == null))[:12])' "$b/manifest.json" |
        seed manifest "$(basename "$(dirname "$(dirname "$b")")")_$(basename "$b").json"
    jq -r '.backup_label' "$b/manifest.json" | seed backup_label "$(basename "$(dirname "$(dirname "$b")")")_$(basename "$b")"
done
# sentinels
for s in "$REPO"/backups/*.done.json "$T"/repo_zst/backups/*.done.json; do
    seed backup_info "$(basename "$s")" <"$s"
    jq -r '.start_lsn, .stop_lsn' "$s" | while read -r lsn; do printf %s "$lsn" | seed lsn "${lsn/\//_}"; done
done

# tar: the first entries of each partition, decompressed, with the end-of-archive blocks; and
# the increments of the delta as the increment target's inputs (modes 0 and 2: as stored, and
# checked against the header's own sizes)
python3 - "$OUT" "$REPO/backups/$FULL" "$REPO/backups/$DELTA" <<'PY'
import os, subprocess, sys
out = sys.argv[1]
def entries(tar):
    pos, res = 0, []
    while pos + 512 <= len(tar) and tar[pos:pos + 512] != bytes(512):
        h = tar[pos:pos + 512]
        size = int(h[124:136].split(b'\0')[0].strip() or b'0', 8)
        end = pos + 512 + (size + 511) // 512 * 512
        res.append((pos, end, h[156:157], h[0:100].split(b'\0')[0]))
        pos = end
    return res
os.makedirs(f"{out}/tar", exist_ok=True)
os.makedirs(f"{out}/increment", exist_ok=True)
for d in sys.argv[2:]:
    bid = os.path.basename(d)
    p = sorted(f for f in os.listdir(d) if f.startswith("part_"))[0]
    tar = subprocess.run(["lz4", "-dc", f"{d}/{p}"], capture_output=True, check=True).stdout
    es = entries(tar)
    # entries of at most 2 KiB each (a pax header and its entry are two), by kind
    small = [e for e in es if e[1] - e[0] <= 2560]
    for name, pick in (("dirs", [e for e in small if e[2] == b"5"][:4]),
                       ("files", [e for e in small if e[2] == b"0"][:4]),
                       ("pax", [e for e in small if e[2] in (b"x", b"2")][:4]),
                       ("symlinks", [e for e in small if e[2] == b"2"][:4])):
        if pick:
            body = b"".join(tar[a:b] for a, b, _, _ in pick) + bytes(1024)
            open(f"{out}/tar/{bid}_{name}.tar", "wb").write(body)
    incs = [e for e in es if b"INCREMENTAL." in e[3]]
    # the smallest without pages, as stored; the smallest with pages cut to its first one, with
    # mode 3 (the target writes the CRCs of the cut increment, and checks it as a manifest would)
    incs.sort(key=lambda e: e[1] - e[0])
    for a, b, t, n in incs[:1] + [e for e in incs if e[1] - e[0] > 1024][:1]:
        size = int(tar[a + 124:a + 136].split(b'\0')[0].strip(), 8)
        inc = tar[a + 512:a + 512 + size]
        k = int.from_bytes(inc[12:16], "little")
        modes = (0, 2)
        if k > 1:
            hdr = 32 + 4 * k + 4
            inc = (inc[:12] + (1).to_bytes(4, "little") + inc[16:36] + bytes(4) +
                   inc[hdr:hdr + 8192] + bytes(4))
            modes = (3,)
        for mode in modes:
            open(f"{out}/increment/{n.decode().replace('/', '_')}_{mode}", "wb").write(bytes([mode]) + inc)
PY

# WAL: archived objects (the backup history files are small; whole segments are not, and
# give their first two pages), lz4 and zstd, with and without our trailer
WALDIR=$REPO/wal/00000001
for f in "$WALDIR"/*.backup.lz4; do
    seed trailer "$(basename "$f")" < <(prefixed 000 <"$f")
    seed lz4 "$(basename "$f")" <"$f"
    seed wal_history "$(basename "$f" .lz4)" < <(lz4 -dc "$f" | prefixed 001)
    lz4 -dc "$f" | zstd -q -c | seed zstd "$(basename "$f" .lz4).zst"
done
for f in $(ls "$T"/data/pg_wal/0000000100000000000000?? | sed -n '1p;$p'); do
    seed wal_segment "$(basename "$f")_2" < <(head -c 8192 "$f" | prefixed 002)
    seed wal_segment "$(basename "$f")_3" < <(head -c 4096 "$f" | prefixed 003)
done
seg=$(ls "$WALDIR" | grep -E '^[0-9A-F]{24}\.lz4$' | head -1)
pgd wal-push --repo "$T/repo_zst" --compression zstd "$(ls "$T"/data/pg_wal/*.backup | head -1)" \
    >/dev/null 2>&1 || bail "wal-push of a backup history file with zstd failed"
zseg=$(ls "$T/repo_zst/wal/00000001/" | grep -E '\.backup\.zst$' | head -1)
[ -n "$zseg" ] || bail "no zstd backup history file"
seed trailer "$zseg" < <(prefixed 001 <"$T/repo_zst/wal/00000001/$zseg")
seed zstd "$zseg" <"$T/repo_zst/wal/00000001/$zseg"
# a cut frame of each codec: the first 2 KiB of a segment's object and a partition's
head -c 2048 "$WALDIR/$seg" | seed lz4 "${seg}_cut"
head -c 2048 "$WALDIR/$seg" | seed trailer "${seg}_cut" < <(head -c 2048 "$WALDIR/$seg" | prefixed 000)
p=$(ls "$T/repo_zst/backups/$ZST" | grep '^part_' | head -1)
head -c 2048 "$T/repo_zst/backups/$ZST/$p" | seed zstd "${p}_cut"
# frames the lz4 and zstd tools write, of a file of the cluster
for f in PG_VERSION postgresql.auto.conf; do
    lz4 -q -c "$T/data/$f" | seed lz4 "$f.lz4"
    lz4 -q -c -BD --content-size "$T/data/$f" | seed lz4 "$f.bd.lz4"
    zstd -q -c --check "$T/data/$f" | seed zstd "$f.zst"
done

# timeline history: the server's own after a promotion of a restored copy is in test 52; here
# the format PostgreSQL writes (xlog.c writeTimeLineHistory), for timelines 2 and 3
printf '1\t0/3000160\tno recovery target specified\n' | prefixed 004 | seed wal_history 00000002.history
printf '1\t0/3000160\tno recovery target specified\n\n2\t0/5000000\tat restore point "x"\n' |
    prefixed 006 | seed wal_history 00000003.history

# names: what a listing of the repository shows, and the paths of a manifest
{
    ls "$REPO/backups" "$REPO/backups/$FULL" "$WALDIR"
    jq -r '.files[:20][].path' "$REPO/backups/$DELTA/manifest.json"
    jq -r '.files[] | select(.increment != null) | .path' "$REPO/backups/$DELTA/manifest.json" |
        sed 's|[^/]*$|INCREMENTAL.&|'
    echo "s3://bucket/prefix"
    echo "file://$REPO"
} | sort -u | head -60 | while read -r n; do
    printf %s "$n" | seed names "$(printf %s "$n" | md5sum | cut -c1-12)"
done

# GNU tar's pax archive of a name longer than ustar's 100 bytes, a link to it and a directory:
# what the pax headers of our writer carry, written by another implementation
long=$T/pax/$(printf 'd%.0s' $(seq 1 60))/$(printf 'f%.0s' $(seq 1 70))
mkdir -p "$(dirname "$long")"
head -c 700 "$T/data/postgresql.conf" >"$long"
ln -s "$(basename "$long")" "$(dirname "$long")/link"
tar --format=pax -C "$T/pax" -cf - . | seed tar gnu_pax.tar

# the S3 answers the unit tests use, each after the byte of its parser
for f in "$ROOT"/tests/data/s3/*.xml; do
    n=$(basename "$f")
    case $n in
    *error* | *nosuchbucket*) b=000 ;;
    *initiate*) b=001 ;;
    *complete*) b=002 ;;
    *list*) b=003 ;;
    *delete*) b=004 ;;
    *uploads*) b=005 ;;
    *parts*) b=006 ;;
    *) b=003 ;;
    esac
    seed s3_xml "$n" < <(prefixed $b <"$f")
done
printf '\0072026-11-30T18:23:01.000Z' | seed s3_xml time

# the Azure answers of tests/data/azure (Azurite's, as it sent them), after the byte of their parser
for f in "$ROOT"/tests/data/azure/*.xml; do
    n=$(basename "$f")
    case $n in
    *error*) b=000 ;;
    *) b=001 ;;
    esac
    seed azure_xml "$n" < <(prefixed $b <"$f")
done

# the VERSION answer of OpenSSH's sftp-server to an SSH_FXP_INIT (its body: after length and type),
# whole, cut, and with no extension
sftp_version() { (printf '\000\000\000\005\001\000\000\000\003'; sleep 1) | timeout 5 /usr/lib/openssh/sftp-server | tail -c +6; }
sftp_version | seed sftp_version openssh_9.2
sftp_version | head -c 40 | seed sftp_version cut
printf '\000\000\000\003' | seed sftp_version bare

# the config file and option values: what the user guide's examples give
printf '\000# pgdirect.conf\nrepo = /var/lib/pgdirect\ncompression = zstd\nmax-rate = 200MiB\nio-class idle\n' |
    seed config guide
printf '\000repo = '"'"'s3://bucket/prefix'"'"'\ns3-region = eu-west-1\n\n# a comment\nmax-memory = 1GiB\ndbname = '"'"'host=/tmp port=5433'"'"' # here\n' |
    seed config s3
printf '\000--repo\000/var/lib/pgdirect\000--max-rate\000100MiB\000--checkpoint\000fast\000--compression-level\0003' |
    seed option_value backup
printf '\001--repo=/r\000--target-time\0002026-11-29 21:00:00+00\000--target-lsn=0/3000000\000--target-dir\000/tmp/x\000latest' |
    seed option_value restore
printf '\010--repo=/r\000--retain-full\0004\000--retain-since\0007d\000--garbage-age=2h\000--dry-run' |
    seed option_value delete

du -sh "$OUT"/* | sed 's/^/# /'
