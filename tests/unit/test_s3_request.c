/*
 * test_s3_request.c - covers the pure parts of src/storage/s3/request.c: the
 * key under the prefix, the request target (encoded once, path or host
 * style), the signed headers (Host included, the target signed as sent),
 * and the retry backoff.
 */
#include "helpers.h"

#include "storage/s3/internal.h"
#include "storage/s3/sigv4.h"

#define TEST_DATE "20261129T215959Z"

static s3_storage *open_s3(const char *uri, bool host_style, const char *token)
{
    s3_options o = {.endpoint = "https://s3.eu-west-1.amazonaws.com",
                    .region = "eu-west-1",
                    .access_key = "AKIDTEST",
                    .secret_key = "secret",
                    .session_token = token,
                    .host_style = host_style};
    pgd_error err = {0};
    storage *s = s3_storage_open(uri, &o, &err);

    if (s == NULL)
        fail_msg("%s: %s", uri, err.msg);
    return (s3_storage *)s;
}

static void expect_target(s3_storage *s, const char *path, const char *want)
{
    char *t = s3_request_target(s, path);

    assert_string_equal(t, want);
    free(t);
}

static void test_key_and_target(void **state)
{
    s3_storage *s = open_s3("s3://bucket/clu ster+\xc3\xa9&1", false, NULL);
    char *key;

    (void)state;
    key = s3_request_key(s, "wal/00000001/x.lz4");
    assert_string_equal(key, "clu ster+\xc3\xa9&1/wal/00000001/x.lz4");
    free(key);
    /* encoded once: "%20", never "%2520" */
    expect_target(s, "wal/00000001/x.lz4", "/bucket/clu%20ster%2B%C3%A9%261/wal/00000001/x.lz4");
    expect_target(s, "a=b%c", "/bucket/clu%20ster%2B%C3%A9%261/a%3Db%25c");
    expect_target(s, NULL, "/bucket");
    storage_free(&s->base);
    s = open_s3("s3://bucket", false, NULL);
    expect_target(s, "backups/x", "/bucket/backups/x");
    storage_free(&s->base);
    s = open_s3("s3://bucket/p", true, NULL);
    expect_target(s, "backups/x y", "/p/backups/x%20y");
    expect_target(s, NULL, "/");
    assert_string_equal(s->endpoint.host, "bucket.s3.eu-west-1.amazonaws.com");
    storage_free(&s->base);
}

static const char *header(const http_header_list *h, const char *name)
{
    size_t n = strlen(name);

    for (size_t i = 0; i < h->n; i++)
        if (strncasecmp(h->items[i], name, n) == 0 && h->items[i][n] == ':')
            return h->items[i] + n + 2;
    return NULL;
}

/* The Authorization is the signature of exactly the target and headers that are sent. */
static void test_headers_sign_what_is_sent(void **state)
{
    s3_storage *s = open_s3("s3://bucket/a b", false, "TOKEN/+=");
    const char *extra[] = {"range", "bytes=0-9", NULL};
    s3_call call = {.method = "GET", .path = "k&1", .extra = extra};
    char *target = s3_request_target(s, call.path);
    http_header_list h = {0};
    sigv4_header sh[6];
    char *authz;

    (void)state;
    assert_true(s3_request_headers(s, &call, target, TEST_DATE, "bWQ1", &h));
    assert_string_equal(header(&h, "host"), "s3.eu-west-1.amazonaws.com");
    assert_string_equal(header(&h, "x-amz-content-sha256"), S3_UNSIGNED_PAYLOAD);
    assert_string_equal(header(&h, "content-md5"), "bWQ1");
    assert_string_equal(header(&h, "x-amz-security-token"), "TOKEN/+=");
    assert_string_equal(header(&h, "range"), "bytes=0-9");
    assert_non_null(strstr(header(&h, "Authorization"),
                           "SignedHeaders=content-md5;host;range;x-amz-content-sha256;"
                           "x-amz-date;x-amz-security-token,"));
    /* recompute independently of request.c, with the target as sent */
    sh[0] = (sigv4_header){"host", "s3.eu-west-1.amazonaws.com"};
    sh[1] = (sigv4_header){"x-amz-date", TEST_DATE};
    sh[2] = (sigv4_header){"x-amz-content-sha256", S3_UNSIGNED_PAYLOAD};
    sh[3] = (sigv4_header){"content-md5", "bWQ1"};
    sh[4] = (sigv4_header){"x-amz-security-token", "TOKEN/+="};
    sh[5] = (sigv4_header){"range", "bytes=0-9"};
    sigv4_request r = {"GET", "/bucket/a%20b/k%261", NULL, sh, 6, S3_UNSIGNED_PAYLOAD, true};
    sigv4_credentials c = {"AKIDTEST", "secret", "eu-west-1", "s3"};
    authz = sigv4_authorization(&r, &c, TEST_DATE);
    assert_string_equal(header(&h, "Authorization"), authz);
    free(authz);
    free(target);
    http_headers_free(&h);
    storage_free(&s->base);
}

static void test_headers_limit(void **state)
{
    s3_storage *s = open_s3("s3://bucket", false, NULL);
    const char *extra[40];
    s3_call call = {.method = "GET", .path = "k", .extra = extra};
    http_header_list h = {0};

    (void)state;
    for (int i = 0; i < 38; i++)
        extra[i] = "x-amz-meta-a";
    extra[38] = NULL;
    assert_false(s3_request_headers(s, &call, "/bucket/k", TEST_DATE, NULL, &h));
    http_headers_free(&h);
    storage_free(&s->base);
}

/* Exponential, capped, with half of it random: never zero, never above the cap. */
static void test_backoff(void **state)
{
    unsigned min_seen = (unsigned)-1, max_seen = 0;

    (void)state;
    for (int i = 0; i < 1000; i++) {
        unsigned first = http_backoff_ms(0), late = http_backoff_ms(20);
        assert_in_range(first, 50, 100);
        assert_in_range(late, 2500, 5000);
        min_seen = late < min_seen ? late : min_seen;
        max_seen = late > max_seen ? late : max_seen;
    }
    assert_true(max_seen > min_seen); /* jitter, not a constant */
}

/* Content-MD5 against known MD5s (RFC 1321's suite, and the empty body), in base64 */
static void test_md5_base64(void **state)
{
    static const struct {
        const char *body, *want;
    } cases[] = {
        {"", "1B2M2Y8AsgTpgAmY7PhCfg=="},               /* d41d8cd98f00b204e9800998ecf8427e */
        {"abc", "kAFQmDzST7DWlj99KOF/cg=="},            /* 900150983cd24fb0d6963f7d28e17f72 */
        {"message digest", "+WtpfXy3k41SWi8xqvFh0A=="}, /* f96b697d7cb7938d525a2f31aaf161d0 */
        {"The quick brown fox jumps over the lazy dog", "nhB9nTcrtoJr2B01QqQZ1g=="},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[S3_MD5_B64_LEN];

        memset(out, 'x', sizeof(out));
        s3_request_md5_base64(cases[i].body, strlen(cases[i].body), out);
        assert_string_equal(out, cases[i].want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_and_target), cmocka_unit_test(test_headers_sign_what_is_sent),
        cmocka_unit_test(test_headers_limit),  cmocka_unit_test(test_backoff),
        cmocka_unit_test(test_md5_base64),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
