/*
 * scratch_server.h - a PostgreSQL server started on a restored data directory for a restore
 * drill: reachable only through a Unix socket in a directory of its own (listen_addresses = ''),
 * on a port no server here uses, recovering with the settings restore wrote, and stopped (fast)
 * when the drill is done. It never touches another cluster: nothing but its data directory,
 * its socket directory and its log are written.
 *
 * Settings given on its command line, over what the backup's postgresql.conf says:
 * listen_addresses, unix_socket_directories, port, an hba_file of one "local all all trust" line
 * (the socket directory is 0700: only its owner reaches it), archive_mode = off,
 * synchronous_standby_names = '' (a commit would wait for a standby that is not there),
 * hot_standby = on (connections from consistency on), a small shared_buffers, no SSL.
 */
#ifndef PGD_SCRATCH_SERVER_H
#define PGD_SCRATCH_SERVER_H

#include <libpq-fe.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/error.h"

typedef struct scratch_server {
    char bindir[PATH_MAX];  /* postgres of the backup's major version */
    char datadir[PATH_MAX]; /* the restored data directory */
    char sockdir[PATH_MAX]; /* the socket, the hba file, the log */
    char log[PATH_MAX];
    int port;
    uint64_t shared_buffers; /* bytes */
    bool switch_user;        /* run as uid/gid (pgdirect runs as root) */
    uid_t uid;
    gid_t gid;
    const char *cgroup; /* memory cgroup the server goes into, or NULL */
    pid_t pid;          /* the postmaster, 0 when not running */
    int exit_status;    /* once it ended by itself: its wait status */
} scratch_server;

/*
 * A port for the server: one no socket in the usual places (/var/run/postgresql, /tmp) and no
 * TCP listener on 127.0.0.1 uses, and never `avoid` (the production cluster's, or 0).
 */
bool scratch_server_pick_port(int avoid, int *port, pgd_error *err);

/* Write its hba file into sockdir and start the postmaster; it is not waited for. */
bool scratch_server_start(scratch_server *s, pgd_error *err);

/*
 * Wait until the server accepts connections (consistent: *consistent_at, clock_seconds) and
 * then until recovery has ended (*ready_at). A server that exits on the way fails with the
 * last FATAL or PANIC line of its log, marked PGD_ERR_DAMAGED (recovery could not reach
 * consistency or the target: the backup, with its WAL, does not restore). `cancel` (may be
 * NULL) stops the wait when it becomes non-zero.
 */
bool scratch_server_wait_ready(scratch_server *s, const volatile sig_atomic_t *cancel,
                               double *consistent_at, double *ready_at, pgd_error *err);

/* A connection to database `dbname` of the server; NULL with err on failure. */
PGconn *scratch_server_connect(const scratch_server *s, const char *dbname, pgd_error *err);

/* Stop it (fast shutdown, then immediate after a while) and wait until it has exited. */
bool scratch_server_stop(scratch_server *s, pgd_error *err);

/* The last `lines` lines of the server's log, as info messages (a drill that failed). */
void scratch_server_log_tail(const scratch_server *s, size_t lines);

#endif
