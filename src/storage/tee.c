/*
 * tee.c - several repositories behind the one storage interface (tee.h):
 * writes to all of them, reads from the first that answers.
 *
 * The backup pipeline writes partitions from several threads at once, so
 * the set of repositories still in the run is read and changed under a
 * mutex; each object's writer is used by one thread at a time.
 */
#include "storage/tee.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"
#include "util/xmalloc.h"

/* what a warning names: a repository path (PATH_MAX) and a few words */
#define TEE_WHAT_MAX 4200

typedef struct tee_child {
    storage *s;
    bool dropped;
    pgd_error why;
} tee_child;

typedef struct tee_storage {
    storage base;
    tee_child *c;
    size_t n;
    unsigned flags;
    pthread_mutex_t mu;
} tee_storage;

typedef struct tee_writer {
    out_stream base;
    tee_storage *t;
    out_stream **outs; /* one per repository; NULL: not (any more) written to */
    char *path;
    unsigned flags;
} tee_writer;

static tee_storage *tee_of(storage *s)
{
    return (tee_storage *)s;
}

static bool tee_live(tee_storage *t, size_t i)
{
    bool live;

    pthread_mutex_lock(&t->mu);
    live = !t->c[i].dropped;
    pthread_mutex_unlock(&t->mu);
    return live;
}

static size_t tee_live_count(tee_storage *t)
{
    size_t n = 0;

    pthread_mutex_lock(&t->mu);
    for (size_t i = 0; i < t->n; i++)
        n += !t->c[i].dropped;
    pthread_mutex_unlock(&t->mu);
    return n;
}

/*
 * Repository i failed with e. With TEE_DROP_FAILED it leaves the run (true
 * while another is left); without, the failure is the operation's (false,
 * err = e).
 */
static bool tee_fail(tee_storage *t, size_t i, const pgd_error *e, pgd_error *err)
{
    bool first;

    if (!(t->flags & TEE_DROP_FAILED)) {
        *err = *e;
        return false;
    }
    pthread_mutex_lock(&t->mu);
    first = !t->c[i].dropped;
    if (first) {
        t->c[i].dropped = true;
        t->c[i].why = *e;
    }
    pthread_mutex_unlock(&t->mu);
    if (first)
        log_warn("repository \"%s\" failed and leaves this run (the others go on): %s",
                 t->c[i].s->uri, e->msg);
    if (tee_live_count(t) > 0)
        return true;
    *err = *e;
    err_prefix(err, "every repository failed; the last, \"%s\"", t->c[i].s->uri);
    return false;
}

static bool tee_write(out_stream *s, const void *buf, size_t len, pgd_error *err)
{
    tee_writer *w = (tee_writer *)s;

    for (size_t i = 0; i < w->t->n; i++) {
        pgd_error e = {0};

        if (w->outs[i] == NULL)
            continue;
        if (out_write(w->outs[i], buf, len, &e))
            continue;
        out_abort(w->outs[i]);
        w->outs[i] = NULL;
        if (!tee_fail(w->t, i, &e, err))
            return false;
    }
    return true;
}

static void tee_writer_free(tee_writer *w)
{
    free(w->outs);
    free(w->path);
    free(w);
}

static void tee_abort(out_stream *s)
{
    tee_writer *w = (tee_writer *)s;

    for (size_t i = 0; i < w->t->n; i++)
        out_abort(w->outs[i]);
    tee_writer_free(w);
}

/*
 * Commit in every repository. A no-replace object one of them already holds
 * is taken back from those that committed it: it is claimed in all or none.
 */
static bool tee_close(out_stream *s, pgd_error *err)
{
    tee_writer *w = (tee_writer *)s;
    tee_storage *t = w->t;
    bool *committed = xcalloc(t->n, sizeof(bool));
    pgd_error exists = {0};
    bool ok = true;

    for (size_t i = 0; i < t->n; i++) {
        pgd_error e = {0};

        if (w->outs[i] == NULL)
            continue;
        committed[i] = out_close(w->outs[i], &e);
        w->outs[i] = NULL;
        if (committed[i])
            continue;
        if (err_is(&e, PGD_ERR_EXISTS)) {
            if (!exists.set)
                exists = e;
        } else if (ok && !tee_fail(t, i, &e, err)) {
            ok = false;
        }
    }
    if (ok && exists.set) {
        for (size_t i = 0; i < t->n; i++) {
            pgd_error ignore = {0};
            if (committed[i] && !storage_remove(t->c[i].s, w->path, &ignore))
                log_warn("could not take back \"%s\" from repository \"%s\": %s", w->path,
                         t->c[i].s->uri, ignore.msg);
        }
        *err = exists;
        ok = false;
    }
    if (ok && tee_live_count(t) == 0) /* every writer was dropped by another thread */
        ok = err_set(err, "every repository failed");
    free(committed);
    tee_writer_free(w);
    return ok;
}

static const out_stream_ops tee_writer_ops = {tee_write, tee_close, tee_abort};

static out_stream *tee_write_open(storage *s, const char *path, unsigned flags, pgd_error *err)
{
    tee_storage *t = tee_of(s);
    tee_writer *w = xcalloc(1, sizeof(*w));
    size_t opened = 0;

    w->base.ops = &tee_writer_ops;
    w->t = t;
    w->outs = xcalloc(t->n, sizeof(out_stream *));
    w->path = xstrdup(path);
    w->flags = flags;
    for (size_t i = 0; i < t->n; i++) {
        pgd_error e = {0};

        if (!tee_live(t, i))
            continue;
        if ((w->outs[i] = storage_write_open(t->c[i].s, path, flags, &e)) != NULL) {
            opened++;
            continue;
        }
        if (!tee_fail(t, i, &e, err)) {
            tee_abort(&w->base);
            return NULL;
        }
    }
    if (opened == 0) {
        tee_abort(&w->base);
        err_set(err, "every repository failed");
        return NULL;
    }
    return &w->base;
}

/*
 * A read that repository i could not do (e): the next one is tried, and the
 * warning says so. *first keeps the first such error for when none has it.
 */
static void tee_read_failed(tee_storage *t, size_t i, const char *what, pgd_error *e,
                            pgd_error *first)
{
    size_t next = i + 1;

    while (next < t->n && !tee_live(t, next))
        next++;
    if (next < t->n)
        log_warn("could not read %s from repository \"%s\": %s; trying repository \"%s\"", what,
                 t->c[i].s->uri, e->msg, t->c[next].s->uri);
    if (!first->set)
        *first = *e;
    if (t->flags & TEE_DROP_FAILED) {
        pgd_error ignore = {0};
        tee_fail(t, i, e, &ignore);
    }
}

static in_stream *tee_read_open(storage *s, const char *path, bool *missing, pgd_error *err)
{
    tee_storage *t = tee_of(s);
    pgd_error first = {0};
    char what[TEE_WHAT_MAX];

    snprintf(what, sizeof(what), "\"%s\"", path);
    for (size_t i = 0; i < t->n; i++) {
        pgd_error e = {0};
        in_stream *in;
        bool m = false;

        if (!tee_live(t, i))
            continue;
        if ((in = storage_read_open(t->c[i].s, path, &m, &e)) != NULL) {
            *missing = false;
            return in;
        }
        if (!m)
            tee_read_failed(t, i, what, &e, &first);
    }
    *missing = !first.set;
    if (first.set)
        *err = first;
    return NULL;
}

static bool tee_exists(storage *s, const char *path, bool *exists, pgd_error *err)
{
    tee_storage *t = tee_of(s);
    pgd_error first = {0};
    char what[TEE_WHAT_MAX];

    snprintf(what, sizeof(what), "\"%s\"", path);
    *exists = false;
    for (size_t i = 0; i < t->n; i++) {
        pgd_error e = {0};

        if (!tee_live(t, i))
            continue;
        if (!storage_exists(t->c[i].s, path, exists, &e)) {
            *exists = false;
            tee_read_failed(t, i, what, &e, &first);
        } else if (*exists) {
            return true;
        }
    }
    if (first.set)
        *err = first;
    return !first.set;
}

typedef struct tee_entry {
    char *name;
    uint64_t size;
    bool is_dir;
} tee_entry;

typedef struct tee_listing {
    tee_entry *e;
    size_t n, cap;
} tee_listing;

static bool tee_list_add(void *arg, const char *name, uint64_t size, bool is_dir, pgd_error *err)
{
    tee_listing *l = arg;

    (void)err;
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->e[i].name, name) == 0)
            return true;
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->e = xrealloc(l->e, l->cap * sizeof(*l->e));
    }
    l->e[l->n++] = (tee_entry){xstrdup(name), size, is_dir};
    return true;
}

/* The union of the repositories' listings (an entry in several: once, as the first has it). */
static bool tee_list(storage *s, const char *dir, storage_list_cb cb, void *arg, pgd_error *err)
{
    tee_storage *t = tee_of(s);
    tee_listing l = {0};
    pgd_error first = {0};
    size_t answered = 0;
    bool ok = true;
    char what[TEE_WHAT_MAX];

    snprintf(what, sizeof(what), "the listing of \"%s\"", dir);
    for (size_t i = 0; i < t->n; i++) {
        pgd_error e = {0};

        if (!tee_live(t, i))
            continue;
        if (storage_list(t->c[i].s, dir, tee_list_add, &l, &e))
            answered++;
        else
            tee_read_failed(t, i, what, &e, &first);
    }
    if (answered == 0 && first.set) {
        *err = first;
        ok = false;
    }
    for (size_t i = 0; i < l.n; i++) {
        if (ok && !cb(arg, l.e[i].name, l.e[i].size, l.e[i].is_dir, err))
            ok = false;
        free(l.e[i].name);
    }
    free(l.e);
    return ok;
}

/* Remove (or sync) in every repository in the run; a missing object is not an error. */
static bool tee_each(tee_storage *t, bool (*op)(storage *, const char *, pgd_error *),
                     const char *path, pgd_error *err)
{
    for (size_t i = 0; i < t->n; i++) {
        pgd_error e = {0};

        if (!tee_live(t, i) || op(t->c[i].s, path, &e))
            continue;
        if (!tee_fail(t, i, &e, err))
            return false;
    }
    return true;
}

static bool tee_remove_one(storage *s, const char *path, pgd_error *err)
{
    return storage_remove(s, path, err);
}

static bool tee_remove(storage *s, const char *path, pgd_error *err)
{
    return tee_each(tee_of(s), tee_remove_one, path, err);
}

static bool tee_sync_one(storage *s, const char *path, pgd_error *err)
{
    return storage_sync(s, path, err);
}

static bool tee_sync(storage *s, const char *path, pgd_error *err)
{
    return tee_each(tee_of(s), tee_sync_one, path, err);
}

static bool tee_remove_many(storage *s, const char *const *paths, size_t n, pgd_error *err)
{
    tee_storage *t = tee_of(s);

    for (size_t i = 0; i < t->n; i++) {
        pgd_error e = {0};

        if (!tee_live(t, i) || storage_remove_many(t->c[i].s, paths, n, &e))
            continue;
        if (!tee_fail(t, i, &e, err))
            return false;
    }
    return true;
}

/*
 * Housekeeping its callers may let fail (a warning): every repository is swept, none leaves
 * the run for it, and the first failure is the result.
 */
static bool tee_remove_stale_temp(storage *s, const char *dir, int64_t older_than_s, pgd_error *err)
{
    tee_storage *t = tee_of(s);
    pgd_error first = {0};

    for (size_t i = 0; i < t->n; i++) {
        pgd_error e = {0};

        if (!tee_live(t, i) || storage_remove_stale_temp(t->c[i].s, dir, older_than_s, &e))
            continue;
        if (!first.set) {
            first = e;
            if (strstr(first.msg, t->c[i].s->uri) == NULL)
                err_prefix(&first, "repository \"%s\"", t->c[i].s->uri);
        }
    }
    if (first.set)
        *err = first;
    return !first.set;
}

/* The tee's root is there when any repository's is (one removed: the others serve). */
static bool tee_root_exists(storage *s, bool *exists, pgd_error *err)
{
    tee_storage *t = tee_of(s);
    pgd_error first = {0};

    *exists = false;
    for (size_t i = 0; i < t->n; i++) {
        pgd_error e = {0};
        bool here = false;

        if (!tee_live(t, i))
            continue;
        if (!storage_root_exists(t->c[i].s, &here, &e)) {
            tee_read_failed(t, i, "the repository's root", &e, &first);
            continue;
        }
        if (here) {
            *exists = true;
            return true;
        }
        log_warn("repository \"%s\" does not exist; it is passed over", t->c[i].s->uri);
    }
    if (first.set)
        *err = first;
    return !first.set;
}

/* The latest lock of any repository: removal is refused when one of them refuses it. */
static bool tee_retained_until(storage *s, const char *path, int64_t *until, pgd_error *err)
{
    tee_storage *t = tee_of(s);

    *until = 0;
    for (size_t i = 0; i < t->n; i++) {
        int64_t u;

        if (!tee_live(t, i))
            continue;
        if (!storage_retained_until(t->c[i].s, path, &u, err))
            return false;
        if (u > *until)
            *until = u;
    }
    return true;
}

static void tee_free(storage *s)
{
    tee_storage *t = tee_of(s);

    for (size_t i = 0; i < t->n; i++)
        storage_free(t->c[i].s);
    pthread_mutex_destroy(&t->mu);
    free(t->c);
    free(t->base.uri);
    free(t);
}

static const storage_ops tee_ops = {
    .write_open = tee_write_open,
    .read_open = tee_read_open,
    .exists = tee_exists,
    .list = tee_list,
    .remove = tee_remove,
    .free = tee_free,
    .remove_many = tee_remove_many,
    .remove_stale_temp = tee_remove_stale_temp,
    .sync = tee_sync,
    .root_exists = tee_root_exists,
    .retained_until = tee_retained_until,
};

storage *tee_storage_new(storage **children, size_t n, unsigned flags)
{
    tee_storage *t = xcalloc(1, sizeof(*t));
    size_t len = 0;

    t->base.ops = &tee_ops;
    t->c = xcalloc(n, sizeof(*t->c));
    t->n = n;
    t->flags = flags;
    pthread_mutex_init(&t->mu, NULL);
    for (size_t i = 0; i < n; i++) {
        t->c[i].s = children[i];
        t->base.stream_memory += children[i]->stream_memory;
        len += strlen(children[i]->uri) + 2;
    }
    /* "URI1, URI2": what a message about the whole set names */
    t->base.uri = xcalloc(1, len + 1);
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            strcat(t->base.uri, ", ");
        strcat(t->base.uri, children[i]->uri);
    }
    return &t->base;
}

bool tee_storage_is(const storage *s)
{
    return s != NULL && s->ops == &tee_ops;
}

size_t tee_storage_count(const storage *s)
{
    return tee_storage_is(s) ? ((const tee_storage *)s)->n : 1;
}

storage *tee_storage_child(storage *s, size_t i)
{
    if (!tee_storage_is(s))
        return i == 0 ? s : NULL;
    return i < tee_of(s)->n ? tee_of(s)->c[i].s : NULL;
}

bool tee_storage_dropped(storage *s, size_t i, const pgd_error **why)
{
    tee_storage *t;
    bool dropped;

    if (!tee_storage_is(s) || i >= tee_of(s)->n)
        return false;
    t = tee_of(s);
    pthread_mutex_lock(&t->mu);
    dropped = t->c[i].dropped;
    pthread_mutex_unlock(&t->mu);
    *why = &t->c[i].why;
    return dropped;
}

bool tee_storage_drop(storage *s, size_t i, const pgd_error *e, pgd_error *err)
{
    if (!tee_storage_is(s) || i >= tee_of(s)->n) {
        *err = *e;
        return false;
    }
    return tee_fail(tee_of(s), i, e, err);
}
