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
