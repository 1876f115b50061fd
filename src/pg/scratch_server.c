/*
 * scratch_server.c - a PostgreSQL server on a restored data directory, for a restore drill
 * (scratch_server.h).
 */
#define _GNU_SOURCE
#include "pg/scratch_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pg/pq_api.h"
#include "util/log.h"
#include "util/progress.h"
#include "util/text.h"
#include "util/xmalloc.h"

#define SCRATCH_SERVER_HBA "pg_hba.drill.conf"
#define SCRATCH_SERVER_PORT_LO                                                                     \
    54400 /* above the 5432 of most clusters, below the ephemeral range */
#define SCRATCH_SERVER_PORT_SPAN  8000
#define SCRATCH_SERVER_PORT_TRIES 200
#define SCRATCH_SERVER_POLL_US    100000 /* how often the wait asks the server */
/* a fast shutdown ends sessions and writes a checkpoint: give it this long, then immediate */
#define SCRATCH_SERVER_FAST_WAIT 120.0
#define SCRATCH_SERVER_LINE_MAX  1024

static bool scratch_server_port_in_use(int port)
{
    static const char *const dirs[] = {"/var/run/postgresql", "/run/postgresql", "/tmp"};
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    char path[128];
    int fd, rc;

    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        snprintf(path, sizeof(path), "%s/.s.PGSQL.%d", dirs[i], port);
        if (access(path, F_OK) == 0)
            return true;
    }
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
        return true;
    rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
    close(fd);
    return rc == 0;
}

bool scratch_server_pick_port(int avoid, int *port, pgd_error *err)
{
    unsigned seed = (unsigned)getpid() ^ (unsigned)time(NULL);

    for (int i = 0; i < SCRATCH_SERVER_PORT_TRIES; i++) {
        int p = SCRATCH_SERVER_PORT_LO + (int)(rand_r(&seed) % SCRATCH_SERVER_PORT_SPAN);
        if (p != avoid && !scratch_server_port_in_use(p)) {
            *port = p;
            return true;
        }
    }
    return err_set(err, "no free port for the scratch server between %d and %d",
                   SCRATCH_SERVER_PORT_LO, SCRATCH_SERVER_PORT_LO + SCRATCH_SERVER_PORT_SPAN - 1);
}

static bool scratch_server_write_hba(const scratch_server *s, char *path, size_t len,
                                     pgd_error *err)
{
    static const char hba[] = "# written by pgdirect drill: the socket directory is 0700\n"
                              "local all all trust\n";
    int fd;

    if (!str_format(path, len, "%s/" SCRATCH_SERVER_HBA, s->sockdir))
        return err_set(err, "scratch directory path too long: \"%s\"", s->sockdir);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return err_errno(err, errno, "could not create file \"%s\"", path);
    if (write(fd, hba, sizeof(hba) - 1) != (ssize_t)(sizeof(hba) - 1) || close(fd) != 0)
        return err_errno(err, errno, "could not write file \"%s\"", path);
    if (s->switch_user && chown(path, s->uid, s->gid) != 0)
        return err_errno(err, errno, "could not give file \"%s\" to user %u", path,
                         (unsigned)s->uid);
    return true;
}

/* In the child, between fork and exec: only async-signal-safe calls; on failure, _exit(127). */
static void scratch_server_child(const scratch_server *s, char *const argv[], int logfd)
{
    char pid[32];
    int n;

    if (s->cgroup != NULL) {
        char path[PATH_MAX + 32];
        int fd;
        n = snprintf(path, sizeof(path), "%s/cgroup.procs", s->cgroup);
        fd = n > 0 && (size_t)n < sizeof(path) ? open(path, O_WRONLY) : -1;
        n = snprintf(pid, sizeof(pid), "%ld", (long)getpid());
        if (fd < 0 || write(fd, pid, (size_t)n) != n)
            _exit(126);
        close(fd);
    }
    if (dup2(logfd, STDOUT_FILENO) < 0 || dup2(logfd, STDERR_FILENO) < 0)
        _exit(127);
    if (s->switch_user && (setgroups(0, NULL) != 0 || setgid(s->gid) != 0 || setuid(s->uid) != 0))
        _exit(127);
    /* a drill killed by SIGKILL takes its server with it (immediate shutdown); after setuid,
       which clears it */
    if (prctl(PR_SET_PDEATHSIG, SIGQUIT) != 0 || getppid() == 1)
        _exit(127);
    execv(argv[0], argv);
    _exit(127);
}

bool scratch_server_start(scratch_server *s, pgd_error *err)
{
    char hba[PATH_MAX], postgres[PATH_MAX], port[16], sb[64];
    char *opt[16];
    char *argv[40];
    size_t n = 0, k = 0;
    int logfd;
    pid_t pid;

    s->pid = 0;
    s->exit_status = 0;
    if (!scratch_server_write_hba(s, hba, sizeof(hba), err))
        return false;
    if (!str_format(postgres, sizeof(postgres), "%s/postgres", s->bindir) ||
        access(postgres, X_OK) != 0)
        return err_set(err,
                       "no PostgreSQL server program \"%s\" (give --pg-bin, the directory "
                       "of postgres of the backup's major version)",
                       postgres);
    if (!str_format(s->log, sizeof(s->log), "%s/server.log", s->sockdir))
        return err_set(err, "scratch directory path too long: \"%s\"", s->sockdir);
    logfd = open(s->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (logfd < 0)
        return err_errno(err, errno, "could not create file \"%s\"", s->log);
    if (s->switch_user && fchown(logfd, s->uid, s->gid) != 0) {
        int e = errno;
        close(logfd);
        return err_errno(err, e, "could not give file \"%s\" to user %u", s->log, (unsigned)s->uid);
    }
    snprintf(port, sizeof(port), "%d", s->port);
    snprintf(sb, sizeof(sb), "shared_buffers=%" PRIu64 "kB", s->shared_buffers / 1024);
    opt[k++] = xstrdup("listen_addresses=");
    opt[k++] = xasprintf("unix_socket_directories=%s", s->sockdir);
    opt[k++] = xasprintf("hba_file=%s", hba);
    opt[k++] = xstrdup("archive_mode=off");
    opt[k++] = xstrdup("synchronous_standby_names=");
    opt[k++] = xstrdup("hot_standby=on");
    opt[k++] = xstrdup("ssl=off");
    opt[k++] = xstrdup(sb);
    opt[k++] = xstrdup("logging_collector=off");
    opt[k++] = xstrdup("log_destination=stderr");
    opt[k++] = xstrdup("cluster_name=pgdirect-drill");
    argv[n++] = postgres;
    argv[n++] = (char *)"-D";
    argv[n++] = s->datadir;
    argv[n++] = (char *)"-p";
    argv[n++] = port;
    for (size_t i = 0; i < k; i++) {
        argv[n++] = (char *)"-c";
        argv[n++] = opt[i];
    }
    argv[n] = NULL;
    pid = fork();
    if (pid == 0)
        scratch_server_child(s, argv, logfd);
    close(logfd);
    for (size_t i = 0; i < k; i++)
        free(opt[i]);
    if (pid < 0)
        return err_errno(err, errno, "could not start the scratch server");
    s->pid = pid;
    return true;
}

void scratch_server_log_tail(const scratch_server *s, size_t lines)
{
    FILE *f = fopen(s->log, "r");
    char(*ring)[SCRATCH_SERVER_LINE_MAX];
    size_t n = 0;

    if (f == NULL || lines == 0) {
        if (f != NULL)
            fclose(f);
        return;
    }
    ring = xcalloc(lines, sizeof(*ring));
    while (fgets(ring[n % lines], SCRATCH_SERVER_LINE_MAX, f) != NULL)
        n++;
    fclose(f);
    for (size_t i = n > lines ? n - lines : 0; i < n; i++) {
        char *line = ring[i % lines];
        line[strcspn(line, "\n")] = '\0';
        log_info("scratch server log: %s", line);
    }
    free(ring);
}

/*
 * The server's own refusals of the drill's connection attempts while it starts ("the database
 * system is starting up", "... is not yet accepting connections"): not why it ended.
 */
static bool scratch_server_refusal(const char *fatal)
{
    return strstr(fatal, "the database system is ") != NULL;
}

/*
 * Lines the startup process writes when it begins (PostgreSQL 14 to 18): a server whose log has
 * one got as far as recovery, and a FATAL after it is recovery's verdict on the data.
 */
static bool scratch_server_recovery_line(const char *line)
{
    return strstr(line, "database system was interrupted") != NULL ||
           strstr(line, "starting archive recovery") != NULL ||
           strstr(line, "starting point-in-time recovery") != NULL ||
           strstr(line, "starting backup recovery") != NULL;
}

/* The last FATAL or PANIC (not a refusal), and whether recovery had begun. */
static void scratch_server_scan_log(const scratch_server *s, char *out, size_t outlen,
                                    bool *recovery)
{
    FILE *f = fopen(s->log, "r");
    char line[SCRATCH_SERVER_LINE_MAX];

    out[0] = '\0';
    *recovery = false;
    if (f == NULL)
        return;
    while (fgets(line, sizeof(line), f) != NULL) {
        char *at = strstr(line, "FATAL:  ");
        if (at == NULL)
            at = strstr(line, "PANIC:  ");
        *recovery = *recovery || scratch_server_recovery_line(line);
        if (at != NULL && !scratch_server_refusal(at)) {
            at[strcspn(at, "\n")] = '\0';
            str_format(out, outlen, "%s", at);
        }
    }
    fclose(f);
}

/* Whether the postmaster has exited (reaped: s->pid becomes 0). */
static bool scratch_server_exited(scratch_server *s)
{
    int status;

    if (s->pid == 0)
        return true;
    if (waitpid(s->pid, &status, WNOHANG) != s->pid)
        return false;
    s->exit_status = status;
    s->pid = 0;
    return true;
}

PGconn *scratch_server_connect(const scratch_server *s, const char *dbname, pgd_error *err)
{
    char port[16];
    struct passwd *pw = getpwuid(s->switch_user ? s->uid : geteuid());
    const char *keys[] = {"host", "port", "dbname", "user", "connect_timeout", "application_name",
                          NULL};
    const char *values[] = {
        s->sockdir,       port, dbname, pw != NULL ? pw->pw_name : "postgres", "10",
        "pgdirect drill", NULL};
    PGconn *conn;

    if (!pq_api_load(err))
        return NULL;
    snprintf(port, sizeof(port), "%d", s->port);
    conn = PQconnectdbParams(keys, values, 0);
    if (conn != NULL && PQstatus(conn) == CONNECTION_OK)
        return conn;
    /* initdb names the bootstrap superuser after the OS user, unless -U: postgres, most often */
    if (conn != NULL && strstr(PQerrorMessage(conn), "does not exist") != NULL &&
        strcmp(values[3], "postgres") != 0) {
        PQfinish(conn);
        values[3] = "postgres";
        conn = PQconnectdbParams(keys, values, 0);
        if (conn != NULL && PQstatus(conn) == CONNECTION_OK)
            return conn;
    }
    if (conn == NULL)
        err_set(err, "could not connect to the scratch server (socket in \"%s\")", s->sockdir);
    else
        err_set(err, "could not connect to the scratch server (socket in \"%s\"): %.*s", s->sockdir,
                (int)strcspn(PQerrorMessage(conn), "\n"), PQerrorMessage(conn));
    PQfinish(conn);
    return NULL;
}

/* One value of a query, or false (no row, an error). */
static bool scratch_server_query_bool(PGconn *conn, const char *sql, bool *out)
{
    PGresult *r = PQexec(conn, sql);
    bool ok = r != NULL && PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;

    if (ok)
        *out = strcmp(PQgetvalue(r, 0, 0), "t") == 0;
    PQclear(r);
    return ok;
}

static bool scratch_server_died(scratch_server *s, pgd_error *err)
{
    char fatal[SCRATCH_SERVER_LINE_MAX];
    bool recovery;

    scratch_server_scan_log(s, fatal, sizeof(fatal), &recovery);
    err_set(err, "the scratch server exited %s: %s", recovery ? "during recovery" : "as it started",
            fatal[0] ? fatal : "no FATAL line in its log");
    /* a server that could not start (its program, a permission, shared memory, a setting) is no
       verdict on the data; one whose recovery ended in FATAL is */
    if (recovery && fatal[0] != '\0')
        err_mark(err, PGD_ERR_DAMAGED);
    return false;
}

bool scratch_server_wait_ready(scratch_server *s, const volatile sig_atomic_t *cancel,
                               double *consistent_at, double *ready_at, pgd_error *err)
{
    PGconn *conn = NULL;
    bool in_recovery = true;

    *consistent_at = *ready_at = 0;
    while (in_recovery) {
        if (cancel != NULL && *cancel)
            break;
        if (scratch_server_exited(s)) {
            PQfinish(conn);
            return scratch_server_died(s, err);
        }
        if (conn == NULL) {
            pgd_error ignored = {0};
            conn = scratch_server_connect(s, "postgres", &ignored);
            if (conn != NULL && *consistent_at == 0)
                *consistent_at = clock_seconds();
        }
        if (conn != NULL &&
            !scratch_server_query_bool(conn, "SELECT pg_is_in_recovery()", &in_recovery)) {
            PQfinish(conn); /* the server may be going down: ask again */
            conn = NULL;
        }
        if (in_recovery)
            usleep(SCRATCH_SERVER_POLL_US);
    }
    PQfinish(conn);
    if (in_recovery)
        return err_set(err, "interrupted while the scratch server recovered");
    *ready_at = clock_seconds();
    return true;
}

bool scratch_server_stop(scratch_server *s, pgd_error *err)
{
    double t0 = clock_seconds();
    int sig = SIGINT; /* fast shutdown */

    if (s->pid == 0)
        return true;
    if (kill(s->pid, sig) != 0 && errno != ESRCH)
        return err_errno(err, errno, "could not stop the scratch server (pid %ld)", (long)s->pid);
    while (!scratch_server_exited(s)) {
        if (sig == SIGINT && clock_seconds() - t0 > SCRATCH_SERVER_FAST_WAIT) {
            sig = SIGQUIT; /* immediate shutdown */
            kill(s->pid, sig);
        }
        usleep(SCRATCH_SERVER_POLL_US / 2);
    }
    return true;
}
