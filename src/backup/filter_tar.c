/*
 * filter_tar.c - files as tar entries of the open partition (see
 * filter_tar.h).
 */
#include "backup/filter_tar.h"

#include <stdlib.h>
#include <string.h>

#include "util/xmalloc.h"

typedef struct filter_tar {
    file_filter base;
    out_stream *out;   /* the open partition; not owned */
    uint64_t *written; /* its uncompressed size so far */
    const char *path;  /* of the current file, for errors */
    uint64_t declared, received;
} filter_tar;

bool filter_tar_entry(file_filter *f, const tar_entry *e, pgd_error *err)
{
    filter_tar *t = (filter_tar *)f;

    *t->written += TAR_BLOCK;
    return tar_write_header(t->out, e, err);
}

static bool filter_tar_begin(file_filter *f, const file_filter_file *file, pgd_error *err)
{
    filter_tar *t = (filter_tar *)f;
    tar_entry e = {.path = (char *)file->path,
                   .size = file->size,
                   .mode = file->mode,
                   .mtime = file->mtime,
                   .type = TAR_FILE};

    t->path = file->path;
    t->declared = file->size;
    t->received = 0;
    return filter_tar_entry(f, &e, err);
}

static bool filter_tar_data(file_filter *f, file_chunk *chunk, pgd_error *err)
{
    filter_tar *t = (filter_tar *)f;
    size_t pad = 0;

    if (chunk->len > t->declared - t->received)
        return err_set(err,
                       "internal error: %llu bytes of \"%s\" passed to its tar entry of %llu "
                       "bytes",
                       (unsigned long long)(t->received + chunk->len), t->path,
                       (unsigned long long)t->declared);
    t->received += chunk->len;
    if (t->received == t->declared && chunk->len + tar_padding(t->declared) <= chunk->room) {
        pad = (size_t)tar_padding(t->declared);
        memset(chunk->data + chunk->len, 0, pad);
    }
    *t->written += chunk->len + pad;
    if (!out_write(t->out, chunk->data, chunk->len + pad, err))
        return false;
    if (t->received < t->declared || pad == tar_padding(t->declared))
        return true;
    /* the last chunk had no room to pad in place */
    *t->written += tar_padding(t->declared);
    return tar_write_zeros(t->out, tar_padding(t->declared), err);
}

static bool filter_tar_end(file_filter *f, file_filter_result *result, pgd_error *err)
{
    filter_tar *t = (filter_tar *)f;
    uint64_t missing = t->declared - t->received;

    (void)result;
    if (missing == 0)
        return true; /* padded with the last chunk */
    *t->written += missing + tar_padding(t->declared);
    return tar_write_zeros(t->out, missing + tar_padding(t->declared), err);
}

static void filter_tar_free(file_filter *f)
{
    free(f);
}

static const file_filter_ops filter_tar_ops = {filter_tar_begin, filter_tar_data, filter_tar_end,
                                               filter_tar_free};

file_filter *filter_tar_new(void)
{
    filter_tar *t = xcalloc(1, sizeof(*t));

    t->base.ops = &filter_tar_ops;
    return &t->base;
}

void filter_tar_attach(file_filter *f, out_stream *out, uint64_t *written)
{
    filter_tar *t = (filter_tar *)f;

    t->out = out;
    t->written = written;
}
