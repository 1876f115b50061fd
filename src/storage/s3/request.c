/*
 * request.c - one S3 request: the target and its signature, the pooled
 * connection it goes over, retries of what may pass, and what the answer
 * means.
 *
 * The path is encoded once, here, and that same string is both sent and
 * signed (sigv4 signs an S3 path verbatim): a key with a space, '+', '&' or
 * 'é' signs as the server sees it.
 *
 * Only 2xx is success (and a 416 for a call that expects one: the first
 * range of an empty object). A 404 means "missing" only for a call that
 * expects it and only once the bucket is known to exist: a GET's answer
 * says NoSuchKey or NoSuchBucket, but HEAD answers carry no body, and a
 * HEAD 404 from a bucket that does not exist looks exactly like a missing
 * key, which wal-fetch would report as the end of the archive. So a 404
 * without either code asks the bucket itself, unless an earlier answer
 * about one of its objects has shown that it is there.
 *
 * Transient failures (5xx, 429/SlowDown, RequestTimeout, timeouts, resets,
 * refused connections) are retried with exponential backoff and jitter
 * (from a per-thread generator: uploads and downloads retry from their own
 * threads); when the retries run out the error is marked transient.
 */
#define _GNU_SOURCE
#include "storage/s3/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "storage/s3/sigv4.h"
#include "util/digest.h"
#include "util/log.h"
#include "util/xmalloc.h"

#define S3_HEADERS_MAX        16
#define S3_HTTP_SUCCESS       200
#define S3_HTTP_REDIRECTS     300
#define S3_HTTP_NOT_FOUND     404
#define S3_HTTP_FORBIDDEN     403
#define S3_HTTP_PRECONDITION  412
#define S3_HTTP_CONFLICT      409
#define S3_HTTP_CLIENT_ERRORS 400
#define S3_HTTP_SERVER_ERRORS 500
#define S3_BUCKET_PROBE_QUERY "list-type=2&max-keys=1"

/* ---- the request as sent and signed ---- */

char *s3_request_key(const s3_storage *s, const char *path)
{
    return xasprintf("%s%s%s", s->prefix, s->prefix[0] ? "/" : "", path);
}

char *s3_request_target(const s3_storage *s, const char *path)
{
    char *key = path ? s3_request_key(s, path) : xstrdup("");
    char *enc = sigv4_uri_encode(key, true);
    char *target = s->host_style ? xasprintf("/%s", enc)
                                 : xasprintf("/%s%s%s", s->bucket, path ? "/" : "", enc);

    free(key);
    free(enc);
    return target;
}

static void s3_request_amz_now(char out[S3_AMZ_DATE_LEN + 1])
{
    time_t now = time(NULL);
    struct tm tm;

    gmtime_r(&now, &tm);
    strftime(out, S3_AMZ_DATE_LEN + 1, "%Y%m%dT%H%M%SZ", &tm);
}

bool s3_request_md5_base64(const void *data, size_t len, char out[S3_MD5_B64_LEN])
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    unsigned char md[DIGEST_MD5_LEN];
    bool ok = digest_md5(data, len, md);
    size_t o = 0;

    for (size_t i = 0; i < DIGEST_MD5_LEN; i += 3) {
        uint32_t v = (uint32_t)md[i] << 16;
        size_t have = DIGEST_MD5_LEN - i;

        if (have > 1)
            v |= (uint32_t)md[i + 1] << 8;
        if (have > 2)
            v |= md[i + 2];
        out[o++] = b64[v >> 18 & 63];
        out[o++] = b64[v >> 12 & 63];
        out[o++] = have > 1 ? b64[v >> 6 & 63] : '=';
        out[o++] = have > 2 ? b64[v & 63] : '=';
    }
    out[o] = '\0';
    return ok;
}

bool s3_request_headers(const s3_storage *s, const s3_call *call, const char *target,
                        const char *amz_date, const char *md5, http_header_list *out)
{
    sigv4_header sh[S3_HEADERS_MAX];
    size_t nh = 0;
    char *authz;
    sigv4_credentials cred = {s->access_key, s->secret_key, s->region, "s3"};

    sh[nh++] = (sigv4_header){"host", s->endpoint.host};
    sh[nh++] = (sigv4_header){"x-amz-date", amz_date};
    sh[nh++] = (sigv4_header){"x-amz-content-sha256", S3_UNSIGNED_PAYLOAD};
    if (md5 != NULL)
        sh[nh++] = (sigv4_header){"content-md5", md5};
    if (s->session_token)
        sh[nh++] = (sigv4_header){"x-amz-security-token", s->session_token};
    for (const char *const *e = call->extra; e && e[0]; e += 2) {
        if (nh == S3_HEADERS_MAX)
            return false;
        sh[nh++] = (sigv4_header){e[0], e[1]};
    }
    sigv4_request sr = {call->method, target, call->query, sh, nh, S3_UNSIGNED_PAYLOAD, true};
    authz = sigv4_authorization(&sr, &cred, amz_date);
    if (authz == NULL)
        return false;
    /* Host too: what is signed must be exactly what curl sends */
    for (size_t i = 0; i < nh; i++)
        http_headers_add(out, "%s: %s", sh[i].name, sh[i].value);
    http_headers_add(out, "Authorization: %s", authz);
    free(authz);
    return true;
}

/* ---- retries ---- */

static bool s3_request_code_is(const s3_answer *a, const char *code)
{
    s3_xml_fault f;

    return a->http.body != NULL && s3_xml_error(a->http.body, a->http.body_len, &f) &&
           strcmp(f.code, code) == 0;
}

static bool s3_request_retryable(const s3_answer *a)
{
    const http_response *r = &a->http;

    return http_retryable(r) || s3_request_code_is(a, "RequestTimeout");
}

static bool s3_request_success(const s3_answer *a)
{
    return a->http.status >= S3_HTTP_SUCCESS && a->http.status < S3_HTTP_REDIRECTS;
}

void s3_answer_free(s3_answer *a)
{
    http_response_free(&a->http);
}

/* ---- one attempt ---- */

static bool s3_request_once(s3_storage *s, const s3_call *call, const char *target, const char *url,
                            const char *md5, s3_answer *answer, pgd_error *terr)
{
    http_header_list hl = {0};
    char date[S3_AMZ_DATE_LEN + 1];
    bool performed;

    memset(answer, 0, sizeof(*answer));
    s3_request_amz_now(date);
    if (!s3_request_headers(s, call, target, date, md5, &hl)) {
        http_headers_free(&hl);
        return err_set(terr,
                       "could not sign the request: too many headers, or libcrypto (%s) "
                       "made no HMAC-SHA-256",
                       PGD_LIBCRYPTO_SONAME);
    }
    performed = http_pool_perform(&s->pool, s->timeout_s, call->method, url, &hl, call->body,
                                  call->body_len, call->into, call->into_cap, &answer->http, terr);
    http_headers_free(&hl);
    return performed;
}

/* ---- what an answer means ---- */

static const char *s3_request_what(const s3_call *call)
{
    return call->path ? call->path : call->what ? call->what : "(bucket)";
}

/* "HTTP 404 NoSuchBucket: The specified bucket does not exist" */
static void s3_request_describe(long status, const s3_xml_fault *f, char *out, size_t outlen)
{
    snprintf(out, outlen, "HTTP %ld%s%s%s%s", status, f->code[0] ? " " : "", f->code,
             f->message[0] ? ": " : "", f->message);
}

/*
 * HEAD answers carry no body, so a refused HEAD says only "403". One GET of
 * the first byte asks the same question and gets the code (AccessDenied,
 * SignatureDoesNotMatch, InvalidAccessKeyId...).
 */
static void s3_request_diagnose_head(s3_storage *s, const s3_call *call, const char *target,
                                     const char *url, long status, s3_xml_fault *f)
{
    static const char *const range[] = {"range", "bytes=0-0", NULL};
    s3_call get = {.method = "GET", .path = call->path, .query = call->query, .extra = range};
    s3_answer a;
    pgd_error ignore = {0};

    if (s3_request_once(s, &get, target, url, NULL, &a, &ignore) && a.http.status == status &&
        a.http.body != NULL)
        s3_xml_error(a.http.body, a.http.body_len, f);
    s3_answer_free(&a);
}

static bool s3_request_fail(s3_storage *s, const s3_call *call, const char *target, const char *url,
                            s3_answer *answer, unsigned attempts, const pgd_error *terr,
                            pgd_error *err)
{
    const http_response *r = &answer->http;
    s3_xml_fault f = {{0}, {0}};
    char desc[S3_CODE_MAX + S3_MESSAGE_MAX + 32];

    if (r->transport_error) {
        err_set(err, "%s of \"%s\" in s3://%s failed after %u tries: %s", call->method,
                s3_request_what(call), s->bucket, attempts, terr->msg);
        err_mark(err, PGD_ERR_TRANSIENT);
        return false;
    }
    if (r->body != NULL)
        s3_xml_error(r->body, r->body_len, &f);
    else if (strcmp(call->method, "HEAD") == 0 && r->status >= S3_HTTP_CLIENT_ERRORS &&
             r->status < S3_HTTP_SERVER_ERRORS)
        s3_request_diagnose_head(s, call, target, url, r->status, &f);
    s3_request_describe(r->status, &f, desc, sizeof(desc));
    if (call->no_replace && (r->status == S3_HTTP_PRECONDITION || r->status == S3_HTTP_CONFLICT)) {
        err_set(err, "could not create \"%s\" in s3://%s: it already exists (%s)",
                s3_request_what(call), s->bucket, desc);
        err_mark(err, PGD_ERR_EXISTS);
        return false;
    }
    err_set(err, "%s of \"%s\" in s3://%s failed%s: %s", call->method, s3_request_what(call),
            s->bucket, attempts > 1 ? " after retries" : "", desc);
    if (s3_request_retryable(answer))
        err_mark(err, PGD_ERR_TRANSIENT);
    return false;
}

/*
 * Does the bucket exist? Asked once per storage, on the first 404 without
 * a code. Listing it answers 2xx, or 403 when we may not list it: both mean
 * it exists. A 404 (NoSuchBucket) means it does not.
 */
static bool s3_request_bucket_exists(s3_storage *s, bool *exists, s3_xml_fault *fault,
                                     pgd_error *err)
{
    s3_call probe = {.method = "GET", .query = S3_BUCKET_PROBE_QUERY};
    s3_answer a;
    pgd_error perr = {0};
    bool known, ok;

    pthread_mutex_lock(&s->lock);
    known = s->bucket_known;
    pthread_mutex_unlock(&s->lock);
    if (known) {
        *exists = true;
        return true;
    }
    ok = s3_request(s, &probe, &a, &perr);
    if (ok || a.http.status == S3_HTTP_FORBIDDEN) {
        *exists = true;
        pthread_mutex_lock(&s->lock);
        s->bucket_known = true;
        pthread_mutex_unlock(&s->lock);
    } else if (a.http.status == S3_HTTP_NOT_FOUND) {
        *exists = false;
        if (a.http.body == NULL || !s3_xml_error(a.http.body, a.http.body_len, fault))
            snprintf(fault->code, sizeof(fault->code), "NoSuchBucket");
    } else {
        s3_answer_free(&a);
        *err = perr;
        err_prefix(err, "could not tell whether bucket \"%s\" exists", s->bucket);
        return false;
    }
    s3_answer_free(&a);
    return true;
}

/* The answer's body is an <Error> with this code. */
static bool s3_request_has_code(const s3_answer *answer, const char *code)
{
    s3_xml_fault f = {{0}, {0}};

    return answer->http.body != NULL &&
           s3_xml_error(answer->http.body, answer->http.body_len, &f) && strcmp(f.code, code) == 0;
}

/* A 404 for a call that expects one: missing key, or a bucket that is not there. */
static bool s3_request_resolve_404(s3_storage *s, const s3_call *call, s3_answer *answer,
                                   pgd_error *err)
{
    s3_xml_fault f = {{0}, {0}};
    bool exists;
    char desc[S3_CODE_MAX + S3_MESSAGE_MAX + 32];

    if (answer->http.body != NULL && s3_xml_error(answer->http.body, answer->http.body_len, &f) &&
        (strcmp(f.code, "NoSuchKey") == 0 || strcmp(f.code, "NoSuchBucket") == 0)) {
        if (strcmp(f.code, "NoSuchKey") == 0) { /* which also says the bucket is there */
            pthread_mutex_lock(&s->lock);
            s->bucket_known = true;
            pthread_mutex_unlock(&s->lock);
            answer->missing = true;
            return true;
        }
    } else {
        /* no body (a HEAD), or a code of some other server's own: the bucket tells */
        memset(&f, 0, sizeof(f));
        if (!s3_request_bucket_exists(s, &exists, &f, err))
            return false;
        if (exists) {
            answer->missing = true;
            return true;
        }
    }
    s3_request_describe(S3_HTTP_NOT_FOUND, &f, desc, sizeof(desc));
    if (strcmp(f.code, "NoSuchBucket") == 0)
        return err_set(err, "%s of \"%s\" in s3://%s failed: bucket \"%s\" does not exist (%s)",
                       call->method, s3_request_what(call), s->bucket, s->bucket, desc);
    return err_set(err, "%s of \"%s\" in s3://%s failed: %s", call->method, s3_request_what(call),
                   s->bucket, desc);
}

bool s3_request(s3_storage *s, const s3_call *call, s3_answer *answer, pgd_error *err)
{
    char *target = s3_request_target(s, call->path);
    char *url = xasprintf("%s%s%s%s", s->endpoint.scheme_host, target, call->query ? "?" : "",
                          call->query ? call->query : "");
    char md5[S3_MD5_B64_LEN];
    bool ok = false;

    memset(answer, 0, sizeof(*answer));
    if (call->body != NULL && !s3_request_md5_base64(call->body, call->body_len, md5)) {
        free(target);
        free(url);
        return err_set(err,
                       "%s of \"%s\" in s3://%s failed: libcrypto (%s) made no MD5 of its body",
                       call->method, s3_request_what(call), s->bucket, PGD_LIBCRYPTO_SONAME);
    }
    for (unsigned attempt = 0;; attempt++) {
        pgd_error terr = {0};
        bool performed =
            s3_request_once(s, call, target, url, call->body ? md5 : NULL, answer, &terr);

        if (!performed && !answer->http.transport_error) {
            /* our own limit (a body larger than asked for, memory), not the server's */
            err_set(err, "%s of \"%s\" in s3://%s failed: %s", call->method, s3_request_what(call),
                    s->bucket, terr.msg);
            break;
        }
        if (performed && (s3_request_success(answer) ||
                          (call->expect_no_range && answer->http.status == S3_HTTP_NO_RANGE))) {
            if (call->path != NULL) { /* an object of the bucket answered: the bucket is there */
                pthread_mutex_lock(&s->lock);
                s->bucket_known = true;
                pthread_mutex_unlock(&s->lock);
            }
            ok = true;
            break;
        }
        if (performed && call->absent_code != NULL && answer->http.status == S3_HTTP_NOT_FOUND &&
            s3_request_has_code(answer, call->absent_code)) {
            answer->missing = true;
            ok = true;
            break;
        }
        if (performed && call->expect_missing && answer->http.status == S3_HTTP_NOT_FOUND) {
            ok = s3_request_resolve_404(s, call, answer, err);
            break;
        }
        if (!s3_request_retryable(answer) || attempt >= s->retries) {
            s3_request_fail(s, call, target, url, answer, attempt + 1, &terr, err);
            break;
        }
        if (answer->http.transport_error)
            log_debug("%s of \"%s\": %s, retrying", call->method, s3_request_what(call), terr.msg);
        else
            log_debug("%s of \"%s\": HTTP %ld, retrying", call->method, s3_request_what(call),
                      answer->http.status);
        s3_answer_free(answer);
        usleep(http_backoff_ms(attempt) * 1000u);
    }
    free(target);
    free(url);
    return ok;
}
