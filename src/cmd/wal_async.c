/*
 * wal_async.c - the foreground of wal-push --archive-async and wal-fetch
 * --prefetch, and how their background processes are started.
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
#include "cmd/wal_async.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/common.h"
#include "pg/wal_segment.h"
#include "repo/wal_prefetch.h"
#include "repo/wal_pusher.h"
#include "repo/wal_spool.h"
#include "util/crc32c.h"
#include "util/log.h"

/*
 * A pusher stays this long after its last push: PostgreSQL calls
 * archive_command as soon as a segment is ready, and a pusher that is
 * already running starts on it before that call.
 */
#define WAL_PUSHER_IDLE_EXIT_S 30
/* A fetcher stays this long after the last request (a segment replayed in that time). */
#define WAL_FETCHER_IDLE_EXIT_S 60
/* A background process that has neither taken nor found the lock by then is not coming. */
#define WAL_SPAWN_HANDSHAKE_MS (30 * 1000)
/*
 * wal-push starts the pusher again when it dies while waiting; after this
 * many starts without a record of its file, it pushes the file itself.
 */
#define WAL_PUSHER_STARTS_MAX 2
/*
 * How long wal-fetch waits for a download of its segment that the fetcher
 * has started, before fetching it itself; a download that takes longer is
 * slow in a way a second one would not fix.
 */
#define WAL_PREFETCH_WAIT_S 60
/*
 * A waiting command looks again after 2 ms, then ever less often up to
 * every 20 ms: a record or a download is seen within a few ms of its
 * arrival, at the cost of a few dozen cheap looks a second.
 */
#define WAL_POLL_MIN_MS  2
#define WAL_POLL_MAX_MS  20
#define WAL_SUM_CHUNK    (1024 * 1024)
#define WAL_LOG_NAME     "log"
#define WAL_LOG_OLD_NAME "log.old"
#define WAL_REPO_ID_MAX  2048
/* --archive-push-concurrency: a bound that keeps a typo from opening hundreds of uploads */
#define WAL_PUSH_CONCURRENCY_MAX 64
/* --archive-timeout: a day; PostgreSQL retries a failed archive_command anyway */
#define WAL_ARCHIVE_TIMEOUT_MAX_S 86400
/* the settings fingerprint: 16 hex digits and a terminator, with room */
#define WAL_SETTINGS_LEN 32
/* "2026-11-30 19:31:21 UTC" with room */
#define WAL_WHEN_LEN 64
/* why a prefetched file was not served: one short clause */
#define WAL_WHY_LEN 256

/* What the background process tells the command that started it (first byte on the pipe). */
#define SPAWN_STARTED 'S' /* took the lock: it is running */
#define SPAWN_BUSY    'B' /* another process holds the lock */
#define SPAWN_FAILED  'F' /* could not start; a message follows */

/* ---- shared ---- */

static void wal_async_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static long wal_async_now_ms(void)
{
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/* The repository as the spool keys it: its URI and, for S3, the endpoint. */
static void wal_async_repo_id(const pgd_options *opts, char *out, size_t outlen)
{
    const char *endpoint = opt_str(opts, OPT_S3_ENDPOINT);

    if (endpoint == NULL)
        endpoint = getenv("AWS_ENDPOINT_URL");
    snprintf(out, outlen, "%s%s%s", opt_str(opts, OPT_REPO),
             endpoint != NULL && strncmp(opt_str(opts, OPT_REPO), "s3://", 5) == 0 ? " at " : "",
             endpoint != NULL && strncmp(opt_str(opts, OPT_REPO), "s3://", 5) == 0 ? endpoint : "");
}

/* The spool directory of `role` for datadir (absolute), created if missing. */
static bool wal_async_spool_dir(const pgd_options *opts, wal_spool_role role, const char *datadir,
                                char *dir, size_t dirlen, pgd_error *err)
{
    char root[WAL_SPOOL_PATH_MAX], repo_id[WAL_REPO_ID_MAX];
    const char *given = opt_str(opts, OPT_SPOOL_PATH);

    if (given != NULL && given[0] != '/') {
        char cwd[PATH_MAX];
        if (getcwd(cwd, sizeof(cwd)) == NULL)
            return err_errno(err, errno, "could not find the current directory");
        if ((size_t)snprintf(root, sizeof(root), "%s/%s", cwd, given) >= sizeof(root))
            return err_set(err, "spool path too long: \"%s/%s\"", cwd, given);
    } else if (given != NULL) {
        snprintf(root, sizeof(root), "%s", given);
    } else if (!wal_spool_default_root(datadir, root, sizeof(root), err)) {
        return false;
    }
    wal_async_repo_id(opts, repo_id, sizeof(repo_id));
    return wal_spool_open(root, role, datadir, repo_id, dir, dirlen, err);
}

/*
 * Everything a background process takes from the command that starts it
 * and keeps for its life: options, and the AWS_* variables (credentials
 * included: a restarted server may bring new ones). Only a hash of them
 * reaches the spool.
 */
static const opt_id wal_async_settings_opts[] = {
    OPT_COMPRESSION,
    OPT_COMPRESSION_LEVEL,
    OPT_ARCHIVE_PUSH_CONCURRENCY,
    OPT_PREFETCH_CONCURRENCY,
    OPT_LOG_LEVEL,
    OPT_S3_ENDPOINT,
    OPT_S3_URI_STYLE,
    OPT_S3_REGION,
    OPT_S3_STORAGE_CLASS,
    OPT_S3_SSE,
    OPT_S3_PART_SIZE,
    OPT_S3_UPLOAD_CONCURRENCY,
    OPT_S3_RETRIES,
    OPT_S3_TIMEOUT,
    OPT_DOWNLOAD_CONCURRENCY,
};
static const char *const wal_async_settings_env[] = {
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
    "AWS_REGION",        "AWS_DEFAULT_REGION",    "AWS_ENDPOINT_URL",
};

static uint64_t wal_async_hash(uint64_t h, const char *s)
{
    for (const char *p = s != NULL ? s : "(unset)"; *p != '\0'; p++)
        h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
    return (h ^ '\n') * 0x100000001b3ull;
}

static void wal_async_settings(const pgd_options *opts, char *out, size_t outlen)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */

    for (size_t i = 0; i < sizeof(wal_async_settings_opts) / sizeof(wal_async_settings_opts[0]);
         i++)
        h = wal_async_hash(h, opt_str(opts, wal_async_settings_opts[i]));
    for (size_t i = 0; i < sizeof(wal_async_settings_env) / sizeof(wal_async_settings_env[0]); i++)
        h = wal_async_hash(h, getenv(wal_async_settings_env[i]));
    snprintf(out, outlen, "%016" PRIx64, h);
}

static storage *wal_async_open_repo(void *arg, pgd_error *err)
{
    return command_open_repo(arg, err);
}

/* Open the spool's log for appending; rotate it first when it has grown past its bound. */
static bool wal_async_log_open(const char *dir, int *fd, pgd_error *err)
{
    char path[WAL_SPOOL_PATH_MAX + 16], old[WAL_SPOOL_PATH_MAX + 16];
    struct stat st;

    snprintf(path, sizeof(path), "%s/" WAL_LOG_NAME, dir);
    snprintf(old, sizeof(old), "%s/" WAL_LOG_OLD_NAME, dir);
    if (stat(path, &st) == 0 && st.st_size > WAL_SPOOL_LOG_MAX)
        rename(path, old);
    *fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (*fd < 0)
        return err_errno(err, errno, "could not open log file \"%s\"", path);
    return true;
}

/* Between scans: a log past its bound is rotated, so a long-lived process never fills a disk. */
static void wal_async_log_tick(void *arg)
{
    const char *dir = arg;
    struct stat st;
    pgd_error err = {0};
    int fd;

    if (fstat(STDERR_FILENO, &st) != 0 || st.st_size <= WAL_SPOOL_LOG_MAX)
        return;
    if (!wal_async_log_open(dir, &fd, &err))
        return;
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    close(fd);
}

/* "2026-11-30 19:31:21 UTC": when a background process started, for its log. */
static void wal_async_when(char *out, size_t outlen)
{
    time_t now = time(NULL);
    struct tm tm;

    strftime(out, outlen, "%Y-%m-%d %H:%M:%S %Z", localtime_r(&now, &tm));
}

static void wal_async_handshake_fail(int fd, const char *msg)
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
static void wal_async_become_daemon(const char *dir, int report, int *lock_fd)
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
        wal_async_handshake_fail(report, "could not change to directory \"/\"");
    if (!wal_spool_lock_take(dir, lock_fd, &busy, &err))
        wal_async_handshake_fail(report, err.msg);
    if (busy) {
        char b = SPAWN_BUSY;
        if (write(report, &b, 1) < 0)
            _exit(1);
        _exit(0);
    }
    if (!wal_async_log_open(dir, &log_fd, &err))
        wal_async_handshake_fail(report, err.msg);
    null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0 || dup2(log_fd, STDOUT_FILENO) < 0 ||
        dup2(log_fd, STDERR_FILENO) < 0)
        wal_async_handshake_fail(report, "could not redirect standard input and output");
    close(null_fd);
    close(log_fd);
    {
        char s = SPAWN_STARTED;
        if (write(report, &s, 1) < 0)
            _exit(1);
    }
    close(report);
}

/*
 * Start the background process of spool `dir`. In the caller: *started
 * says whether a new process took the lock (false: another holds it). In
 * the new process: *daemon is set and it returns holding the lock in
 * *lock_fd. The caller must hold no repository connection: the new process
 * closes every descriptor it inherits.
 */
static bool wal_async_spawn(const char *dir, bool *started, bool *daemon, int *lock_fd,
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
            wal_async_handshake_fail(pipefd[1], "could not start a new session");
        pid = fork();
        if (pid != 0) {
            if (pid < 0)
                wal_async_handshake_fail(pipefd[1], "could not fork");
            _exit(0);
        }
        wal_async_become_daemon(dir, pipefd[1], lock_fd);
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

/* ---- wal-push --archive-async ---- */

typedef struct wal_push_settings {
    unsigned concurrency;
    uint64_t queue_max;
    long timeout_s;
    compress_kind kind;
    int level;
} wal_push_settings;

static bool wal_async_push_settings(const pgd_options *opts, wal_push_settings *s, pgd_error *err)
{
    long concurrency;

    if (!opt_int(opts, OPT_ARCHIVE_PUSH_CONCURRENCY, 1, WAL_PUSH_CONCURRENCY_MAX, &concurrency,
                 err) ||
        !opt_size(opts, OPT_ARCHIVE_PUSH_QUEUE_MAX, WAL_SEG_SIZE_MIN, UINT64_MAX, &s->queue_max,
                  err) ||
        !opt_int(opts, OPT_ARCHIVE_TIMEOUT, 1, WAL_ARCHIVE_TIMEOUT_MAX_S, &s->timeout_s, err) ||
        !command_compression(opts, &s->kind, &s->level, err))
        return false;
    s->concurrency = (unsigned)concurrency;
    return true;
}

/* Size and CRC-32C of the local file, to compare with what the pusher recorded. */
static bool wal_async_file_sum(const char *path, wal_file_sum *sum, pgd_error *err)
{
    unsigned char *buf = malloc(WAL_SUM_CHUNK);
    uint32_t crc = CRC32C_INIT;
    int fd;

    sum->size = 0;
    if (buf == NULL)
        return err_set(err, "out of memory");
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        free(buf);
        return err_errno(err, errno, "could not open WAL file \"%s\"", path);
    }
    for (;;) {
        ssize_t n = read(fd, buf, WAL_SUM_CHUNK);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            close(fd);
            free(buf);
            return err_errno(err, e, "could not read WAL file \"%s\"", path);
        }
        if (n == 0)
            break;
        crc = crc32c_update(crc, buf, (size_t)n);
        sum->size += (uint64_t)n;
    }
    close(fd);
    free(buf);
    sum->crc = crc32c_final(crc);
    return true;
}

static bool wal_async_before(const struct timespec *a, const struct timespec *b)
{
    return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* The background pusher's life: push until idle, then stop. Returns its exit status. */
static int wal_async_pusher_main(const pgd_options *opts, const wal_push_settings *s,
                                 const char *pg_wal, const char *dir, const char *settings,
                                 int lock_fd)
{
    wal_pusher_config cfg = {
        .pg_wal = pg_wal,
        .spool_dir = dir,
        .concurrency = s->concurrency,
        .kind = s->kind,
        .level = s->level,
        .idle_exit_s = WAL_PUSHER_IDLE_EXIT_S,
        .open_repo = wal_async_open_repo,
        .open_arg = (void *)opts,
        .settings = settings,
        .tick = wal_async_log_tick,
        .tick_arg = (void *)dir,
    };
    pgd_error err = {0};
    char when[WAL_WHEN_LEN];
    bool ok;

    wal_async_when(when, sizeof(when));
    log_info("pusher %d started at %s: \"%s\" to repository \"%s\", %u at a time", (int)getpid(),
             when, pg_wal, opt_str(opts, OPT_REPO), s->concurrency);
    ok = wal_pusher_run(&cfg, &err);
    if (!ok)
        log_error("pusher %d stopped: %s", (int)getpid(), err.msg);
    else
        log_info("pusher %d stopped: nothing to archive for %d s", (int)getpid(),
                 WAL_PUSHER_IDLE_EXIT_S);
    close(lock_fd);
    return ok ? EXIT_OK : EXIT_ERROR;
}

/* Warn when more WAL waits for the archive than --archive-push-queue-max (nothing is dropped). */
static void wal_async_push_backlog(const char *pg_wal, const char *dir, uint64_t queue_max)
{
    pgd_error err = {0};
    uint64_t bytes;
    unsigned files;

    if (!wal_pusher_backlog(pg_wal, dir, &bytes, &files, &err)) {
        log_debug("could not measure the archive backlog: %s", err.msg);
        return;
    }
    if (bytes > queue_max)
        log_warn("%" PRIu64 " bytes of WAL (%u files) wait for the archive, more than "
                 "--archive-push-queue-max %" PRIu64 ": the repository is not keeping up; "
                 "nothing is dropped or acknowledged before it is stored, so pg_wal grows "
                 "until it does",
                 bytes, files, queue_max);
}

typedef struct wal_push_call {
    const pgd_options *opts;
    const char *path;
    char name[WAL_NAME_MAX];
    char pg_wal[PATH_MAX];
    char dir[WAL_SPOOL_PATH_MAX];
    wal_push_settings s;
    wal_file_sum sum;
    char settings[WAL_SETTINGS_LEN]; /* wal_async_settings() */
} wal_push_call;

/* Where the call's file, pg_wal and data directory are; false: push directly (said why). */
static bool wal_async_push_locate(wal_push_call *c, bool *ready, pgd_error *err)
{
    char copy[PATH_MAX], pg_wal_rel[PATH_MAX], status[PATH_MAX + WAL_NAME_MAX + 32];
    char datadir[PATH_MAX];

    snprintf(copy, sizeof(copy), "%s", c->path);
    snprintf(c->name, sizeof(c->name), "%s", basename(copy));
    snprintf(copy, sizeof(copy), "%s", c->path);
    snprintf(pg_wal_rel, sizeof(pg_wal_rel), "%s", dirname(copy));
    snprintf(status, sizeof(status), "%s/archive_status/%s.ready", pg_wal_rel, c->name);
    *ready = access(status, F_OK) == 0;
    if (!*ready)
        return true;
    snprintf(copy, sizeof(copy), "%s", pg_wal_rel);
    if (realpath(dirname(copy), datadir) == NULL)
        return err_errno(err, errno, "could not resolve the data directory of \"%s\"", c->path);
    if (realpath(pg_wal_rel, c->pg_wal) == NULL)
        return err_errno(err, errno, "could not resolve directory \"%s\"", pg_wal_rel);
    return wal_async_spool_dir(c->opts, WAL_SPOOL_PUSH, datadir, c->dir, sizeof(c->dir), err) &&
           wal_spool_probe(c->dir, err);
}

/*
 * Wait for the pusher's record of the file. Returns the exit status, or -1
 * when the file must be pushed directly (said why). In a pusher this
 * starts, *daemon is set and the pusher's status is returned.
 */
static int wal_async_push_wait(wal_push_call *c, bool *daemon)
{
    struct timespec called;
    long deadline = wal_async_now_ms() + c->s.timeout_s * 1000, pause = WAL_POLL_MIN_MS;
    unsigned starts = 0;
    pgd_error err = {0};
    bool woken = false;

    clock_gettime(CLOCK_REALTIME, &called);
    for (;;) {
        wal_push_record rec;
        bool held, started;
        int lock_fd;

        if (!wal_spool_record_read(c->dir, c->name, &rec, &err)) {
            log_warn("%s; archiving \"%s\" directly", err.msg, c->name);
            return -1;
        }
        if (rec.kind == WAL_RECORD_OK && rec.sum.size == c->sum.size && rec.sum.crc == c->sum.crc)
            return EXIT_OK;
        if (rec.kind == WAL_RECORD_OK) {
            /* a record of another file under this name (a cluster re-created here) */
            log_warn("the spool's record of \"%s\" is of another file: archiving it again",
                     c->name);
            woken = false;
            if (!wal_spool_record_remove(c->dir, c->name, WAL_RECORD_OK, &err)) {
                log_warn("%s; archiving \"%s\" directly", err.msg, c->name);
                return -1;
            }
        } else if (rec.kind == WAL_RECORD_ERROR) {
            if (!wal_spool_record_remove(c->dir, c->name, WAL_RECORD_ERROR, &err)) {
                log_warn("%s; archiving \"%s\" directly", err.msg, c->name);
                return -1;
            }
            /* a failure from before this call (pushed ahead) gets one more try first */
            if (!wal_async_before(&rec.written, &called)) {
                err_set(&err, "%s", rec.msg);
                return command_fail(&err);
            }
            woken = false;
        }
        if (!wal_spool_lock_held(c->dir, &held, &err)) {
            log_warn("%s; archiving \"%s\" directly", err.msg, c->name);
            return -1;
        }
        if (held && !woken) {
            wal_spool_wake(c->dir); /* not recorded yet: have the pusher look now */
            woken = true;
        }
        if (!held) {
            if (starts == WAL_PUSHER_STARTS_MAX) {
                log_warn("the background pusher stopped %u times without recording \"%s\" "
                         "(see \"%s/" WAL_LOG_NAME "\"): archiving it directly",
                         starts, c->name, c->dir);
                return -1;
            }
            if (!wal_async_spawn(c->dir, &started, daemon, &lock_fd, &err)) {
                log_warn("%s; archiving \"%s\" directly", err.msg, c->name);
                return -1;
            }
            if (*daemon)
                return wal_async_pusher_main(c->opts, &c->s, c->pg_wal, c->dir, c->settings,
                                             lock_fd);
            if (started)
                starts++;
        }
        if (wal_async_now_ms() >= deadline) {
            err_set(&err,
                    "WAL file \"%s\" was not archived by the background pusher within %ld s "
                    "(--archive-timeout; see \"%s/" WAL_LOG_NAME "\")",
                    c->name, c->s.timeout_s, c->dir);
            return command_fail(&err);
        }
        wal_async_sleep_ms(pause);
        pause = pause * 2 > WAL_POLL_MAX_MS ? WAL_POLL_MAX_MS : pause * 2;
    }
}

int wal_async_push(const pgd_options *opts, const char *path, wal_direct_push_fn direct)
{
    wal_push_call c = {.opts = opts, .path = path};
    pgd_error err = {0};
    bool ready, daemon = false;
    int rc;

    if (!wal_async_push_settings(opts, &c.s, &err)) {
        log_error("%s", err.msg);
        return EXIT_USAGE;
    }
    if (!wal_async_push_locate(&c, &ready, &err)) {
        log_warn("%s; archiving \"%s\" directly", err.msg, path);
        return direct(opts, path);
    }
    if (!ready) {
        /* not PostgreSQL's archiver asking (or a file it no longer has ready): no pusher */
        log_debug("\"%s\" is not marked ready in archive_status: archiving it directly", path);
        return direct(opts, path);
    }
    if (!wal_async_file_sum(path, &c.sum, &err))
        return command_fail(&err);
    wal_async_settings(opts, c.settings, sizeof(c.settings));
    if (!wal_spool_settings_write(c.dir, c.settings, &err)) {
        log_warn("%s; archiving \"%s\" directly", err.msg, path);
        return direct(opts, path);
    }
    wal_async_push_backlog(c.pg_wal, c.dir, c.s.queue_max);
    rc = wal_async_push_wait(&c, &daemon);
    if (rc < 0 && !daemon)
        rc = direct(opts, path);
    return rc;
}

/* ---- wal-fetch --prefetch ---- */

/* The background fetcher's life: keep the requested segments ready until idle. */
static int wal_async_fetcher_main(const pgd_options *opts, unsigned concurrency, const char *dir,
                                  const char *settings, int lock_fd)
{
    wal_prefetch_config cfg = {
        .spool_dir = dir,
        .concurrency = concurrency,
        .idle_exit_s = WAL_FETCHER_IDLE_EXIT_S,
        .open_repo = wal_async_open_repo,
        .open_arg = (void *)opts,
        .settings = settings,
        .tick = wal_async_log_tick,
        .tick_arg = (void *)dir,
    };
    pgd_error err = {0};
    char when[WAL_WHEN_LEN];
    bool ok;

    wal_async_when(when, sizeof(when));
    log_info("prefetcher %d started at %s: repository \"%s\", %u at a time", (int)getpid(), when,
             opt_str(opts, OPT_REPO), concurrency);
    ok = wal_prefetch_run(&cfg, &err);
    /*
     * Nobody asks any more: recovery has ended (at its target, say) or
     * waits. What is left would lie on disk for nothing; a later request
     * downloads it again.
     */
    if (ok)
        ok = wal_spool_entry_prune(dir, NULL, true, &err);
    if (!ok)
        log_error("prefetcher %d stopped: %s", (int)getpid(), err.msg);
    else
        log_info("prefetcher %d stopped: no request for %d s; spool emptied", (int)getpid(),
                 WAL_FETCHER_IDLE_EXIT_S);
    close(lock_fd);
    return ok ? EXIT_OK : EXIT_ERROR;
}

/*
 * Serve `name` from the spool if it is there and intact; wait for a
 * download of it in progress. *served says whether dest now holds it.
 */
static void wal_async_fetch_spooled(const char *dir, const char *datadir, const char *name,
                                    const char *dest, bool *served)
{
    uint64_t sysid = wal_spool_control_sysid(datadir);
    long deadline = wal_async_now_ms() + WAL_PREFETCH_WAIT_S * 1000L, pause = WAL_POLL_MIN_MS;
    pgd_error err = {0};
    char why[WAL_WHY_LEN];

    *served = false;
    for (;;) {
        wal_entry_result result;
        bool ready, partial, held;

        if (!wal_spool_entry_take(dir, name, dest, sysid, &result, why, sizeof(why), &err)) {
            log_warn("%s; fetching \"%s\" from the repository", err.msg, name);
            return;
        }
        if (result == WAL_ENTRY_SERVED) {
            log_debug("WAL file \"%s\" served from the prefetch spool", name);
            *served = true;
            return;
        }
        if (result == WAL_ENTRY_STALE) {
            log_warn("prefetched WAL file \"%s\" in \"%s\" is %s: removed, fetching it from the "
                     "repository",
                     name, dir, why);
            return;
        }
        if (result == WAL_ENTRY_CORRUPT) {
            log_warn("prefetched WAL file \"%s\" in \"%s\" is corrupt (%s): removed, fetching it "
                     "from the repository",
                     name, dir, why);
            return;
        }
        if (!wal_spool_entry_state(dir, name, &ready, &partial, &err) ||
            !wal_spool_lock_held(dir, &held, &err)) {
            log_warn("%s; fetching \"%s\" from the repository", err.msg, name);
            return;
        }
        if (!ready && (!partial || !held || wal_async_now_ms() >= deadline))
            return;
        wal_async_sleep_ms(pause);
        pause = pause * 2 > WAL_POLL_MAX_MS ? WAL_POLL_MAX_MS : pause * 2;
    }
}

/*
 * After `name` was served: ask for the `prefetch` segments after it and
 * make sure a fetcher works on them. Returns true in the fetcher it starts
 * (*rc: its exit status). Failures only cost the prefetch: warned, no more.
 */
static bool wal_async_fetch_ahead(const pgd_options *opts, const char *dir, const char *name,
                                  const char *dest, unsigned prefetch, unsigned concurrency,
                                  int *rc)
{
    wal_fetch_request req = {.count = prefetch}, old;
    pgd_error err = {0};
    bool missing, held, started, daemon = false;
    char settings[WAL_SETTINGS_LEN];
    int lock_fd;

    wal_async_settings(opts, settings, sizeof(settings));
    snprintf(req.name, sizeof(req.name), "%s", name);
    if (!wal_spool_segment_identity(dest, &req.sysid, &req.seg_size, &err) ||
        !wal_spool_request_read(dir, &old, &missing, &err)) {
        log_warn("%s; no prefetch after \"%s\"", err.msg, name);
        return false;
    }
    /* another cluster restored here: nothing of the last one may be served */
    if (!missing && old.sysid != req.sysid && !wal_spool_entry_prune(dir, NULL, false, &err)) {
        log_warn("%s; no prefetch after \"%s\"", err.msg, name);
        return false;
    }
    if (!wal_spool_settings_write(dir, settings, &err) ||
        !wal_spool_request_write(dir, &req, &err) ||
        !wal_spool_entry_prune(dir, &req, false, &err) || !wal_spool_lock_held(dir, &held, &err)) {
        log_warn("%s; no prefetch after \"%s\"", err.msg, name);
        return false;
    }
    if (held) {
        wal_spool_wake(dir);
        return false;
    }
    if (!wal_async_spawn(dir, &started, &daemon, &lock_fd, &err)) {
        log_warn("%s; no prefetch after \"%s\"", err.msg, name);
        return false;
    }
    if (!daemon)
        return false;
    *rc = wal_async_fetcher_main(opts, concurrency, dir, settings, lock_fd);
    return true;
}

int wal_async_fetch(const pgd_options *opts, const char *name, const char *dest, unsigned prefetch,
                    wal_direct_fetch_fn direct)
{
    char datadir[PATH_MAX], dir[WAL_SPOOL_PATH_MAX];
    pgd_error err = {0};
    long concurrency;
    bool served = false;
    int rc;

    if (prefetch == 0 || wal_segment_file_kind(name) != WAL_FILE_SEGMENT)
        return direct(opts, name, dest);
    if (!opt_int(opts, OPT_PREFETCH_CONCURRENCY, 1, WAL_PREFETCH_MAX, &concurrency, &err)) {
        log_error("%s", err.msg);
        return EXIT_WAL_FATAL;
    }
    /* restore_command runs in the data directory */
    if (realpath(".", datadir) == NULL) {
        log_warn("could not resolve the current directory: %s; no prefetch", strerror(errno));
        return direct(opts, name, dest);
    }
    if (!wal_async_spool_dir(opts, WAL_SPOOL_FETCH, datadir, dir, sizeof(dir), &err)) {
        log_warn("%s; no prefetch", err.msg);
        return direct(opts, name, dest);
    }
    wal_async_fetch_spooled(dir, datadir, name, dest, &served);
    rc = served ? EXIT_OK : direct(opts, name, dest);
    if (rc == EXIT_OK)
        wal_async_fetch_ahead(opts, dir, name, dest, prefetch, (unsigned)concurrency, &rc);
    return rc;
}
