/*
 * test_s3_protocol.c - covers what src/storage/s3/request.c, reader.c,
 * writer.c and listing.c make of each kind of answer, against a scripted
 * HTTP server on 127.0.0.1 that answers each request with the next canned
 * response: retries and transient errors, 404s that are a missing bucket,
 * refused HEADs named by their code, bodies larger than asked, ranges that
 * do not match, listings that do not say where they continue, DeleteObjects
 * with failed keys, 200 answers that carry an error, conditional writes.
 */
#include "helpers.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>

#include "storage/s3/internal.h"

#define MAX_REQUESTS 64
#define REQUEST_LINE 512
#define HEADER_MAX   8192
#define POLL_MS      50
#define MIB          (1024 * 1024)
/* In a script: read the request, then close the connection without answering. */
#define DROP_CONNECTION "drop"
#define ACCESS_DENIED   "<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>"

typedef struct script_server {
    int fd;
    int port;
    pthread_t thread;
    const char *const *responses; /* NULL-terminated; a 500 once they run out */
    size_t next;
    char requests[MAX_REQUESTS]
                 [REQUEST_LINE]; /* "METHOD target [if-none-match] [if-match=V] [range=V]" */
    size_t nrequests;
    pthread_mutex_t lock;
    volatile bool stop;
} script_server;

static script_server server;

/* Read one request (headers, then Content-Length bytes of body); false when the peer is gone. */
static bool read_request(int c, char *line, size_t linecap)
{
    char head[HEADER_MAX];
    size_t used = 0;
    long body = 0;
    char *end, *p;

    while ((end = memmem(head, used, "\r\n\r\n", 4)) == NULL) {
        ssize_t n = recv(c, head + used, sizeof(head) - used - 1, 0);
        if (n < 0 && errno == EAGAIN && !server.stop)
            continue; /* an idle keep-alive connection: look at stop again */
        if (n <= 0)
            return false;
        used += (size_t)n;
        if (memmem(head, used, "\r\n\r\n", 4) == NULL && used >= sizeof(head) - 1)
            return false; /* headers this long are not ours */
    }
    head[used] = '\0';
    snprintf(line, linecap, "%.*s", (int)strcspn(head, "\r"), head);
    if ((p = strcasestr(head, "\r\ncontent-length:")) != NULL)
        body = strtol(p + 17, NULL, 10);
    if ((p = strcasestr(head, "\r\nif-none-match:")) != NULL)
        strncat(line, " if-none-match", linecap - strlen(line) - 1);
    if ((p = strcasestr(head, "\r\nif-match:")) != NULL) {
        size_t used_len = strlen(line);
        p += 11;
        p += strspn(p, " ");
        snprintf(line + used_len, linecap - used_len, " if-match=%.*s", (int)strcspn(p, "\r"), p);
    }
    if ((p = strcasestr(head, "\r\nrange:")) != NULL) {
        size_t used_len = strlen(line);
        p += 8;
        p += strspn(p, " ");
        snprintf(line + used_len, linecap - used_len, " range=%.*s", (int)strcspn(p, "\r"), p);
    }
    body -= (long)(used - (size_t)(end + 4 - head));
    while (body > 0) {
        char sink[65536];
        ssize_t n = recv(c, sink, (size_t)body < sizeof(sink) ? (size_t)body : sizeof(sink), 0);
        if (n < 0 && errno == EAGAIN && !server.stop)
            continue;
        if (n <= 0)
            return false;
        body -= n;
    }
    return true;
}

static void serve_connection(int c)
{
    char line[REQUEST_LINE];

    while (!server.stop && read_request(c, line, sizeof(line))) {
        const char *resp;
        pthread_mutex_lock(&server.lock);
        if (server.nrequests < MAX_REQUESTS) {
            /* keep "METHOD target" without " HTTP/1.1" */
            char *http = strstr(line, " HTTP/1.1");
            if (http != NULL)
                memmove(http, http + 9, strlen(http + 9) + 1);
            snprintf(server.requests[server.nrequests++], REQUEST_LINE, "%s", line);
        }
        resp = server.responses[server.next] ? server.responses[server.next++]
                                             : "HTTP/1.1 500 Out Of Script\r\nContent-Length: "
                                               "0\r\n\r\n";
        pthread_mutex_unlock(&server.lock);
        if (strcmp(resp, DROP_CONNECTION) == 0)
            break; /* the request was read; close without an answer */
        if (send(c, resp, strlen(resp), MSG_NOSIGNAL) < 0)
            break;
        if (strstr(resp, "Connection: close") != NULL)
            break;
    }
    close(c);
}

static void *server_main(void *arg)
{
    (void)arg;
    while (!server.stop) {
        struct pollfd p = {server.fd, POLLIN, 0};
        if (poll(&p, 1, POLL_MS) == 1) {
            struct timeval tv = {0, POLL_MS * 1000};
            int c = accept(server.fd, NULL, NULL);
            if (c < 0)
                continue;
            setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
            serve_connection(c);
        }
    }
    return NULL;
}

static void server_start(const char *const *responses)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof(a);

    memset(&server, 0, sizeof(server));
    server.responses = responses;
    pthread_mutex_init(&server.lock, NULL);
    server.fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(server.fd >= 0);
    assert_int_equal(bind(server.fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(server.fd, 8), 0);
    assert_int_equal(getsockname(server.fd, (struct sockaddr *)&a, &alen), 0);
    server.port = ntohs(a.sin_port);
    assert_int_equal(pthread_create(&server.thread, NULL, server_main, NULL), 0);
}

static void server_stop(void)
{
    server.stop = true;
    pthread_join(server.thread, NULL);
    close(server.fd);
    pthread_mutex_destroy(&server.lock);
}

static storage *open_s3_downloads(unsigned retries, uint64_t part_size, unsigned downloads)
{
    char endpoint[64];
    s3_options o = {.endpoint = endpoint,
                    .access_key = "AKIDTEST",
                    .secret_key = "secret",
                    .retries = retries ? retries : S3_OPTIONS_NO_RETRIES,
                    .part_size = part_size,
                    .upload_concurrency = 1,
                    .download_concurrency = downloads};
    pgd_error err = {0};
    storage *s;

    snprintf(endpoint, sizeof(endpoint), "http://127.0.0.1:%d", server.port);
    s = s3_storage_open("s3://bucket/p", &o, &err);
    if (s == NULL)
        fail_msg("%s", err.msg);
    return s;
}

static storage *open_s3(unsigned retries, uint64_t part_size)
{
    return open_s3_downloads(retries, part_size, 1);
}

static void expect_msg(const pgd_error *err, const char *want)
{
    assert_true(err->set);
    if (strstr(err->msg, want) == NULL)
        fail_msg("got \"%s\", want \"%s\"", err->msg, want);
}

/* Request i starts with want; a want ending in '$' is the whole request. */
static void expect_request(size_t i, const char *want)
{
    size_t len = strlen(want);
    bool whole = len > 0 && want[len - 1] == '$';

    assert_true(i < server.nrequests);
    if (whole ? strlen(server.requests[i]) != len - 1 ||
                    strncmp(server.requests[i], want, len - 1) != 0
              : strncmp(server.requests[i], want, len) != 0)
        fail_msg("request %zu: got \"%s\", want \"%s\"", i, server.requests[i], want);
}

#define HEAD_404  "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"
#define HEAD_403  "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n"
#define EMPTY_200 "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
#define HEAD_503  "HTTP/1.1 503 Slow Down\r\nContent-Length: 0\r\n\r\n" /* HEAD: no body */

/* A response with its Content-Length computed; static storage, one per call site. */
static const char *xml(const char *status, const char *body, char *buf, size_t cap)
{
    snprintf(buf, cap, "HTTP/1.1 %s\r\nContent-Length: %zu\r\n\r\n%s", status, strlen(body), body);
    return buf;
}

/* ---- retries ---- */

/*
 * A kept-alive connection that the server closes after reading the next
 * request: libcurl resends that request on a fresh connection, which needs
 * the body rewound (without a seek callback it failed with "rewinding of
 * the data stream failed", a reset reported as the wrong cause).
 */
static void test_upload_resent_on_a_dropped_connection(void **state)
{
    static const char *const script[] = {EMPTY_200, DROP_CONNECTION, EMPTY_200, NULL};
    storage *s;
    pgd_error err = {0};

    (void)state;
    server_start(script);
    s = open_s3(0, 0);
    assert_true(storage_put(s, "backups/a", "first", 5, 0, &err));
    if (!storage_put(s, "backups/b", "second", 6, 0, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(server.nrequests, 3);
    expect_request(1, "PUT /bucket/p/backups/b");
    expect_request(2, "PUT /bucket/p/backups/b");
    storage_free(s);
    server_stop();
}

static void test_5xx_retried_then_transient(void **state)
{
    static const char *const script[] = {HEAD_503, HEAD_503, HEAD_503, NULL};
    storage *s;
    bool exists;
    pgd_error err = {0};

    (void)state;
    server_start(script);
    s = open_s3(2, 0);
    assert_false(storage_exists(s, "wal/x", &exists, &err));
    expect_msg(&err, "HEAD of \"wal/x\" in s3://bucket failed after retries: HTTP 503");
    assert_null(strstr(err.msg, "HTTP 503 ")); /* no code to learn from a 5xx: no GET asked */
    assert_true(err_is(&err, PGD_ERR_TRANSIENT));
    assert_int_equal(server.nrequests, 3);
    storage_free(s);
    server_stop();
}

static void test_5xx_then_success(void **state)
{
    static const char *const script[] = {
        HEAD_503, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nETag: \"e\"\r\n\r\n", NULL};
    storage *s;
    bool exists = false;
    pgd_error err = {0};

    (void)state;
    server_start(script);
    s = open_s3(3, 0);
    assert_true(storage_exists(s, "wal/x", &exists, &err));
    assert_true(exists);
    storage_free(s);
    server_stop();
}

static void test_refused_connection_is_transient(void **state)
{
    static const char *const script[] = {NULL};
    storage *s;
    bool exists;
    pgd_error err = {0};

    (void)state;
    server_start(script);
    s = open_s3(1, 0);
    server_stop(); /* nobody listens on that port any more */
    assert_false(storage_exists(s, "wal/x", &exists, &err));
    expect_msg(&err, "failed after 2 tries");
    assert_true(err_is(&err, PGD_ERR_TRANSIENT));
    storage_free(s);
}

/* ---- what a 4xx means ---- */

/* A HEAD has no body: one GET of a byte learns the code. Not transient: retrying will not help. */
static void test_head_403_named_by_its_code(void **state)
{
    char b[512];
    const char *script[] = {HEAD_403, xml("403 Forbidden", ACCESS_DENIED, b, sizeof(b)), NULL};
    storage *s;
    bool exists;
    pgd_error err = {0};

    (void)state;
    server_start(script);
    s = open_s3(3, 0);
    assert_false(storage_exists(s, "wal/x", &exists, &err));
    expect_msg(&err,
               "HEAD of \"wal/x\" in s3://bucket failed: HTTP 403 AccessDenied: Access Denied");
    assert_false(err_is(&err, PGD_ERR_TRANSIENT));
    assert_int_equal(server.nrequests, 2); /* not retried */
    expect_request(1, "GET /bucket/p/wal/x");
    storage_free(s);
    server_stop();
}

/* A 404 without a code (a HEAD, or a GET answered so) is a missing key only if the bucket exists.
 */
static void test_404_of_a_missing_bucket(void **state)
{
    char b[512];
    const char *script[] = {
        HEAD_404,
        xml("404 Not Found",
            "<Error><Code>NoSuchBucket</Code><Message>The specified bucket does not "
            "exist</Message></Error>",
            b, sizeof(b)),
        NULL};
    storage *s;
    bool exists = true, missing = false;
    pgd_error err = {0};

    (void)state;
    server_start(script);
    s = open_s3(3, 0);
    assert_false(storage_exists(s, "wal/x", &exists, &err));
    expect_msg(&err, "bucket \"bucket\" does not exist (HTTP 404 NoSuchBucket");
    assert_false(err_is(&err, PGD_ERR_TRANSIENT));
    expect_request(1, "GET /bucket?list-type=2&max-keys=1");
    err_clear(&err);
    server.responses = (const char *const[]){HEAD_404, script[1], NULL};
    server.next = 0;
    assert_null(storage_read_open(s, "wal/y", &missing, &err));
    assert_false(missing);
    expect_msg(&err, "does not exist");
    storage_free(s);
    server_stop();
}

static void test_404_with_the_bucket_there(void **state)
{
    char b[512];
    const char *script[] = {
        HEAD_404,
        xml("200 OK", "<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>", b,
            sizeof(b)),
        HEAD_404, NULL};
    storage *s;
    bool exists = true, missing = false;
    pgd_error err = {0};

    (void)state;
    server_start(script);
    s = open_s3(3, 0);
    assert_true(storage_exists(s, "wal/x", &exists, &err));
    assert_false(exists);
    /* the bucket is asked about once per storage */
    assert_null(storage_read_open(s, "wal/y", &missing, &err));
    assert_true(missing);
    assert_false(err.set);
    assert_int_equal(server.nrequests, 3);
    storage_free(s);
    server_stop();
}

/* ---- ranged reads ---- */

#define RANGE_FIRST "range=bytes=0-8388607" /* the first range: S3_RANGE_SIZE bytes */
#define NO_RANGE_416                                                                               \
    "HTTP/1.1 416 Requested Range Not Satisfiable\r\nContent-Length: 97\r\n\r\n"                   \
    "<Error><Code>InvalidRange</Code><Message>The requested range is not "                         \
    "satisfiable</Message></Error>"

static bool read_all(storage *s, char *buf, size_t cap, size_t *got, pgd_error *err)
{
    bool missing;
    in_stream *in = storage_read_open(s, "obj", &missing, err);
    size_t n;
    bool ok = in != NULL;

    *got = 0;
    while (ok && (ok = in_read(in, buf + *got, cap - *got, &n, err)) && n > 0)
        *got += n;
    in_close(in);
    return ok;
}

/* Serve `script` and read "obj" whole, `downloads` ranges at a time; server.requests keeps the
 * requests. */
static bool scripted_read(const char *const *script, unsigned downloads, char *buf, size_t cap,
                          size_t *got, pgd_error *err)
{
    storage *s;
    bool ok;

    server_start(script);
    s = open_s3_downloads(0, 0, downloads);
    ok = read_all(s, buf, cap, got, err);
    storage_free(s);
    server_stop();
    return ok;
}

/* Serve `script` and open "obj", which must not open: whether it is missing (err: why not). */
static bool scripted_missing(const char *const *script, pgd_error *err)
{
    storage *s;
    bool missing = false;

    server_start(script);
    s = open_s3(0, 0);
    assert_null(storage_read_open(s, "obj", &missing, err));
    storage_free(s);
    server_stop();
    return missing;
}

/* Reading "obj" from `script` succeeds and yields exactly the len bytes of want. */
static void expect_read(const char *const *script, const char *want, size_t len)
{
    char buf[32];
    size_t got = 99;
    pgd_error err = {0};

    if (!scripted_read(script, 1, buf, sizeof(buf), &got, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(got, len);
    assert_memory_equal(buf, want, len);
}

/* Reading "obj" from `script` fails with an error that says `want`. */
static void expect_read_fails(const char *const *script, const char *want)
{
    char *buf = malloc(9 * MIB);
    size_t got;
    pgd_error err = {0};

    assert_non_null(buf);
    assert_false(scripted_read(script, 1, buf, 9 * MIB, &got, &err));
    expect_msg(&err, want);
    free(buf);
}

/* An answer of `status` with `len` bytes of body ('a', 'b', ... cycling), malloc'd. */
static char *big_answer(const char *status, const char *headers, size_t len)
{
    char head[256];
    int hlen = snprintf(head, sizeof(head), "HTTP/1.1 %s\r\n%sContent-Length: %zu\r\n\r\n", status,
                        headers, len);
    char *r = malloc((size_t)hlen + len + 1);

    assert_non_null(r);
    memcpy(r, head, (size_t)hlen);
    for (size_t i = 0; i < len; i++)
        r[hlen + i] = (char)('a' + i % 26);
    r[(size_t)hlen + len] = '\0';
    return r;
}

/* An object that fits in the first range takes one GET: no HEAD, no If-Match. */
static void test_small_object_in_one_request(void **state)
{
    static const char *const script[] = {
        "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-9/10\r\nETag: \"abc\"\r\n"
        "Content-Length: 10\r\n\r\n0123456789",
        NULL};

    (void)state;
    expect_read(script, "0123456789", 10);
    assert_int_equal(server.nrequests, 1);
    expect_request(0, "GET /bucket/p/obj " RANGE_FIRST "$");
}

/* The first answer gives the size and the version: the next range is pinned to it (If-Match). */
static void test_later_ranges_pinned_to_the_first(void **state)
{
    size_t range = 8 * MIB;
    char *first = big_answer("206 Partial Content",
                             "Content-Range: bytes 0-8388607/8388613\r\nETag: \"v1\"\r\n", range);
    const char *script[] = {first,
                            "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes "
                            "8388608-8388612/8388613\r\nContent-Length: 5\r\n\r\nvwxyz",
                            NULL};
    char *buf = malloc(range + 64);
    size_t got;
    pgd_error err = {0};

    (void)state;
    assert_non_null(buf);
    if (!scripted_read(script, 1, buf, range + 64, &got, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(got, range + 5);
    assert_memory_equal(buf, first + strlen(first) - range, range);
    assert_memory_equal(buf + range, "vwxyz", 5);
    assert_int_equal(server.nrequests, 2);
    expect_request(0, "GET /bucket/p/obj " RANGE_FIRST "$");
    expect_request(1, "GET /bucket/p/obj if-match=\"v1\" range=bytes=8388608-8388612$");
    free(buf);
    free(first);
}

/* A server that ignores Range but sends a whole object that fits: that object. */
static void test_whole_object_answered_200(void **state)
{
    static const char *const script[] = {"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789",
                                         NULL};

    (void)state;
    expect_read(script, "0123456789", 10);
    assert_int_equal(server.nrequests, 1);
}

/* A server that ignores Range and sends more than asked: an error, never success. */
static void test_body_larger_than_asked(void **state)
{
    char *big = big_answer("200 OK", "", 8 * MIB + 10);
    const char *script[] = {big, NULL};

    (void)state;
    expect_read_fails(script, "larger than the 8388608 bytes asked for");
    free(big);
}

/* A first range that is not the one asked for (or claims fewer bytes than it holds). */
static void test_wrong_content_range(void **state)
{
    static const char *const script[] = {
        "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-9/12\r\n"
        "Content-Length: 10\r\n\r\n0123456789",
        NULL};

    (void)state;
    expect_read_fails(script,
                      "Content-Range \"bytes 0-9/12\" for bytes=0-8388607 (the server is wrong)");
}

/* A later range of another version of the object (its Content-Range says another size). */
static void test_later_range_of_another_version(void **state)
{
    char *first = big_answer("206 Partial Content",
                             "Content-Range: bytes 0-8388607/8388613\r\nETag: \"v1\"\r\n", 8 * MIB);
    const char *script[] = {first,
                            "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes "
                            "8388608-8388612/8388620\r\nContent-Length: 5\r\n\r\nvwxyz",
                            NULL};

    (void)state;
    expect_read_fails(script, "returned Content-Range \"bytes 8388608-8388612/8388620\"");
    free(first);
}

/* An error during a ranged GET is read, not written over the data, and named. */
static void test_ranged_get_error_named(void **state)
{
    char b[512];
    const char *script[] = {xml("403 Forbidden", ACCESS_DENIED, b, sizeof(b)), NULL};

    (void)state;
    expect_read_fails(script,
                      "GET of \"obj\" in s3://bucket failed: HTTP 403 AccessDenied: Access Denied");
}

/* A GET 404 says which: NoSuchKey is a missing object, in one request. */
static void test_get_404_no_such_key(void **state)
{
    char b[512];
    const char *script[] = {
        xml("404 Not Found",
            "<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message>"
            "</Error>",
            b, sizeof(b)),
        NULL};
    pgd_error err = {0};

    (void)state;
    assert_true(scripted_missing(script, &err));
    assert_false(err.set);
    assert_int_equal(server.nrequests, 1);
}

/* An empty object has no byte 0 (416): a HEAD then says it is empty, and it reads as empty. */
static void test_empty_object(void **state)
{
    static const char *const script[] = {
        NO_RANGE_416, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nETag: \"e\"\r\n\r\n", NULL};

    (void)state;
    expect_read(script, "", 0);
    assert_int_equal(server.nrequests, 2);
    expect_request(0, "GET /bucket/p/obj " RANGE_FIRST "$");
    expect_request(1, "HEAD /bucket/p/obj$");
}

/* Written between the 416 and the HEAD: read as the HEAD saw it, pinned to its version. */
static void test_empty_then_written(void **state)
{
    static const char *const script[] = {
        NO_RANGE_416, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nETag: \"e2\"\r\n\r\n",
        "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-2/3\r\nContent-Length: 3\r\n\r\n"
        "xyz",
        NULL};

    (void)state;
    expect_read(script, "xyz", 3);
    expect_request(2, "GET /bucket/p/obj if-match=\"e2\" range=bytes=0-2$");
}

/* An object of exactly one range: one GET, no download thread. */
static void test_exactly_one_range(void **state)
{
    char *first = big_answer("206 Partial Content",
                             "Content-Range: bytes 0-8388607/8388608\r\nETag: \"v1\"\r\n", 8 * MIB);
    const char *script[] = {first, NULL};
    char *buf = malloc(9 * MIB);
    size_t got;
    pgd_error err = {0};

    (void)state;
    assert_non_null(buf);
    if (!scripted_read(script, 4, buf, 9 * MIB, &got, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(got, 8 * MIB);
    assert_memory_equal(buf, first + strlen(first) - 8 * MIB, 8 * MIB);
    assert_int_equal(server.nrequests, 1);
    free(buf);
    free(first);
}

/* With downloads in parallel: the first range is not asked again, the rest pinned to it. */
static void test_first_range_kept_with_parallel_downloads(void **state)
{
    char *first = big_answer("206 Partial Content",
                             "Content-Range: bytes 0-8388607/8388613\r\nETag: \"v1\"\r\n", 8 * MIB);
    const char *script[] = {first,
                            "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes "
                            "8388608-8388612/8388613\r\nContent-Length: 5\r\n\r\nvwxyz",
                            NULL};
    char *buf = malloc(9 * MIB);
    size_t got;
    pgd_error err = {0};

    (void)state;
    assert_non_null(buf);
    if (!scripted_read(script, 4, buf, 9 * MIB, &got, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(got, 8 * MIB + 5);
    assert_memory_equal(buf, first + strlen(first) - 8 * MIB, 8 * MIB);
    assert_memory_equal(buf + 8 * MIB, "vwxyz", 5);
    assert_int_equal(server.nrequests, 2);
    expect_request(1, "GET /bucket/p/obj if-match=\"v1\" range=bytes=8388608-8388612$");
    free(buf);
    free(first);
}

/* A Content-Range that does not parse as three plain numbers is wrong, not huge. */
static void test_content_range_not_plain_numbers(void **state)
{
    static const char *const bad[] = {"bytes 0-9/-1",  "bytes 0-9/+10",
                                      "bytes 0-9/ 10", "bytes 0-9/99999999999999999999",
                                      "bytes 0-9/10x", "bytes=0-9/10"};

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char answer[256];
        const char *script[] = {answer, NULL};
        char buf[32];
        size_t got;
        pgd_error err = {0};
        char want[96];

        snprintf(answer, sizeof(answer),
                 "HTTP/1.1 206 Partial Content\r\nContent-Range: %s\r\nContent-Length: "
                 "10\r\n\r\n0123456789",
                 bad[i]);
        assert_false(scripted_read(script, 1, buf, sizeof(buf), &got, &err));
        snprintf(want, sizeof(want), "Content-Range \"%s\"", bad[i]);
        expect_msg(&err, want);
    }
}

/* A 200 whose body ends with the connection: it may have been cut short, so it is refused. */
static void test_200_without_length(void **state)
{
    static const char *const script[] = {"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n0123456789",
                                         NULL};

    (void)state;
    expect_read_fails(script, "answered HTTP 200 to bytes=0-8388607 without a Content-Length");
}

/* 416, then the HEAD finds nothing (removed meanwhile): missing (the 416 showed the bucket). */
static void test_empty_then_removed(void **state)
{
    static const char *const script[] = {NO_RANGE_416, HEAD_404, NULL};
    pgd_error err = {0};

    (void)state;
    assert_true(scripted_missing(script, &err));
    assert_false(err.set);
    expect_request(1, "HEAD /bucket/p/obj");
    assert_int_equal(server.nrequests, 2);
}

/* A PUT that worked shows the bucket: a later HEAD 404 is a missing key, with no probe. */
static void test_bucket_known_after_a_put(void **state)
{
    static const char *const script[] = {EMPTY_200, HEAD_404, NULL};
    storage *s;
    bool exists = true;
    pgd_error err = {0};

    (void)state;
    server_start(script);
    s = open_s3(0, 0);
    assert_true(storage_put(s, "wal/a", "first", 5, 0, &err));
    assert_true(storage_exists(s, "wal/b", &exists, &err));
    assert_false(exists);
    assert_int_equal(server.nrequests, 2);
    storage_free(s);
    server_stop();
}

/* A GET 404 that says NoSuchBucket is that error, never "missing". */
static void test_get_404_no_such_bucket(void **state)
{
    char b[512];
    const char *script[] = {
        xml("404 Not Found",
            "<Error><Code>NoSuchBucket</Code><Message>The specified bucket does not "
            "exist</Message></Error>",
            b, sizeof(b)),
        NULL};
    pgd_error err = {0};

    (void)state;
    assert_false(scripted_missing(script, &err));
    expect_msg(&err, "GET of \"obj\" in s3://bucket failed: bucket \"bucket\" does not exist");
    assert_int_equal(server.nrequests, 1);
}

/* A GET 404 with a code of the server's own: the bucket is asked, as for a HEAD. */
static void test_get_404_other_code(void **state)
{
    char b1[512], b2[512];
    const char *script[] = {
        xml("404 Not Found", "<Error><Code>GatewayNotFound</Code><Message>no</Message></Error>", b1,
            sizeof(b1)),
        xml("200 OK", "<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>", b2,
            sizeof(b2)),
        NULL};
    pgd_error err = {0};

    (void)state;
    assert_true(scripted_missing(script, &err));
    assert_false(err.set);
    expect_request(1, "GET /bucket?list-type=2&max-keys=1");
}

static void test_head_without_length(void **state)
{
    static const char *const script[] = {NO_RANGE_416, "HTTP/1.1 200 OK\r\nETag: \"e\"\r\n\r\n",
                                         NULL};
    storage *s;
    bool missing;
    pgd_error err = {0};

    (void)state;
    server_start(script);
    s = open_s3(0, 0);
    assert_null(storage_read_open(s, "obj", &missing, &err));
    expect_msg(&err, "no Content-Length");
    storage_free(s);
    server_stop();
}

/* ---- listing ---- */

static bool count_entry(void *arg, const char *name, uint64_t size, bool is_dir, pgd_error *err)
{
    (void)name;
    (void)size;
    (void)is_dir;
    (void)err;
    (*(int *)arg)++;
    return true;
}

static void test_listing_truncated_without_token(void **state)
{
    char b[512];
    const char *script[] = {xml("200 OK",
                                "<ListBucketResult><IsTruncated>true</IsTruncated><Contents>"
                                "<Key>p/backups/a</Key><Size>1</Size></Contents>"
                                "</ListBucketResult>",
                                b, sizeof(b)),
                            NULL};
    storage *s;
    int n = 0;
    pgd_error err = {0};

    (void)state;
    server_start(script);
    s = open_s3(0, 0);
    assert_false(storage_list(s, "backups", count_entry, &n, &err));
    expect_msg(&err, "listing \"backups\" in s3://bucket failed: IsTruncated is true but there "
                     "is no NextContinuationToken");
    assert_int_equal(n, 0); /* nothing delivered from a page that is not whole */
    storage_free(s);
    server_stop();
}

static void test_listing_pages_and_repeated_token(void **state)
{
    char b1[512], b2[512], b3[512];
    const char *page1 = "<ListBucketResult><IsTruncated>true</IsTruncated>"
                        "<NextContinuationToken>t+1</NextContinuationToken><Contents>"
                        "<Key>p/backups/a</Key><Size>1</Size></Contents></ListBucketResult>";
    const char *page2 = "<ListBucketResult><IsTruncated>true</IsTruncated>"
                        "<NextContinuationToken>t+2</NextContinuationToken><Contents>"
                        "<Key>p/backups/b</Key><Size>1</Size></Contents></ListBucketResult>";
    const char *script[] = {xml("200 OK", page1, b1, sizeof(b1)),
                            xml("200 OK", page2, b2, sizeof(b2)),
                            xml("200 OK", page2, b3, sizeof(b3)), NULL};
    storage *s;
    int n = 0;
    pgd_error err = {0};

    (void)state;
    server_start(script);
    s = open_s3(0, 0);
    assert_false(storage_list(s, "backups", count_entry, &n, &err));
    expect_msg(&err, "the same continuation token twice");
    expect_request(0, "GET /bucket?list-type=2&delimiter=%2F&prefix=p%2Fbackups%2F$");
    expect_request(1, "GET /bucket?list-type=2&delimiter=%2F&prefix=p%2Fbackups%2F"
                      "&continuation-token=t%2B1");
    storage_free(s);
    server_stop();
}

/* ---- DeleteObjects ---- */

static void test_delete_objects_names_every_failure(void **state)
{
    char b[1024], u[256];
    const char *script[] = {
        /* the bucket keeps no versions: one DeleteObjects of the keys */
        xml("200 OK", "<VersioningConfiguration/>", u, sizeof(u)),
        xml("200 OK",
            "<DeleteResult><Deleted><Key>p/a</Key></Deleted>"
            "<Error><Key>p/b&amp;1</Key><Code>AccessDenied</Code><Message>Access "
            "Denied</Message></Error>"
            "<Error><Key>p/c d</Key><Code>InternalError</Code><Message>oops</Message></Error>"
            "</DeleteResult>",
            b, sizeof(b)),
        NULL};
    const char *paths[] = {"a", "b&1", "c d"};
    storage *s;
    pgd_error err = {0};

    (void)state;
    server_start(script);
    s = open_s3(0, 0);
    assert_false(storage_remove_many(s, paths, 3, &err));
    expect_msg(&err, "could not delete 2 objects from s3://bucket/p: \"b&1\" (AccessDenied: "
                     "Access Denied), \"c d\" (InternalError: oops)");
    storage_free(s);
    server_stop();
}

static void test_delete_objects_answer_not_a_result(void **state)
{
    char u[256];
    const char *script[] = {xml("200 OK", "<VersioningConfiguration/>", u, sizeof(u)), EMPTY_200,
                            NULL};
    const char *paths[] = {"a"};
    storage *s;
    pgd_error err = {0};

    (void)state;
    server_start(script);
    s = open_s3(0, 0);
    assert_false(storage_remove_many(s, paths, 1, &err));
    expect_msg(&err, "deleting 1 objects from s3://bucket/p failed: the answer is empty");
    storage_free(s);
    server_stop();
}

/* ---- writes ---- */

static bool write_object(storage *s, unsigned flags, size_t size, pgd_error *err)
{
    out_stream *out = storage_write_open(s, "obj", flags, err);
    char *data = calloc(1, size);
    bool ok = out != NULL && out_write(out, data, size, err);

    free(data);
    if (!ok) {
        out_abort(out);
        return false;
    }
    return out_close(out, err);
}

#define INITIATE                                                                                   \
    "<InitiateMultipartUploadResult><UploadId>up+id/1=</UploadId></InitiateMultipartUploadResult>"
#define PART_OK "HTTP/1.1 200 OK\r\nETag: \"p\"\r\nContent-Length: 0\r\n\r\n"

static void test_single_put_no_replace(void **state)
{
    char b[512];
    const char *script[] = {
        xml("412 Precondition Failed",
            "<Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions "
            "you specified did not hold</Message></Error>",
            b, sizeof(b)),
        NULL};
    storage *s;
    pgd_error err = {0};

    (void)state;
    server_start(script);
    s = open_s3(3, 0);
    assert_false(write_object(s, STORAGE_WRITE_NO_REPLACE, 100, &err));
    expect_msg(&err, "could not create \"obj\" in s3://bucket: it already exists (HTTP 412 "
                     "PreconditionFailed");
    expect_request(0, "PUT /bucket/p/obj if-none-match");
    assert_int_equal(server.nrequests, 1);
    storage_free(s);
    server_stop();
}

/* The request that makes a multipart object visible carries the condition too. */
static void test_multipart_no_replace(void **state)
{
    char b1[512], b2[512];
    const char *script[] = {
        xml("200 OK", INITIATE, b1, sizeof(b1)),
        PART_OK,
        PART_OK,
        xml("409 Conflict",
            "<Error><Code>ConditionalRequestConflict</Code><Message>A conflicting operation "
            "occurred</Message></Error>",
            b2, sizeof(b2)),
        "HTTP/1.1 204 No Content\r\n\r\n",
        NULL};
    storage *s;
    pgd_error err = {0};

    (void)state;
    server_start(script);
    s = open_s3(3, 5 * MIB);
    assert_false(write_object(s, STORAGE_WRITE_NO_REPLACE, 6 * MIB, &err));
    expect_msg(&err, "it already exists (HTTP 409 ConditionalRequestConflict");
    expect_request(0, "POST /bucket/p/obj?uploads");
    expect_request(1, "PUT /bucket/p/obj?partNumber=1&uploadId=up%2Bid%2F1%3D");
    expect_request(3, "POST /bucket/p/obj?uploadId=up%2Bid%2F1%3D if-none-match");
    expect_request(4, "DELETE /bucket/p/obj?uploadId=up%2Bid%2F1%3D"); /* aborted */
    storage_free(s);
    server_stop();
}

/* 200 with an <Error> body: the upload failed, and it is aborted. */
static void test_complete_error_in_200(void **state)
{
    char b1[512], b2[512];
    const char *script[] = {xml("200 OK", INITIATE, b1, sizeof(b1)),
                            PART_OK,
                            PART_OK,
                            xml("200 OK", ACCESS_DENIED, b2, sizeof(b2)),
                            "HTTP/1.1 204 No Content\r\n\r\n",
                            NULL};
    storage *s;
    pgd_error err = {0};

    (void)state;
    server_start(script);
    s = open_s3(3, 5 * MIB);
    assert_false(write_object(s, 0, 6 * MIB, &err));
    expect_msg(&err, "completing the upload of \"obj\" to s3://bucket failed: HTTP 200 "
                     "AccessDenied: Access Denied");
    expect_request(3, "POST /bucket/p/obj?uploadId=up%2Bid%2F1%3D$"); /* no condition */
    expect_request(4, "DELETE /bucket/p/obj?uploadId=");
    storage_free(s);
    server_stop();
}

static void test_complete_internal_error_retried(void **state)
{
    char b1[512], b2[512], b3[512];
    const char *script[] = {xml("200 OK", INITIATE, b1, sizeof(b1)),
                            PART_OK,
                            PART_OK,
                            xml("200 OK",
                                "<Error><Code>InternalError</Code><Message>again</Message></Error>",
                                b2, sizeof(b2)),
                            xml("200 OK",
                                "<CompleteMultipartUploadResult><ETag>\"x\"</ETag>"
                                "</CompleteMultipartUploadResult>",
                                b3, sizeof(b3)),
                            NULL};
    storage *s;
    pgd_error err = {0};

    (void)state;
    server_start(script);
    s = open_s3(3, 5 * MIB);
    if (!write_object(s, 0, 6 * MIB, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(server.nrequests, 5);
    storage_free(s);
    server_stop();
}

/* ---- stale multipart uploads ---- */

/* Started long ago, both; one was written to recently (its latest part): only the other goes. */
static void test_stale_uploads_aborted(void **state)
{
    char b1[1024], b2[512], b3[512];
    const char *script[] = {
        xml("200 OK",
            "<ListMultipartUploadsResult><IsTruncated>false</IsTruncated>"
            "<Upload><Key>p/backups/a</Key><UploadId>id+a</UploadId>"
            "<Initiated>2010-11-10T20:48:33.000Z</Initiated></Upload>"
            "<Upload><Key>p/backups/b</Key><UploadId>id-b</UploadId>"
            "<Initiated>2010-11-10T20:48:33.000Z</Initiated></Upload>"
            "</ListMultipartUploadsResult>",
            b1, sizeof(b1)),
        xml("200 OK",
            "<ListPartsResult><IsTruncated>false</IsTruncated><Part><PartNumber>1</PartNumber>"
            "<LastModified>2010-11-10T21:00:00.000Z</LastModified></Part></ListPartsResult>",
            b2, sizeof(b2)),
        "HTTP/1.1 204 No Content\r\n\r\n",
        xml("200 OK",
            "<ListPartsResult><IsTruncated>false</IsTruncated><Part><PartNumber>1</PartNumber>"
            "<LastModified>2099-01-01T00:00:00.000Z</LastModified></Part></ListPartsResult>",
            b3, sizeof(b3)),
        NULL};
    storage *s;
    pgd_error err = {0};

    (void)state;
    server_start(script);
    s = open_s3(0, 0);
    if (!storage_remove_stale_temp(s, "backups", 3600, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(server.nrequests, 4);
    expect_request(0, "GET /bucket?uploads&prefix=p%2Fbackups%2F$");
    expect_request(1, "GET /bucket/p/backups/a?uploadId=id%2Ba$");
    expect_request(2, "DELETE /bucket/p/backups/a?uploadId=id%2Ba$");
    expect_request(3, "GET /bucket/p/backups/b?uploadId=id-b$");
    storage_free(s);
    server_stop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_upload_resent_on_a_dropped_connection),
        cmocka_unit_test(test_5xx_retried_then_transient),
        cmocka_unit_test(test_5xx_then_success),
        cmocka_unit_test(test_refused_connection_is_transient),
        cmocka_unit_test(test_head_403_named_by_its_code),
        cmocka_unit_test(test_404_of_a_missing_bucket),
        cmocka_unit_test(test_404_with_the_bucket_there),
        cmocka_unit_test(test_small_object_in_one_request),
        cmocka_unit_test(test_later_ranges_pinned_to_the_first),
        cmocka_unit_test(test_whole_object_answered_200),
        cmocka_unit_test(test_body_larger_than_asked),
        cmocka_unit_test(test_wrong_content_range),
        cmocka_unit_test(test_later_range_of_another_version),
        cmocka_unit_test(test_ranged_get_error_named),
        cmocka_unit_test(test_get_404_no_such_key),
        cmocka_unit_test(test_empty_object),
        cmocka_unit_test(test_empty_then_written),
        cmocka_unit_test(test_exactly_one_range),
        cmocka_unit_test(test_first_range_kept_with_parallel_downloads),
        cmocka_unit_test(test_content_range_not_plain_numbers),
        cmocka_unit_test(test_200_without_length),
        cmocka_unit_test(test_empty_then_removed),
        cmocka_unit_test(test_bucket_known_after_a_put),
        cmocka_unit_test(test_get_404_no_such_bucket),
        cmocka_unit_test(test_get_404_other_code),
        cmocka_unit_test(test_head_without_length),
        cmocka_unit_test(test_listing_truncated_without_token),
        cmocka_unit_test(test_listing_pages_and_repeated_token),
        cmocka_unit_test(test_delete_objects_names_every_failure),
        cmocka_unit_test(test_delete_objects_answer_not_a_result),
        cmocka_unit_test(test_single_put_no_replace),
        cmocka_unit_test(test_multipart_no_replace),
        cmocka_unit_test(test_complete_error_in_200),
        cmocka_unit_test(test_complete_internal_error_retried),
        cmocka_unit_test(test_stale_uploads_aborted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
