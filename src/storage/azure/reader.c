/*
 * reader.c - a blob read as a stream, one ranged GET of AZURE_RANGE_SIZE
 * at a time into one buffer (memory per open reader: that buffer), and the
 * existence check (a HEAD).
 *
 * The first answer's Content-Range gives the blob's size and its ETag the
 * version; every later range must come back as asked (206, the
 * Content-Range asked for, exactly that many bytes) of that version
 * (If-Match), so a blob replaced midway or a server that ignores Range is
 * an error, never a spliced file. An empty blob has no first range (416):
 * a HEAD tells its size then.
 */
#define _GNU_SOURCE
#include "storage/azure/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/big_buffer.h"
#include "util/xmalloc.h"

#define AZURE_HTTP_OK       200
#define AZURE_HTTP_PARTIAL  206
#define AZURE_HTTP_NO_RANGE 416

typedef struct azure_reader {
    in_stream base;
    azure_storage *s;
    char *path;
    char *etag;            /* of the version first seen; NULL when the server gave none */
    uint64_t size, offset; /* offset: of buf[0] in the blob */
    char *buf;
    size_t len, pos; /* bytes in buf, bytes of them consumed */
} azure_reader;

/* HEAD: *exists, and the size and ETag of what exists (etag may be NULL: not wanted). */
static bool azure_reader_head(azure_storage *s, const char *path, bool *exists, uint64_t *size,
                              char **etag, pgd_error *err)
{
    azure_answer a;
    azure_call call = {.method = "HEAD", .path = path, .expect_missing = true};
    bool ok = azure_request(s, &call, &a, err);

    if (ok && !a.missing && !a.http.has_content_length)
        ok = err_set(err, "HEAD of \"%s\" in %s returned no Content-Length", path, s->base.uri);
    if (ok) {
        *exists = !a.missing;
        *size = a.http.content_length;
        if (etag != NULL)
            *etag = a.missing || a.http.etag == NULL ? NULL : xstrdup(a.http.etag);
    }
    azure_answer_free(&a);
    return ok;
}

bool azure_reader_exists(storage *st, const char *path, bool *exists, pgd_error *err)
{
    uint64_t size;

    return azure_reader_head((azure_storage *)st, path, exists, &size, NULL, err);
}

/* A decimal number of at most 19 digits at *p, *p moved past it. */
static bool azure_reader_number(const char **p, uint64_t *v)
{
    const char *start = *p;

    *v = 0;
    while (**p >= '0' && **p <= '9' && *p - start < 19)
        *v = *v * 10 + (uint64_t)(*(*p)++ - '0');
    return *p > start && !(**p >= '0' && **p <= '9');
}

/* "bytes FIRST-LAST/TOTAL" */
static bool azure_reader_parse_range(const char *v, uint64_t *first, uint64_t *last,
                                     uint64_t *total)
{
    const char *p = v;

    if (p == NULL || strncmp(p, "bytes ", 6) != 0)
        return false;
    p += 6;
    if (!azure_reader_number(&p, first) || *p++ != '-' || !azure_reader_number(&p, last) ||
        *p++ != '/' || !azure_reader_number(&p, total))
        return false;
    return *p == '\0';
}

/* The first range into r->buf: *exists, r->size, r->etag, r->len. */
static bool azure_reader_first(azure_reader *r, bool *exists, pgd_error *err)
{
    char range[64];
    const char *h[] = {"range", range, NULL};
    azure_answer a;
    uint64_t first, last, total;
    bool ok;

    snprintf(range, sizeof(range), "bytes=0-%llu", (unsigned long long)AZURE_RANGE_SIZE - 1);
    azure_call call = {.method = "GET",
                       .path = r->path,
                       .headers = h,
                       .into = r->buf,
                       .into_cap = AZURE_RANGE_SIZE,
                       .expect_missing = true,
                       .expect_no_range = true};
    ok = azure_request(r->s, &call, &a, err);
    *exists = ok && !a.missing;
    if (!ok || a.missing) {
        azure_answer_free(&a);
        return ok;
    }
    if (a.http.status == AZURE_HTTP_NO_RANGE) {
        /* no byte 0: an empty blob (or one emptied since); its size and version from a HEAD */
        azure_answer_free(&a);
        r->len = 0;
        return azure_reader_head(r->s, r->path, exists, &r->size, &r->etag, err);
    }
    if (a.http.status == AZURE_HTTP_PARTIAL) {
        if (!azure_reader_parse_range(a.http.content_range, &first, &last, &total) || first != 0 ||
            last >= total || last + 1 != (total < AZURE_RANGE_SIZE ? total : AZURE_RANGE_SIZE))
            ok = err_set(err,
                         "GET of \"%s\" in %s returned Content-Range \"%s\" for %s (the server "
                         "is wrong)",
                         r->path, r->s->base.uri, a.http.content_range ? a.http.content_range : "",
                         range);
        else
            r->size = total;
    } else if (a.http.status == AZURE_HTTP_OK && a.http.has_content_length &&
               a.http.content_length == a.http.body_len) {
        r->size = a.http.body_len; /* the whole blob, which fits in the range asked for */
    } else {
        ok = err_set(err, "GET of \"%s\" in %s answered HTTP %ld to %s (expected 206)", r->path,
                     r->s->base.uri, a.http.status, range);
    }
    if (ok && (!a.http.into_used ||
               a.http.body_len != (r->size < AZURE_RANGE_SIZE ? r->size : AZURE_RANGE_SIZE)))
        ok = err_set(err, "GET of \"%s\" in %s returned %zu bytes for %s", r->path, r->s->base.uri,
                     a.http.body_len, range);
    if (ok && a.http.etag != NULL)
        r->etag = xstrdup(a.http.etag);
    if (ok)
        r->len = a.http.body_len;
    azure_answer_free(&a);
    return ok;
}

/* The range after the one in r->buf, of the version first seen. */
static bool azure_reader_next(azure_reader *r, pgd_error *err)
{
    uint64_t off = r->offset + r->len;
    size_t len = (size_t)(r->size - off < AZURE_RANGE_SIZE ? r->size - off : AZURE_RANGE_SIZE);
    char range[64], want[96];
    const char *h[] = {"range", range, r->etag ? "if-match" : NULL, r->etag, NULL};
    azure_answer a;
    bool ok;

    snprintf(range, sizeof(range), "bytes=%llu-%llu", (unsigned long long)off,
             (unsigned long long)(off + len - 1));
    snprintf(want, sizeof(want), "bytes %llu-%llu/%llu", (unsigned long long)off,
             (unsigned long long)(off + len - 1), (unsigned long long)r->size);
    azure_call call = {
        .method = "GET", .path = r->path, .headers = h, .into = r->buf, .into_cap = len};
    ok = azure_request(r->s, &call, &a, err);
    if (ok && (a.http.status != AZURE_HTTP_PARTIAL || a.http.content_range == NULL ||
               strcmp(a.http.content_range, want) != 0))
        ok = err_set(err,
                     "GET of \"%s\" in %s answered HTTP %ld with Content-Range \"%s\" for %s "
                     "(expected \"%s\": the blob changed or the server is wrong)",
                     r->path, r->s->base.uri, a.http.status,
                     a.http.content_range ? a.http.content_range : "", range, want);
    if (ok && (!a.http.into_used || a.http.body_len != len))
        ok = err_set(err, "GET of \"%s\" in %s returned %zu bytes for %s", r->path, r->s->base.uri,
                     a.http.body_len, range);
    azure_answer_free(&a);
    if (ok) {
        r->offset = off;
        r->len = len;
        r->pos = 0;
    }
    return ok;
}

static bool azure_reader_read(in_stream *is, void *buf, size_t len, size_t *n, pgd_error *err)
{
    azure_reader *r = (azure_reader *)is;

    *n = 0;
    if (r->pos == r->len) {
        if (r->offset + r->len >= r->size)
            return true;
        if (!azure_reader_next(r, err))
            return false;
    }
    *n = len < r->len - r->pos ? len : r->len - r->pos;
    memcpy(buf, r->buf + r->pos, *n);
    r->pos += *n;
    return true;
}

static void azure_reader_close(in_stream *is)
{
    azure_reader *r = (azure_reader *)is;

    free(r->buf);
    free(r->path);
    free(r->etag);
    free(r);
}

static const in_stream_ops azure_reader_ops = {azure_reader_read, azure_reader_close};

in_stream *azure_reader_open(storage *st, const char *path, bool *missing, pgd_error *err)
{
    azure_reader *r = xcalloc(1, sizeof(*r));
    bool exists, ok;

    *missing = false;
    r->base.ops = &azure_reader_ops;
    r->s = (azure_storage *)st;
    r->path = xstrdup(path);
    r->buf = big_buffer_alloc(AZURE_RANGE_SIZE);
    ok = azure_reader_first(r, &exists, err);
    if (!ok || !exists) {
        *missing = ok; /* answered: not there */
        azure_reader_close(&r->base);
        return NULL;
    }
    return &r->base;
}
