#!/usr/bin/env bash
# encryption.sh - what encryption at rest costs (issue 34), side by side in one run:
#   bash bench/encryption.sh [SCALE] [ROUNDS] [SEGMENTS]
# A throwaway PostgreSQL 15 cluster (pgbench -i -s SCALE, default 50) is backed up with lz4
# into a local repository unencrypted and into one encrypted with a random key file, ROUNDS
# times (default 3), the order of the two alternating from round to round; each backup is
# timed (wall, and the CPU of pgdirect: user + system). Then SEGMENTS (default 20) WAL
# segments are pushed one process each (as archive_command does, plain wal-push), into an
# unencrypted and an encrypted repository, alternating, and the CPU of the pushes is summed.
# Prints each measurement, the medians and the ratios (the issue's budget: backup CPU <= 1.10,
# wall <= 1.05, wal-push CPU <= 1.10). BUILD: the build directory (default build).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
SCALE=${1:-50}
ROUNDS=${2:-3}
SEGMENTS=${3:-20}
BUILD=${BUILD:-$ROOT/build}
PG_BIN=/usr/lib/postgresql/15/bin
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"
bench_require encryption.sh "it runs PostgreSQL as postgres" pgdirect -- python3

D=$(mktemp -d /tmp/pgdirect-encbench.XXXXXX)
chmod 755 "$D"; mkdir -p "$D/bin" "$D/segs"
cp "$BUILD/pgdirect" "$D/bin/pgdirect"
PGD="$D/bin/pgdirect"
head -c 32 /dev/urandom >"$D/key"
chmod 600 "$D/key"
chown -R postgres:postgres "$D"
PORT=$((20000 + RANDOM % 10000))
trap 'stop_pg; rm -rf "$D"' EXIT

pg "$PG_BIN/initdb" -D "$D/data" -A trust >/dev/null
bench_server_conf "cp %p $D/segs/%f"
pg "$PG_BIN/pg_ctl" -D "$D/data" -l "$D/server.log" -w start >/dev/null
log "pgbench -i -s $SCALE"
pg "$PG_BIN/pgbench" -i -s "$SCALE" -q >/dev/null 2>&1
q "CHECKPOINT"

# timed LABEL COMMAND...: runs COMMAND as postgres; prints "LABEL wall user+sys"
timed() {
    local label=$1 out
    shift
    out=$( { TIMEFORMAT='%R %U %S'; time pg "$@" >/dev/null 2>"$D/err"; } 2>&1 ) ||
        { cat "$D/err" >&2; echo "encryption.sh: $label failed" >&2; exit 1; }
    set -- $out
    awk -v l="$label" -v w="$1" -v u="$2" -v s="$3" 'BEGIN { printf "%s %s %.3f\n", l, w, u + s }'
}

: >"$D/backups"
for r in $(seq "$ROUNDS"); do
    order="plain enc"
    [ $((r % 2)) -eq 0 ] && order="enc plain"
    for kind in $order; do
        k=()
        [ "$kind" = enc ] && k=(--encryption-key-file "$D/key")
        timed "backup-$kind" "$PGD" backup --repo "$D/repo_${kind}_$r" "${k[@]}" --pgdata "$D/data" \
            --compression lz4 --archive-check off --checkpoint fast | tee -a "$D/backups"
        rm -rf "$D/repo_${kind}_$r"
    done
done

log "WAL: $SEGMENTS segments"
bench_wal_segments "$SEGMENTS" || { echo "encryption.sh: segments were not archived" >&2; exit 1; }
mapfile -t SEGS < <(find "$D/segs" -type f -printf '%f\n' | sort | head -n "$SEGMENTS")
: >"$D/pushes"
i=0
for s in "${SEGS[@]}"; do
    i=$((i + 1))
    order="plain enc"
    [ $((i % 2)) -eq 0 ] && order="enc plain"
    for kind in $order; do
        k=()
        [ "$kind" = enc ] && k=(--encryption-key-file "$D/key")
        timed "push-$kind" "$PGD" wal-push --repo "$D/wal_$kind" "${k[@]}" --compression lz4 \
            "$D/segs/$s" >>"$D/pushes"
    done
done

python3 - "$D/backups" "$D/pushes" <<'PY'
import statistics, sys
def load(path):
    rows = {}
    for line in open(path):
        label, wall, cpu = line.split()
        rows.setdefault(label, []).append((float(wall), float(cpu)))
    return rows
b, p = load(sys.argv[1]), load(sys.argv[2])
med = lambda rows, i: statistics.median(r[i] for r in rows)
for kind in ("plain", "enc"):
    rows = b["backup-" + kind]
    print(f"backup {kind:5}: wall {med(rows, 0):7.2f} s  CPU {med(rows, 1):7.2f} s  (median of {len(rows)})")
print(f"backup encrypted/plain: CPU {med(b['backup-enc'], 1) / med(b['backup-plain'], 1):.3f}x, "
      f"wall {med(b['backup-enc'], 0) / med(b['backup-plain'], 0):.3f}x")
sums = {k: sum(r[1] for r in p["push-" + k]) for k in ("plain", "enc")}
n = len(p["push-plain"])
for k in ("plain", "enc"):
    print(f"wal-push {k:5}: CPU {sums[k] / n * 1000:7.1f} ms per segment ({n} segments)")
print(f"wal-push encrypted/plain: CPU {sums['enc'] / sums['plain']:.3f}x")
PY
