#!/usr/bin/env bash
# wal_push_pair.sh - the CPU of a wal-push, two builds side by side in one run:
#   bash bench/wal_push_pair.sh OLD_PGDIRECT [SEGMENTS]
# A throwaway PostgreSQL 15 cluster writes SEGMENTS (default 60) WAL segments of pgbench-like
# rows, archived by cp; each segment is then pushed, one process each as archive_command does,
# by OLD_PGDIRECT and by this tree's build (BUILD, default build), plain and encrypted, the
# order of the builds alternating from segment to segment. Prints the CPU (user + system) per
# segment of each, the new/old ratios, and checks that a segment fetched back is the one pushed.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
OLD=${1:?usage: wal_push_pair.sh OLD_PGDIRECT [SEGMENTS]}
SEGMENTS=${2:-60}
BUILD=${BUILD:-$ROOT/build}
PG_BIN=/usr/lib/postgresql/15/bin
PORT=$((20000 + RANDOM % 20000))
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"
bench_require wal_push_pair.sh "it runs PostgreSQL as postgres" pgdirect -- python3 bc

D=$(mktemp -d /tmp/pgdirect-walpair.XXXXXX)
trap 'stop_pg; rm -rf "$D"' EXIT
chmod 755 "$D"
mkdir -p "$D/segs" "$D/bin"
cp "$OLD" "$D/bin/old"
cp "$BUILD/pgdirect" "$D/bin/new"
head -c 32 /dev/urandom >"$D/key"
chmod 600 "$D/key"
chown -R postgres:postgres "$D"
pg "$PG_BIN/initdb" -D "$D/data" -U postgres -A trust >/dev/null
bench_server_conf "cp %p $D/segs/%f"
pg "$PG_BIN/pg_ctl" -D "$D/data" -l "$D/server.log" -w start >/dev/null
bench_wal_segments "$SEGMENTS" || { echo "wal_push_pair.sh: segments were not archived" >&2; exit 1; }
pg "$PG_BIN/pg_ctl" -D "$D/data" -m fast stop >/dev/null

: >"$D/pushes"
i=0
for s in $(find "$D/segs" -type f -printf '%f\n' | sort | head -n "$SEGMENTS"); do
    i=$((i + 1))
    order="old new"
    [ $((i % 2)) -eq 0 ] && order="new old"
    for b in $order; do
        for kind in plain enc; do
            k=()
            [ "$kind" = enc ] && k=(--encryption-key-file "$D/key")
            out=$( { TIMEFORMAT='%U %S'; time pg "$D/bin/$b" wal-push --repo "$D/wal_${b}_$kind" \
                "${k[@]}" --compression lz4 "$D/segs/$s" >/dev/null 2>"$D/err"; } 2>&1 ) ||
                { cat "$D/err" >&2; echo "wal_push_pair.sh: $b wal-push failed" >&2; exit 1; }
            echo "$b-$kind $(echo "$out" | awk '{print $1 + $2}')" >>"$D/pushes"
        done
    done
done
python3 - "$D/pushes" <<'PY'
import collections, sys
cpu, n = collections.defaultdict(float), collections.Counter()
for line in open(sys.argv[1]):
    label, c = line.split()
    cpu[label] += float(c)
    n[label] += 1
for label in sorted(cpu):
    print(f"{label:10} CPU {cpu[label] / n[label] * 1000:6.1f} ms per segment ({n[label]} segments)")
print(f"new/old: plain {cpu['new-plain'] / cpu['old-plain']:.3f}x, encrypted {cpu['new-enc'] / cpu['old-enc']:.3f}x; "
      f"encrypted/plain: new {cpu['new-enc'] / cpu['new-plain']:.3f}x, old {cpu['old-enc'] / cpu['old-plain']:.3f}x")
PY
s=$(find "$D/segs" -type f -printf '%f\n' | sort | head -1)
for kind in plain enc; do
    k=()
    [ "$kind" = enc ] && k=(--encryption-key-file "$D/key")
    pg "$D/bin/new" wal-fetch --repo "$D/wal_new_$kind" "${k[@]}" "$s" "$D/back_$kind"
    cmp -s "$D/segs/$s" "$D/back_$kind" ||
        { echo "wal_push_pair.sh: $s fetched back ($kind) differs" >&2; exit 1; }
done
echo "a segment fetched back from each repository of the new build equals the one pushed"
