# bench/lib.sh - set-up the benchmarks share (sourced; needs $D, the
# benchmark's working directory, and $PORT, its server's port).

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
