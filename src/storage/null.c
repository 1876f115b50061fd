/*
 * null.c - a repository that keeps nothing (`--repo null:`). For measuring
 * how fast a backup can read, with the cost of storing taken out. A backup
 * made into it cannot be restored; use it with --archive-check=off.
 */
#include <stdlib.h>
#include <string.h>

#include "storage/storage.h"
#include "util/xmalloc.h"

typedef struct null_writer {
    out_stream base;
} null_writer;

static bool null_write(out_stream *s, const void *buf, size_t len, pgd_error *err)
{
    (void)s;
    (void)buf;
    (void)len;
    (void)err;
    return true;
}

static bool null_close(out_stream *s, pgd_error *err)
{
    (void)err;
    free(s);
    return true;
}

static void null_abort(out_stream *s)
{
    free(s);
}

static const out_stream_ops null_writer_ops = {null_write, null_close, null_abort};

static out_stream *null_write_open(storage *s, const char *path, unsigned flags, pgd_error *err)
{
    null_writer *w = xcalloc(1, sizeof(*w));

    (void)s;
    (void)path;
    (void)flags;
    (void)err;
    w->base.ops = &null_writer_ops;
    return &w->base;
}

static in_stream *null_read_open(storage *s, const char *path, bool *missing, pgd_error *err)
{
    (void)s;
    (void)path;
    (void)err;
    *missing = true;
    return NULL;
}

static bool null_exists(storage *s, const char *path, bool *exists, pgd_error *err)
{
    (void)s;
    (void)path;
    (void)err;
    *exists = false;
    return true;
}

static bool null_list(storage *s, const char *dir, storage_list_cb cb, void *arg, pgd_error *err)
{
    (void)s;
    (void)dir;
    (void)cb;
    (void)arg;
    (void)err;
    return true;
}

static bool null_remove(storage *s, const char *path, pgd_error *err)
{
    (void)s;
    (void)path;
    (void)err;
    return true;
}

static void null_free(storage *s)
{
    free(s->uri);
    free(s);
}

static const storage_ops null_ops = {
    .write_open = null_write_open,
    .read_open = null_read_open,
    .exists = null_exists,
    .list = null_list,
    .remove = null_remove,
    .free = null_free,
};

storage *storage_null_new(void)
{
    storage *s = xcalloc(1, sizeof(*s));

    s->uri = xstrdup("null:");
    s->ops = &null_ops;
    return s;
}
