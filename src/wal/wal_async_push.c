/*
 * wal_async_push.c - the foreground of wal-push --archive-async: the
 * command PostgreSQL's archiver runs exits 0 only once the spool holds the
 * background pusher's record, written after the repository confirmed the
 * store, of exactly this file; it starts the pusher when none runs, and
 * archives the file itself whenever the spool cannot do its part. Also
 * the pusher's life, once started: push until idle, then stop.
 */
#define _GNU_SOURCE
#include "wal/wal_async.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pg/wal_segment.h"
#include "util/crc32c.h"
#include "util/log.h"
#include "util/xmalloc.h"
#include "wal/wal_async_internal.h"
#include "wal/wal_pusher.h"

/*
 * A pusher stays this long after its last push: PostgreSQL calls
 * archive_command as soon as a segment is ready, and a pusher that is
 * already running starts on it before that call.
 */
#define WAL_PUSHER_IDLE_EXIT_S 30
#define WAL_SUM_CHUNK          (1024 * 1024)

bool wal_async_push_file_sum(const char *path, wal_file_sum *sum, pgd_error *err)
{
    unsigned char *buf = xmalloc(WAL_SUM_CHUNK);
    uint32_t crc = CRC32C_INIT;
    int fd;

    sum->size = 0;
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

bool wal_async_push_before(const struct timespec *a, const struct timespec *b)
{
    return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

wal_async_outcome wal_async_push_background(const wal_async_env *env,
                                            const wal_async_push_settings *s, const char *pg_wal,
                                            const char *dir, int lock_fd)
{
    wal_pusher_config cfg = {
        .pg_wal = pg_wal,
        .spool_dir = dir,
        .concurrency = s->concurrency,
        .kind = s->kind,
        .level = s->level,
        .idle_exit_s = WAL_PUSHER_IDLE_EXIT_S,
        .hooks = wal_async_daemon_hooks(env, dir),
    };
    pgd_error err = {0};
    char when[WAL_WHEN_LEN];
    wal_pusher_stop why;
    bool ok;

    wal_async_daemon_when(when, sizeof(when));
    log_info("pusher %d started at %s: \"%s\" to repository \"%s\", %u at a time", (int)getpid(),
             when, pg_wal, env->repo_uri, s->concurrency);
    ok = wal_pusher_run(&cfg, &why, &err);
    if (!ok)
        log_error("pusher %d stopped: %s", (int)getpid(), err.msg);
    else if (why == WAL_PUSHER_STOP_SETTINGS)
        log_info("pusher %d stopped: archive_command runs with other settings now (the next "
                 "wal-push starts a pusher with those)",
                 (int)getpid());
    else if (why == WAL_PUSHER_STOP_GONE)
        log_info("pusher %d stopped: \"%s/archive_status\" is gone", (int)getpid(), pg_wal);
    else if (why == WAL_PUSHER_STOP_NO_REPO)
        log_info("pusher %d stopped: the repository could not be opened (each ready file's push "
                 "failed with that)",
                 (int)getpid());
    else
        log_info("pusher %d stopped: nothing to archive for %d s", (int)getpid(),
                 WAL_PUSHER_IDLE_EXIT_S);
    close(lock_fd);
    return ok ? WAL_ASYNC_DAEMON_OK : WAL_ASYNC_DAEMON_FAILED;
}

/* Warn when more WAL waits for the archive than --archive-push-queue-max (nothing is dropped). */
static void wal_async_push_backlog(const char *pg_wal, const char *dir, uint64_t queue_max)
{
    pgd_error err = {0};
    wal_queue_stat st;

    if (!wal_pusher_backlog(pg_wal, dir, &st, &err)) {
        log_debug("could not measure the archive backlog: %s", err.msg);
        return;
    }
    if (st.bytes > queue_max)
        log_warn("%" PRIu64 " bytes of WAL (%u files) wait for the archive, more than "
                 "--archive-push-queue-max %" PRIu64 ": the repository is not keeping up; "
                 "nothing is dropped or acknowledged before it is stored, so pg_wal grows "
                 "until it does",
                 st.bytes, st.files, queue_max);
}

bool wal_async_push_locate(wal_push_call *c, bool *ready, pgd_error *err)
{
    char copy[PATH_MAX], pg_wal_rel[PATH_MAX], status[PATH_MAX + WAL_NAME_MAX + 32];

    snprintf(copy, sizeof(copy), "%s", c->path);
    snprintf(c->name, sizeof(c->name), "%s", basename(copy));
    snprintf(copy, sizeof(copy), "%s", c->path);
    snprintf(pg_wal_rel, sizeof(pg_wal_rel), "%s", dirname(copy));
    snprintf(status, sizeof(status), "%s/archive_status/%s.ready", pg_wal_rel, c->name);
    *ready = access(status, F_OK) == 0;
    if (!*ready)
        return true;
    snprintf(copy, sizeof(copy), "%s", pg_wal_rel);
    if (realpath(dirname(copy), c->datadir) == NULL)
        return err_errno(err, errno, "could not resolve the data directory of \"%s\"", c->path);
    if (realpath(pg_wal_rel, c->pg_wal) == NULL)
        return err_errno(err, errno, "could not resolve directory \"%s\"", pg_wal_rel);
    return wal_async_spool_dir(c->env, WAL_SPOOL_PUSH, c->datadir, c->dir, sizeof(c->dir), err) &&
           wal_spool_probe(c->dir, err);
}

wal_async_outcome wal_async_push_fall_back(const char *name, pgd_error *err)
{
    log_warn("%s; archiving \"%s\" directly", err->msg, name);
    err_clear(err);
    return WAL_ASYNC_DIRECT;
}

/*
 * Wait for the pusher's record of the file (WAL_ASYNC_DIRECT: push it
 * directly, said why). In a pusher this starts, how the pusher ended.
 */
static wal_async_outcome wal_async_push_wait(wal_push_call *c, pgd_error *err)
{
    struct timespec called;
    long deadline = wal_async_now_ms() + c->s->timeout_s * 1000, pause = WAL_POLL_MIN_MS;
    unsigned starts = 0;
    bool woken = false;

    clock_gettime(CLOCK_REALTIME, &called);
    for (;;) {
        wal_push_record rec;
        bool held, started, daemon;
        int lock_fd;

        if (!wal_spool_record_read(c->dir, c->name, &rec, err))
            return wal_async_push_fall_back(c->name, err);
        if (rec.kind == WAL_RECORD_OK && rec.sum.size == c->sum.size && rec.sum.crc == c->sum.crc)
            return WAL_ASYNC_DONE;
        if (rec.kind == WAL_RECORD_OK) {
            /* a record of another file under this name (a cluster re-created here) */
            log_warn("the spool's record of \"%s\" is of another file: archiving it again",
                     c->name);
            woken = false;
            if (!wal_spool_record_remove(c->dir, c->name, WAL_RECORD_OK, err))
                return wal_async_push_fall_back(c->name, err);
        } else if (rec.kind == WAL_RECORD_ERROR) {
            if (!wal_spool_record_remove(c->dir, c->name, WAL_RECORD_ERROR, err))
                return wal_async_push_fall_back(c->name, err);
            /* a failure from before this call (pushed ahead) gets one more try first */
            if (!wal_async_push_before(&rec.written, &called)) {
                err_set(err, "%s", rec.msg);
                return WAL_ASYNC_FAILED;
            }
            woken = false;
        }
        if (!wal_spool_lock_held(c->dir, &held, err))
            return wal_async_push_fall_back(c->name, err);
        if (held && !woken) {
            wal_spool_wake(c->dir); /* not recorded yet: have the pusher look now */
            woken = true;
        }
        if (!held) {
            if (starts == WAL_PUSHER_STARTS_MAX) {
                log_warn("the background pusher stopped %u times without recording \"%s\" "
                         "(see \"%s/" WAL_LOG_NAME "\"): archiving it directly",
                         starts, c->name, c->dir);
                return WAL_ASYNC_DIRECT;
            }
            if (!wal_async_daemon_spawn(c->dir, &started, &daemon, &lock_fd, err))
                return wal_async_push_fall_back(c->name, err);
            if (daemon)
                return wal_async_push_background(c->env, c->s, c->pg_wal, c->dir, lock_fd);
            if (started) {
                starts++;
                /* a repository given before with others may have left a queue */
                wal_async_report_orphans(&c->env, 1, c->datadir);
            }
        }
        if (wal_async_now_ms() >= deadline) {
            err_set(err,
                    "WAL file \"%s\" was not archived by the background pusher within %ld s "
                    "(--archive-timeout; see \"%s/" WAL_LOG_NAME "\")",
                    c->name, c->s->timeout_s, c->dir);
            return WAL_ASYNC_FAILED;
        }
        wal_async_sleep_ms(pause);
        pause = pause * 2 > WAL_POLL_MAX_MS ? WAL_POLL_MAX_MS : pause * 2;
    }
}

wal_async_outcome wal_async_push(const wal_async_env *env, const wal_async_push_settings *s,
                                 const char *path, pgd_error *err)
{
    wal_push_call c = {.env = env, .s = s, .path = path};
    bool ready;

    if (!wal_async_push_locate(&c, &ready, err))
        return wal_async_push_fall_back(path, err);
    if (!ready) {
        /* not PostgreSQL's archiver asking (or a file it no longer has ready): no pusher */
        log_debug("\"%s\" is not marked ready in archive_status: archiving it directly", path);
        return WAL_ASYNC_DIRECT;
    }
    if (!wal_async_push_file_sum(path, &c.sum, err))
        return WAL_ASYNC_FAILED;
    if (!wal_spool_settings_write(c.dir, env->settings, err))
        return wal_async_push_fall_back(path, err);
    wal_async_push_backlog(c.pg_wal, c.dir, s->queue_max);
    return wal_async_push_wait(&c, err);
}
