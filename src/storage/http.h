/*
 * http.h - one HTTP(S) connection through libcurl, reused across requests
 * (keep-alive), with stall detection. TLS is libcurl's (OpenSSL build).
 */
#ifndef PGD_HTTP_H
#define PGD_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

typedef struct http_client http_client;

typedef struct http_header_list {
    char **items; /* "Name: value" */
    size_t n;
} http_header_list;

typedef struct http_response {
    long status;
    char *body; /* NUL-terminated, malloc'd; NULL when empty */
    size_t body_len;
    char etag[128];
    uint64_t content_length;
    bool transport_error; /* no HTTP answer: reset, timeout, refused */
} http_response;

/* timeout_s: a response that makes no progress for this long is abandoned. */
http_client *http_client_new(long timeout_s, pgd_error *err);
void http_client_free(http_client *c);

/*
 * Perform one request. false only for transport failures (with *err and
 * resp->transport_error set); HTTP errors come back as resp->status.
 * When into != NULL the body is written there (at most into_cap bytes)
 * instead of being allocated.
 */
bool http_perform(http_client *c, const char *method, const char *url,
                  const http_header_list *headers, const void *body, size_t body_len, void *into,
                  size_t into_cap, http_response *resp, pgd_error *err);

void http_response_free(http_response *r);

bool http_headers_add(http_header_list *h, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void http_headers_free(http_header_list *h);

#endif
