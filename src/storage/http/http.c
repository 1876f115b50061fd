/*
 * http.c - the object stores' transport: a libcurl easy handle per client,
 * reused for keep-alive. Only http and https, no redirects followed. And
 * their retry policy: what is retried, and how long to wait.
 */
#define _GNU_SOURCE
#include "storage/http/http.h"

#include "storage/http/http_libs.h"
#include "util/interrupt.h"
#include "util/xmalloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define HTTP_CONNECT_TIMEOUT_S 10
#define HTTP_LOW_SPEED_BYTES   1L /* a stall, not a slow transfer, is what times out */
/* an answer received into memory (XML: a listing page is ~1 MiB) never grows past this */
#define HTTP_BODY_MAX          (64u * 1024 * 1024)
#define HTTP_BACKOFF_BASE_MS   100
#define HTTP_BACKOFF_MAX_MS    5000
#define HTTP_BACKOFF_MAX_SHIFT 6

struct http_client {
    CURL *curl;
    long timeout_s;
};

http_client *http_client_new(long timeout_s, pgd_error *err)
{
    http_client *c;

    if (!http_libs_load(err))
        return NULL;
    c = xcalloc(1, sizeof(*c));
    if ((c->curl = curl_easy_init()) == NULL) {
        free(c);
        err_set(err, "could not initialise libcurl");
        return NULL;
    }
    c->timeout_s = timeout_s;
    return c;
}

void http_client_free(http_client *c)
{
    if (c == NULL)
        return;
    curl_easy_cleanup(c->curl);
    free(c);
}

/*
 * Where a body goes: a 2xx answer into the caller's buffer when there is
 * one (a ranged GET), anything else into memory of its own, so an error's
 * XML can be read whatever was asked for.
 */
typedef struct http_sink {
    CURL *h;
    char *into;
    size_t into_cap;
    bool decided; /* fixed or not, at the first byte, from the status */
    char *buf;
    size_t len, cap;
    bool fixed; /* caller's buffer */
    bool overflow;
} http_sink;

static void http_sink_decide(http_sink *s)
{
    long status = 0;

    curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &status);
    s->fixed = s->into != NULL && status >= 200 && status < 300;
    if (s->fixed) {
        s->buf = s->into;
        s->cap = s->into_cap;
    }
    s->decided = true;
}

static size_t http_on_body(char *data, size_t size, size_t nmemb, void *arg)
{
    http_sink *s = arg;
    size_t n = size * nmemb;

    if (!s->decided)
        http_sink_decide(s);

    if (s->len + n + (s->fixed ? 0 : 1) > s->cap) {
        if (s->fixed || s->len + n + 1 > HTTP_BODY_MAX) {
            s->overflow = true;
            return 0;
        }
        size_t cap = (s->len + n + 1) * 2;
        s->buf = xrealloc(s->buf, cap);
        s->cap = cap;
    }
    memcpy(s->buf + s->len, data, n);
    s->len += n;
    return n;
}

/* The value of "Name: value\r\n" when the line is that header, malloc'd. */
static char *http_header_value(const char *line, size_t n, const char *name)
{
    size_t nl = strlen(name);
    const char *v;
    size_t len;

    if (n <= nl || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
        return NULL;
    v = line + nl + 1;
    len = n - nl - 1;
    while (len > 0 && (*v == ' ' || *v == '\t'))
        v++, len--;
    while (len > 0 && (v[len - 1] == '\r' || v[len - 1] == '\n' || v[len - 1] == ' '))
        len--;
    return xstrndup(v, len);
}

static size_t http_on_header(char *data, size_t size, size_t nmemb, void *arg)
{
    http_response *r = arg;
    size_t n = size * nmemb;
    char *v;

    if (n >= 5 && strncmp(data, "HTTP/", 5) == 0) { /* a new response: forget an interim one */
        free(r->etag);
        free(r->content_range);
        free(r->error_code);
        free(r->lock_until);
        r->etag = r->content_range = r->error_code = r->lock_until = NULL;
        r->content_length = 0;
        r->has_content_length = false;
    } else if ((v = http_header_value(data, n, "ETag")) != NULL) {
        free(r->etag);
        r->etag = v;
    } else if ((v = http_header_value(data, n, "x-ms-error-code")) != NULL) {
        free(r->error_code);
        r->error_code = v;
    } else if ((v = http_header_value(data, n, "x-amz-object-lock-retain-until-date")) != NULL) {
        free(r->lock_until);
        r->lock_until = v;
    } else if ((v = http_header_value(data, n, "Content-Range")) != NULL) {
        free(r->content_range);
        r->content_range = v;
    } else if ((v = http_header_value(data, n, "Content-Length")) != NULL) {
        char *end;
        r->content_length = strtoull(v, &end, 10);
        r->has_content_length = v[0] >= '0' && v[0] <= '9' && *end == '\0';
        free(v);
    }
    return n;
}

typedef struct http_source {
    const char *data;
    size_t len, pos;
} http_source;

static size_t http_on_read(char *buf, size_t size, size_t nmemb, void *arg)
{
    http_source *s = arg;
    size_t n = size * nmemb;

    if (n > s->len - s->pos)
        n = s->len - s->pos;
    memcpy(buf, s->data + s->pos, n);
    s->pos += n;
    return n;
}

/*
 * libcurl rewinds the body when it resends a request: on a kept-alive
 * connection that the server had closed, or after a redirect. Without this
 * it fails the request with "rewinding of the data stream failed" instead
 * of resending it.
 */
static int http_on_seek(void *arg, curl_off_t offset, int origin)
{
    http_source *s = arg;

    if (origin != SEEK_SET || offset < 0 || (uint64_t)offset > s->len)
        return CURL_SEEKFUNC_CANTSEEK;
    s->pos = (size_t)offset;
    return CURL_SEEKFUNC_OK;
}

static void http_set_method(CURL *h, const char *method, http_source *src)
{
    if (strcmp(method, "HEAD") == 0) {
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    } else if (strcmp(method, "PUT") == 0 || strcmp(method, "POST") == 0) {
        curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(h, CURLOPT_READFUNCTION, http_on_read);
        curl_easy_setopt(h, CURLOPT_READDATA, src);
        curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, http_on_seek);
        curl_easy_setopt(h, CURLOPT_SEEKDATA, src);
        curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)src->len);
        if (strcmp(method, "POST") == 0)
            curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "POST");
    } else if (strcmp(method, "GET") != 0) {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    }
}

/*
 * Ends a transfer once SIGINT, SIGTERM or SIGHUP has arrived (util/interrupt.h):
 * a stalled request would otherwise hold the run until --s3-timeout, and each
 * retry as long again. Only a transfer that began before the signal: what a
 * run does after it (removing what it uploaded) must still get through.
 * libcurl calls this about once a second while it waits.
 */
static int http_on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                            curl_off_t ulnow)
{
    (void)dltotal;
    (void)dlnow;
    (void)ultotal;
    (void)ulnow;
    return *(const bool *)arg && *interrupt_flag() != 0;
}

bool http_perform(http_client *c, const char *method, const char *url,
                  const http_header_list *headers, const void *body, size_t body_len, void *into,
                  size_t into_cap, http_response *resp, pgd_error *err)
{
    CURL *h = c->curl;
    struct curl_slist *list = NULL;
    http_sink s = {.h = h, .into = into, .into_cap = into_cap};
    http_source src = {body, body_len, 0};
    bool before_signal = *interrupt_flag() == 0;
    CURLcode rc;

    memset(resp, 0, sizeof(*resp));
    for (size_t i = 0; i < headers->n; i++)
        list = curl_slist_append(list, headers->items[i]);
    /* libcurl adds these on its own otherwise */
    list = curl_slist_append(list, "Expect:");
    list = curl_slist_append(list, "Accept:");
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, list);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, (long)HTTP_CONNECT_TIMEOUT_S);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, HTTP_LOW_SPEED_BYTES);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, c->timeout_s);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, http_on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, http_on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, resp);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, http_on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, &before_signal);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    http_set_method(h, method, &src);
    rc = curl_easy_perform(h);
    curl_slist_free_all(list);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp->status);
    if (!s.fixed) {
        if (s.buf != NULL)
            s.buf[s.len] = '\0';
        resp->body = s.buf;
    }
    resp->body_len = s.len;
    resp->into_used = s.fixed;
    if (rc == CURLE_WRITE_ERROR && s.overflow) {
        resp->overflow = true;
        return err_set(err, "%s %s: the response (HTTP %ld) is larger than the %zu bytes %s",
                       method, url, resp->status, s.fixed ? into_cap : (size_t)HTTP_BODY_MAX,
                       s.fixed ? "asked for" : "an answer may take");
    }
    if (rc == CURLE_ABORTED_BY_CALLBACK) /* not the server's: no retry */
        return err_set(err, "%s %s: interrupted by %s", method, url,
                       interrupt_signal_name(interrupt_signal()));
    if (rc != CURLE_OK) {
        resp->transport_error = true;
        resp->status = 0;
        return err_set(err, "%s %s: %s", method, url, curl_easy_strerror(rc));
    }
    return true;
}

void http_pool_init(http_pool *p)
{
    memset(p, 0, sizeof(*p));
    pthread_mutex_init(&p->lock, NULL);
}

void http_pool_free(http_pool *p)
{
    for (size_t i = 0; i < p->n; i++)
        http_client_free(p->idle[i]);
    free(p->idle);
    pthread_mutex_destroy(&p->lock);
}

bool http_pool_perform(http_pool *p, long timeout_s, const char *method, const char *url,
                       const http_header_list *headers, const void *body, size_t body_len,
                       void *into, size_t into_cap, http_response *resp, pgd_error *err)
{
    http_client *c = NULL;
    bool performed;

    pthread_mutex_lock(&p->lock);
    if (p->n > 0)
        c = p->idle[--p->n];
    pthread_mutex_unlock(&p->lock);
    if (c == NULL && (c = http_client_new(timeout_s, err)) == NULL)
        return false;
    performed = http_perform(c, method, url, headers, body, body_len, into, into_cap, resp, err);
    if (!performed) {
        http_client_free(c); /* the connection may be broken: do not reuse it */
        return false;
    }
    pthread_mutex_lock(&p->lock);
    p->idle = xrealloc(p->idle, (p->n + 1) * sizeof(*p->idle));
    p->idle[p->n++] = c;
    pthread_mutex_unlock(&p->lock);
    return true;
}

void http_response_free(http_response *r)
{
    free(r->body);
    free(r->etag);
    free(r->content_range);
    free(r->error_code);
    free(r->lock_until);
    r->body = r->etag = r->content_range = r->error_code = r->lock_until = NULL;
}

bool http_retryable(const http_response *r)
{
    return r->transport_error || r->status == HTTP_TOO_MANY_REQUESTS ||
           r->status >= HTTP_SERVER_ERRORS;
}

/* xorshift64 per thread, seeded from the kernel: no shared state, no lock, no rand(). */
static uint32_t http_random(void)
{
    static __thread uint64_t state;
    uint64_t x = state;

    if (x == 0) {
        struct timespec ts;
        if (getrandom(&x, sizeof(x), GRND_NONBLOCK) != (ssize_t)sizeof(x)) {
            clock_gettime(CLOCK_MONOTONIC, &ts);
            x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)getpid() ^
                (uint64_t)(uintptr_t)&state;
        }
        if (x == 0)
            x = 1;
    }
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    state = x;
    return (uint32_t)(x >> 32);
}

unsigned http_backoff_ms(unsigned attempt)
{
    unsigned shift = attempt < HTTP_BACKOFF_MAX_SHIFT ? attempt : HTTP_BACKOFF_MAX_SHIFT;
    unsigned ms = HTTP_BACKOFF_BASE_MS << shift;

    if (ms > HTTP_BACKOFF_MAX_MS)
        ms = HTTP_BACKOFF_MAX_MS;
    /* half fixed, half random: concurrent writers do not retry in step */
    return ms / 2 + http_random() % (ms / 2 + 1);
}

void http_headers_add(http_header_list *h, const char *fmt, ...)
{
    va_list ap;

    h->items = xrealloc(h->items, (h->n + 1) * sizeof(char *));
    va_start(ap, fmt);
    h->items[h->n++] = xvasprintf(fmt, ap);
    va_end(ap);
}

void http_headers_free(http_header_list *h)
{
    for (size_t i = 0; i < h->n; i++)
        free(h->items[i]);
    free(h->items);
    h->items = NULL;
    h->n = 0;
}
