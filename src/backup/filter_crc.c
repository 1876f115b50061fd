/*
 * filter_crc.c - size and CRC-32C of a file's bytes (see filter_crc.h).
 */
#include "backup/filter_crc.h"

#include <stdlib.h>

#include "util/crc32c.h"
#include "util/xmalloc.h"

/* zeros counted in a CRC-32C at a time, for a file that shrank while it was read */
#define FILTER_CRC_ZEROS 65536

typedef struct filter_crc {
    file_filter base;
    uint64_t announced; /* the size begin gave: what the tar entry declares */
    uint64_t bytes;
    uint32_t crc;
} filter_crc;

static const unsigned char filter_crc_zeros[FILTER_CRC_ZEROS];

static bool filter_crc_begin(file_filter *f, const file_filter_file *file, pgd_error *err)
{
    filter_crc *c = (filter_crc *)f;

    c->announced = file->size;
    c->bytes = 0;
    c->crc = CRC32C_INIT;
    return file_filter_begin(f->next, file, err);
}

static bool filter_crc_data(file_filter *f, file_chunk *chunk, pgd_error *err)
{
    filter_crc *c = (filter_crc *)f;

    c->crc = crc32c_update(c->crc, chunk->data, chunk->len);
    c->bytes += chunk->len;
    return file_filter_data(f->next, chunk, err);
}

/*
 * A file that delivered fewer bytes than announced (it shrank while it was
 * read) is completed with zeros by the tar filter behind this one: those
 * zeros are counted too, so the manifest describes the tar entry as it is
 * (restore and verify refuse an entry of another size), as PostgreSQL's
 * base backup records such a file. WAL replay from the backup's start
 * repairs the file, as it does any file that changed during the backup.
 */
static bool filter_crc_end(file_filter *f, file_filter_result *result, pgd_error *err)
{
    filter_crc *c = (filter_crc *)f;

    while (c->bytes < c->announced) {
        uint64_t left = c->announced - c->bytes;
        size_t n = left < FILTER_CRC_ZEROS ? (size_t)left : FILTER_CRC_ZEROS;
        c->crc = crc32c_update(c->crc, filter_crc_zeros, n);
        c->bytes += n;
    }
    result->size = c->bytes;
    result->crc = crc32c_final(c->crc);
    return file_filter_end(f->next, result, err);
}

static void filter_crc_free(file_filter *f)
{
    file_filter_free(f->next);
    free(f);
}

static const file_filter_ops filter_crc_ops = {filter_crc_begin, filter_crc_data, filter_crc_end,
                                               filter_crc_free};

file_filter *filter_crc_new(file_filter *next)
{
    filter_crc *c = xcalloc(1, sizeof(*c));

    c->base.ops = &filter_crc_ops;
    c->base.next = next;
    return &c->base;
}
