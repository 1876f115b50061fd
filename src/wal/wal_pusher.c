/*
 * wal_pusher.c - the background pusher of wal-push --archive-async (what
 * it promises is in wal_pusher.h).
 *
 * One thread scans archive_status and the spool's records every
 * WAL_PUSHER_POLL_MS, or at once when a command pokes the spool's wake
 * FIFO, and queues every ready file that has no record yet;
 * `concurrency` workers push them. The scan compares and queues under the
 * lock the workers take to finish a file, and a worker writes its record
 * before it lets go of the file: so the scan sees each file either in
 * flight or recorded, never neither, and never queues a pushed file twice.
 *
 * With several repositories, the spool's queue/ holds copies of files
 * acknowledged before this pusher's repository had them (wal_spool.h):
 * they are pushed with the ready files, in the same order (oldest first),
 * and removed once stored. A queued copy that fails is tried again after a
 * pause that doubles up to WAL_PUSHER_RETRY_MAX_MS (no archive_command
 * paces those), and a pusher with copies waiting does not stop for being
 * idle, nor when its repository cannot be opened: it waits for it.
 */
#define _GNU_SOURCE
#include "wal/wal_pusher.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pg/wal_segment.h"
#include "repo/layout.h"
#include "wal/wal_archive.h"
#include "wal/wal_spool.h"
#include "util/log.h"
#include "util/threads.h"
#include "util/xmalloc.h"

#define WAL_PUSHER_POLL_MS   100
#define WAL_STATUS_DIR       "archive_status"
#define WAL_READY_EXT        ".ready"
#define WAL_TIMELINES_SWEPT  64 /* timelines whose stale temporary objects this run removed */
#define WAL_PUSHER_NAME_SIZE WAL_NAME_MAX
/*
 * Queued copies that failed are tried again after 1 s, then 2, 4, up to
 * 8 s: a repository that comes back is drained within seconds, one that
 * stays down costs a request every few seconds.
 */
#define WAL_PUSHER_RETRY_MIN_MS 1000
#define WAL_PUSHER_RETRY_MAX_MS 8000

/* A list of WAL file names. */
typedef struct wal_pusher_names {
    char (*v)[WAL_PUSHER_NAME_SIZE];
    size_t n, cap;
} wal_pusher_names;

static void wal_pusher_names_add(wal_pusher_names *l, const char *name)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        l->v = xrealloc(l->v, cap * sizeof(*l->v));
        l->cap = cap;
    }
    snprintf(l->v[l->n++], WAL_PUSHER_NAME_SIZE, "%s", name);
}

static void wal_pusher_names_remove(wal_pusher_names *l, const char *name)
{
    for (size_t i = 0; i < l->n; i++) {
        if (strcmp(l->v[i], name) == 0) {
            memmove(l->v[i], l->v[i + 1], (l->n - i - 1) * sizeof(*l->v));
            l->n--;
            return;
        }
    }
}

/*
 * Timeline history files first (a standby or a restore looking for the
 * new timeline needs them, and PostgreSQL archives them first too), then
 * by name, which is WAL order.
 */
static int wal_pusher_names_order(const void *a, const void *b)
{
    bool ha = wal_name_kind(a) == WAL_FILE_HISTORY;
    bool hb = wal_name_kind(b) == WAL_FILE_HISTORY;

    if (ha != hb)
        return ha ? -1 : 1;
    return strcmp(a, b);
}

static int wal_pusher_names_strcmp(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* Is `name` in l, sorted by `order`? (A scan compares thousands of names: not one by one.) */
static bool wal_pusher_names_sorted_has(const wal_pusher_names *l, const char *name,
                                        int (*order)(const void *, const void *))
{
    return l->n > 0 && bsearch(name, l->v, l->n, sizeof(*l->v), order) != NULL;
}

/* The WAL files marked ready in pg_wal/archive_status, in push order. *gone: no such dir. */
static bool wal_pusher_ready(const char *pg_wal, wal_pusher_names *out, bool *gone, pgd_error *err)
{
    char path[WAL_SPOOL_PATH_MAX];
    struct dirent *de;
    DIR *d;

    out->n = 0;
    *gone = false;
    snprintf(path, sizeof(path), "%s/" WAL_STATUS_DIR, pg_wal);
    d = opendir(path);
    if (d == NULL) {
        if (errno == ENOENT) {
            *gone = true;
            return true;
        }
        return err_errno(err, errno, "could not open directory \"%s\"", path);
    }
    while ((errno = 0, de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name), ext = strlen(WAL_READY_EXT);
        char name[WAL_PUSHER_NAME_SIZE];

        if (len <= ext || len - ext >= sizeof(name) ||
            strcmp(de->d_name + len - ext, WAL_READY_EXT) != 0)
            continue;
        memcpy(name, de->d_name, len - ext);
        name[len - ext] = '\0';
        if (wal_name_kind(name) == WAL_FILE_UNKNOWN)
            continue;
        wal_pusher_names_add(out, name);
    }
    if (errno != 0) {
        int e = errno;
        closedir(d);
        return err_errno(err, e, "could not read directory \"%s\"", path);
    }
    closedir(d);
    if (out->n > 0)
        qsort(out->v, out->n, sizeof(*out->v), wal_pusher_names_order);
    return true;
}

typedef struct wal_pusher {
    const wal_pusher_config *cfg;
    storage *repo;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    wal_pusher_names queue;    /* to push, in order */
    wal_pusher_names busy;     /* being pushed */
    wal_pusher_names recorded; /* scan: files with a record */
    wal_pusher_names ready;    /* scan: files PostgreSQL marked ready, in push order */
    wal_pusher_names known;    /* scan: recorded, in flight or queued, sorted by name */
    wal_pusher_names copies;   /* scan: the copies in the spool's queue/ */
    wal_pusher_names todo;     /* scan: ready files and copies not paused, in push order */
    long retry_at_ms;          /* queued copies wait until then after a failure */
    long retry_pause_ms;       /* the pause after the next failure */
    char swept[WAL_TIMELINES_SWEPT][WAL_TLI_NAME_LEN + 1];
    size_t nswept;
    bool stop;
    pgd_error spool_err; /* the spool could not be written: stop */
} wal_pusher;

static long wal_pusher_now_ms(void)
{
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/*
 * After a push: a copy stored lets the queued copies go at once; any failure pauses them (a
 * ready file that stores does not: a copy that can never be stored is tried every
 * WAL_PUSHER_RETRY_MAX_MS, not at every scan).
 */
static void wal_pusher_paced(wal_pusher *p, bool ok)
{
    pthread_mutex_lock(&p->lock);
    if (ok) {
        p->retry_at_ms = 0;
        p->retry_pause_ms = 0;
    } else {
        p->retry_pause_ms = p->retry_pause_ms == 0 ? WAL_PUSHER_RETRY_MIN_MS
                            : p->retry_pause_ms * 2 > WAL_PUSHER_RETRY_MAX_MS
                                ? WAL_PUSHER_RETRY_MAX_MS
                                : p->retry_pause_ms * 2;
        p->retry_at_ms = wal_pusher_now_ms() + p->retry_pause_ms;
    }
    pthread_mutex_unlock(&p->lock);
}

/* Remove, once per timeline and run, the temporary objects killed pushes left in the repository. */
static void wal_pusher_sweep_repo(wal_pusher *p, const char *name)
{
    char tli[WAL_TLI_NAME_LEN + 1];
    pgd_error err = {0};
    bool seen = false;

    snprintf(tli, sizeof(tli), "%.*s", WAL_TLI_NAME_LEN, name);
    pthread_mutex_lock(&p->lock);
    for (size_t i = 0; i < p->nswept && !seen; i++)
        seen = strcmp(p->swept[i], tli) == 0;
    if (!seen && p->nswept < WAL_TIMELINES_SWEPT)
        snprintf(p->swept[p->nswept++], sizeof(p->swept[0]), "%s", tli);
    pthread_mutex_unlock(&p->lock);
    if (!seen && !wal_archive_remove_stale_temp(p->repo, name, &err))
        log_warn("%s", err.msg);
}

/*
 * Push a queued copy of `name` (no longer ready in pg_wal); removed once
 * stored. A failure is logged and paces the copies; nothing is recorded.
 */
static bool wal_pusher_push_copy(wal_pusher *p, const char *name, pgd_error *spool_err)
{
    char path[WAL_SPOOL_PATH_MAX + WAL_NAME_MAX + 16];
    pgd_error err = {0};
    wal_push_result result;
    wal_file_sum sum;
    bool ok;

    wal_spool_queue_path(p->cfg->spool_dir, name, path, sizeof(path));
    if (access(path, F_OK) != 0 && errno == ENOENT)
        return true;
    ok = wal_archive_push_sum(p->repo, path, p->cfg->kind, p->cfg->level, &result, &sum, &err);
    wal_pusher_paced(p, ok);
    if (!ok) {
        log_warn("%s (queued; tried again in a few seconds)", err.msg);
        return true;
    }
    log_info("archived queued WAL file \"%s\"%s", name,
             result == WAL_PUSH_IDENTICAL ? " (it was already, with the same content)" : "");
    wal_pusher_sweep_repo(p, name);
    if (wal_spool_queue_remove(p->cfg->spool_dir, name, spool_err))
        return true;
    err_prefix(spool_err, "queued WAL file \"%s\" was archived, but the spool cannot say so", name);
    return false;
}

/* Push one file and record the outcome; false when the record cannot be written. */
static bool wal_pusher_push_one(wal_pusher *p, const char *name, pgd_error *spool_err)
{
    char path[WAL_SPOOL_PATH_MAX + WAL_NAME_MAX];
    pgd_error err = {0};
    wal_push_result result;
    wal_file_sum sum;

    snprintf(path, sizeof(path), "%s/" WAL_STATUS_DIR "/%s" WAL_READY_EXT, p->cfg->pg_wal, name);
    if (access(path, F_OK) != 0 && errno == ENOENT)
        /* acknowledged since it was queued: PostgreSQL may recycle the file; a copy may wait */
        return wal_pusher_push_copy(p, name, spool_err);
    snprintf(path, sizeof(path), "%s/%s", p->cfg->pg_wal, name);
    if (wal_archive_push_sum(p->repo, path, p->cfg->kind, p->cfg->level, &result, &sum, &err)) {
        pgd_error copy_err = {0};

        /* a copy queued meanwhile is of this file: the repository has it now */
        if (!wal_spool_queue_remove(p->cfg->spool_dir, name, &copy_err))
            log_warn("%s", copy_err.msg);
        if (wal_spool_record_ok(p->cfg->spool_dir, name, &sum, &err)) {
            log_debug("archived WAL file \"%s\"%s", name,
                      result == WAL_PUSH_IDENTICAL ? " (it was already, with the same content)"
                                                   : "");
            wal_pusher_sweep_repo(p, name);
            return true;
        }
        err_prefix(&err, "WAL file \"%s\" was archived, but the spool cannot say so", name);
    } else {
        wal_pusher_paced(p, false); /* the repository may be down: the copies wait too */
    }
    log_warn("%s", err.msg);
    if (wal_spool_record_error(p->cfg->spool_dir, name, err.msg, spool_err))
        return true;
    err_prefix(spool_err, "could not record the outcome of archiving \"%s\" (%s)", name, err.msg);
    return false;
}

static void *wal_pusher_worker(void *arg)
{
    wal_pusher *p = arg;

    pthread_mutex_lock(&p->lock);
    for (;;) {
        char name[WAL_PUSHER_NAME_SIZE];
        pgd_error spool_err = {0};
        bool ok;

        while (!p->stop && p->queue.n == 0)
            pthread_cond_wait(&p->changed, &p->lock);
        if (p->stop)
            break;
        snprintf(name, sizeof(name), "%s", p->queue.v[0]);
        wal_pusher_names_remove(&p->queue, name);
        wal_pusher_names_add(&p->busy, name);
        pthread_mutex_unlock(&p->lock);
        ok = wal_pusher_push_one(p, name, &spool_err);
        pthread_mutex_lock(&p->lock);
        wal_pusher_names_remove(&p->busy, name);
        if (!ok) {
            if (!p->spool_err.set)
                p->spool_err = spool_err;
            p->stop = true;
        }
        pthread_cond_broadcast(&p->changed);
    }
    pthread_cond_broadcast(&p->changed);
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* A record: remember it, or remove it when PostgreSQL no longer has the file ready. */
static bool wal_pusher_note_record(void *arg, const char *name, wal_record_kind kind,
                                   pgd_error *err)
{
    wal_pusher *p = arg;

    if (kind == WAL_RECORD_NONE)
        return true;
    if (!wal_pusher_names_sorted_has(&p->ready, name, wal_pusher_names_order))
        /* acknowledged (.done) or gone: the record has served */
        return wal_spool_record_remove(p->cfg->spool_dir, name, kind, err);
    wal_pusher_names_add(&p->recorded, name);
    return true;
}

/* Remember each queued copy. */
static bool wal_pusher_note_copy(void *arg, const char *name, wal_record_kind kind, pgd_error *err)
{
    (void)err;
    if (kind != WAL_RECORD_NONE)
        wal_pusher_names_add(arg, name);
    return true;
}

/*
 * One scan: queue what is ready and neither recorded nor in flight, and
 * the copies in queue/ when they are not paused. *idle: nothing to do and
 * no copy waiting.
 */
static bool wal_pusher_scan(wal_pusher *p, bool *idle, bool *gone, pgd_error *err)
{
    bool ok;

    if (!wal_pusher_ready(p->cfg->pg_wal, &p->ready, gone, err))
        return false;
    if (*gone)
        return true;
    p->copies.n = 0;
    if (!wal_spool_queue_list(p->cfg->spool_dir, wal_pusher_note_copy, &p->copies, err))
        return false;
    pthread_mutex_lock(&p->lock);
    /* what to push: the ready files and, unless paused, the copies, in push order */
    p->todo.n = 0;
    for (size_t i = 0; i < p->ready.n; i++)
        wal_pusher_names_add(&p->todo, p->ready.v[i]);
    for (size_t i = 0; wal_pusher_now_ms() >= p->retry_at_ms && i < p->copies.n; i++)
        if (!wal_pusher_names_sorted_has(&p->ready, p->copies.v[i], wal_pusher_names_order))
            wal_pusher_names_add(&p->todo, p->copies.v[i]);
    if (p->todo.n > 0)
        qsort(p->todo.v, p->todo.n, sizeof(*p->todo.v), wal_pusher_names_order);
    p->recorded.n = 0;
    ok = wal_spool_record_list(p->cfg->spool_dir, wal_pusher_note_record, p, err);
    for (size_t i = p->queue.n; i-- > 0;) /* acknowledged some other way meanwhile */
        if (!wal_pusher_names_sorted_has(&p->todo, p->queue.v[i], wal_pusher_names_order))
            wal_pusher_names_remove(&p->queue, p->queue.v[i]);
    p->known.n = 0;
    for (size_t i = 0; ok && i < p->recorded.n + p->busy.n + p->queue.n; i++) {
        const char *name = i < p->recorded.n ? p->recorded.v[i]
                           : i < p->recorded.n + p->busy.n
                               ? p->busy.v[i - p->recorded.n]
                               : p->queue.v[i - p->recorded.n - p->busy.n];
        wal_pusher_names_add(&p->known, name);
    }
    if (ok && p->known.n > 0)
        qsort(p->known.v, p->known.n, sizeof(*p->known.v), wal_pusher_names_strcmp);
    for (size_t i = 0; ok && i < p->todo.n; i++)
        if (!wal_pusher_names_sorted_has(&p->known, p->todo.v[i], wal_pusher_names_strcmp))
            wal_pusher_names_add(&p->queue, p->todo.v[i]);
    *idle = p->queue.n == 0 && p->busy.n == 0 && p->copies.n == 0;
    pthread_cond_broadcast(&p->changed);
    pthread_mutex_unlock(&p->lock);
    return ok;
}

/* Every ready file without a record gets `msg` as its error record (the repository failed). */
static bool wal_pusher_fail_all(wal_pusher *p, const char *msg, pgd_error *err)
{
    bool gone;
    wal_push_record rec;

    if (!wal_pusher_ready(p->cfg->pg_wal, &p->ready, &gone, err))
        return false;
    for (size_t i = 0; i < p->ready.n; i++) {
        if (!wal_spool_record_read(p->cfg->spool_dir, p->ready.v[i], &rec, err))
            return false;
        if (rec.kind == WAL_RECORD_NONE &&
            !wal_spool_record_error(p->cfg->spool_dir, p->ready.v[i], msg, err))
            return false;
    }
    return true;
}

/*
 * Open the repository. When it cannot be, every ready file gets that as
 * its error; with copies waiting in queue/ it is tried again (paced as a
 * failed copy) until it opens, or the settings change. p->repo NULL:
 * stopped (*why), or false: the spool cannot be written.
 */
static bool wal_pusher_open(wal_pusher *p, int wake, wal_pusher_stop *why, pgd_error *err)
{
    const wal_pusher_config *cfg = p->cfg;
    long pause = WAL_PUSHER_RETRY_MIN_MS;
    char status[WAL_SPOOL_PATH_MAX + 32];

    snprintf(status, sizeof(status), "%s/" WAL_STATUS_DIR, cfg->pg_wal);
    for (;;) {
        pgd_error open_err = {0};
        wal_queue_stat st;
        bool changed = false;

        p->repo = cfg->hooks.open_repo(cfg->hooks.open_arg, &open_err);
        if (p->repo != NULL)
            return true;
        log_error("%s", open_err.msg);
        if (!wal_pusher_fail_all(p, open_err.msg, err) ||
            !wal_spool_queue_stat(cfg->spool_dir, &st, err) ||
            (cfg->hooks.settings != NULL &&
             !wal_spool_settings_changed(cfg->spool_dir, cfg->hooks.settings, &changed, err))) {
            *why = WAL_PUSHER_STOP_IDLE;
            return false;
        }
        *why = changed ? WAL_PUSHER_STOP_SETTINGS : WAL_PUSHER_STOP_NO_REPO;
        if (access(status, F_OK) != 0 && errno == ENOENT)
            *why = WAL_PUSHER_STOP_GONE; /* the cluster is gone: its copies wait for nobody */
        if (*why != WAL_PUSHER_STOP_NO_REPO || st.files == 0)
            return true;
        log_info("%u queued WAL files (oldest \"%s\") wait for the repository: opening it "
                 "again in %ld s",
                 st.files, st.oldest, pause / 1000);
        if (cfg->hooks.tick != NULL)
            cfg->hooks.tick(cfg->hooks.tick_arg);
        wal_spool_wake_wait(wake, pause);
        pause = pause * 2 > WAL_PUSHER_RETRY_MAX_MS ? WAL_PUSHER_RETRY_MAX_MS : pause * 2;
    }
}

bool wal_pusher_run(const wal_pusher_config *cfg, wal_pusher_stop *why, pgd_error *err)
{
    wal_pusher p = {.cfg = cfg};
    pthread_t *threads;
    unsigned started = 0;
    time_t idle_since = time(NULL);
    bool ok = true;
    int wake;
    wal_pusher_stop stopped = WAL_PUSHER_STOP_IDLE;

    if (!wal_spool_record_sweep(cfg->spool_dir, err) ||
        !wal_spool_queue_sweep(cfg->spool_dir, err) ||
        !wal_spool_wake_open(cfg->spool_dir, &wake, err))
        return false;
    ok = wal_pusher_open(&p, wake, &stopped, err);
    if (!ok || p.repo == NULL) {
        free(p.ready.v);
        close(wake);
        if (why != NULL)
            *why = stopped;
        return ok;
    }
    threads = xcalloc(cfg->concurrency, sizeof(*threads));
    pthread_mutex_init(&p.lock, NULL);
    pthread_cond_init(&p.changed, NULL);
    if (ok)
        ok = threads_start(threads, cfg->concurrency, wal_pusher_worker, &p, "pusher thread",
                           &started, err);
    while (ok) {
        bool idle = false, gone = false, stop;

        bool changed = false;

        if (!wal_pusher_scan(&p, &idle, &gone, err) ||
            (cfg->hooks.settings != NULL &&
             !wal_spool_settings_changed(cfg->spool_dir, cfg->hooks.settings, &changed, err))) {
            ok = false;
            break;
        }
        if (changed) {
            stopped = WAL_PUSHER_STOP_SETTINGS;
            break;
        }
        pthread_mutex_lock(&p.lock);
        stop = p.stop;
        pthread_mutex_unlock(&p.lock);
        if (gone)
            stopped = WAL_PUSHER_STOP_GONE;
        if (stop || gone)
            break;
        if (!idle)
            idle_since = time(NULL);
        else if (time(NULL) - idle_since >= cfg->idle_exit_s)
            break;
        if (cfg->hooks.tick != NULL)
            cfg->hooks.tick(cfg->hooks.tick_arg);
        wal_spool_wake_wait(wake, WAL_PUSHER_POLL_MS);
    }
    threads_stop(&p.lock, &p.changed, &p.stop, threads, started);
    if (ok && p.spool_err.set) {
        *err = p.spool_err;
        ok = false;
    }
    pthread_cond_destroy(&p.changed);
    pthread_mutex_destroy(&p.lock);
    free(threads);
    free(p.queue.v);
    free(p.busy.v);
    free(p.recorded.v);
    free(p.ready.v);
    free(p.known.v);
    free(p.copies.v);
    free(p.todo.v);
    storage_free(p.repo);
    close(wake);
    if (why != NULL)
        *why = stopped;
    return ok;
}

/* Remember each ".ok" record (sorted afterwards). */
static bool wal_pusher_note_ok(void *arg, const char *name, wal_record_kind kind, pgd_error *err)
{
    (void)err;
    if (kind == WAL_RECORD_OK)
        wal_pusher_names_add(arg, name);
    return true;
}

/* Add the file at `path` to the backlog as `name`. */
static void wal_pusher_backlog_add(wal_queue_stat *st, const char *path, const char *name)
{
    struct stat sb;

    if (stat(path, &sb) != 0)
        return; /* archived and recycled meanwhile */
    st->bytes += (uint64_t)sb.st_size;
    st->files++;
    if (st->oldest[0] == '\0' || wal_pusher_names_order(name, st->oldest) < 0) {
        snprintf(st->oldest, sizeof(st->oldest), "%s", name);
        st->oldest_mtime = sb.st_mtime;
    }
}

bool wal_pusher_backlog(const char *pg_wal, const char *spool_dir, wal_queue_stat *st,
                        pgd_error *err)
{
    wal_pusher_names ready = {0}, stored = {0}, copies = {0};
    bool gone, ok;

    memset(st, 0, sizeof(*st));
    ok = wal_pusher_ready(pg_wal, &ready, &gone, err) &&
         wal_spool_record_list(spool_dir, wal_pusher_note_ok, &stored, err) &&
         wal_spool_queue_list(spool_dir, wal_pusher_note_copy, &copies, err);
    if (ok && stored.n > 0)
        qsort(stored.v, stored.n, sizeof(*stored.v), wal_pusher_names_strcmp);
    for (size_t i = 0; ok && i < ready.n; i++) {
        char path[WAL_SPOOL_PATH_MAX + WAL_NAME_MAX];

        if (wal_pusher_names_sorted_has(&stored, ready.v[i], wal_pusher_names_strcmp))
            continue;
        snprintf(path, sizeof(path), "%s/%s", pg_wal, ready.v[i]);
        wal_pusher_backlog_add(st, path, ready.v[i]);
    }
    for (size_t i = 0; ok && i < copies.n; i++) {
        char path[WAL_SPOOL_PATH_MAX + WAL_NAME_MAX + 16];

        if (wal_pusher_names_sorted_has(&ready, copies.v[i], wal_pusher_names_order))
            continue; /* counted above */
        wal_spool_queue_path(spool_dir, copies.v[i], path, sizeof(path));
        wal_pusher_backlog_add(st, path, copies.v[i]);
    }
    free(ready.v);
    free(stored.v);
    free(copies.v);
    return ok;
}
