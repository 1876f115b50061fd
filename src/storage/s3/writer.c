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
 * The buffers, the upload threads and the first error are
 * storage/http/piece_upload.c's, shared with Azure's blocks; the
 * request-level work is in request.c, the XML in xml.c.
 */
#define _GNU_SOURCE
#include "storage/s3/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "storage/http/piece_upload.h"
#include "storage/s3/sigv4.h"
#include "util/log.h"
#include "util/xmalloc.h"

/* storage class, encryption, condition, lock mode, retain-until: pairs, then NULL */
#define S3_CREATION_HEADERS 11
#define S3_LOCK_DATE_LEN    32 /* "2026-12-13T06:20:00Z" */

typedef struct s3_writer {
    out_stream base;
    s3_storage *s;
    char *path;
    unsigned flags;
    piece_upload up;     /* the parts */
    char *upload_id;     /* NULL until the multipart upload starts */
    char *upload_id_enc; /* for queries */
    pthread_mutex_t etag_lock;
    char **etags; /* by part number - 1 */
    unsigned netags;
} s3_writer;

uint64_t s3_writer_part_size(uint64_t part_size, unsigned number)
{
    return piece_upload_size(part_size, number, S3_PARTS_PER_SIZE, S3_PART_MAX);
}

static void s3_writer_keep_etag(s3_writer *w, unsigned number, const char *etag)
{
    pthread_mutex_lock(&w->etag_lock);
    if (number > w->netags) {
        w->etags = xrealloc(w->etags, number * sizeof(char *));
        memset(w->etags + w->netags, 0, (number - w->netags) * sizeof(char *));
        w->netags = number;
    }
    w->etags[number - 1] = xstrdup(etag);
    pthread_mutex_unlock(&w->etag_lock);
}

/* An upload thread's part (piece_upload_ops.send). */
static bool s3_writer_upload_part(void *owner, const upload_piece *p, pgd_error *err)
{
    s3_writer *w = owner;
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

/* CreateMultipartUpload before the first part (piece_upload_ops.begin). */
static bool s3_writer_start_multipart(void *owner, pgd_error *err)
{
    s3_writer *w = owner;
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
    return true;
}

static const piece_upload_ops s3_writer_parts = {s3_writer_start_multipart, s3_writer_upload_part};

static bool s3_writer_write(out_stream *os, const void *buf, size_t len, pgd_error *err)
{
    return piece_upload_write(&((s3_writer *)os)->up, buf, len, err);
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
    piece_upload_free(&w->up);
    for (unsigned i = 0; i < w->netags; i++)
        free(w->etags[i]);
    free(w->etags);
    free(w->path);
    free(w->upload_id);
    free(w->upload_id_enc);
    pthread_mutex_destroy(&w->etag_lock);
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
                    .body = w->up.current->buf,
                    .body_len = w->up.current->len,
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
    for (unsigned i = 0; i < w->up.count; i++) {
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

    if (!w->up.begun) {
        ok = s3_writer_put_single(w, err);
    } else {
        ok = piece_upload_finish(&w->up, err) && s3_writer_complete(w, err);
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

    piece_upload_stop(&w->up); /* the parts in flight end before the upload is aborted */
    s3_writer_abort_multipart(w);
    s3_writer_free(w);
}

static const out_stream_ops s3_writer_ops = {s3_writer_write, s3_writer_close, s3_writer_abort};

out_stream *s3_writer_open(storage *st, const char *path, unsigned flags, pgd_error *err)
{
    s3_storage *s = (s3_storage *)st;
    s3_writer *w = xcalloc(1, sizeof(*w));
    piece_upload_limits lim = {.size = s->part_size,
                               .max_size = S3_PART_MAX,
                               .per_size = S3_PARTS_PER_SIZE,
                               .max_pieces = S3_PARTS_MAX,
                               .threads = s->upload_concurrency,
                               .unit = "parts"};

    (void)err; /* never NULL: the signature is that of every driver's write_open */
    w->base.ops = &s3_writer_ops;
    w->s = s;
    w->flags = flags;
    w->path = xstrdup(path);
    pthread_mutex_init(&w->etag_lock, NULL);
    piece_upload_init(&w->up, &s3_writer_parts, w, w->path, &lim);
    return &w->base;
}
