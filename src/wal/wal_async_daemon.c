/*
 * wal_async_daemon.c - how wal-push --archive-async and wal-fetch
 * --prefetch start their background process, and the log that process
 * writes.
 *
 * A background process is started by the command PostgreSQL runs: fork,
 * setsid, fork again (so it is nobody's child and no terminal's), close
 * every inherited descriptor (PostgreSQL's included), take the spool's
 * lock, put stdout and stderr on the spool's log, then tell the command
 * through a pipe whether it took the lock or found another process holding
 * it. The lock dies with the process, however it dies: the next command
 * that finds it free starts a new one. Nothing waits for it; it stops by
 * itself once it has had nothing to do for a while.
 */
#define _GNU_SOURCE
#include "wal/wal_async.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "wal/wal_async_internal.h"

/* A background process that has neither taken nor found the lock by then is not coming. */
#define WAL_SPAWN_HANDSHAKE_MS (30 * 1000)
#define WAL_LOG_OLD_NAME       "log.old"

/* What the background process tells the command that started it (first byte on the pipe). */
#define SPAWN_STARTED 'S' /* took the lock: it is running */
#define SPAWN_BUSY    'B' /* another process holds the lock */
#define SPAWN_FAILED  'F' /* could not start; a message follows */

/* Open the spool's log for appending; rotate it first when it has grown past its bound. */
static bool wal_async_daemon_log_open(const char *dir, int *fd, pgd_error *err)
{
    char path[WAL_SPOOL_PATH_MAX + 16], old[WAL_SPOOL_PATH_MAX + 16];
    struct stat st;
    int rotate_errno = 0;

    snprintf(path, sizeof(path), "%s/" WAL_LOG_NAME, dir);
    snprintf(old, sizeof(old), "%s/" WAL_LOG_OLD_NAME, dir);
    if (stat(path, &st) == 0 && st.st_size > WAL_SPOOL_LOG_MAX && rename(path, old) != 0)
        rotate_errno = errno;
    *fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (*fd < 0)
        return err_errno(err, errno, "could not open log file \"%s\"", path);
    /* said where someone looking for the cause will read: the log that keeps growing */
    if (rotate_errno != 0)
        dprintf(*fd, "pgdirect: warning: could not rename log file \"%s\" to \"%s\": %s\n", path,
                old, strerror(rotate_errno));
    return true;
}

static void wal_async_daemon_log_tick(void *arg)
{
    const char *dir = arg;
    struct stat st;
    pgd_error err = {0};
    int fd;

    if (fstat(STDERR_FILENO, &st) != 0 || st.st_size <= WAL_SPOOL_LOG_MAX)
        return;
    if (!wal_async_daemon_log_open(dir, &fd, &err))
        return;
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    close(fd);
}

wal_daemon_hooks wal_async_daemon_hooks(const wal_async_env *env, const char *dir)
{
    return (wal_daemon_hooks){.open_repo = env->open_repo,
                              .open_arg = env->open_arg,
                              .settings = env->settings,
                              .tick = wal_async_daemon_log_tick,
                              .tick_arg = (void *)dir};
}

void wal_async_daemon_when(char *out, size_t outlen)
{
    time_t now = time(NULL);
    struct tm tm;

    strftime(out, outlen, "%Y-%m-%d %H:%M:%S %Z", localtime_r(&now, &tm));
}

static void wal_async_daemon_handshake_fail(int fd, const char *msg)
{
    char buf[PGD_ERROR_MAX + 1];
    int len = snprintf(buf, sizeof(buf), "%c%s", SPAWN_FAILED, msg);

    if (write(fd, buf, (size_t)(len < (int)sizeof(buf) ? len : (int)sizeof(buf) - 1)) < 0)
        _exit(1);
    _exit(0);
}

/*
 * In the new background process: leave everything of the caller's behind,
 * take the lock, move stdio to the log. Exits when the lock is busy or
 * anything fails (the pipe says which); returns holding the lock.
 */
static void wal_async_daemon_become(const char *dir, int report, int *lock_fd)
{
    pgd_error err = {0};
    sigset_t all;
    bool busy;
    int log_fd, null_fd;

    if (report > STDERR_FILENO + 1)
        close_range(STDERR_FILENO + 1, (unsigned)report - 1, 0);
    close_range((unsigned)report + 1, ~0U, 0);
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGQUIT, SIG_DFL);
    if (chdir("/") != 0)
        wal_async_daemon_handshake_fail(report, "could not change to directory \"/\"");
    if (!wal_spool_lock_take(dir, lock_fd, &busy, &err))
        wal_async_daemon_handshake_fail(report, err.msg);
    if (busy) {
        char b = SPAWN_BUSY;
        if (write(report, &b, 1) < 0)
            _exit(1);
        _exit(0);
    }
    if (!wal_async_daemon_log_open(dir, &log_fd, &err))
        wal_async_daemon_handshake_fail(report, err.msg);
    null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0 || dup2(log_fd, STDOUT_FILENO) < 0 ||
        dup2(log_fd, STDERR_FILENO) < 0)
        wal_async_daemon_handshake_fail(report, "could not redirect standard input and output");
    close(null_fd);
    close(log_fd);
    {
        char s = SPAWN_STARTED;
        if (write(report, &s, 1) < 0)
            _exit(1);
    }
    close(report);
}

bool wal_async_daemon_spawn(const char *dir, bool *started, bool *daemon, int *lock_fd,
                            pgd_error *err)
{
    char msg[PGD_ERROR_MAX + 1];
    struct pollfd pfd;
    int pipefd[2], status;
    ssize_t n;
    pid_t pid;

    *started = *daemon = false;
    if (pipe2(pipefd, O_CLOEXEC) != 0)
        return err_errno(err, errno, "could not create a pipe");
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid < 0) {
        int e = errno;
        close(pipefd[0]);
        close(pipefd[1]);
        return err_errno(err, e, "could not start a background process");
    }
    if (pid == 0) {
        close(pipefd[0]);
        if (setsid() < 0)
            wal_async_daemon_handshake_fail(pipefd[1], "could not start a new session");
        pid = fork();
        if (pid != 0) {
            if (pid < 0)
                wal_async_daemon_handshake_fail(pipefd[1], "could not fork");
            _exit(0);
        }
        wal_async_daemon_become(dir, pipefd[1], lock_fd);
        *daemon = true;
        return true;
    }
    close(pipefd[1]);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    pfd.fd = pipefd[0];
    pfd.events = POLLIN;
    if (poll(&pfd, 1, WAL_SPAWN_HANDSHAKE_MS) <= 0) {
        close(pipefd[0]);
        return err_set(err, "the background process for \"%s\" did not start within %d s", dir,
                       WAL_SPAWN_HANDSHAKE_MS / 1000);
    }
    n = read(pipefd[0], msg, sizeof(msg) - 1);
    close(pipefd[0]);
    if (n <= 0)
        return err_set(err, "the background process for \"%s\" died as it started", dir);
    msg[n] = '\0';
    if (msg[0] == SPAWN_FAILED)
        return err_set(err, "could not start the background process for \"%s\": %s", dir, msg + 1);
    *started = msg[0] == SPAWN_STARTED;
    return true;
}
