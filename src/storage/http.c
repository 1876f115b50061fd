/*
 * http.c - libcurl easy handle per client, reused for keep-alive.
 */
#define _GNU_SOURCE
#include "storage/http.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CONNECT_TIMEOUT_S 10

struct http_client {
    CURL *curl;
    long timeout_s;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

http_client *http_client_new(long timeout_s, pgd_error *err)
{
    http_client *c = calloc(1, sizeof(*c));

    pthread_once(&curl_once, curl_init_once);
    if (c == NULL || (c->curl = curl_easy_init()) == NULL) {
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

typedef struct sink {
    char *buf;
    size_t len, cap;
    bool fixed; /* caller's buffer */
    bool overflow;
} sink;

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
    sink *s = arg;
    size_t n = size * nmemb;

    if (s->len + n + (s->fixed ? 0 : 1) > s->cap) {
        if (s->fixed) {
            s->overflow = true;
            return 0;
        }
        size_t cap = (s->len + n + 1) * 2;
        char *grown = realloc(s->buf, cap);
        if (grown == NULL)
            return 0;
        s->buf = grown;
        s->cap = cap;
    }
    memcpy(s->buf + s->len, data, n);
    s->len += n;
    return n;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *arg)
{
    http_response *r = arg;
    size_t n = size * nmemb;

    if (n > 5 && strncasecmp(data, "ETag:", 5) == 0) {
        const char *v = data + 5;
        size_t len = n - 5;
        while (len > 0 && (*v == ' ' || *v == '\t'))
            v++, len--;
        while (len > 0 && (v[len - 1] == '\r' || v[len - 1] == '\n' || v[len - 1] == ' '))
            len--;
        snprintf(r->etag, sizeof(r->etag), "%.*s", (int)len, v);
    } else if (n > 15 && strncasecmp(data, "Content-Length:", 15) == 0) {
        r->content_length = strtoull(data + 15, NULL, 10);
    }
    return n;
}

typedef struct source {
    const char *data;
    size_t len, pos;
} source;

static size_t on_read(char *buf, size_t size, size_t nmemb, void *arg)
{
    source *s = arg;
    size_t n = size * nmemb;

    if (n > s->len - s->pos)
        n = s->len - s->pos;
    memcpy(buf, s->data + s->pos, n);
    s->pos += n;
    return n;
}

bool http_perform(http_client *c, const char *method, const char *url,
                  const http_header_list *headers, const void *body, size_t body_len, void *into,
                  size_t into_cap, http_response *resp, pgd_error *err)
{
    CURL *h = c->curl;
    struct curl_slist *list = NULL;
    sink s = {.buf = into, .cap = into_cap, .fixed = into != NULL};
    source src = {body, body_len, 0};
    CURLcode rc;

    memset(resp, 0, sizeof(*resp));
    for (size_t i = 0; i < headers->n; i++)
        list = curl_slist_append(list, headers->items[i]);
    /* libcurl adds these on its own otherwise */
    list = curl_slist_append(list, "Expect:");
    list = curl_slist_append(list, "Accept:");
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, list);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, (long)CONNECT_TIMEOUT_S);
    /* a stall, not a slow transfer, is what times out */
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, c->timeout_s);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, resp);
    if (strcmp(method, "HEAD") == 0) {
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    } else if (strcmp(method, "PUT") == 0 || strcmp(method, "POST") == 0) {
        curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(h, CURLOPT_READDATA, &src);
        curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)body_len);
        if (strcmp(method, "POST") == 0)
            curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "POST");
    } else if (strcmp(method, "GET") != 0) {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    }
    rc = curl_easy_perform(h);
    curl_slist_free_all(list);
    if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && s.overflow)) {
        if (!s.fixed)
            free(s.buf);
        resp->transport_error = true;
        return err_set(err, "%s %s: %s", method, url, curl_easy_strerror(rc));
    }
    if (s.overflow) {
        if (!s.fixed)
            free(s.buf);
        return err_set(err, "%s %s: the response is larger than expected", method, url);
    }
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp->status);
    if (s.buf != NULL && !s.fixed)
        s.buf[s.len] = '\0';
    resp->body = s.fixed ? NULL : s.buf;
    resp->body_len = s.len;
    return true;
}

void http_response_free(http_response *r)
{
    free(r->body);
    r->body = NULL;
}

bool http_headers_add(http_header_list *h, const char *fmt, ...)
{
    char **grown = realloc(h->items, (h->n + 1) * sizeof(char *));
    va_list ap;
    int rc;

    if (grown == NULL)
        return false;
    h->items = grown;
    va_start(ap, fmt);
    rc = vasprintf(&h->items[h->n], fmt, ap);
    va_end(ap);
    if (rc < 0)
        return false;
    h->n++;
    return true;
}

void http_headers_free(http_header_list *h)
{
    for (size_t i = 0; i < h->n; i++)
        free(h->items[i]);
    free(h->items);
    h->items = NULL;
    h->n = 0;
}
