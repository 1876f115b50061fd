/*
 * s3.c - the repository in any S3-compatible object store.
 *
 * Requests are signed with Signature V4 (sigv4.c) over libcurl (http.c).
 * Uploads stream: an object smaller than one part is one PUT; a larger one
 * is a multipart upload whose parts (of part_size, doubled every 1,000 parts
 * so no object needs more than 10,000) go out upload_concurrency at a time
 * from that many buffers: memory per open writer is bounded by
 * (upload_concurrency + 1) x part_size whatever the object's size. Every
 * body carries Content-MD5, so the store rejects a corrupted upload; a
 * failed multipart upload is aborted, so nothing half-written is visible.
 * Reads are ranged GETs, download_concurrency ranges in flight.
 *
 * Transient failures (5xx, 429/SlowDown, timeouts, resets) are retried with
 * exponential backoff and jitter, retries times, then reported. Credentials
 * are never part of a message.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <openssl/evp.h>
#include <openssl/md5.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "storage/http.h"
#include "storage/sigv4.h"
#include "storage/storage.h"
#include "util/log.h"

#define S3_PART_MIN          (5ULL * 1024 * 1024)
#define S3_PART_DEFAULT      (64ULL * 1024 * 1024)
#define S3_PARTS_MAX         10000
#define S3_PARTS_PER_SIZE    1000 /* part size doubles after every this many parts */
#define S3_RETRIES_DEFAULT   5
#define S3_TIMEOUT_DEFAULT   30
#define S3_UPLOADS_DEFAULT   2
#define S3_DOWNLOADS_DEFAULT 4
#define S3_RANGE_SIZE        (8 * 1024 * 1024)
#define S3_BACKOFF_BASE_MS   100
#define S3_BACKOFF_MAX_MS    5000
#define S3_DELETE_BATCH      1000
#define UNSIGNED_PAYLOAD     "UNSIGNED-PAYLOAD"

typedef struct s3_storage {
    storage base;
    char *bucket, *prefix; /* prefix without leading/trailing '/' */
    char *scheme_host;     /* "http://127.0.0.1:4569" */
    char *host;            /* Host header */
    bool host_style;
    char *region, *access_key, *secret_key, *session_token, *storage_class, *sse;
    uint64_t part_size;
    unsigned upload_concurrency, download_concurrency, retries;
    long timeout_s;
    pthread_mutex_t clients_lock;
    http_client **clients; /* idle connections, reused across requests */
    size_t nclients;
} s3_storage;

/* ---- connections ---- */

static http_client *client_get(s3_storage *s, pgd_error *err)
{
    http_client *c = NULL;

    pthread_mutex_lock(&s->clients_lock);
    if (s->nclients > 0)
        c = s->clients[--s->nclients];
    pthread_mutex_unlock(&s->clients_lock);
    return c ? c : http_client_new(s->timeout_s, err);
}

static void client_put(s3_storage *s, http_client *c)
{
    http_client **grown;

    pthread_mutex_lock(&s->clients_lock);
    grown = realloc(s->clients, (s->nclients + 1) * sizeof(*grown));
    if (grown != NULL) {
        s->clients = grown;
        s->clients[s->nclients++] = c;
        c = NULL;
    }
    pthread_mutex_unlock(&s->clients_lock);
    http_client_free(c);
}

/* ---- requests ---- */

static char *object_key(s3_storage *s, const char *path)
{
    char *key;

    if (asprintf(&key, "%s%s%s", s->prefix, s->prefix[0] ? "/" : "", path) < 0)
        return NULL;
    return key;
}

static void amz_now(char out[17])
{
    time_t now = time(NULL);
    struct tm tm;

    gmtime_r(&now, &tm);
    strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm);
}

static void md5_base64(const void *data, size_t len, char out[32])
{
    unsigned char md[16];
    unsigned int mdlen = 0;

    EVP_Digest(data, len, md, &mdlen, EVP_md5(), NULL);
    EVP_EncodeBlock((unsigned char *)out, md, 16);
}

/* "<Code>SlowDown</Code>" -> "SlowDown" (first occurrence of <tag>). */
static bool xml_text(const char *xml, const char *tag, char *out, size_t outlen)
{
    char open[64], close[64];
    const char *a, *b;

    if (xml == NULL)
        return false;
    snprintf(open, sizeof(open), "<%s>", tag);
    snprintf(close, sizeof(close), "</%s>", tag);
    a = strstr(xml, open);
    if (a == NULL)
        return false;
    a += strlen(open);
    b = strstr(a, close);
    if (b == NULL)
        return false;
    snprintf(out, outlen, "%.*s", (int)(b - a), a);
    return true;
}

static bool retryable(const http_response *r)
{
    return r->transport_error || r->status == 429 || r->status >= 500;
}

static void backoff(unsigned attempt)
{
    unsigned ms = S3_BACKOFF_BASE_MS << (attempt < 6 ? attempt : 6);

    if (ms > S3_BACKOFF_MAX_MS)
        ms = S3_BACKOFF_MAX_MS;
    ms = ms / 2 + (unsigned)(rand() % (int)(ms / 2 + 1)); /* jitter */
    usleep(ms * 1000);
}

typedef struct s3_call {
    const char *method;
    const char *path;  /* object path under the prefix, or NULL for the bucket */
    const char *query; /* raw query, already encoded, or NULL */
    const void *body;
    size_t body_len;
    const char *const *extra; /* more "name", "value" pairs, NULL-terminated */
    void *into;               /* receive the body here (ranged GET) */
    size_t into_cap;
    bool expect_missing; /* a 404 is an answer, not an error */
} s3_call;

/*
 * One signed request with retries. Returns false on failure (transport
 * after all retries, or an HTTP error other than an expected 404), with a
 * message naming the operation and object.
 */
static bool s3_request(s3_storage *s, const s3_call *call, http_response *resp, pgd_error *err)
{
    char *key = call->path ? object_key(s, call->path) : strdup("");
    char *enc = key ? sigv4_uri_encode(key, true) : NULL;
    char path[4096], url[8192], md5[32];
    const char *what = call->path ? call->path : "(bucket)";
    bool ok = false;

    if (key == NULL || enc == NULL) {
        free(key);
        free(enc);
        return err_set(err, "out of memory");
    }
    if (s->host_style)
        snprintf(path, sizeof(path), "/%s", enc);
    else
        snprintf(path, sizeof(path), "/%s%s%s", s->bucket, enc[0] || call->path ? "/" : "", enc);
    snprintf(url, sizeof(url), "%s%s%s%s", s->scheme_host, path, call->query ? "?" : "",
             call->query ? call->query : "");
    if (call->body != NULL)
        md5_base64(call->body, call->body_len, md5);

    for (unsigned attempt = 0; attempt <= s->retries; attempt++) {
        http_header_list hl = {0};
        sigv4_header sh[16];
        size_t nh = 0;
        char date[17], *authz;
        http_client *c;
        pgd_error terr = {0};
        sigv4_credentials cred = {s->access_key, s->secret_key, s->region, "s3"};

        amz_now(date);
        sh[nh++] = (sigv4_header){"host", s->host};
        sh[nh++] = (sigv4_header){"x-amz-date", date};
        sh[nh++] = (sigv4_header){"x-amz-content-sha256", UNSIGNED_PAYLOAD};
        if (call->body != NULL)
            sh[nh++] = (sigv4_header){"content-md5", md5};
        if (s->session_token)
            sh[nh++] = (sigv4_header){"x-amz-security-token", s->session_token};
        for (const char *const *e = call->extra; e && e[0] && nh < 16; e += 2)
            sh[nh++] = (sigv4_header){e[0], e[1]};
        sigv4_request sr = {call->method, path, call->query, sh, nh, UNSIGNED_PAYLOAD, true};
        authz = sigv4_authorization(&sr, &cred, date);
        for (size_t i = 0; i < nh; i++)
            if (strcmp(sh[i].name, "host") != 0)
                http_headers_add(&hl, "%s: %s", sh[i].name, sh[i].value);
        http_headers_add(&hl, "Authorization: %s", authz ? authz : "");
        free(authz);
        c = client_get(s, err);
        if (c == NULL) {
            http_headers_free(&hl);
            break;
        }
        if (!http_perform(c, call->method, url, &hl, call->body, call->body_len, call->into,
                          call->into_cap, resp, &terr)) {
            /* the connection may be broken: do not reuse it */
            http_client_free(c);
            c = NULL;
        }
        http_headers_free(&hl);
        if (c != NULL)
            client_put(s, c);
        if (!resp->transport_error &&
            (resp->status < 300 || (call->expect_missing && resp->status == 404))) {
            ok = true;
            break;
        }
        if (!retryable(resp) || attempt == s->retries) {
            char code[64] = "", msg[256] = "";
            if (resp->transport_error) {
                err_set(err, "%s of \"%s\" in s3://%s failed after %u tries: %s", call->method,
                        what, s->bucket, attempt + 1, terr.msg);
            } else {
                xml_text(resp->body, "Code", code, sizeof(code));
                xml_text(resp->body, "Message", msg, sizeof(msg));
                err_set(err, "%s of \"%s\" in s3://%s failed%s: HTTP %ld%s%s%s%s", call->method,
                        what, s->bucket, attempt ? " after retries" : "", resp->status,
                        code[0] ? " " : "", code, msg[0] ? ": " : "", msg);
            }
            http_response_free(resp);
            break;
        }
        {
            char code[64] = "";
            xml_text(resp->body, "Code", code, sizeof(code));
            log_debug("%s of \"%s\": %s%s, retrying", call->method, what,
                      resp->transport_error ? terr.msg : "HTTP error ", code);
        }
        http_response_free(resp);
        backoff(attempt);
    }
    free(key);
    free(enc);
    return ok;
}

/* ---- writer ---- */

typedef struct part {
    char *buf;
    size_t len;
    unsigned number;
    bool busy;
} part;

typedef struct s3_writer {
    out_stream base;
    s3_storage *s;
    char *path;
    unsigned flags;
    part *parts; /* upload_concurrency + 1 buffers */
    unsigned nparts_buf;
    part *current;
    uint64_t part_cap; /* size of the part being filled */
    unsigned next_number;
    char upload_id[512];
    char **etags; /* by part number - 1 */
    unsigned netags;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    unsigned inflight;
    pgd_error err; /* first upload error */
    pthread_t *threads;
    part **queue;
    unsigned qlen;
    bool stopping;
} s3_writer;

static uint64_t part_size_for(const s3_storage *s, unsigned number)
{
    unsigned doublings = (number - 1) / S3_PARTS_PER_SIZE;

    return s->part_size << (doublings < 10 ? doublings : 10);
}

static bool upload_part(s3_writer *w, part *p, pgd_error *err)
{
    char query[700];
    http_response resp;

    snprintf(query, sizeof(query), "partNumber=%u&uploadId=%s", p->number, w->upload_id);
    s3_call call = {
        .method = "PUT", .path = w->path, .query = query, .body = p->buf, .body_len = p->len};
    if (!s3_request(w->s, &call, &resp, err))
        return false;
    pthread_mutex_lock(&w->lock);
    if (p->number > w->netags) {
        char **grown = realloc(w->etags, p->number * sizeof(char *));
        if (grown != NULL) {
            memset(grown + w->netags, 0, (p->number - w->netags) * sizeof(char *));
            w->etags = grown;
            w->netags = p->number;
        }
    }
    if (p->number <= w->netags)
        w->etags[p->number - 1] = strdup(resp.etag);
    pthread_mutex_unlock(&w->lock);
    http_response_free(&resp);
    if (resp.etag[0] == '\0')
        return err_set(err, "PUT of part %u of \"%s\" in s3://%s returned no ETag", p->number,
                       w->path, w->s->bucket);
    return true;
}

static void *uploader_main(void *arg)
{
    s3_writer *w = arg;

    pthread_mutex_lock(&w->lock);
    for (;;) {
        part *p;
        pgd_error err = {0};
        bool ok;

        while (w->qlen == 0 && !w->stopping)
            pthread_cond_wait(&w->changed, &w->lock);
        if (w->qlen == 0 && w->stopping)
            break;
        p = w->queue[0];
        memmove(w->queue, w->queue + 1, (--w->qlen) * sizeof(part *));
        pthread_mutex_unlock(&w->lock);
        ok = w->err.set || upload_part(w, p, &err);
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

/* Headers of an object's creation: storage class, encryption, no-replace. Pairs, NULL-ended. */
static void creation_headers(const s3_storage *s, bool no_replace, const char *extra[8])
{
    int n = 0;

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

static bool start_multipart(s3_writer *w, pgd_error *err)
{
    s3_storage *s = w->s;
    const char *extra[8];
    http_response resp;

    creation_headers(s, false, extra);
    s3_call call = {.method = "POST",
                    .path = w->path,
                    .query = "uploads",
                    .body = "",
                    .body_len = 0,
                    .extra = extra};
    if (!s3_request(s, &call, &resp, err))
        return false;
    if (!xml_text(resp.body, "UploadId", w->upload_id, sizeof(w->upload_id))) {
        http_response_free(&resp);
        return err_set(err, "starting the upload of \"%s\" to s3://%s returned no UploadId",
                       w->path, s->bucket);
    }
    http_response_free(&resp);
    w->threads = calloc(s->upload_concurrency, sizeof(pthread_t));
    w->queue = calloc(w->nparts_buf, sizeof(part *));
    if (w->threads == NULL || w->queue == NULL)
        return err_set(err, "out of memory");
    for (unsigned i = 0; i < s->upload_concurrency; i++)
        if (pthread_create(&w->threads[i], NULL, uploader_main, w) != 0)
            return err_set(err, "could not start upload threads");
    return true;
}

/* Hand the current part to the uploaders and take a free buffer (waits for one). */
static bool ship_current(s3_writer *w, pgd_error *err)
{
    part *p = w->current;

    if (w->upload_id[0] == '\0' && !start_multipart(w, err))
        return false;
    pthread_mutex_lock(&w->lock);
    p->busy = true;
    w->queue[w->qlen++] = p;
    w->inflight++;
    pthread_cond_broadcast(&w->changed);
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
    w->part_cap = part_size_for(w->s, w->current->number);
    if (w->current->number > S3_PARTS_MAX)
        return err_set(err, "\"%s\" would need more than %d parts", w->path, S3_PARTS_MAX);
    if (w->current->buf == NULL || w->part_cap > w->s->part_size) {
        char *grown = realloc(w->current->buf, w->part_cap);
        if (grown == NULL)
            return err_set(err, "out of memory for an upload part of %llu bytes",
                           (unsigned long long)w->part_cap);
        w->current->buf = grown;
    }
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
        if (w->current->len == w->part_cap && !ship_current(w, err))
            return false;
    }
    return true;
}

static void stop_uploaders(s3_writer *w)
{
    if (w->threads == NULL)
        return;
    pthread_mutex_lock(&w->lock);
    while (w->inflight > 0)
        pthread_cond_wait(&w->changed, &w->lock);
    w->stopping = true;
    pthread_cond_broadcast(&w->changed);
    pthread_mutex_unlock(&w->lock);
    for (unsigned i = 0; i < w->s->upload_concurrency; i++)
        if (w->threads[i])
            pthread_join(w->threads[i], NULL);
    free(w->threads);
    w->threads = NULL;
}

static void abort_multipart(s3_writer *w)
{
    char query[600];
    http_response resp;
    pgd_error ignore = {0};

    if (w->upload_id[0] == '\0')
        return;
    snprintf(query, sizeof(query), "uploadId=%s", w->upload_id);
    s3_call call = {.method = "DELETE", .path = w->path, .query = query};
    if (s3_request(w->s, &call, &resp, &ignore))
        http_response_free(&resp);
    w->upload_id[0] = '\0';
}

static void s3_writer_free(s3_writer *w)
{
    stop_uploaders(w);
    for (unsigned i = 0; i < w->nparts_buf; i++)
        free(w->parts[i].buf);
    for (unsigned i = 0; i < w->netags; i++)
        free(w->etags[i]);
    free(w->etags);
    free(w->parts);
    free(w->queue);
    free(w->path);
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->changed);
    free(w);
}

static bool put_single(s3_writer *w, pgd_error *err)
{
    s3_storage *s = w->s;
    const char *extra[8];
    http_response resp;

    creation_headers(s, (w->flags & STORAGE_WRITE_NO_REPLACE) != 0, extra);
    s3_call call = {.method = "PUT",
                    .path = w->path,
                    .body = w->current->buf,
                    .body_len = w->current->len,
                    .extra = extra};
    if (!s3_request(s, &call, &resp, err))
        return false;
    http_response_free(&resp);
    return true;
}

static bool complete_multipart(s3_writer *w, pgd_error *err)
{
    size_t cap = 128 + (size_t)w->next_number * 200, len = 0;
    char *xml = malloc(cap), query[600];
    http_response resp;
    bool ok;

    if (xml == NULL)
        return err_set(err, "out of memory");
    len += (size_t)snprintf(xml + len, cap - len, "<CompleteMultipartUpload>");
    for (unsigned i = 0; i < w->next_number; i++) {
        if (i >= w->netags || w->etags[i] == NULL) {
            free(xml);
            return err_set(err, "part %u of \"%s\" has no ETag", i + 1, w->path);
        }
        len += (size_t)snprintf(xml + len, cap - len,
                                "<Part><PartNumber>%u</PartNumber><ETag>%s</ETag></Part>", i + 1,
                                w->etags[i]);
    }
    len += (size_t)snprintf(xml + len, cap - len, "</CompleteMultipartUpload>");
    snprintf(query, sizeof(query), "uploadId=%s", w->upload_id);
    s3_call call = {
        .method = "POST", .path = w->path, .query = query, .body = xml, .body_len = len};
    ok = s3_request(w->s, &call, &resp, err);
    free(xml);
    if (!ok)
        return false;
    /* S3 may answer 200 and still report an error in the body */
    if (resp.body != NULL && strstr(resp.body, "<Error>") != NULL) {
        char code[64] = "";
        xml_text(resp.body, "Code", code, sizeof(code));
        http_response_free(&resp);
        return err_set(err, "completing the upload of \"%s\" to s3://%s failed: %s", w->path,
                       w->s->bucket, code);
    }
    http_response_free(&resp);
    w->upload_id[0] = '\0';
    return true;
}

static bool s3_writer_close(out_stream *os, pgd_error *err)
{
    s3_writer *w = (s3_writer *)os;
    bool ok;

    if (w->upload_id[0] == '\0' && w->next_number == 1) {
        ok = put_single(w, err);
    } else {
        if (w->current->len > 0) {
            w->current->busy = true;
            pthread_mutex_lock(&w->lock);
            w->queue[w->qlen++] = w->current;
            w->inflight++;
            pthread_cond_broadcast(&w->changed);
            pthread_mutex_unlock(&w->lock);
        } else {
            w->next_number--; /* the empty last buffer is not a part */
        }
        stop_uploaders(w);
        ok = !w->err.set || (*err = w->err, false);
        ok = ok && complete_multipart(w, err);
        if (!ok)
            abort_multipart(w);
    }
    s3_writer_free(w);
    return ok;
}

static void s3_writer_abort(out_stream *os)
{
    s3_writer *w = (s3_writer *)os;

    stop_uploaders(w);
    abort_multipart(w);
    s3_writer_free(w);
}

static const out_stream_ops s3_writer_ops = {s3_writer_write, s3_writer_close, s3_writer_abort};

static out_stream *s3_write_open(storage *st, const char *path, unsigned flags, pgd_error *err)
{
    s3_storage *s = (s3_storage *)st;
    s3_writer *w = calloc(1, sizeof(*w));

    if (w == NULL) {
        err_set(err, "out of memory");
        return NULL;
    }
    w->base.ops = &s3_writer_ops;
    w->s = s;
    w->flags = flags;
    w->path = strdup(path);
    w->nparts_buf = s->upload_concurrency + 1;
    w->parts = calloc(w->nparts_buf, sizeof(part));
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->changed, NULL);
    if (w->path == NULL || w->parts == NULL) {
        s3_writer_free(w);
        err_set(err, "out of memory");
        return NULL;
    }
    w->current = &w->parts[0];
    w->current->number = w->next_number = 1;
    w->part_cap = s->part_size;
    /* grows to part_cap as data arrives, so a small object takes little memory */
    w->current->buf = malloc(w->part_cap);
    if (w->current->buf == NULL) {
        s3_writer_free(w);
        err_set(err, "out of memory for an upload part of %llu bytes",
                (unsigned long long)w->part_cap);
        return NULL;
    }
    return &w->base;
}

/* ---- reader: ranged GETs, several in flight ---- */

typedef struct range_slot {
    char *buf;
    size_t len;
    uint64_t offset;
    bool ready, failed;
    pgd_error err;
} range_slot;

typedef struct s3_reader {
    in_stream base;
    s3_storage *s;
    char *path;
    uint64_t size, next_fetch, consumed;
    unsigned nslots, head;
    range_slot *slots;
    size_t pos; /* within slots[head] */
    pthread_t *threads;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    bool stopping;
} s3_reader;

typedef struct fetch_arg {
    s3_reader *r;
    unsigned index;
} fetch_arg;

static void *fetcher_main(void *arg)
{
    fetch_arg *fa = arg;
    s3_reader *r = fa->r;
    unsigned idx = fa->index;

    pthread_mutex_lock(&r->lock);
    for (;;) {
        range_slot *sl = &r->slots[idx];
        uint64_t off;
        char range[64];
        http_response resp;
        pgd_error err = {0};
        bool ok;

        /* slot idx fetches ranges idx, idx + nslots, ...; waits until it is consumed */
        while (!r->stopping && (sl->ready || sl->failed))
            pthread_cond_wait(&r->changed, &r->lock);
        if (r->stopping)
            break;
        off = sl->offset;
        if (off >= r->size)
            break;
        pthread_mutex_unlock(&r->lock);
        sl->len = (size_t)(r->size - off < S3_RANGE_SIZE ? r->size - off : S3_RANGE_SIZE);
        snprintf(range, sizeof(range), "bytes=%llu-%llu", (unsigned long long)off,
                 (unsigned long long)(off + sl->len - 1));
        const char *extra[] = {"range", range, NULL};
        s3_call call = {.method = "GET",
                        .path = r->path,
                        .extra = extra,
                        .into = sl->buf,
                        .into_cap = S3_RANGE_SIZE};
        ok = s3_request(r->s, &call, &resp, &err);
        if (ok && resp.body_len != sl->len) {
            err_set(&err, "GET of \"%s\" in s3://%s returned %zu bytes for %s", r->path,
                    r->s->bucket, resp.body_len, range);
            ok = false;
        }
        pthread_mutex_lock(&r->lock);
        if (ok)
            sl->ready = true;
        else {
            sl->failed = true;
            sl->err = err;
        }
        pthread_cond_broadcast(&r->changed);
    }
    pthread_mutex_unlock(&r->lock);
    free(fa);
    return NULL;
}

static bool s3_reader_read(in_stream *is, void *buf, size_t len, size_t *n, pgd_error *err)
{
    s3_reader *r = (s3_reader *)is;
    range_slot *sl;

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
    for (unsigned i = 0; r->threads && i < r->nslots; i++)
        if (r->threads[i])
            pthread_join(r->threads[i], NULL);
    for (unsigned i = 0; r->slots && i < r->nslots; i++)
        free(r->slots[i].buf);
    free(r->slots);
    free(r->threads);
    free(r->path);
    pthread_mutex_destroy(&r->lock);
    pthread_cond_destroy(&r->changed);
    free(r);
}

static const in_stream_ops s3_reader_ops = {s3_reader_read, s3_reader_close};

static bool head_object(s3_storage *s, const char *path, bool *exists, uint64_t *size,
                        pgd_error *err)
{
    http_response resp;
    s3_call call = {.method = "HEAD", .path = path, .expect_missing = true};

    if (!s3_request(s, &call, &resp, err))
        return false;
    *exists = resp.status != 404;
    *size = resp.content_length;
    http_response_free(&resp);
    return true;
}

static in_stream *s3_read_open(storage *st, const char *path, bool *missing, pgd_error *err)
{
    s3_storage *s = (s3_storage *)st;
    s3_reader *r;
    bool exists;
    uint64_t size;

    *missing = false;
    if (!head_object(s, path, &exists, &size, err))
        return NULL;
    if (!exists) {
        *missing = true;
        return NULL;
    }
    r = calloc(1, sizeof(*r));
    if (r == NULL) {
        err_set(err, "out of memory");
        return NULL;
    }
    r->base.ops = &s3_reader_ops;
    r->s = s;
    r->path = strdup(path);
    r->size = size;
    r->nslots = s->download_concurrency;
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->changed, NULL);
    r->slots = calloc(r->nslots, sizeof(*r->slots));
    r->threads = calloc(r->nslots, sizeof(pthread_t));
    if (r->path == NULL || r->slots == NULL || r->threads == NULL) {
        s3_reader_close(&r->base);
        err_set(err, "out of memory");
        return NULL;
    }
    for (unsigned i = 0; i < r->nslots; i++) {
        fetch_arg *fa = malloc(sizeof(*fa));
        r->slots[i].offset = (uint64_t)i * S3_RANGE_SIZE;
        r->slots[i].buf = malloc(S3_RANGE_SIZE);
        if (fa == NULL || r->slots[i].buf == NULL) {
            free(fa);
            s3_reader_close(&r->base);
            err_set(err, "out of memory");
            return NULL;
        }
        fa->r = r;
        fa->index = i;
        if (pthread_create(&r->threads[i], NULL, fetcher_main, fa) != 0) {
            free(fa);
            s3_reader_close(&r->base);
            err_set(err, "could not start download threads");
            return NULL;
        }
    }
    return &r->base;
}

static bool s3_exists(storage *st, const char *path, bool *exists, pgd_error *err)
{
    uint64_t size;

    return head_object((s3_storage *)st, path, exists, &size, err);
}

/* ---- listing ---- */

/* Decode the five XML entities S3 uses. */
static void xml_unescape(char *s)
{
    static const struct {
        const char *ent;
        char c;
    } ents[] = {{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
    char *w = s;

    while (*s) {
        bool done = false;
        for (size_t i = 0; i < sizeof(ents) / sizeof(ents[0]) && !done; i++) {
            size_t l = strlen(ents[i].ent);
            if (strncmp(s, ents[i].ent, l) == 0) {
                *w++ = ents[i].c;
                s += l;
                done = true;
            }
        }
        if (!done)
            *w++ = *s++;
    }
    *w = '\0';
}

static bool s3_list(storage *st, const char *dir, storage_list_cb cb, void *arg, pgd_error *err)
{
    s3_storage *s = (s3_storage *)st;
    char *key_prefix = object_key(s, dir), token[2048] = "";
    size_t plen;
    bool ok = true, more = true;

    if (key_prefix == NULL)
        return err_set(err, "out of memory");
    plen = strlen(key_prefix) + 1; /* + '/' */
    while (ok && more) {
        char *enc_prefix, *enc_token, *query, *p;
        char prefix_slash[4096];
        http_response resp;

        snprintf(prefix_slash, sizeof(prefix_slash), "%s/", key_prefix);
        enc_prefix = sigv4_uri_encode(prefix_slash, false);
        enc_token = sigv4_uri_encode(token, false);
        if (asprintf(&query, "list-type=2&delimiter=%%2F&prefix=%s%s%s", enc_prefix,
                     token[0] ? "&continuation-token=" : "", token[0] ? enc_token : "") < 0)
            query = NULL;
        free(enc_prefix);
        free(enc_token);
        s3_call call = {.method = "GET", .path = NULL, .query = query};
        ok = query != NULL && s3_request(s, &call, &resp, err);
        free(query);
        if (!ok)
            break;
        /* <Contents><Key>k</Key>...<Size>n</Size></Contents> and <CommonPrefixes> */
        for (p = resp.body; ok && p && (p = strstr(p, "<Contents>")) != NULL; p += 10) {
            char key[2048] = "", size[32] = "0", *end = strstr(p, "</Contents>");
            if (end == NULL)
                break;
            *end = '\0';
            xml_text(p, "Key", key, sizeof(key));
            xml_text(p, "Size", size, sizeof(size));
            *end = '<';
            xml_unescape(key);
            if (strlen(key) > plen && strchr(key + plen, '/') == NULL)
                ok = cb(arg, key + plen, strtoull(size, NULL, 10), false, err);
        }
        for (p = resp.body; ok && p && (p = strstr(p, "<CommonPrefixes>")) != NULL; p += 16) {
            char pre[2048] = "";
            xml_text(p, "Prefix", pre, sizeof(pre));
            xml_unescape(pre);
            if (strlen(pre) > plen + 1) {
                pre[strlen(pre) - 1] = '\0'; /* the trailing '/' */
                ok = cb(arg, pre + plen, 0, true, err);
            }
        }
        {
            char truncated[16] = "";
            xml_text(resp.body, "IsTruncated", truncated, sizeof(truncated));
            more = strcmp(truncated, "true") == 0 &&
                   xml_text(resp.body, "NextContinuationToken", token, sizeof(token));
        }
        http_response_free(&resp);
    }
    free(key_prefix);
    return ok;
}

static bool s3_remove(storage *st, const char *path, pgd_error *err)
{
    http_response resp;
    s3_call call = {.method = "DELETE", .path = path, .expect_missing = true};

    if (!s3_request((s3_storage *)st, &call, &resp, err))
        return false;
    http_response_free(&resp);
    return true;
}

/* DeleteObjects, 1,000 keys a request (S3's limit); Content-MD5 is mandatory there. */
static bool s3_remove_many(storage *st, const char *const *paths, size_t n, pgd_error *err)
{
    s3_storage *s = (s3_storage *)st;

    for (size_t start = 0; start < n; start += S3_DELETE_BATCH) {
        size_t end = start + S3_DELETE_BATCH < n ? start + S3_DELETE_BATCH : n, len = 0, cap = 64;
        char *xml;
        http_response resp;
        bool ok;

        for (size_t i = start; i < end; i++)
            cap += strlen(s->prefix) + strlen(paths[i]) + 64;
        xml = malloc(cap);
        if (xml == NULL)
            return err_set(err, "out of memory");
        len += (size_t)snprintf(xml, cap, "<Delete><Quiet>true</Quiet>");
        for (size_t i = start; i < end; i++)
            len += (size_t)snprintf(xml + len, cap - len, "<Object><Key>%s%s%s</Key></Object>",
                                    s->prefix, s->prefix[0] ? "/" : "", paths[i]);
        len += (size_t)snprintf(xml + len, cap - len, "</Delete>");
        s3_call call = {
            .method = "POST", .path = NULL, .query = "delete", .body = xml, .body_len = len};
        ok = s3_request(s, &call, &resp, err);
        free(xml);
        if (!ok)
            return false;
        if (resp.body != NULL && strstr(resp.body, "<Error>") != NULL) {
            char key[1024] = "";
            xml_text(resp.body, "Key", key, sizeof(key));
            http_response_free(&resp);
            return err_set(err, "could not delete \"%s\" from s3://%s", key, s->bucket);
        }
        http_response_free(&resp);
    }
    return true;
}

static void s3_free(storage *st)
{
    s3_storage *s = (s3_storage *)st;

    for (size_t i = 0; i < s->nclients; i++)
        http_client_free(s->clients[i]);
    free(s->clients);
    pthread_mutex_destroy(&s->clients_lock);
    free(s->bucket);
    free(s->prefix);
    free(s->scheme_host);
    free(s->host);
    free(s->region);
    free(s->access_key);
    if (s->secret_key) {
        OPENSSL_cleanse(s->secret_key, strlen(s->secret_key));
        free(s->secret_key);
    }
    free(s->session_token);
    free(s->storage_class);
    free(s->sse);
    free(s->base.uri);
    free(s);
}

static const storage_ops s3_ops = {
    .write_open = s3_write_open,
    .read_open = s3_read_open,
    .exists = s3_exists,
    .list = s3_list,
    .remove = s3_remove,
    .free = s3_free,
    .remove_many = s3_remove_many,
};

static char *dup_or_env(const char *v, const char *env)
{
    const char *e = v && v[0] ? v : getenv(env);

    return e && e[0] ? strdup(e) : NULL;
}

storage *storage_s3_new(const char *bucket, const char *prefix, const s3_settings *cfg,
                        pgd_error *err)
{
    s3_storage *s = calloc(1, sizeof(*s));
    const char *endpoint;
    char *ep = NULL;
    size_t plen;

    if (s == NULL) {
        err_set(err, "out of memory");
        return NULL;
    }
    s->base.ops = &s3_ops;
    pthread_mutex_init(&s->clients_lock, NULL);
    srand((unsigned)time(NULL) ^ (unsigned)getpid()); /* backoff jitter differs between processes */
    s->bucket = strdup(bucket);
    while (*prefix == '/')
        prefix++;
    s->prefix = strdup(prefix);
    plen = strlen(s->prefix);
    while (plen > 0 && s->prefix[plen - 1] == '/')
        s->prefix[--plen] = '\0';
    if (asprintf(&s->base.uri, "s3://%s%s%s", bucket, plen ? "/" : "", s->prefix) < 0)
        s->base.uri = NULL;
    s->region = dup_or_env(cfg->region, "AWS_REGION");
    if (s->region == NULL)
        s->region = dup_or_env(NULL, "AWS_DEFAULT_REGION");
    if (s->region == NULL)
        s->region = strdup("us-east-1");
    s->access_key = dup_or_env(cfg->access_key, "AWS_ACCESS_KEY_ID");
    s->secret_key = dup_or_env(cfg->secret_key, "AWS_SECRET_ACCESS_KEY");
    s->session_token = dup_or_env(cfg->session_token, "AWS_SESSION_TOKEN");
    s->storage_class = cfg->storage_class ? strdup(cfg->storage_class) : NULL;
    s->sse = cfg->sse ? strdup(cfg->sse) : NULL;
    s->host_style = cfg->host_style;
    s->part_size = cfg->part_size ? cfg->part_size : S3_PART_DEFAULT;
    s->upload_concurrency = cfg->upload_concurrency ? cfg->upload_concurrency : S3_UPLOADS_DEFAULT;
    s->download_concurrency =
        cfg->download_concurrency ? cfg->download_concurrency : S3_DOWNLOADS_DEFAULT;
    s->retries = cfg->retries ? cfg->retries : S3_RETRIES_DEFAULT;
    if (cfg->retries == (unsigned)-1)
        s->retries = 0;
    s->timeout_s = cfg->timeout_s ? cfg->timeout_s : S3_TIMEOUT_DEFAULT;
    s->base.stream_memory = (uint64_t)(s->upload_concurrency + 1) * s->part_size;
    if (s->access_key == NULL || s->secret_key == NULL) {
        err_set(err,
                "no credentials for s3://%s: set AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY",
                bucket);
        s3_free(&s->base);
        return NULL;
    }
    if (s->part_size < S3_PART_MIN) {
        err_set(err, "--s3-part-size %llu is below S3's minimum of 5 MiB",
                (unsigned long long)s->part_size);
        s3_free(&s->base);
        return NULL;
    }
    endpoint = cfg->endpoint && cfg->endpoint[0] ? cfg->endpoint : getenv("AWS_ENDPOINT_URL");
    if (endpoint == NULL || endpoint[0] == '\0') {
        if (asprintf(&ep, "https://s3.%s.amazonaws.com", s->region) < 0)
            ep = NULL;
        endpoint = ep;
    }
    if (endpoint == NULL ||
        (strncmp(endpoint, "http://", 7) != 0 && strncmp(endpoint, "https://", 8) != 0)) {
        err_set(err,
                "invalid S3 endpoint \"%s\": expected http://host[:port] or "
                "https://host[:port]",
                endpoint ? endpoint : "");
        free(ep);
        s3_free(&s->base);
        return NULL;
    }
    {
        const char *hoststart = strstr(endpoint, "://") + 3;
        size_t hlen = strcspn(hoststart, "/");
        char scheme[8];
        snprintf(scheme, sizeof(scheme), "%.*s", (int)(hoststart - endpoint), endpoint);
        if (s->host_style) {
            if (asprintf(&s->host, "%s.%.*s", bucket, (int)hlen, hoststart) < 0)
                s->host = NULL;
        } else {
            s->host = strndup(hoststart, hlen);
        }
        if (s->host != NULL && asprintf(&s->scheme_host, "%s%s", scheme, s->host) < 0)
            s->scheme_host = NULL;
    }
    free(ep);
    if (s->bucket == NULL || s->prefix == NULL || s->base.uri == NULL || s->host == NULL ||
        s->scheme_host == NULL) {
        err_set(err, "out of memory");
        s3_free(&s->base);
        return NULL;
    }
    return &s->base;
}
