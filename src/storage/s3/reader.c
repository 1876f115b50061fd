/*
 * reader.c - an S3 object read as a stream: a GET of its first range, whose
 * Content-Range gives the object's size and whose ETag its version (an
 * object that fits in one range, a WAL segment, takes that one request),
 * then ranged GETs of the rest, download_concurrency ranges in flight, each
 * slot fetching ranges i, i + n, i + 2n... and waiting until its range is
 * consumed. Also the existence check (a HEAD).
 *
 * Every range must come back as asked: 206 with the Content-Range asked for
 * (or 200 for a whole object that fits in the first range), exactly that
 * many bytes, of the version the first answer named (If-Match: its ETag),
 * so an object replaced midway or a server that ignores Range is an error,
 * never a spliced file. An empty object has no first range (416): a HEAD
 * tells its size then.
 */
#define _GNU_SOURCE
#include "storage/s3/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/big_buffer.h"
#include "util/threads.h"
#include "util/xmalloc.h"

#define S3_HTTP_OK      200
#define S3_HTTP_PARTIAL 206

typedef struct s3_range_slot {
    char *buf;
    size_t len;
    uint64_t offset;
    bool ready, failed;
    pgd_error err;
} s3_range_slot;

typedef struct s3_reader {
    in_stream base;
    s3_storage *s;
    char *path;
    char *etag; /* of the version first seen; NULL when the server gave none */
    uint64_t size, consumed;
    unsigned nslots, head;
    s3_range_slot *slots;
    size_t pos; /* within slots[head] */
    pthread_t *threads;
    unsigned nthreads;  /* started */
    unsigned next_slot; /* the slot the next fetcher started serves */
    pthread_mutex_t lock;
    pthread_cond_t changed;
    bool stopping;
} s3_reader;

/* HEAD: *exists, and the size and ETag of what exists (etag may be NULL: not wanted). */
static bool s3_reader_head(s3_storage *s, const char *path, bool *exists, uint64_t *size,
                           char **etag, pgd_error *err)
{
    s3_answer a;
    s3_call call = {.method = "HEAD", .path = path, .expect_missing = true};
    bool ok = s3_request(s, &call, &a, err);

    if (ok && !a.missing && !a.http.has_content_length)
        ok = err_set(err, "HEAD of \"%s\" in s3://%s returned no Content-Length", path, s->bucket);
    if (ok) {
        *exists = !a.missing;
        *size = a.http.content_length;
        if (etag != NULL) {
            *etag = a.missing || a.http.etag == NULL ? NULL : xstrdup(a.http.etag);
        }
    }
    s3_answer_free(&a);
    return ok;
}

bool s3_reader_retained_until(storage *st, const char *path, int64_t *until, pgd_error *err)
{
    s3_storage *s = (s3_storage *)st;
    s3_answer a;
    s3_call call = {.method = "HEAD", .path = path, .expect_missing = true};
    bool ok = s3_request(s, &call, &a, err);

    *until = 0;
    if (ok && !a.missing && a.http.lock_until != NULL && !s3_xml_time(a.http.lock_until, until))
        ok = err_set(err, "HEAD of \"%s\" in s3://%s returned an invalid retain-until date \"%s\"",
                     path, s->bucket, a.http.lock_until);
    s3_answer_free(&a);
    return ok;
}

bool s3_reader_exists(storage *st, const char *path, bool *exists, pgd_error *err)
{
    uint64_t size;

    return s3_reader_head((s3_storage *)st, path, exists, &size, NULL, err);
}

/* The range came back as asked? */
static bool s3_reader_check_range(const s3_reader *r, const s3_answer *a, uint64_t off, size_t len,
                                  const char *range, pgd_error *err)
{
    char want[96];

    snprintf(want, sizeof(want), "bytes %llu-%llu/%llu", (unsigned long long)off,
             (unsigned long long)(off + len - 1), (unsigned long long)r->size);
    if (a->http.status == S3_HTTP_PARTIAL) {
        if (a->http.content_range == NULL || strcmp(a->http.content_range, want) != 0)
            return err_set(err,
                           "GET of \"%s\" in s3://%s returned Content-Range \"%s\" for %s "
                           "(expected \"%s\": the object changed or the server is wrong)",
                           r->path, r->s->bucket,
                           a->http.content_range ? a->http.content_range : "", range, want);
    } else if (!(a->http.status == S3_HTTP_OK && off == 0 && len == r->size)) {
        return err_set(err,
                       "GET of \"%s\" in s3://%s answered HTTP %ld to %s: the server ignored "
                       "the range",
                       r->path, r->s->bucket, a->http.status, range);
    }
    if (!a->http.into_used || a->http.body_len != len)
        return err_set(err, "GET of \"%s\" in s3://%s returned %zu bytes for %s", r->path,
                       r->s->bucket, a->http.body_len, range);
    return true;
}

static bool s3_reader_fetch(s3_reader *r, s3_range_slot *sl, pgd_error *err)
{
    char range[64];
    s3_answer a;
    const char *extra[] = {"range", range, r->etag ? "if-match" : NULL, r->etag, NULL};
    bool ok;

    snprintf(range, sizeof(range), "bytes=%llu-%llu", (unsigned long long)sl->offset,
             (unsigned long long)(sl->offset + sl->len - 1));
    s3_call call = {
        .method = "GET", .path = r->path, .extra = extra, .into = sl->buf, .into_cap = sl->len};
    ok = s3_request(r->s, &call, &a, err) &&
         s3_reader_check_range(r, &a, sl->offset, sl->len, range, err);
    s3_answer_free(&a);
    return ok;
}

static void *s3_reader_fetcher_main(void *arg)
{
    s3_reader *r = arg;
    unsigned idx;

    pthread_mutex_lock(&r->lock);
    idx = r->next_slot++;
    for (;;) {
        s3_range_slot *sl = &r->slots[idx];
        pgd_error err = {0};
        bool ok;

        while (!r->stopping && (sl->ready || sl->failed))
            pthread_cond_wait(&r->changed, &r->lock);
        if (r->stopping || sl->offset >= r->size)
            break;
        sl->len =
            (size_t)(r->size - sl->offset < S3_RANGE_SIZE ? r->size - sl->offset : S3_RANGE_SIZE);
        pthread_mutex_unlock(&r->lock);
        ok = s3_reader_fetch(r, sl, &err);
        pthread_mutex_lock(&r->lock);
        if (ok) {
            sl->ready = true;
        } else {
            sl->failed = true;
            sl->err = err;
        }
        pthread_cond_broadcast(&r->changed);
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

static bool s3_reader_read(in_stream *is, void *buf, size_t len, size_t *n, pgd_error *err)
{
    s3_reader *r = (s3_reader *)is;
    s3_range_slot *sl;

    *n = 0;
    if (r->consumed >= r->size)
        return true;
    sl = &r->slots[r->head];
    pthread_mutex_lock(&r->lock);
    while (!sl->ready && !sl->failed)
        pthread_cond_wait(&r->changed, &r->lock);
    pthread_mutex_unlock(&r->lock);
    if (sl->failed) {
        *err = sl->err;
        return false;
    }
    *n = len < sl->len - r->pos ? len : sl->len - r->pos;
    memcpy(buf, sl->buf + r->pos, *n);
    r->pos += *n;
    r->consumed += *n;
    if (r->pos == sl->len) { /* give the slot its next range */
        pthread_mutex_lock(&r->lock);
        sl->offset += (uint64_t)r->nslots * S3_RANGE_SIZE;
        sl->ready = false;
        pthread_cond_broadcast(&r->changed);
        pthread_mutex_unlock(&r->lock);
        r->pos = 0;
        r->head = (r->head + 1) % r->nslots;
    }
    return true;
}

static void s3_reader_close(in_stream *is)
{
    s3_reader *r = (s3_reader *)is;

    pthread_mutex_lock(&r->lock);
    r->stopping = true;
    pthread_cond_broadcast(&r->changed);
    pthread_mutex_unlock(&r->lock);
    for (unsigned i = 0; i < r->nthreads; i++)
        pthread_join(r->threads[i], NULL);
    for (unsigned i = 0; r->slots && i < r->nslots; i++)
        free(r->slots[i].buf);
    free(r->slots);
    free(r->threads);
    free(r->path);
    free(r->etag);
    pthread_mutex_destroy(&r->lock);
    pthread_cond_destroy(&r->changed);
    free(r);
}

static const in_stream_ops s3_reader_ops = {s3_reader_read, s3_reader_close};

/* A decimal number of at most 19 digits at *p (no sign, no space), *p moved past it. */
static bool s3_reader_parse_number(const char **p, uint64_t *v)
{
    const char *start = *p;

    *v = 0;
    while (**p >= '0' && **p <= '9' && *p - start < 19)
        *v = *v * 10 + (uint64_t)(*(*p)++ - '0');
    return *p > start && !(**p >= '0' && **p <= '9');
}

/* Parse "bytes FIRST-LAST/TOTAL" (the first range's Content-Range). */
static bool s3_reader_parse_range(const char *v, uint64_t *first, uint64_t *last, uint64_t *total)
{
    const char *p = v;

    if (p == NULL || strncmp(p, "bytes ", 6) != 0)
        return false;
    p += 6;
    if (!s3_reader_parse_number(&p, first) || *p++ != '-' || !s3_reader_parse_number(&p, last) ||
        *p++ != '/' || !s3_reader_parse_number(&p, total))
        return false;
    return *p == '\0';
}

/*
 * GET the first range into buf: *exists, and r->size, r->etag and *got
 * (bytes of the object in buf; 0 when the object is empty).
 */
static bool s3_reader_first(s3_reader *r, char *buf, bool *exists, size_t *got, pgd_error *err)
{
    char range[64];
    const char *extra[] = {"range", range, NULL};
    s3_answer a;
    uint64_t first, last, total;
    bool ok;

    *got = 0;
    snprintf(range, sizeof(range), "bytes=0-%llu", (unsigned long long)S3_RANGE_SIZE - 1);
    s3_call call = {.method = "GET",
                    .path = r->path,
                    .extra = extra,
                    .into = buf,
                    .into_cap = S3_RANGE_SIZE,
                    .expect_missing = true,
                    .expect_no_range = true};
    ok = s3_request(r->s, &call, &a, err);
    *exists = ok && !a.missing;
    if (!ok || a.missing) {
        s3_answer_free(&a);
        return ok;
    }
    if (a.http.status == S3_HTTP_NO_RANGE) {
        /* no byte 0: an empty object (or one emptied since); its size and version from a HEAD */
        s3_answer_free(&a);
        return s3_reader_head(r->s, r->path, exists, &r->size, &r->etag, err);
    }
    if (a.http.status == S3_HTTP_PARTIAL && a.http.content_range == NULL) {
        ok =
            err_set(err, "GET of \"%s\" in s3://%s answered HTTP 206 to %s without a Content-Range",
                    r->path, r->s->bucket, range);
    } else if (a.http.status == S3_HTTP_PARTIAL) {
        if (!s3_reader_parse_range(a.http.content_range, &first, &last, &total) || first != 0 ||
            last >= total || last + 1 != (total < S3_RANGE_SIZE ? total : S3_RANGE_SIZE))
            ok = err_set(err,
                         "GET of \"%s\" in s3://%s returned Content-Range \"%s\" for %s "
                         "(the server is wrong)",
                         r->path, r->s->bucket, a.http.content_range, range);
        else
            r->size = total;
    } else if (a.http.status == S3_HTTP_OK && !a.http.has_content_length) {
        /* a body that ends without a length may have been cut short: nothing to check it by */
        ok = err_set(err,
                     "GET of \"%s\" in s3://%s answered HTTP 200 to %s without a "
                     "Content-Length: the object's size is unknown",
                     r->path, r->s->bucket, range);
    } else if (a.http.status == S3_HTTP_OK && a.http.content_length == a.http.body_len) {
        r->size = a.http.body_len; /* the whole object, which fits in the range asked for */
    } else {
        ok = err_set(err, "GET of \"%s\" in s3://%s answered HTTP %ld to %s (expected 206)",
                     r->path, r->s->bucket, a.http.status, range);
    }
    if (ok && r->size > 0 &&
        (!a.http.into_used ||
         a.http.body_len != (r->size < S3_RANGE_SIZE ? r->size : S3_RANGE_SIZE)))
        ok = err_set(err, "GET of \"%s\" in s3://%s returned %zu bytes for %s", r->path,
                     r->s->bucket, a.http.body_len, range);
    if (ok && a.http.etag != NULL)
        r->etag = xstrdup(a.http.etag);
    if (ok)
        *got = a.http.body_len;
    s3_answer_free(&a);
    return ok;
}

/*
 * The slots, slot 0 holding the first range (`got` bytes of first), and
 * their download threads: none when the first range was the whole object.
 */
static bool s3_reader_start(s3_reader *r, char *first, size_t got, pgd_error *err)
{
    uint64_t ranges = (r->size + S3_RANGE_SIZE - 1) / S3_RANGE_SIZE;

    r->nslots = ranges > 0 && ranges < r->nslots ? (unsigned)ranges : r->nslots;
    r->slots = xcalloc(r->nslots, sizeof(*r->slots));
    r->threads = xcalloc(r->nslots, sizeof(pthread_t));
    r->slots[0].buf = first;
    r->slots[0].len = got;
    r->slots[0].ready = got > 0;
    for (unsigned i = 1; i < r->nslots; i++) {
        r->slots[i].offset = (uint64_t)i * S3_RANGE_SIZE;
        r->slots[i].buf = r->slots[i].offset < r->size ? big_buffer_alloc(S3_RANGE_SIZE) : NULL;
    }
    if (got == r->size)
        return true; /* all of it in hand */
    return threads_start(r->threads, r->nslots, s3_reader_fetcher_main, r, "download thread",
                         &r->nthreads, err);
}

in_stream *s3_reader_open(storage *st, const char *path, bool *missing, pgd_error *err)
{
    s3_storage *s = (s3_storage *)st;
    s3_reader *r;
    char *first;
    bool exists, ok;
    size_t got;

    *missing = false;
    r = xcalloc(1, sizeof(*r));
    first = big_buffer_alloc(S3_RANGE_SIZE);
    r->base.ops = &s3_reader_ops;
    r->s = s;
    r->path = xstrdup(path);
    r->nslots = s->download_concurrency;
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->changed, NULL);
    ok = s3_reader_first(r, first, &exists, &got, err);
    if (!ok || !exists) {
        *missing = ok; /* answered: not there */
        free(first);
        s3_reader_close(&r->base);
        return NULL;
    }
    if (!s3_reader_start(r, first, got, err)) {
        s3_reader_close(&r->base);
        return NULL;
    }
    return &r->base;
}
