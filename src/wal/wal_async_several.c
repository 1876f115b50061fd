/*
 * wal_async_several.c - the foreground of wal-push --archive-async with
 * several repositories: a pusher per repository (its own spool directory,
 * wal_pusher.h), and the file acknowledged once one of them has recorded
 * it stored and, for each of the others, its record says the same or a
 * copy of the file waits durably in its queue (wal_spool.h, queue/). A
 * repository that is down holds nothing back but its own queue; once that
 * queue holds --archive-push-queue-max bytes, nothing more is
 * acknowledged (PostgreSQL keeps the files and asks again), and the
 * message names the repository.
 *
 * A repository whose pusher is only slower gets WAL_ASYNC_QUEUE_GRACE_MS
 * to record the file before a copy is queued for it; one whose queue is
 * not empty gets none (it is behind: the copy goes in line).
 */
#define _GNU_SOURCE
#include "wal/wal_async.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/log.h"
#include "util/units.h"
#include "util/xmalloc.h"
#include "wal/wal_async_internal.h"

/*
 * How long the others may take to record a file once one repository has
 * it, before a copy is queued for them (a copy costs a segment's write and
 * fsync in the spool). A choice, not a measurement: long enough for a
 * healthy store that started the push with the first, short enough that
 * the first file after a repository went down costs PostgreSQL 1 s.
 */
#define WAL_ASYNC_QUEUE_GRACE_MS 1000

typedef enum { WAL_REPO_PENDING, WAL_REPO_STORED, WAL_REPO_FAILED } wal_repo_state;

/* One repository of the call. */
typedef struct wal_several_repo {
    wal_push_call c; /* its env and spool directory; the file's facts are the call's */
    wal_repo_state state;
    char why[PGD_ERROR_MAX];
    unsigned starts;
    bool woken;
    bool behind; /* its queue was not empty when the call began */
} wal_several_repo;

static void wal_async_several_orphans(const wal_several_repo *r, size_t n)
{
    const wal_async_env **envs = xcalloc(n, sizeof(*envs));

    for (size_t i = 0; i < n; i++)
        envs[i] = r[i].c.env;
    wal_async_report_orphans(envs, n, r[0].c.datadir);
    free(envs);
}

/*
 * Look at repository r's record of the file; start its pusher when none
 * runs. WAL_ASYNC_DONE: nothing more to do now; WAL_ASYNC_DIRECT: the spool
 * failed (err); WAL_ASYNC_DAEMON_*: this process became the pusher.
 */
static wal_async_outcome wal_async_several_look(wal_several_repo *r, const struct timespec *called,
                                                bool *started_one, pgd_error *err)
{
    wal_push_call *c = &r->c;
    wal_push_record rec;
    bool held, started, daemon;
    int lock_fd;

    if (!wal_spool_record_read(c->dir, c->name, &rec, err))
        return WAL_ASYNC_DIRECT;
    if (rec.kind == WAL_RECORD_OK && rec.sum.size == c->sum.size && rec.sum.crc == c->sum.crc) {
        r->state = WAL_REPO_STORED;
        return WAL_ASYNC_DONE;
    }
    if (rec.kind == WAL_RECORD_OK) {
        log_warn("the spool's record of \"%s\" for repository \"%s\" is of another file: "
                 "archiving it again",
                 c->name, c->env->repo_uri);
        r->woken = false;
        if (!wal_spool_record_remove(c->dir, c->name, WAL_RECORD_OK, err))
            return WAL_ASYNC_DIRECT;
    } else if (rec.kind == WAL_RECORD_ERROR) {
        if (!wal_spool_record_remove(c->dir, c->name, WAL_RECORD_ERROR, err))
            return WAL_ASYNC_DIRECT;
        if (!wal_async_push_before(&rec.written, called)) {
            r->state = WAL_REPO_FAILED;
            snprintf(r->why, sizeof(r->why), "%s", rec.msg);
            return WAL_ASYNC_DONE;
        }
        r->woken = false; /* a failure from before this call gets one more try first */
    }
    if (!wal_spool_lock_held(c->dir, &held, err))
        return WAL_ASYNC_DIRECT;
    if (held && !r->woken) {
        wal_spool_wake(c->dir);
        r->woken = true;
    }
    if (held)
        return WAL_ASYNC_DONE;
    if (r->starts == WAL_PUSHER_STARTS_MAX) {
        r->state = WAL_REPO_FAILED;
        snprintf(r->why, sizeof(r->why),
                 "the background pusher stopped %u times without recording \"%s\" (see "
                 "\"%.*s/" WAL_LOG_NAME "\")",
                 r->starts, c->name, (int)(sizeof(r->why) / 2), c->dir);
        return WAL_ASYNC_DONE;
    }
    if (!wal_async_daemon_spawn(c->dir, &started, &daemon, &lock_fd, err))
        return WAL_ASYNC_DIRECT;
    if (daemon)
        return wal_async_push_background(c->env, c->s, c->pg_wal, c->dir, lock_fd);
    if (started) {
        r->starts++;
        *started_one = true;
    }
    return WAL_ASYNC_DONE;
}

/*
 * A copy of the file in the queue of each repository that has not recorded
 * it; false when one queue is full or cannot be written (err names the
 * repository): then nothing is acknowledged.
 */
static bool wal_async_several_queue(wal_several_repo *r, size_t n, uint64_t queue_max,
                                    pgd_error *err)
{
    for (size_t i = 0; i < n; i++) {
        wal_push_call *c = &r[i].c;
        char have[32], max[32], path[WAL_SPOOL_PATH_MAX + WAL_NAME_MAX + 16];
        wal_queue_stat st;
        struct stat old;

        if (r[i].state == WAL_REPO_STORED)
            continue;
        if (!wal_spool_queue_stat(c->dir, &st, err)) {
            err_prefix(err, "could not queue WAL file \"%s\" for repository \"%s\"", c->name,
                       c->env->repo_uri);
            return false;
        }
        /* queued by an earlier call that was not acknowledged: replaced, not counted twice */
        wal_spool_queue_path(c->dir, c->name, path, sizeof(path));
        if (stat(path, &old) == 0 && (uint64_t)old.st_size <= st.bytes) {
            st.bytes -= (uint64_t)old.st_size;
            st.files--;
        }
        if (st.bytes + c->sum.size > queue_max) {
            units_format_bytes(st.bytes, have, sizeof(have));
            units_format_bytes(queue_max, max, sizeof(max));
            return err_set(
                err,
                "WAL file \"%s\" is not acknowledged: the queue of repository \"%s\" "
                "is full (%u files, %s, oldest \"%s\"; --archive-push-queue-max %s)%s%s; "
                "PostgreSQL keeps the file until the repository takes its queue back",
                c->name, c->env->repo_uri, st.files, have, st.oldest, max,
                r[i].why[0] != '\0' ? ": " : "", r[i].why);
        }
        if (!wal_spool_queue_add(c->dir, c->name, c->path, err)) {
            err_prefix(err, "could not queue WAL file \"%s\" for repository \"%s\"", c->name,
                       c->env->repo_uri);
            return false;
        }
        log_info("WAL file \"%s\" is queued for repository \"%s\"%s%s", c->name, c->env->repo_uri,
                 r[i].why[0] != '\0' ? ": " : " (not stored there yet)", r[i].why);
        wal_spool_wake(c->dir);
    }
    return true;
}

/* Every repository failed the file: one error naming each. */
static wal_async_outcome wal_async_several_failed(const wal_several_repo *r, size_t n,
                                                  pgd_error *err)
{
    char msg[PGD_ERROR_MAX] = "";

    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(msg);
        snprintf(msg + len, sizeof(msg) - len, "%srepository \"%s\": %s", i > 0 ? "; " : "",
                 r[i].c.env->repo_uri, r[i].why);
    }
    err_set(err, "WAL file \"%s\" could not be archived in any repository: %s", r[0].c.name, msg);
    return WAL_ASYNC_FAILED;
}

/* Set up the call's repositories: spool directories found, probed, settings recorded. */
static bool wal_async_several_setup(wal_several_repo *r, size_t n, const wal_push_call *first,
                                    pgd_error *err)
{
    for (size_t i = 1; i < n; i++) {
        const wal_async_env *env = r[i].c.env;
        r[i].c = *first;
        r[i].c.env = env;
        if (!wal_async_spool_dir(env, WAL_SPOOL_PUSH, first->datadir, r[i].c.dir,
                                 sizeof(r[i].c.dir), err) ||
            !wal_spool_probe(r[i].c.dir, err))
            return false;
    }
    for (size_t i = 0; i < n; i++) {
        wal_queue_stat st;
        if (!wal_spool_settings_write(r[i].c.dir, r[i].c.env->settings, err) ||
            !wal_spool_queue_stat(r[i].c.dir, &st, err))
            return false;
        r[i].behind = st.files > 0;
    }
    return true;
}

wal_async_outcome wal_async_push_several(const wal_async_env *envs, size_t n,
                                         const wal_async_push_settings *s, const char *path,
                                         pgd_error *err)
{
    wal_several_repo *r = xcalloc(n, sizeof(*r));
    long deadline = wal_async_now_ms() + s->timeout_s * 1000, pause = WAL_POLL_MIN_MS;
    long first_stored = -1;
    struct timespec called;
    wal_async_outcome o = WAL_ASYNC_FAILED;
    bool ready, started_one = false, orphans_looked = false;

    clock_gettime(CLOCK_REALTIME, &called);
    for (size_t i = 0; i < n; i++)
        r[i].c = (wal_push_call){.env = &envs[i], .s = s, .path = path};
    if (!wal_async_push_locate(&r[0].c, &ready, err)) {
        o = wal_async_push_fall_back(path, err);
        goto out;
    }
    if (!ready) {
        log_debug("\"%s\" is not marked ready in archive_status: archiving it directly", path);
        o = WAL_ASYNC_DIRECT;
        goto out;
    }
    if (!wal_async_push_file_sum(path, &r[0].c.sum, err))
        goto out;
    if (!wal_async_several_setup(r, n, &r[0].c, err)) {
        o = wal_async_push_fall_back(path, err);
        goto out;
    }
    for (;;) {
        size_t stored = 0, failed = 0;
        bool wait_more = false;

        for (size_t i = 0; i < n; i++) {
            if (r[i].state == WAL_REPO_PENDING) {
                o = wal_async_several_look(&r[i], &called, &started_one, err);
                if (o == WAL_ASYNC_DIRECT)
                    o = wal_async_push_fall_back(path, err);
                if (o != WAL_ASYNC_DONE)
                    goto out;
            }
            stored += r[i].state == WAL_REPO_STORED;
            failed += r[i].state == WAL_REPO_FAILED;
            /* a pusher that is only slower, and not behind, may still record it */
            wait_more |= r[i].state == WAL_REPO_PENDING && !r[i].behind;
        }
        if (started_one && !orphans_looked) {
            wal_async_several_orphans(r, n);
            orphans_looked = true;
        }
        if (stored > 0 && first_stored < 0)
            first_stored = wal_async_now_ms();
        if (stored == n ||
            (stored > 0 &&
             (!wait_more || wal_async_now_ms() >= first_stored + WAL_ASYNC_QUEUE_GRACE_MS))) {
            o = wal_async_several_queue(r, n, s->queue_max, err) ? WAL_ASYNC_DONE
                                                                 : WAL_ASYNC_FAILED;
            goto out;
        }
        if (failed == n) {
            o = wal_async_several_failed(r, n, err);
            goto out;
        }
        if (wal_async_now_ms() >= deadline) {
            err_set(err,
                    "WAL file \"%s\" was not archived in any repository by the background "
                    "pushers within %ld s (--archive-timeout; see the log in each spool "
                    "directory, \"%s\" and the others)",
                    r[0].c.name, s->timeout_s, r[0].c.dir);
            o = WAL_ASYNC_FAILED;
            goto out;
        }
        wal_async_sleep_ms(pause);
        pause = pause * 2 > WAL_POLL_MAX_MS ? WAL_POLL_MAX_MS : pause * 2;
    }
out:
    free(r);
    return o;
}
