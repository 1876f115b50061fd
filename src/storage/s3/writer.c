/*
 * writer.c - an S3 object written as a stream: smaller than one part, it is
 * one PUT; larger, a multipart upload whose parts (of part_size, doubled
 * every 1,000 parts so no object needs more than 10,000) go out
 * upload_concurrency at a time from that many buffers. Memory per open
 * writer is bounded by (upload_concurrency + 1) x part_size whatever the
 * object's size. Every body carries Content-MD5, so the store rejects a
 * corrupted upload; a failed multipart upload is aborted, so nothing
 * half-written is visible.
 *
 * STORAGE_WRITE_NO_REPLACE sends If-None-Match: * with the request that
 * makes the object visible, the PUT or the CompleteMultipartUpload: two
 * writers of one key, exactly one wins, and closing the other fails.
 *
 * About 500 lines on purpose: one stream and its upload threads share one
 * state (buffers, the parts in flight, the first error); the request-level
 * work is already in request.c, the XML in xml.c.
 */
#define _GNU_SOURCE
#include "storage/s3/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "storage/s3/sigv4.h"
#include "util/big_buffer.h"
#include "util/log.h"
#include "util/threads.h"
#include "util/xmalloc.h"

/* storage class, encryption, condition, lock mode, retain-until: pairs, then NULL */
#define S3_CREATION_HEADERS 11
#define S3_LOCK_DATE_LEN    32 /* "2026-12-13T06:20:00Z" */

typedef struct s3_part {
    char *buf;
    size_t len;
    unsigned number;
    bool busy;
} s3_part;

typedef struct s3_writer {
    out_stream base;
    s3_storage *s;
    char *path;
    unsigned flags;
    s3_part *parts; /* upload_concurrency + 1 buffers */
    unsigned nparts_buf;
    s3_part *current;
    uint64_t part_cap; /* size of the part being filled */
    unsigned next_number;
    char *upload_id;     /* NULL until the multipart upload starts */
    char *upload_id_enc; /* for queries */
    char **etags;        /* by part number - 1 */
    unsigned netags;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    unsigned inflight;
    pgd_error err; /* first upload error */
    pthread_t *threads;
    unsigned nthreads; /* started */
    s3_part **queue;
    unsigned qlen;
    bool stopping;
} s3_writer;

uint64_t s3_writer_part_size(uint64_t part_size, unsigned number)
{
    unsigned doublings = number > 0 ? (number - 1) / S3_PARTS_PER_SIZE : 0;

    while (doublings-- > 0 && part_size < S3_PART_MAX)
        part_size *= 2;
    return part_size < S3_PART_MAX ? part_size : S3_PART_MAX;
}

static void s3_writer_keep_etag(s3_writer *w, unsigned number, const char *etag)
{
    pthread_mutex_lock(&w->lock);
    if (number > w->netags) {
        w->etags = xrealloc(w->etags, number * sizeof(char *));
        memset(w->etags + w->netags, 0, (number - w->netags) * sizeof(char *));
        w->netags = number;
    }
    w->etags[number - 1] = xstrdup(etag);
    pthread_mutex_unlock(&w->lock);
}

static bool s3_writer_upload_part(s3_writer *w, s3_part *p, pgd_error *err)
{
    char *query = xasprintf("partNumber=%u&uploadId=%s", p->number, w->upload_id_enc);
    s3_answer a;
    bool ok;

    s3_call call = {
        .method = "PUT", .path = w->path, .query = query, .body = p->buf, .body_len = p->len};
    ok = s3_request(w->s, &call, &a, err);
    free(query);
    if (ok && (a.http.etag == NULL || a.http.etag[0] == '\0'))
        ok = err_set(err, "PUT of part %u of \"%s\" in s3://%s returned no ETag", p->number,
                     w->path, w->s->bucket);
    if (ok)
        s3_writer_keep_etag(w, p->number, a.http.etag);
    s3_answer_free(&a);
    return ok;
}

static void *s3_writer_uploader_main(void *arg)
{
    s3_writer *w = arg;

    pthread_mutex_lock(&w->lock);
    for (;;) {
        s3_part *p;
        pgd_error err = {0};
        bool ok;

        while (w->qlen == 0 && !w->stopping)
            pthread_cond_wait(&w->changed, &w->lock);
        if (w->qlen == 0 && w->stopping)
            break;
        p = w->queue[0];
        memmove(w->queue, w->queue + 1, (--w->qlen) * sizeof(s3_part *));
        ok = w->err.set; /* after a failure the rest is not sent */
        pthread_mutex_unlock(&w->lock);
        ok = ok || s3_writer_upload_part(w, p, &err);
        pthread_mutex_lock(&w->lock);
        if (!ok && !w->err.set)
            w->err = err;
        p->busy = false;
        w->inflight--;
        pthread_cond_broadcast(&w->changed);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

/*
 * Headers of an object's creation: storage class, encryption, the condition, and with Object
 * Lock its mode and retain-until date (from now: `until` holds its text). Pairs, NULL-ended.
 * Object Lock needs Content-MD5 on the PUT and on each part: every body carries it (request.c).
 */
static void s3_writer_creation_headers(const s3_storage *s, bool no_replace,
                                       const char *extra[S3_CREATION_HEADERS],
                                       char until[S3_LOCK_DATE_LEN])
{
    int n = 0;

    if (s->lock_mode) {
        time_t t = time(NULL) + (time_t)s->lock_seconds;
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(until, S3_LOCK_DATE_LEN, "%Y-%m-%dT%H:%M:%SZ", &tm);
        extra[n++] = "x-amz-object-lock-mode";
        extra[n++] = s->lock_mode;
        extra[n++] = "x-amz-object-lock-retain-until-date";
        extra[n++] = until;
    }

    if (s->storage_class) {
        extra[n++] = "x-amz-storage-class";
        extra[n++] = s->storage_class;
    }
    if (s->sse) {
        extra[n++] = "x-amz-server-side-encryption";
        extra[n++] = s->sse;
    }
    if (no_replace) {
        extra[n++] = "if-none-match";
        extra[n++] = "*";
    }
    extra[n] = NULL;
}

static bool s3_writer_no_replace(const s3_writer *w)
{
    return (w->flags & STORAGE_WRITE_NO_REPLACE) != 0;
}

static bool s3_writer_start_multipart(s3_writer *w, pgd_error *err)
{
    s3_storage *s = w->s;
    const char *extra[S3_CREATION_HEADERS];
    char until[S3_LOCK_DATE_LEN];
    s3_answer a;
    pgd_error perr = {0};
    bool ok;

    s3_writer_creation_headers(s, false, extra, until);
    s3_call call = {.method = "POST",
                    .path = w->path,
                    .query = "uploads",
                    .body = "",
                    .body_len = 0,
                    .extra = extra};
    if (!s3_request(s, &call, &a, err)) {
        s3_answer_free(&a);
        return false;
    }
    ok = s3_xml_upload_id(a.http.body, a.http.body_len, &w->upload_id, &perr);
    s3_answer_free(&a);
    if (!ok)
        return err_set(err, "starting the upload of \"%s\" to s3://%s failed: %s", w->path,
                       s->bucket, perr.msg);
    w->upload_id_enc = sigv4_uri_encode(w->upload_id, false);
    w->threads = xcalloc(s->upload_concurrency, sizeof(pthread_t));
    w->queue = xcalloc(w->nparts_buf, sizeof(s3_part *));
    return threads_start(w->threads, s->upload_concurrency, s3_writer_uploader_main, w,
                         "upload thread", &w->nthreads, err);
}

static void s3_writer_enqueue(s3_writer *w, s3_part *p)
{
    pthread_mutex_lock(&w->lock);
    p->busy = true;
    w->queue[w->qlen++] = p;
    w->inflight++;
    pthread_cond_broadcast(&w->changed);
    pthread_mutex_unlock(&w->lock);
}

/* Hand the current part to the uploaders and take a free buffer (waits for one). */
static bool s3_writer_ship_current(s3_writer *w, pgd_error *err)
{
    s3_part *p = w->current;

    if (w->upload_id == NULL && !s3_writer_start_multipart(w, err))
        return false;
    s3_writer_enqueue(w, p);
    pthread_mutex_lock(&w->lock);
    w->current = NULL;
    while (w->current == NULL && !w->err.set) {
        for (unsigned i = 0; i < w->nparts_buf; i++) {
            if (!w->parts[i].busy && &w->parts[i] != p) {
                w->current = &w->parts[i];
                break;
            }
        }
        if (w->current == NULL)
            pthread_cond_wait(&w->changed, &w->lock);
    }
    if (w->err.set) {
        pgd_error e = w->err;
        pthread_mutex_unlock(&w->lock);
        *err = e;
        return false;
    }
    pthread_mutex_unlock(&w->lock);
    w->current->len = 0;
    w->current->number = ++w->next_number;
    w->part_cap = s3_writer_part_size(w->s->part_size, w->current->number);
    if (w->current->number > S3_PARTS_MAX)
        return err_set(err, "\"%s\" would need more than %d parts", w->path, S3_PARTS_MAX);
    if (w->current->buf == NULL || w->part_cap > w->s->part_size)
        w->current->buf = w->current->buf == NULL ? big_buffer_alloc(w->part_cap)
                                                  : xrealloc(w->current->buf, w->part_cap);
    return true;
}

static bool s3_writer_write(out_stream *os, const void *buf, size_t len, pgd_error *err)
{
    s3_writer *w = (s3_writer *)os;
    const char *p = buf;

    while (len > 0) {
        size_t room = (size_t)(w->part_cap - w->current->len), n = len < room ? len : room;
        memcpy(w->current->buf + w->current->len, p, n);
        w->current->len += n;
        p += n;
        len -= n;
        if (w->current->len == w->part_cap && !s3_writer_ship_current(w, err))
            return false;
    }
    return true;
}

static void s3_writer_stop_uploaders(s3_writer *w)
{
    if (w->threads == NULL)
        return;
    pthread_mutex_lock(&w->lock);
    while (w->inflight > 0)
        pthread_cond_wait(&w->changed, &w->lock);
    pthread_mutex_unlock(&w->lock);
    threads_stop(&w->lock, &w->changed, &w->stopping, w->threads, w->nthreads);
    free(w->threads);
    w->threads = NULL;
}

static void s3_writer_abort_multipart(s3_writer *w)
{
    char *query;
    s3_answer a;
    pgd_error ignore = {0};

    if (w->upload_id == NULL)
        return;
    if (w->upload_id_enc != NULL) {
        query = xasprintf("uploadId=%s", w->upload_id_enc);
        s3_call call = {.method = "DELETE", .path = w->path, .query = query};
        if (!s3_request(w->s, &call, &a, &ignore))
            log_debug("could not abort the upload of \"%s\": %s", w->path, ignore.msg);
        s3_answer_free(&a);
        free(query);
    }
    free(w->upload_id);
    w->upload_id = NULL;
}

static void s3_writer_free(s3_writer *w)
{
    s3_writer_stop_uploaders(w);
    for (unsigned i = 0; i < w->nparts_buf; i++)
        free(w->parts[i].buf);
    for (unsigned i = 0; i < w->netags; i++)
        free(w->etags[i]);
    free(w->etags);
    free(w->parts);
    free(w->queue);
    free(w->path);
    free(w->upload_id);
    free(w->upload_id_enc);
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->changed);
    free(w);
}

static bool s3_writer_put_single(s3_writer *w, pgd_error *err)
{
    s3_storage *s = w->s;
    const char *extra[S3_CREATION_HEADERS];
    char until[S3_LOCK_DATE_LEN];
    s3_answer a;
    bool ok;

    s3_writer_creation_headers(s, s3_writer_no_replace(w), extra, until);
    s3_call call = {.method = "PUT",
                    .path = w->path,
                    .body = w->current->buf,
                    .body_len = w->current->len,
                    .extra = extra,
                    .no_replace = s3_writer_no_replace(w)};
    ok = s3_request(s, &call, &a, err);
    s3_answer_free(&a);
    return ok;
}

/* <CompleteMultipartUpload> with every part's number and ETag (escaped: ETags are quoted). */
static char *s3_writer_complete_body(s3_writer *w, size_t *len, pgd_error *err)
{
    char *xml = NULL;
    FILE *f = open_memstream(&xml, len); /* the C library's own malloc: its failures are checked */

    if (f == NULL) {
        err_set(err, "out of memory");
        return NULL;
    }
    fputs("<CompleteMultipartUpload>", f);
    for (unsigned i = 0; i < w->next_number; i++) {
        char *etag = i < w->netags && w->etags[i] ? s3_xml_escape(w->etags[i]) : NULL;
        if (etag == NULL) {
            fclose(f);
            free(xml);
            err_set(err, "part %u of \"%s\" has no ETag", i + 1, w->path);
            return NULL;
        }
        fprintf(f, "<Part><PartNumber>%u</PartNumber><ETag>%s</ETag></Part>", i + 1, etag);
        free(etag);
    }
    fputs("</CompleteMultipartUpload>", f);
    if (fclose(f) != 0) {
        free(xml);
        err_set(err, "out of memory");
        return NULL;
    }
    return xml;
}

/*
 * S3 may answer 200 and still report an error in the body (it has begun
 * answering before it knows): only a CompleteMultipartUploadResult is
 * success. InternalError and SlowDown there are worth another try.
 */
static bool s3_writer_complete(s3_writer *w, pgd_error *err)
{
    static const char *const if_none_match[] = {"if-none-match", "*", NULL};
    size_t len;
    char *xml = s3_writer_complete_body(w, &len, err), *query = NULL;
    bool ok = false;

    if (xml == NULL)
        return false;
    query = xasprintf("uploadId=%s", w->upload_id_enc);
    /* storage class and encryption were given when the upload started */
    s3_call call = {.method = "POST",
                    .path = w->path,
                    .query = query,
                    .body = xml,
                    .body_len = len,
                    .extra = s3_writer_no_replace(w) ? if_none_match : NULL,
                    .no_replace = s3_writer_no_replace(w)};
    for (unsigned attempt = 0;; attempt++) {
        s3_answer a;
        s3_xml_fault fault;
        pgd_error perr = {0};
        bool retry;
        if (!s3_request(w->s, &call, &a, err)) {
            s3_answer_free(&a);
            break;
        }
        ok = s3_xml_complete(a.http.body, a.http.body_len, &fault, &perr);
        s3_answer_free(&a);
        if (ok)
            break;
        retry = strcmp(fault.code, "InternalError") == 0 || strcmp(fault.code, "SlowDown") == 0;
        if (!retry || attempt >= w->s->retries) {
            if (perr.set)
                err_set(err, "completing the upload of \"%s\" to s3://%s failed: %s", w->path,
                        w->s->bucket, perr.msg);
            else
                err_set(err, "completing the upload of \"%s\" to s3://%s failed: HTTP 200 %s%s%s",
                        w->path, w->s->bucket, fault.code, fault.message[0] ? ": " : "",
                        fault.message);
            if (retry)
                err_mark(err, PGD_ERR_TRANSIENT);
            break;
        }
        log_debug("completing the upload of \"%s\": %s, retrying", w->path, fault.code);
        usleep(http_backoff_ms(attempt) * 1000u);
    }
    free(xml);
    free(query);
    if (ok) {
        free(w->upload_id);
        w->upload_id = NULL; /* complete: nothing to abort */
    }
    return ok;
}

/*
 * After a multipart upload completes under Object Lock: PutObjectRetention with a date from
 * now. S3 locks the object from CreateMultipartUpload's headers already (this extends that by
 * the upload's duration, which both modes allow); a store that ignores those headers on a
 * multipart upload (moto does) would otherwise leave the largest objects unlocked.
 */
static bool s3_writer_lock_retention(s3_writer *w, pgd_error *err)
{
    const s3_storage *s = w->s;
    time_t t = time(NULL) + (time_t)s->lock_seconds;
    char until[S3_LOCK_DATE_LEN];
    struct tm tm;
    char *xml;
    s3_answer a;
    bool ok;

    gmtime_r(&t, &tm);
    strftime(until, sizeof(until), "%Y-%m-%dT%H:%M:%SZ", &tm);
    xml = xasprintf("<Retention xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Mode>%s</Mode>"
                    "<RetainUntilDate>%s</RetainUntilDate></Retention>",
                    s->lock_mode, until);
    s3_call call = {.method = "PUT",
                    .path = w->path,
                    .query = "retention",
                    .body = xml,
                    .body_len = strlen(xml)};
    ok = s3_request(w->s, &call, &a, err);
    s3_answer_free(&a);
    free(xml);
    return ok;
}

static bool s3_writer_close(out_stream *os, pgd_error *err)
{
    s3_writer *w = (s3_writer *)os;
    bool ok;

    if (w->upload_id == NULL && w->next_number == 1) {
        ok = s3_writer_put_single(w, err);
    } else {
        if (w->current->len > 0)
            s3_writer_enqueue(w, w->current);
        else
            w->next_number--; /* the empty last buffer is not a part */
        s3_writer_stop_uploaders(w);
        ok = !w->err.set || (*err = w->err, false);
        ok = ok && s3_writer_complete(w, err);
        if (!ok)
            s3_writer_abort_multipart(w);
        ok = ok && (w->s->lock_mode == NULL || s3_writer_lock_retention(w, err));
    }
    s3_writer_free(w);
    return ok;
}

static void s3_writer_abort(out_stream *os)
{
    s3_writer *w = (s3_writer *)os;

    s3_writer_stop_uploaders(w);
    s3_writer_abort_multipart(w);
    s3_writer_free(w);
}

static const out_stream_ops s3_writer_ops = {s3_writer_write, s3_writer_close, s3_writer_abort};

out_stream *s3_writer_open(storage *st, const char *path, unsigned flags, pgd_error *err)
{
    s3_storage *s = (s3_storage *)st;
    s3_writer *w = xcalloc(1, sizeof(*w));

    (void)err; /* never NULL: the signature is that of every driver's write_open */
    w->base.ops = &s3_writer_ops;
    w->s = s;
    w->flags = flags;
    w->path = xstrdup(path);
    w->nparts_buf = s->upload_concurrency + 1;
    w->parts = xcalloc(w->nparts_buf, sizeof(s3_part));
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->changed, NULL);
    w->current = &w->parts[0];
    w->current->number = w->next_number = 1;
    w->part_cap = s->part_size;
    w->current->buf = big_buffer_alloc(w->part_cap);
    return &w->base;
}
