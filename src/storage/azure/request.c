/*
 * request.c - one Azure Blob request: its URL, its headers and Shared Key
 * signature (or the SAS token in its query), the pooled connection it goes
 * over, retries by the object stores' policy (storage/http/http.h: 5xx,
 * 429 and connection errors, with backoff and jitter; no other 4xx), and
 * what the answer means.
 *
 * Azure names its error in the x-ms-error-code header of every answer,
 * HEAD's included, and in the XML body of the others: a 404 is a missing
 * blob only when it says BlobNotFound; ContainerNotFound, or a 404 that
 * names nothing (a wrong endpoint path), is an error, so wal-fetch never
 * takes a repository it cannot reach for the end of the archive.
 *
 * A SAS token is part of every URL: no message carries a URL with its
 * query (the SAS), and the Authorization header is never printed.
 */
#define _GNU_SOURCE
#include "storage/azure/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/log.h"
#include "util/xmalloc.h"

#define AZURE_HTTP_SUCCESS      200
#define AZURE_HTTP_REDIRECTS    300
#define AZURE_HTTP_NOT_FOUND    404
#define AZURE_HTTP_CONFLICT     409
#define AZURE_HTTP_PRECONDITION 412
#define AZURE_HTTP_NO_RANGE     416
#define AZURE_HEADERS_MAX       16

/* ---- the request as sent and signed ---- */

char *azure_request_key(const azure_storage *s, const char *path)
{
    return xasprintf("%s%s%s", s->prefix, s->prefix[0] ? "/" : "", path);
}

/* "/container/enc(key)", or "/container" for the container itself */
static char *azure_request_target(const azure_storage *s, const char *path)
{
    char *key, *enc, *target;

    if (path == NULL)
        return xasprintf("/%s", s->container);
    key = azure_request_key(s, path);
    enc = azure_sign_uri_encode(key, true);
    target = xasprintf("/%s/%s", s->container, enc);
    free(key);
    free(enc);
    return target;
}

char *azure_request_url(const azure_storage *s, const azure_call *call)
{
    char *target = azure_request_target(s, call->path), *query = NULL, *url;
    size_t len = 0;
    FILE *f = open_memstream(&query, &len);
    bool first = true;

    if (f == NULL) /* the C library's malloc: nothing better to do than stop, as xmalloc would */
        xmalloc_fail(len);
    for (const char *const *p = call->params; p && p[0]; p += 2) {
        char *v = azure_sign_uri_encode(p[1], false);
        fprintf(f, "%s%s=%s", first ? "?" : "&", p[0], v);
        free(v);
        first = false;
    }
    if (s->sas != NULL)
        fprintf(f, "%s%s", first ? "?" : "&", s->sas);
    if (fclose(f) != 0)
        xmalloc_fail(len);
    url = xasprintf("%s%s%s", s->endpoint, target, query);
    free(query);
    free(target);
    return url;
}

static void azure_request_date(char out[AZURE_DATE_LEN + 1])
{
    static const char *const days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                         "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    time_t now = time(NULL);
    struct tm tm;

    /* by hand: strftime's %a and %b follow the locale, RFC 1123 does not */
    gmtime_r(&now, &tm);
    snprintf(out, AZURE_DATE_LEN + 1, "%s, %02d %s %04d %02d:%02d:%02d GMT", days[tm.tm_wday % 7],
             tm.tm_mday % 100, months[tm.tm_mon % 12], (tm.tm_year + 1900) % 10000,
             tm.tm_hour % 100, tm.tm_min % 100, tm.tm_sec % 100);
}

bool azure_request_headers(const azure_storage *s, const azure_call *call, const char *date,
                           http_header_list *out)
{
    const char *h[AZURE_HEADERS_MAX * 2 + 1];
    size_t n = 0;
    char *target, *resource, *text, *authz;

    h[n++] = "x-ms-date";
    h[n++] = date;
    h[n++] = "x-ms-version";
    h[n++] = AZURE_API_VERSION;
    for (const char *const *e = call->headers; e && e[0]; e += 2) {
        if (n + 2 >= AZURE_HEADERS_MAX * 2)
            return false;
        h[n++] = e[0];
        h[n++] = e[1];
    }
    h[n] = NULL;
    for (size_t i = 0; i < n; i += 2)
        http_headers_add(out, "%s: %s", h[i], h[i + 1]);
    if (s->key_len == 0)
        return true; /* a SAS in the query authorises it */
    target = azure_request_target(s, call->path);
    resource = xasprintf("%s%s", s->endpoint_path, target);
    azure_sign_input in = {call->method, call->body ? call->body_len : 0, h, s->account, resource,
                           call->params};
    text = azure_sign_string(&in);
    authz = text ? azure_sign_authorization(s->account, s->key, s->key_len, text) : NULL;
    free(text);
    free(resource);
    free(target);
    if (authz == NULL)
        return false;
    http_headers_add(out, "Authorization: %s", authz);
    explicit_bzero(authz, strlen(authz));
    free(authz);
    return true;
}

/* ---- one attempt ---- */

static bool azure_request_once(azure_storage *s, const azure_call *call, const char *url,
                               azure_answer *answer, pgd_error *terr)
{
    http_header_list hl = {0};
    char date[AZURE_DATE_LEN + 1];
    bool performed;

    memset(answer, 0, sizeof(*answer));
    azure_request_date(date);
    if (!azure_request_headers(s, call, date, &hl)) {
        http_headers_free(&hl);
        return err_set(terr,
                       "could not sign the request: too many headers, or libcrypto (%s) made no "
                       "HMAC-SHA-256",
                       PGD_LIBCRYPTO_SONAME);
    }
    performed = http_pool_perform(&s->pool, s->timeout_s, call->method, url, &hl, call->body,
                                  call->body_len, call->into, call->into_cap, &answer->http, terr);
    http_headers_free(&hl);
    return performed;
}

/* ---- what an answer means ---- */

static const char *azure_request_what(const azure_call *call)
{
    return call->path ? call->path : call->what ? call->what : "(container)";
}

/* Azure's error code of an answer (header first, then the XML body) and its message. */
static void azure_request_fault(const azure_answer *a, azure_xml_fault *f)
{
    memset(f, 0, sizeof(*f));
    if (a->http.body != NULL)
        azure_xml_error(a->http.body, a->http.body_len, f);
    if (a->http.error_code != NULL && a->http.error_code[0] != '\0')
        snprintf(f->code, sizeof(f->code), "%.*s", (int)strcspn(a->http.error_code, "\r\n"),
                 a->http.error_code);
}

static bool azure_request_code_is(const azure_answer *a, const char *code)
{
    azure_xml_fault f;

    azure_request_fault(a, &f);
    return strcmp(f.code, code) == 0;
}

/* A transport error's text with the URL's query (the SAS token) cut out. */
static void azure_request_redact(const char *msg, const char *url, pgd_error *err)
{
    const char *at = strstr(msg, url), *q = strchr(url, '?');

    if (at == NULL || q == NULL) {
        err_set(err, "%s", q == NULL || strchr(msg, '?') == NULL ? msg : "(the request failed)");
        return;
    }
    err_set(err, "%.*s%.*s%s", (int)(at - msg), msg, (int)(q - url), url, at + strlen(url));
}

static bool azure_request_fail(azure_storage *s, const azure_call *call, const char *url,
                               const azure_answer *answer, unsigned attempts, const pgd_error *terr,
                               pgd_error *err)
{
    const http_response *r = &answer->http;
    azure_xml_fault f;
    pgd_error shown = {0};

    if (r->transport_error || r->status == 0) {
        azure_request_redact(terr->msg, url, &shown);
        err_set(err, "%s of \"%s\" in %s failed after %u tries: %s", call->method,
                azure_request_what(call), s->base.uri, attempts, shown.msg);
        if (r->transport_error)
            err_mark(err, PGD_ERR_TRANSIENT);
        return false;
    }
    azure_request_fault(answer, &f);
    if (call->no_replace &&
        (r->status == AZURE_HTTP_CONFLICT || r->status == AZURE_HTTP_PRECONDITION)) {
        err_set(err, "could not create \"%s\" in %s: it already exists (HTTP %ld %s)",
                azure_request_what(call), s->base.uri, r->status, f.code);
        err_mark(err, PGD_ERR_EXISTS);
        return false;
    }
    if (strcmp(f.code, "ContainerNotFound") == 0)
        return err_set(err, "%s of \"%s\" in %s failed: container \"%s\" does not exist (HTTP %ld)",
                       call->method, azure_request_what(call), s->base.uri, s->container,
                       r->status);
    err_set(err, "%s of \"%s\" in %s failed%s: HTTP %ld%s%s%s%s", call->method,
            azure_request_what(call), s->base.uri, attempts > 1 ? " after retries" : "", r->status,
            f.code[0] ? " " : "", f.code, f.message[0] ? ": " : "", f.message);
    if (http_retryable(r))
        err_mark(err, PGD_ERR_TRANSIENT);
    return false;
}

void azure_answer_free(azure_answer *a)
{
    http_response_free(&a->http);
}

bool azure_request(azure_storage *s, const azure_call *call, azure_answer *answer, pgd_error *err)
{
    char *url = azure_request_url(s, call);
    bool ok = false;

    memset(answer, 0, sizeof(*answer));
    for (unsigned attempt = 0;; attempt++) {
        pgd_error terr = {0};
        bool performed = azure_request_once(s, call, url, answer, &terr);
        long st = answer->http.status;

        if (!performed && !answer->http.transport_error) {
            /* not the server's: signing, an interrupt, an answer too large */
            azure_request_redact(terr.msg, url, err);
            err_prefix(err, "%s of \"%s\" in %s failed", call->method, azure_request_what(call),
                       s->base.uri);
            break;
        }
        if (performed && ((st >= AZURE_HTTP_SUCCESS && st < AZURE_HTTP_REDIRECTS) ||
                          (call->expect_no_range && st == AZURE_HTTP_NO_RANGE))) {
            ok = true;
            break;
        }
        if (performed && call->expect_missing && st == AZURE_HTTP_NOT_FOUND &&
            azure_request_code_is(answer, "BlobNotFound")) {
            answer->missing = true;
            ok = true;
            break;
        }
        if (!http_retryable(&answer->http) || attempt >= s->retries) {
            azure_request_fail(s, call, url, answer, attempt + 1, &terr, err);
            break;
        }
        if (answer->http.transport_error)
            log_debug("%s of \"%s\": transport error, retrying", call->method,
                      azure_request_what(call));
        else
            log_debug("%s of \"%s\": HTTP %ld, retrying", call->method, azure_request_what(call),
                      st);
        azure_answer_free(answer);
        usleep(http_backoff_ms(attempt) * 1000u);
    }
    free(url);
    return ok;
}
