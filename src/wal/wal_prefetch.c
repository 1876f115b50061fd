/*
 * wal_prefetch.c - the background fetcher of wal-fetch --prefetch (what it
 * promises is in wal_prefetch.h).
 *
 * The main thread reads the request wal-fetch leaves in the spool every
 * WAL_PREFETCH_POLL_MS (at once when wal-fetch pokes the wake FIFO), removes what the request no
 * longer wants, and queues the wanted segments that are neither published nor in flight;
 * `concurrency` workers download them. A segment that is missing or fails
 * is retried after a pause that doubles up to WAL_PREFETCH_RETRY_MAX_MS:
 * at the end of the archive (or on a standby waiting for WAL) that keeps
 * the requests to the repository few.
 */
#define _GNU_SOURCE
#include "wal/wal_prefetch.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "wal/wal_archive.h"
#include "wal/wal_spool.h"
#include "util/log.h"
#include "util/threads.h"
#include "util/xmalloc.h"

#define WAL_PREFETCH_POLL_MS      50
#define WAL_PREFETCH_RETRY_MIN_MS 500
#define WAL_PREFETCH_RETRY_MAX_MS 16000
#define WAL_PREFETCH_RETRIES_MAX  (2 * WAL_PREFETCH_MAX) /* names with a pending retry */

typedef char wal_segment_name[WAL_FILE_NAME_LEN + 1];

typedef struct wal_retry {
    wal_segment_name name;
    struct timespec next;
    long delay_ms;
} wal_retry;

typedef struct wal_prefetch {
    const wal_prefetch_config *cfg;
    storage *repo;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    wal_fetch_request req; /* the current request */
    wal_segment_name queue[WAL_PREFETCH_MAX];
    size_t nqueue;
    wal_segment_name *busy; /* one per worker */
    size_t nbusy;
    wal_retry retry[WAL_PREFETCH_RETRIES_MAX];
    size_t nretry;
    bool stop;
} wal_prefetch;

static bool wal_prefetch_listed(const wal_segment_name *v, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i], name) == 0)
            return true;
    return false;
}

static void wal_prefetch_unlist(wal_segment_name *v, size_t *n, const char *name)
{
    for (size_t i = 0; i < *n; i++) {
        if (strcmp(v[i], name) == 0) {
            memmove(v[i], v[i + 1], (*n - i - 1) * sizeof(*v));
            (*n)--;
            return;
        }
    }
}

static long wal_prefetch_ms_until(const struct timespec *t)
{
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    return (t->tv_sec - now.tv_sec) * 1000 + (t->tv_nsec - now.tv_nsec) / 1000000;
}

/* Under the lock: is `name` waiting for its retry? */
static bool wal_prefetch_waiting(wal_prefetch *p, const char *name)
{
    for (size_t i = 0; i < p->nretry; i++)
        if (strcmp(p->retry[i].name, name) == 0)
            return wal_prefetch_ms_until(&p->retry[i].next) > 0;
    return false;
}

/* Under the lock: try `name` again later (ok: forget its retries). */
static void wal_prefetch_note(wal_prefetch *p, const char *name, bool ok)
{
    wal_retry *r = NULL;

    for (size_t i = 0; i < p->nretry && r == NULL; i++)
        if (strcmp(p->retry[i].name, name) == 0)
            r = &p->retry[i];
    if (ok) {
        if (r != NULL)
            *r = p->retry[--p->nretry];
        return;
    }
    if (r == NULL) {
        if (p->nretry == WAL_PREFETCH_RETRIES_MAX)
            return; /* retried at once: wasteful, never wrong */
        r = &p->retry[p->nretry++];
        snprintf(r->name, sizeof(r->name), "%s", name);
        r->delay_ms = WAL_PREFETCH_RETRY_MIN_MS;
    } else if (r->delay_ms < WAL_PREFETCH_RETRY_MAX_MS) {
        r->delay_ms *= 2;
    }
    clock_gettime(CLOCK_MONOTONIC, &r->next);
    r->next.tv_sec += r->delay_ms / 1000;
    r->next.tv_nsec += (r->delay_ms % 1000) * 1000000L;
    if (r->next.tv_nsec >= 1000000000L) {
        r->next.tv_sec++;
        r->next.tv_nsec -= 1000000000L;
    }
}

/* Download `name` into the spool and publish it if it is still wanted. */
static bool wal_prefetch_one(wal_prefetch *p, const char *name, const wal_fetch_request *req)
{
    char part[WAL_SPOOL_PATH_MAX + WAL_NAME_MAX];
    pgd_error err = {0};
    wal_file_sum sum;
    uint64_t sysid;
    uint32_t seg_size;
    bool found = false, wanted;

    wal_spool_part_path(p->cfg->spool_dir, name, part, sizeof(part));
    /*
     * Written back (fsync) here, beside replay: PostgreSQL fsyncs every file
     * restore_command gives it (durable_rename in KeepFileRestoredFromArchive),
     * in the startup process, which replays nothing meanwhile. A file already
     * on disk makes that fsync cost almost nothing.
     */
    if (!wal_archive_fetch_sum(p->repo, name, part, &found, &sum, &err)) {
        log_warn("could not prefetch: %s", err.msg);
        return false;
    }
    if (!found) {
        log_debug("WAL file \"%s\" is not in the repository (yet)", name);
        return false;
    }
    if (!wal_spool_segment_identity(part, &sysid, &seg_size, &err) || sysid != req->sysid ||
        seg_size != req->seg_size) {
        if (!err.set)
            log_warn("prefetched WAL file \"%s\" is of another cluster or segment size than "
                     "the one being recovered: not kept",
                     name);
        else
            log_warn("%s", err.msg);
        unlink(part);
        return false;
    }
    pthread_mutex_lock(&p->lock);
    wanted = wal_spool_request_wants(&p->req, name) && p->req.sysid == req->sysid;
    pthread_mutex_unlock(&p->lock);
    if (!wanted) {
        unlink(part);
        return true;
    }
    if (!wal_spool_entry_publish(p->cfg->spool_dir, name, part, &sum, &err)) {
        log_warn("%s", err.msg);
        unlink(part);
        return false;
    }
    log_debug("prefetched WAL file \"%s\"", name);
    return true;
}

static void *wal_prefetch_worker(void *arg)
{
    wal_prefetch *p = arg;

    pthread_mutex_lock(&p->lock);
    for (;;) {
        wal_segment_name name;
        wal_fetch_request req;
        bool ok;

        while (!p->stop && p->nqueue == 0)
            pthread_cond_wait(&p->changed, &p->lock);
        if (p->stop)
            break;
        snprintf(name, sizeof(name), "%s", p->queue[0]);
        wal_prefetch_unlist(p->queue, &p->nqueue, name);
        snprintf(p->busy[p->nbusy++], sizeof(name), "%s", name);
        req = p->req;
        pthread_mutex_unlock(&p->lock);
        ok = wal_prefetch_one(p, name, &req);
        pthread_mutex_lock(&p->lock);
        wal_prefetch_note(p, name, ok);
        wal_prefetch_unlist(p->busy, &p->nbusy, name);
        pthread_cond_broadcast(&p->changed);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* Queue the wanted segments that are not published, in flight or waiting to be retried. */
static bool wal_prefetch_scan(wal_prefetch *p, bool *idle, pgd_error *err)
{
    bool ok = true;

    pthread_mutex_lock(&p->lock);
    for (unsigned i = 1; ok && i <= p->req.count; i++) {
        wal_segment_name name;
        bool ready, partial;

        if (!wal_spool_segment_after(p->req.name, p->req.seg_size, i, name))
            break; /* the end of the WAL address space */
        if (wal_prefetch_listed(p->queue, p->nqueue, name) ||
            wal_prefetch_listed(p->busy, p->nbusy, name) || wal_prefetch_waiting(p, name))
            continue;
        ok = wal_spool_entry_state(p->cfg->spool_dir, name, &ready, &partial, err);
        if (ok && !ready && p->nqueue < WAL_PREFETCH_MAX)
            snprintf(p->queue[p->nqueue++], sizeof(name), "%s", name);
    }
    *idle = p->nqueue == 0 && p->nbusy == 0;
    pthread_cond_broadcast(&p->changed);
    pthread_mutex_unlock(&p->lock);
    return ok;
}

/* A new request: drop the queue, retries and published files it no longer wants. */
static bool wal_prefetch_follow(wal_prefetch *p, const wal_fetch_request *req, pgd_error *err)
{
    pthread_mutex_lock(&p->lock);
    p->req = *req;
    for (size_t i = p->nqueue; i-- > 0;)
        if (!wal_spool_request_wants(req, p->queue[i]))
            wal_prefetch_unlist(p->queue, &p->nqueue, p->queue[i]);
    for (size_t i = p->nretry; i-- > 0;)
        if (!wal_spool_request_wants(req, p->retry[i].name))
            p->retry[i] = p->retry[--p->nretry];
    pthread_mutex_unlock(&p->lock);
    return wal_spool_entry_prune(p->cfg->spool_dir, req, false, err);
}

static bool wal_prefetch_same(const wal_fetch_request *a, const wal_fetch_request *b)
{
    return strcmp(a->name, b->name) == 0 && a->seg_size == b->seg_size && a->sysid == b->sysid &&
           a->count == b->count;
}

bool wal_prefetch_run(const wal_prefetch_config *cfg, wal_prefetch_stop *why, pgd_error *err)
{
    wal_prefetch p = {.cfg = cfg};
    wal_fetch_request req;
    pthread_t *threads;
    unsigned started = 0;
    time_t last_request = time(NULL);
    bool ok = true, missing;
    int wake;
    wal_prefetch_stop stopped = WAL_PREFETCH_STOP_NO_REQUEST;

    if (why != NULL)
        *why = stopped;
    /* we hold the lock: any download in progress is a dead fetcher's */
    if (!wal_spool_request_read(cfg->spool_dir, &req, &missing, err) ||
        !wal_spool_entry_prune(cfg->spool_dir, missing ? NULL : &req, true, err))
        return false;
    if (missing)
        return true;
    if (!wal_spool_wake_open(cfg->spool_dir, &wake, err))
        return false;
    p.repo = cfg->hooks.open_repo(cfg->hooks.open_arg, err);
    if (p.repo == NULL) {
        close(wake);
        return false;
    }
    threads = xcalloc(cfg->concurrency, sizeof(*threads));
    p.busy = xcalloc(cfg->concurrency, sizeof(*p.busy));
    pthread_mutex_init(&p.lock, NULL);
    pthread_cond_init(&p.changed, NULL);
    p.req = req;
    if (ok)
        ok = threads_start(threads, cfg->concurrency, wal_prefetch_worker, &p, "prefetch thread",
                           &started, err);
    while (ok) {
        bool idle, changed = false;

        ok = wal_spool_request_read(cfg->spool_dir, &req, &missing, err) &&
             (cfg->hooks.settings == NULL ||
              wal_spool_settings_changed(cfg->spool_dir, cfg->hooks.settings, &changed, err));
        if (!ok || missing)
            break;
        if (changed) {
            stopped = WAL_PREFETCH_STOP_SETTINGS;
            break;
        }
        if (!wal_prefetch_same(&req, &p.req)) {
            last_request = time(NULL);
            if (!(ok = wal_prefetch_follow(&p, &req, err)))
                break;
        }
        if (!(ok = wal_prefetch_scan(&p, &idle, err)))
            break;
        if (idle && time(NULL) - last_request >= cfg->idle_exit_s) {
            stopped = WAL_PREFETCH_STOP_IDLE;
            break;
        }
        if (cfg->hooks.tick != NULL)
            cfg->hooks.tick(cfg->hooks.tick_arg);
        wal_spool_wake_wait(wake, WAL_PREFETCH_POLL_MS);
    }
    threads_stop(&p.lock, &p.changed, &p.stop, threads, started);
    pthread_cond_destroy(&p.changed);
    pthread_mutex_destroy(&p.lock);
    free(threads);
    free(p.busy);
    storage_free(p.repo);
    close(wake);
    if (why != NULL)
        *why = stopped;
    return ok;
}
