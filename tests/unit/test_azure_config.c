/*
 * test_azure_config.c - covers src/storage/azure/config.c: the azure://
 * URI, the connection string (its fields, a malformed one refused without
 * echoing it), where credentials and the endpoint come from, and that no
 * message carries a key.
 */
#include "helpers.h"

#include "storage/azure/internal.h"

#define TEST_KEY "cGdkaXJlY3QtdGVzdC1rZXktMzItYnl0ZXMtbG9uZyE="

static void clear_azure_env(void)
{
    const char *vars[] = {"AZURE_STORAGE_ACCOUNT", "AZURE_STORAGE_KEY", "AZURE_STORAGE_SAS_TOKEN",
                          "AZURE_STORAGE_CONNECTION_STRING"};

    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        unsetenv(vars[i]);
}

static void expect_uri(const char *uri, const char *container, const char *prefix)
{
    char *c, *p;
    pgd_error err = {0};

    if (!azure_config_parse_uri(uri, &c, &p, &err))
        fail_msg("%s: %s", uri, err.msg);
    assert_string_equal(c, container);
    assert_string_equal(p, prefix);
    free(c);
    free(p);
}

static void expect_bad_uri(const char *uri, const char *want)
{
    char *c, *p;
    pgd_error err = {0};

    if (azure_config_parse_uri(uri, &c, &p, &err))
        fail_msg("%s: accepted", uri);
    if (strstr(err.msg, want) == NULL)
        fail_msg("%s: got \"%s\", want \"%s\"", uri, err.msg, want);
    assert_null(c);
    assert_null(p);
}

static void test_uri(void **state)
{
    (void)state;
    expect_uri("azure://backups", "backups", "");
    expect_uri("azure://backups/", "backups", "");
    expect_uri("azure://pg-1//a/b//", "pg-1", "a/b");
    expect_uri("azure://abc/clu ster+\xc3\xa9", "abc", "clu ster+\xc3\xa9");
}

static void test_bad_uri(void **state)
{
    (void)state;
    expect_bad_uri("azure://Back/x", "lower-case letters");
    expect_bad_uri("azure://a.b/x", "lower-case letters");
    expect_bad_uri("azure://ab/x", "3 to 63 characters");
    expect_bad_uri("azure://-ab/x", "starts and ends");
    expect_bad_uri("azure://a--b/x", "no \"--\"");
    expect_bad_uri("azure://abc/a\nb", "control character");
    expect_bad_uri("azure://abc/a/./b", "holds a \".\" segment");
    expect_bad_uri("azure://abc/../b", "holds a \"..\" segment");
    expect_bad_uri("azure://abc/a/..", "holds a \"..\" segment");
    expect_uri("azure://abc/a..b/.c/d./...", "abc", "a..b/.c/d./...");
    expect_bad_uri("s3://abc/x", "expected azure://container/prefix");
}

static void test_connection_string(void **state)
{
    azure_conn c;
    pgd_error err = {0};

    (void)state;
    assert_true(azure_config_parse_connection_string(
        "DefaultEndpointsProtocol=http;AccountName=acct;AccountKey=" TEST_KEY
        ";BlobEndpoint=http://127.0.0.1:10000/acct;QueueEndpoint=http://x;;",
        &c, &err));
    assert_string_equal(c.protocol, "http");
    assert_string_equal(c.account, "acct");
    assert_string_equal(c.key, TEST_KEY); /* '=' inside a value is kept */
    assert_string_equal(c.blob_endpoint, "http://127.0.0.1:10000/acct");
    assert_null(c.sas);
    assert_null(c.suffix);
    azure_config_conn_free(&c);

    assert_true(azure_config_parse_connection_string(
        "BlobEndpoint=https://a.blob.core.windows.net/;SharedAccessSignature=sv=1&sig=x%3D", &c,
        &err));
    assert_string_equal(c.sas, "sv=1&sig=x%3D");
    azure_config_conn_free(&c);
}

static void test_connection_string_refused(void **state)
{
    azure_conn c;
    pgd_error err = {0};

    (void)state;
    assert_false(azure_config_parse_connection_string("AccountName=a;SECRETKEYTEXT", &c, &err));
    assert_non_null(strstr(err.msg, "part 2 is not Name=value"));
    assert_null(strstr(err.msg, "SECRET")); /* never echoed */
    assert_null(c.account);
}

static storage *open_with(const char *uri, const char *endpoint, pgd_error *err)
{
    azure_options o = {.endpoint = endpoint};

    return azure_storage_open(uri, &o, err);
}

static void test_credentials_from_env(void **state)
{
    pgd_error err = {0};
    azure_storage *s;

    (void)state;
    clear_azure_env();
    assert_null(open_with("azure://abc", NULL, &err));
    assert_non_null(strstr(err.msg, "no account for azure://abc: set AZURE_STORAGE_ACCOUNT"));

    err = (pgd_error){0};
    setenv("AZURE_STORAGE_ACCOUNT", "acct", 1);
    assert_null(open_with("azure://abc", NULL, &err));
    assert_non_null(strstr(err.msg, "no credentials for azure://abc"));

    err = (pgd_error){0};
    setenv("AZURE_STORAGE_KEY", "SECRET!!", 1);
    assert_null(open_with("azure://abc", NULL, &err));
    assert_non_null(strstr(err.msg, "(AZURE_STORAGE_KEY) is not base64"));
    assert_null(strstr(err.msg, "SECRET"));

    err = (pgd_error){0};
    setenv("AZURE_STORAGE_KEY", TEST_KEY, 1);
    s = (azure_storage *)open_with("azure://abc/p", NULL, &err);
    assert_non_null(s);
    assert_string_equal(s->base.uri, "azure://abc/p");
    assert_string_equal(s->endpoint, "https://acct.blob.core.windows.net");
    assert_string_equal(s->endpoint_path, "");
    assert_int_equal(s->key_len, 32);
    assert_memory_equal(s->key, "pgdirect-test-key-32-bytes-long!", 32);
    assert_int_equal(s->block_size, AZURE_BLOCK_DEFAULT);
    assert_int_equal(s->retries, AZURE_RETRIES_DEFAULT);
    assert_int_equal(s->base.stream_memory, (AZURE_UPLOADS_DEFAULT + 1) * AZURE_BLOCK_DEFAULT);
    storage_free(&s->base);
    clear_azure_env();
}

/* The connection string wins over the separate variables, and gives the endpoint. */
static void test_credentials_from_connection_string(void **state)
{
    pgd_error err = {0};
    azure_storage *s;
    const char *endpoint;

    (void)state;
    clear_azure_env();
    setenv("AZURE_STORAGE_ACCOUNT", "other", 1);
    setenv("AZURE_STORAGE_CONNECTION_STRING",
           "AccountName=acct;AccountKey=" TEST_KEY ";BlobEndpoint=http://127.0.0.1:10000/acct/", 1);
    s = (azure_storage *)open_with("azure://abc", NULL, &err);
    assert_non_null(s);
    assert_string_equal(s->account, "acct");
    assert_string_equal(s->endpoint, "http://127.0.0.1:10000/acct");
    assert_string_equal(s->endpoint_path, "/acct");
    assert_true(azure_storage_where(&s->base, &endpoint));
    assert_string_equal(endpoint, "http://127.0.0.1:10000/acct");
    storage_free(&s->base);

    /* --azure-endpoint wins over BlobEndpoint */
    s = (azure_storage *)open_with("azure://abc", "https://acct.blob.core.chinacloudapi.cn", &err);
    assert_non_null(s);
    assert_string_equal(s->endpoint, "https://acct.blob.core.chinacloudapi.cn");
    storage_free(&s->base);

    /* the suffix and protocol make the default endpoint (sovereign clouds) */
    setenv("AZURE_STORAGE_CONNECTION_STRING",
           "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" TEST_KEY
           ";EndpointSuffix=core.usgovcloudapi.net",
           1);
    s = (azure_storage *)open_with("azure://abc", NULL, &err);
    assert_non_null(s);
    assert_string_equal(s->endpoint, "https://acct.blob.core.usgovcloudapi.net");
    storage_free(&s->base);

    setenv("AZURE_STORAGE_CONNECTION_STRING", "AccountName=acct;AccountKey=bad key", 1);
    assert_null(open_with("azure://abc", NULL, &err));
    assert_non_null(strstr(err.msg, "AccountKey in AZURE_STORAGE_CONNECTION_STRING"));
    assert_null(strstr(err.msg, "bad key"));
    clear_azure_env();
}

static void test_bad_endpoint(void **state)
{
    static const struct {
        const char *endpoint, *want;
    } cases[] = {
        {"ftp://host", "expected http(s)://host[:port][/path]"},
        {"http://user:SECRET@host", "credentials do not belong in the URL"},
        {"http://host/acct?x=1", "expected no query or fragment"},
        {"http://host/acct?sv=2022-11-02&sig=SECRET", "endpoint \"http://host/acct\": expected no "
                                                      "query"},
        {"http://host/acct#SECRET", "expected no query or fragment"},
        {"http:///acct", "no host"},
        {"http://ho st", "the host holds ' '"},
    };

    (void)state;
    clear_azure_env();
    setenv("AZURE_STORAGE_ACCOUNT", "acct", 1);
    setenv("AZURE_STORAGE_KEY", TEST_KEY, 1);
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        pgd_error err = {0};
        if (open_with("azure://abc", cases[i].endpoint, &err) != NULL)
            fail_msg("%s: accepted", cases[i].endpoint);
        if (strstr(err.msg, cases[i].want) == NULL || strstr(err.msg, "SECRET") != NULL)
            fail_msg("%s: got \"%s\"", cases[i].endpoint, err.msg);
        /* a setting wrong before anything was sent: exit 2, as a bad option */
        if (!err_is(&err, PGD_ERR_USAGE))
            fail_msg("%s: not a usage error", cases[i].endpoint);
    }
    clear_azure_env();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uri),
        cmocka_unit_test(test_bad_uri),
        cmocka_unit_test(test_connection_string),
        cmocka_unit_test(test_connection_string_refused),
        cmocka_unit_test(test_credentials_from_env),
        cmocka_unit_test(test_credentials_from_connection_string),
        cmocka_unit_test(test_bad_endpoint),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
