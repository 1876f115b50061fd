/*
 * http.h - one HTTP(S) connection through libcurl, reused across requests
 * (keep-alive), with stall detection, and the retry policy every object
 * store driver follows. TLS is libcurl's (OpenSSL build). The transport of
 * the S3 and Azure drivers: it knows nothing of either.
 */
#ifndef PGD_HTTP_H
#define PGD_HTTP_H

#include <pthread.h>
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
    long status; /* 0 when no HTTP answer arrived */
    char *body; /* NUL-terminated, malloc'd; NULL when empty or received into the caller's buffer */
    size_t body_len;
    char *etag;          /* ETag header as received (quotes kept), malloc'd; NULL when absent */
    char *content_range; /* Content-Range header, malloc'd; NULL when absent */
    char *error_code;    /* x-ms-error-code (Azure says its error there, a HEAD's too); or NULL */
    char *lock_until;    /* x-amz-object-lock-retain-until-date, malloc'd; NULL when absent */
    uint64_t content_length;
    bool has_content_length;
    bool transport_error; /* no HTTP answer: reset, timeout, refused */
    bool overflow;  /* the body was larger than the caller's buffer (or than any answer may be) */
    bool into_used; /* the body went to the caller's buffer (2xx only) */
} http_response;

/* timeout_s: a response that makes no progress for this long is abandoned. */
http_client *http_client_new(long timeout_s, pgd_error *err);
void http_client_free(http_client *c);

/*
 * Perform one request. Returns true when a whole HTTP answer arrived, whatever
 * its status; false with *err set on a transport failure (resp->transport_error)
 * or when the body did not fit the caller's buffer (resp->overflow, with
 * resp->status set): the caller must never take either for success.
 * When into != NULL a 2xx body is written there (at most into_cap bytes)
 * instead of being allocated; other answers' bodies are always allocated. resp must be freed with
 * http_response_free whatever the outcome.
 */
bool http_perform(http_client *c, const char *method, const char *url,
                  const http_header_list *headers, const void *body, size_t body_len, void *into,
                  size_t into_cap, http_response *resp, pgd_error *err);

void http_response_free(http_response *r);

/*
 * The retry policy of object stores: an answer worth another try is a 5xx,
 * a 429 (throttled), or no answer at all (reset, timeout, refused); any
 * other 4xx is the caller's mistake and is not retried.
 */
#define HTTP_TOO_MANY_REQUESTS 429
#define HTTP_SERVER_ERRORS     500
bool http_retryable(const http_response *r);

/* Backoff before retry `attempt` (0-based), in ms: exponential, capped, with jitter. */
unsigned http_backoff_ms(unsigned attempt);

/*
 * The idle connections of one repository, reused across requests and threads (keep-alive):
 * each request takes one (or makes one, with that timeout), and gives it back once a whole
 * answer came; one that failed may be broken and is closed.
 */
typedef struct http_pool {
    pthread_mutex_t lock;
    http_client **idle;
    size_t n;
} http_pool;

void http_pool_init(http_pool *p);
void http_pool_free(http_pool *p);

/* http_perform on a connection of the pool (see there). */
bool http_pool_perform(http_pool *p, long timeout_s, const char *method, const char *url,
                       const http_header_list *headers, const void *body, size_t body_len,
                       void *into, size_t into_cap, http_response *resp, pgd_error *err);

void http_headers_add(http_header_list *h, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void http_headers_free(http_header_list *h);

#endif
