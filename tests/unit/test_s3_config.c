/*
 * test_s3_config.c - covers src/storage/s3/config.c: the s3:// URI, the
 * endpoint URL (https kept whole, host style refused with an IP address,
 * credentials refused and never echoed), and settings with their defaults.
 */
#include "helpers.h"

#include "storage/s3/internal.h"

static void clear_aws_env(void)
{
    const char *vars[] = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                          "AWS_REGION",        "AWS_DEFAULT_REGION",    "AWS_ENDPOINT_URL"};

    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        unsetenv(vars[i]);
}

/* ---- the URI ---- */

static void expect_uri(const char *uri, const char *bucket, const char *prefix)
{
    char *b, *p;
    pgd_error err = {0};

    if (!s3_config_parse_uri(uri, &b, &p, &err))
        fail_msg("%s: %s", uri, err.msg);
    assert_string_equal(b, bucket);
    assert_string_equal(p, prefix);
    free(b);
    free(p);
}

static void expect_bad_uri(const char *uri, const char *want)
{
    char *b, *p;
    pgd_error err = {0};

    if (s3_config_parse_uri(uri, &b, &p, &err))
        fail_msg("%s: accepted", uri);
    if (strstr(err.msg, want) == NULL)
        fail_msg("%s: got \"%s\", want \"%s\"", uri, err.msg, want);
    assert_null(b);
    assert_null(p);
}

static void test_uri(void **state)
{
    (void)state;
    expect_uri("s3://bucket", "bucket", "");
    expect_uri("s3://bucket/", "bucket", "");
    expect_uri("s3://my.bucket-1//a/b//", "my.bucket-1", "a/b");
    expect_uri("s3://bucket/clu ster+\xc3\xa9&1", "bucket", "clu ster+\xc3\xa9&1");
}

static void test_bad_uri(void **state)
{
    (void)state;
    expect_bad_uri("s3://A_B/x", "lower-case letters");
    expect_bad_uri("s3://ab/x", "3 to 63 characters");
    expect_bad_uri("s3:///x", "3 to 63 characters");
    expect_bad_uri("s3://-abc/x", "starts and ends with a letter or digit");
    expect_bad_uri("s3://abc-/x", "starts and ends with a letter or digit");
    expect_bad_uri("s3://a..b/x", "no \"..\"");
    expect_bad_uri("s3://bucket/a\nb", "control character");
    expect_bad_uri("file:///x", "expected s3://bucket/prefix");
    /* the server removes dot segments, so the request would not be the one signed (403) */
    expect_bad_uri("s3://bucket/a/../b", "holds a \"..\" segment");
    expect_bad_uri("s3://bucket/..", "holds a \"..\" segment");
    expect_bad_uri("s3://bucket/a/./b", "holds a \".\" segment");
    expect_bad_uri("s3://bucket/a/.", "holds a \".\" segment");
    /* the control: dots inside a segment are a name like any other */
    expect_uri("s3://bucket/a.b/..c/.d./...", "bucket", "a.b/..c/.d./...");
}

/* ---- the endpoint ---- */

static void expect_endpoint(const char *url, bool host_style, const char *host,
                            const char *scheme_host)
{
    s3_endpoint e;
    pgd_error err = {0};

    if (!s3_config_parse_endpoint(url, host_style, "bucket", &e, &err))
        fail_msg("%s: %s", url, err.msg);
    assert_string_equal(e.host, host);
    assert_string_equal(e.scheme_host, scheme_host);
    s3_config_endpoint_free(&e);
}

static void test_endpoint(void **state)
{
    (void)state;
    expect_endpoint("http://127.0.0.1:9000", false, "127.0.0.1:9000", "http://127.0.0.1:9000");
    /* "https://" is 8 characters: it once lost its last '/' */
    expect_endpoint("https://s3.eu-west-1.amazonaws.com", false, "s3.eu-west-1.amazonaws.com",
                    "https://s3.eu-west-1.amazonaws.com");
    expect_endpoint("HTTPS://Minio.Local:443/", false, "Minio.Local:443",
                    "https://Minio.Local:443");
    expect_endpoint("https://s3.amazonaws.com", true, "bucket.s3.amazonaws.com",
                    "https://bucket.s3.amazonaws.com");
    expect_endpoint("http://localhost:9000", true, "bucket.localhost:9000",
                    "http://bucket.localhost:9000");
    expect_endpoint("http://[::1]:9000", false, "[::1]:9000", "http://[::1]:9000");
}

static void expect_bad_endpoint(const char *url, bool host_style, const char *want,
                                const char *secret)
{
    s3_endpoint e;
    pgd_error err = {0};

    if (s3_config_parse_endpoint(url, host_style, "bucket", &e, &err))
        fail_msg("%s: accepted", url);
    if (strstr(err.msg, want) == NULL)
        fail_msg("%s: got \"%s\", want \"%s\"", url, err.msg, want);
    if (secret != NULL && strstr(err.msg, secret) != NULL)
        fail_msg("%s: the message echoes \"%s\": %s", url, secret, err.msg);
    assert_null(e.host);
}

static void test_bad_endpoint(void **state)
{
    (void)state;
    expect_bad_endpoint("ftp://x", false, "invalid S3 endpoint \"ftp://x\"", NULL);
    expect_bad_endpoint("127.0.0.1:9000", false, "expected http://host[:port]", NULL);
    expect_bad_endpoint("http://127.0.0.1:9000", true, "IP address", NULL);
    expect_bad_endpoint("http://[::1]:9000", true, "IP address", NULL);
    expect_bad_endpoint("http://host/path", false, "no path", NULL);
    expect_bad_endpoint("http://host?x=1", false, "no path, query", NULL);
    expect_bad_endpoint("http://", false, "no host", NULL);
    expect_bad_endpoint("http://:9000", false, "no host", NULL);
    expect_bad_endpoint("http://host:", false, "port", NULL);
    expect_bad_endpoint("http://host:0", false, "port", NULL);
    expect_bad_endpoint("http://host:65536", false, "port", NULL);
    expect_bad_endpoint("http://host:-1", false, "port", NULL);
    expect_bad_endpoint("http://host:9x", false, "port", NULL);
    expect_bad_endpoint("http://ho st", false, "holds ' '", NULL);
    expect_bad_endpoint("http://[::1", false, "unterminated", NULL);
    expect_bad_endpoint("http://[nope]:1", false, "not an IPv6 address", NULL);
}

/* Credentials in the URL are refused and never echoed, whatever else is wrong. */
static void test_endpoint_credentials_never_echoed(void **state)
{
    (void)state;
    expect_bad_endpoint("http://AKIDUSER:s3cr3tpass@127.0.0.1:9000", false,
                        "credentials do not belong in the URL", "s3cr3tpass");
    expect_bad_endpoint("http://AKIDUSER:s3cr3tpass@127.0.0.1:9000", false, "http://***@127.0.0.1",
                        "AKIDUSER");
    expect_bad_endpoint("https://user@host", false, "credentials", "user@");
    expect_bad_endpoint("ftp://u:s3cr3tpass@x", false, "invalid S3 endpoint", "s3cr3tpass");
    expect_bad_endpoint("http://u:s3cr3tpass@host/path", false, "invalid S3 endpoint",
                        "s3cr3tpass");
}

/* ---- settings ---- */

static s3_storage *open_s3(const char *uri, const s3_options *o, pgd_error *err)
{
    return (s3_storage *)s3_storage_open(uri, o, err);
}

static void test_defaults(void **state)
{
    s3_options o = {.access_key = "AKID", .secret_key = "secret"};
    pgd_error err = {0};
    s3_storage *s;

    (void)state;
    clear_aws_env();
    s = open_s3("s3://bucket/a/b/", &o, &err);
    assert_non_null(s);
    assert_string_equal(s->base.uri, "s3://bucket/a/b");
    assert_string_equal(s->region, "us-east-1");
    assert_string_equal(s->endpoint.scheme_host, "https://s3.us-east-1.amazonaws.com");
    assert_int_equal(s->retries, S3_RETRIES_DEFAULT);
    assert_int_equal(s->part_size, S3_PART_DEFAULT);
    assert_int_equal(s->base.stream_memory, (S3_UPLOADS_DEFAULT + 1) * S3_PART_DEFAULT);
    storage_free(&s->base);
}

static void test_environment(void **state)
{
    s3_options o = {.retries = S3_OPTIONS_NO_RETRIES};
    pgd_error err = {0};
    s3_storage *s;

    (void)state;
    clear_aws_env();
    setenv("AWS_ACCESS_KEY_ID", "AKIDENV", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "secretenv", 1);
    setenv("AWS_DEFAULT_REGION", "eu-west-3", 1);
    setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:4569", 1);
    s = open_s3("s3://bucket", &o, &err);
    assert_non_null(s);
    assert_string_equal(s->access_key, "AKIDENV");
    assert_string_equal(s->region, "eu-west-3");
    assert_string_equal(s->endpoint.scheme_host, "http://127.0.0.1:4569");
    assert_int_equal(s->retries, 0);
    storage_free(&s->base);
    /* an option beats the variable */
    o.endpoint = "https://other:1";
    o.region = "ap-south-1";
    s = open_s3("s3://bucket", &o, &err);
    assert_non_null(s);
    assert_string_equal(s->endpoint.scheme_host, "https://other:1");
    assert_string_equal(s->region, "ap-south-1");
    storage_free(&s->base);
    clear_aws_env();
}

static void test_refusals(void **state)
{
    s3_options o = {.access_key = "AKID", .secret_key = "secret"};
    pgd_error err = {0};

    (void)state;
    clear_aws_env();
    assert_null(open_s3("s3://bucket", &(s3_options){0}, &err));
    assert_non_null(strstr(err.msg, "no credentials for s3://bucket"));
    err_clear(&err);
    o.part_size = S3_PART_MIN - 1;
    assert_null(open_s3("s3://bucket", &o, &err));
    assert_non_null(strstr(err.msg, "below S3's minimum"));
    err_clear(&err);
    o.part_size = 0;
    o.endpoint = "http://AKIDUSER:secret@h";
    assert_null(open_s3("s3://bucket", &o, &err));
    assert_null(strstr(err.msg, "secret"));
    err_clear(&err);
    setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9000", 1);
    o.endpoint = NULL;
    o.host_style = true;
    assert_null(open_s3("s3://bucket", &o, &err));
    assert_non_null(strstr(err.msg, "IP address"));
    clear_aws_env();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uri),
        cmocka_unit_test(test_bad_uri),
        cmocka_unit_test(test_endpoint),
        cmocka_unit_test(test_bad_endpoint),
        cmocka_unit_test(test_endpoint_credentials_never_echoed),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_environment),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
