#!/usr/bin/env bash
# wal_fetch_cost.sh - what one plain `wal-fetch` from S3 costs (what restore_command pays per
# segment without --prefetch), this build against OLD_BIN, side by side in one run:
#   OLD_BIN=PGDIRECT bash bench/wal_fetch_cost.sh [SEGMENTS] [ROUNDS]
# A throwaway PostgreSQL 15 cluster makes SEGMENTS (default 10) WAL segments; each build pushes
# them to the tests' S3 server on 127.0.0.1 (moto with IAM auth, as tests/integration/lib_s3.sh
# starts it), under a prefix of its own: a build fetches the objects it writes. Each round
# fetches all of them one at a time with each build, the order of the
# two builds alternating from round to round (default 10 rounds), and times the loop: wall,
# the CPU of the wal-fetch processes (user + system), the CPU of the S3 server and the
# requests it answered (moto's request log). Prints each round, the medians and the ratios.
# OP=push times plain wal-push (archive_command without --archive-async) instead: each round
# pushes all the segments into a new prefix of the bucket with each build. COMPRESSION: of the
# pushes (default lz4; none stores 16 MiB objects, two 8 MiB ranges to read back). Without OLD_BIN, this build alone. BUILD: the build directory (default build).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
SEGMENTS=${1:-10}
ROUNDS=${2:-10}
OP=${OP:-fetch}
COMPRESSION=${COMPRESSION:-lz4}
case "$OP" in fetch | push) ;; *) echo "wal_fetch_cost.sh: OP=$OP: expected fetch or push" >&2; exit 1 ;; esac
OLD_BIN=${OLD_BIN:-}
BUILD=${BUILD:-$ROOT/build}
PG_BIN=/usr/lib/postgresql/15/bin
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"
bench_require wal_fetch_cost.sh "it runs PostgreSQL as postgres" pgdirect
[ -z "$OLD_BIN" ] || [ -x "$OLD_BIN" ] || { echo "wal_fetch_cost.sh: OLD_BIN $OLD_BIN is not executable" >&2; exit 1; }

D=$(mktemp -d /tmp/pgdirect-fetchcost.XXXXXX)
chmod 755 "$D"; mkdir -p "$D/bin" "$D/segs" "$D/out"
cp "$BUILD/pgdirect" "$D/bin/new"
[ -z "$OLD_BIN" ] || cp "$OLD_BIN" "$D/bin/old"
chown -R postgres:postgres "$D"
PORT=$((20000 + RANDOM % 10000))
# the tests' S3 server (lib_s3.sh wants T, bail and free_port); it exports the AWS_* variables
# shellcheck disable=SC2034 # T: read by lib_s3.sh
T=$D
bail() { echo "wal_fetch_cost.sh: $*" >&2; exit 1; }
free_port() { echo $((30000 + RANDOM % 10000)); }
# shellcheck source=tests/integration/lib_s3.sh
. "$ROOT/tests/integration/lib_s3.sh"
pg() { runuser -u postgres -- env PGHOST="$D" PGPORT="$PORT" PGUSER=postgres PGDATABASE=postgres "$@"; }
q() { pg "$PG_BIN/psql" -XAtq -v ON_ERROR_STOP=1 -c "$1"; }
cleanup() {
    pg "$PG_BIN/pg_ctl" -D "$D/data" -m immediate stop >/dev/null 2>&1 || true
    s3_stop
    rm -rf "$D"
}
trap cleanup EXIT
s3_start
REPO=s3://$S3_BUCKET/fetchcost

# SEGMENTS full segments, each archived by cp as the server closes it
pg "$PG_BIN/initdb" -D "$D/data" -A trust >/dev/null
bench_server_conf "cp %p $D/segs/%f"
pg "$PG_BIN/pg_ctl" -D "$D/data" -l "$D/server.log" -w start >/dev/null
bench_wal_segments "$SEGMENTS" || bail "the segments were not archived"
mapfile -t SEGS < <(find "$D/segs" -type f -printf '%f\n' | sort | head -n "$SEGMENTS")
BUILDS=(new)
[ -z "$OLD_BIN" ] || BUILDS=(new old)
# each build fetches what it pushed itself: the objects' format is part of what a fetch costs
for b in "${BUILDS[@]}"; do
    for s in "${SEGS[@]}"; do
        "$D/bin/$b" wal-push --repo "$REPO-$b" --compression "$COMPRESSION" "$D/segs/$s" ||
            bail "wal-push of $s with the $b build failed"
    done
done

# cpu_ms FILE: the CPU time (user + system) of the finished children in FILE, `times`'s output
# written by this shell itself (in a pipeline or $(...) it would be a subshell's), in ms
cpu_ms() {
    tail -1 "$1" | awk '{ for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] }
                          printf "%d", t * 1000 }'
}
# fetch_all BUILD: fetch (OP=push: push) every segment, one process at a time, each checked
# against the source; sets WALL_MS, CPU_MS, SERVER_MS and REQUESTS
# the S3 server's CPU time in ms, and how many requests it has logged
server_ms() { sed 's/.*) //' "/proc/$S3_PID/stat" | awk -v hz="$(getconf CLK_TCK)" '{printf "%d", ($12 + $13) * 1000 / hz}'; }
requests() { if [ -n "${S3_LOG:-}" ] && [ -f "$S3_LOG" ]; then wc -l <"$S3_LOG"; else echo 0; fi; }
fetch_all() {
    local t0 t1 s s0 n0
    s0=$(server_ms) n0=$(requests)
    times >"$D/times0"
    t0=$(date +%s%N)
    if [ "$OP" = push ]; then
        PUSHES=$((PUSHES + 1))
        for s in "${SEGS[@]}"; do
            "$D/bin/$1" wal-push --repo "$REPO-push$PUSHES" --compression "$COMPRESSION" "$D/segs/$s" || bail "wal-push of $s with $1 failed"
        done
    else
        for s in "${SEGS[@]}"; do
            "$D/bin/$1" wal-fetch --repo "$REPO-$1" "$s" "$D/out/$s" || bail "wal-fetch of $s with $1 failed"
        done
    fi
    t1=$(date +%s%N)
    times >"$D/times1"
    SERVER_MS=$(($(server_ms) - s0)) REQUESTS=$(($(requests) - n0)) # before the check below asks too
    for s in "${SEGS[@]}"; do
        if [ "$OP" = push ]; then # what was pushed, fetched back by this build
            "$D/bin/new" wal-fetch --repo "$REPO-push$PUSHES" "$s" "$D/out/$s" ||
                bail "wal-fetch of $s pushed by $1 failed"
        fi
        cmp -s "$D/out/$s" "$D/segs/$s" || bail "wal-$OP of $s with $1: other bytes"
        rm -f "$D/out/$s"
    done
    WALL_MS=$(((t1 - t0) / 1000000)) CPU_MS=$(($(cpu_ms "$D/times1") - $(cpu_ms "$D/times0")))
}

: >"$D/rounds"
PUSHES=0
echo "# plain wal-$OP of $SEGMENTS segments ($COMPRESSION), $S3_SERVER on 127.0.0.1, one process each, $ROUNDS rounds"
for r in $(seq "$ROUNDS"); do
    order=("${BUILDS[@]}")
    [ $((r % 2)) -eq 0 ] && [ ${#BUILDS[@]} -eq 2 ] && order=(old new)
    line="round $r:"
    for b in "${order[@]}"; do
        fetch_all "$b"
        echo "$b $WALL_MS $CPU_MS $SERVER_MS $REQUESTS" >>"$D/rounds"
        line="$line $b ${WALL_MS} ms wall, ${CPU_MS} ms CPU, server ${SERVER_MS} ms CPU and $REQUESTS requests;"
    done
    echo "$line"
done
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
for b in "${BUILDS[@]}"; do
    w=$(awk -v b="$b" '$1 == b { print $2 }' "$D/rounds" | median)
    c=$(awk -v b="$b" '$1 == b { print $3 }' "$D/rounds" | median)
    sv=$(awk -v b="$b" '$1 == b { print $4 }' "$D/rounds" | median)
    n=$(awk -v b="$b" '$1 == b { print $5 }' "$D/rounds" | median)
    printf '%s: median per segment %.1f ms wall, %.1f ms CPU, S3 server %.1f ms CPU and %.1f requests\n' "$b" \
        "$(echo "$w / $SEGMENTS" | bc -l)" "$(echo "$c / $SEGMENTS" | bc -l)" "$(echo "$sv / $SEGMENTS" | bc -l)" "$(echo "$n / $SEGMENTS" | bc -l)"
    eval "W_$b=$w C_$b=$c S_$b=$sv"
done
if [ -n "$OLD_BIN" ]; then
    # shellcheck disable=SC2154 # W_new, C_new, S_new, W_old, C_old, S_old: set by the eval above
    printf 'new / old (medians): wall %.2fx, CPU %.2fx, S3 server CPU %.2fx\n' "$(echo "$W_new / $W_old" | bc -l)" \
        "$(echo "$C_new / $C_old" | bc -l)" "$(echo "$S_new / $S_old" | bc -l)"
fi
