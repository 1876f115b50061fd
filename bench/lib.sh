# bench/lib.sh - set-up the benchmarks share (sourced; needs $D, the
# benchmark's working directory, and $PORT, its server's port).

# bench_require SCRIPT WHY PROGRAM... [-- COMMAND...]: exits unless run as root
# (WHY says what for), every PROGRAM is built in $BUILD and every COMMAND is
# installed; each message names the script and what is missing.
bench_require() {
    local script=$1 why=$2 c
    shift 2
    [ "$(id -u)" -eq 0 ] || { echo "$script: run as root ($why)" >&2; exit 1; }
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        [ -x "$BUILD/$1" ] || { echo "$script: $BUILD/$1 is missing: run make first" >&2; exit 1; }
        shift
    done
    [ $# -eq 0 ] || shift
    for c in "$@"; do
        command -v "$c" >/dev/null || { echo "$script: $c is missing: run scripts/setup.sh" >&2; exit 1; }
    done
}

# bench_pgbackrest_conf: the peer every comparison runs against, set up the
# same way each time: pgBackRest with lz4, two processes (pgdirect's default
# parallelism), a local repository under $D, the cluster at $D/data reached
# through the socket in $D. Sets PGBR to the command with config and stanza.
bench_pgbackrest_conf() {
    cat >"$D/pgbackrest.conf" <<CONF
[global]
repo1-path=$D/repo_pgbackrest
compress-type=lz4
process-max=2
start-fast=y
log-level-console=warn
log-path=$D
lock-path=$D

[bench]
pg1-path=$D/data
pg1-socket-path=$D
pg1-port=$PORT
CONF
    chown postgres "$D/pgbackrest.conf"
    PGBR="pgbackrest --config=$D/pgbackrest.conf --stanza=bench"
}

# bench_server_conf ARCHIVE_COMMAND: the settings the benchmarks' cluster at
# $D/data runs with: reached only through the socket in $D, WAL archived by
# ARCHIVE_COMMAND, checkpoints spaced out and autovacuum off so that neither
# lands inside a measured backup.
bench_server_conf() {
    cat >>"$D/data/postgresql.conf" <<CONF
port = $PORT
listen_addresses = ''
unix_socket_directories = '$D'
shared_buffers = 128MB
wal_level = replica
archive_mode = on
archive_command = '$1'
max_wal_size = 4GB
autovacuum = off
CONF
}

# The helpers every benchmark's throwaway cluster uses: D (its directory, with the
# server's socket), PORT and PG_BIN are the calling script's, read when called.
log() { printf '[%s] %s\n' "$(date -u +%T)" "$*" >&2; }
pg() { runuser -u postgres -- env PGHOST="$D" PGPORT="$PORT" PGUSER=postgres PGDATABASE=postgres "$@"; }
q() { pg "$PG_BIN/psql" -X -Atq -v ON_ERROR_STOP=1 -c "$1"; }
stop_pg() { [ -f "$D/data/postmaster.pid" ] && pg "$PG_BIN/pg_ctl" -D "$D/data" -m fast -w stop >/dev/null 2>&1 || true; }

# bench_wal_segments N: the server at $D writes N full WAL segments of md5 rows (archived into
# $D/segs by the archive_command bench_server_conf was given), and this waits, at most 300 s,
# until all N are there; false, saying how many came, when they do not.
bench_wal_segments() {
    local n=$1 have deadline=$((SECONDS + 300))
    q "CREATE TABLE bench_wal (a int, b text)"
    for _ in $(seq "$n"); do
        q "INSERT INTO bench_wal SELECT g, md5(g::text) FROM generate_series(1, 100000) g"
        q "SELECT pg_switch_wal()" >/dev/null
    done
    until have=$(find "$D/segs" -type f | wc -l); [ "$have" -ge "$n" ]; do
        [ $SECONDS -lt $deadline ] || { echo "only $have of $n WAL segments were archived" >&2; return 1; }
        sleep 0.2
    done
}
