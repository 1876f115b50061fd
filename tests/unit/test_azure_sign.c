/*
 * test_azure_sign.c - covers src/storage/azure/sign.c and the headers of
 * src/storage/azure/request.c: base64 both ways, percent-encoding, the
 * Shared Key string to sign of a fixed request, and its Authorization
 * header, whose value was checked against Azurite 3.37 (authentication on):
 * the same request, sent with curl to an Azurite started with this key,
 * was answered 201 Created (see the comment of test_authorization).
 */
#include "helpers.h"

#include "storage/azure/internal.h"

/* base64 of "pgdirect-test-key-32-bytes-long!" */
#define TEST_KEY       "cGdkaXJlY3QtdGVzdC1rZXktMzItYnl0ZXMtbG9uZyE="
#define TEST_DATE      "Sun, 06 Dec 2026 06:00:00 GMT"
#define TEST_ENDPOINT  "http://127.0.0.1:18124/pgdacct"
#define TEST_MD5       "XUFAKrxLKna5cZ2REBfFkg==" /* Content-MD5 of "hello" */
#define TEST_SIGNATURE "otH9uLqC9XBqRzGVpd7qPtOIQ76p/rgAN8uSlF94yYw="

static void clear_azure_env(void)
{
    unsetenv("AZURE_STORAGE_CONNECTION_STRING");
    unsetenv("AZURE_STORAGE_SAS_TOKEN");
    setenv("AZURE_STORAGE_ACCOUNT", "pgdacct", 1);
    setenv("AZURE_STORAGE_KEY", TEST_KEY, 1);
}

static azure_storage *open_azure(const char *uri)
{
    azure_options o = {.endpoint = TEST_ENDPOINT};
    pgd_error err = {0};
    storage *s;

    clear_azure_env();
    s = azure_storage_open(uri, &o, &err);
    if (s == NULL)
        fail_msg("%s: %s", uri, err.msg);
    return (azure_storage *)s;
}

static void test_base64(void **state)
{
    static const struct {
        const char *raw, *b64;
    } cases[] = {{"", ""},
                 {"f", "Zg=="},
                 {"fo", "Zm8="},
                 {"foo", "Zm9v"},
                 {"foob", "Zm9vYg=="},
                 {"fooba", "Zm9vYmE="},
                 {"foobar", "Zm9vYmFy"}}; /* RFC 4648's test vectors */
    unsigned char out[16];
    size_t len;

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        char *b = azure_sign_base64((const unsigned char *)cases[i].raw, strlen(cases[i].raw));
        assert_string_equal(b, cases[i].b64);
        free(b);
        if (cases[i].b64[0] == '\0')
            continue;
        assert_true(azure_sign_base64_decode(cases[i].b64, out, sizeof(out), &len));
        assert_int_equal(len, strlen(cases[i].raw));
        assert_memory_equal(out, cases[i].raw, len);
    }
}

static void test_base64_refused(void **state)
{
    static const char *const bad[] = {
        "", "Zg=", "Zg=a", "Z===", "Zm9v!A==", "=Zm9", "Zg==Zg==", "a b="};
    unsigned char out[4];
    size_t len;

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
        if (azure_sign_base64_decode(bad[i], out, sizeof(out), &len))
            fail_msg("\"%s\" decoded", bad[i]);
    /* longer than the room: refused, not cut */
    assert_false(azure_sign_base64_decode("Zm9vYmFy", out, sizeof(out), &len));
}

static void test_uri_encode(void **state)
{
    char *p = azure_sign_uri_encode("a/b c+\xc3\xa9&=~_.-", true);
    char *q = azure_sign_uri_encode("a/b=", false);

    (void)state;
    assert_string_equal(p, "a/b%20c%2B%C3%A9%26%3D~_.-");
    assert_string_equal(q, "a%2Fb%3D");
    free(p);
    free(q);
}

/* the string Azure's "Authorize with Shared Key" page lays out, for a Put Block */
static void test_string_to_sign(void **state)
{
    const char *headers[] = {
        "x-ms-date", TEST_DATE, "x-ms-version", AZURE_API_VERSION, "content-md5", TEST_MD5, NULL};
    const char *params[] = {"comp", "block", "blockid", "QUJD", NULL};
    azure_sign_input in = {"PUT", 5, headers, "pgdacct", "/pgdacct/pgdtest/p/a%20b", params};
    char *s = azure_sign_string(&in);

    (void)state;
    assert_string_equal(s, "PUT\n\n\n5\n" TEST_MD5 "\n\n\n\n\n\n\n\n"
                           "x-ms-date:" TEST_DATE "\nx-ms-version:" AZURE_API_VERSION "\n"
                           "/pgdacct/pgdacct/pgdtest/p/a%20b\nblockid:QUJD\ncomp:block");
    free(s);
}

/* an empty body signs an empty Content-Length, not "0" (versions 2015-02-21 and later) */
static void test_string_to_sign_empty_body(void **state)
{
    const char *headers[] = {"x-ms-version", AZURE_API_VERSION, "x-ms-date", TEST_DATE,
                             "range",        "bytes=0-9",       NULL};
    azure_sign_input in = {"GET", 0, headers, "pgdacct", "/pgdacct/c/k", NULL};
    char *s = azure_sign_string(&in);

    (void)state;
    assert_string_equal(s, "GET\n\n\n\n\n\n\n\n\n\n\nbytes=0-9\n"
                           "x-ms-date:" TEST_DATE "\nx-ms-version:" AZURE_API_VERSION "\n"
                           "/pgdacct/pgdacct/c/k");
    free(s);
}

/*
 * A Put Block of "hello" as the driver sends it. The Authorization below
 * was checked against Azurite 3.37, started with
 *   AZURITE_ACCOUNTS="pgdacct:cGdkaXJlY3QtdGVzdC1rZXktMzItYnl0ZXMtbG9uZyE="
 *   azurite-blob --blobPort 18124
 * and container "pgdtest" created: curl -X PUT --data-binary hello with these
 * headers to TEST_ENDPOINT/pgdtest/p/a%20b?comp=block&blockid=QUJD was
 * answered 201; with the last character of the signature changed, 403
 * AuthorizationFailure.
 */
static void test_authorization(void **state)
{
    azure_storage *s = open_azure("azure://pgdtest/p");
    const char *params[] = {"comp", "block", "blockid", "QUJD", NULL};
    const char *extra[] = {"content-md5", TEST_MD5, NULL};
    azure_call call = {.method = "PUT",
                       .path = "a b",
                       .params = params,
                       .body = "hello",
                       .body_len = 5,
                       .headers = extra};
    http_header_list h = {0};
    char *url = azure_request_url(s, &call);

    (void)state;
    assert_string_equal(url, TEST_ENDPOINT "/pgdtest/p/a%20b?comp=block&blockid=QUJD");
    assert_true(azure_request_headers(s, &call, TEST_DATE, &h));
    assert_int_equal(h.n, 4);
    assert_string_equal(h.items[0], "x-ms-date: " TEST_DATE);
    assert_string_equal(h.items[1], "x-ms-version: " AZURE_API_VERSION);
    assert_string_equal(h.items[2], "content-md5: " TEST_MD5);
    assert_string_equal(h.items[3], "Authorization: SharedKey pgdacct:" TEST_SIGNATURE);
    http_headers_free(&h);
    free(url);
    storage_free(&s->base);
}

/* With a SAS token: it goes in the query, and nothing is signed. */
static void test_sas(void **state)
{
    azure_options o = {.endpoint = TEST_ENDPOINT};
    pgd_error err = {0};
    azure_storage *s;
    azure_call call = {.method = "GET", .path = "x"};
    http_header_list h = {0};
    char *url;

    (void)state;
    clear_azure_env();
    unsetenv("AZURE_STORAGE_KEY");
    setenv("AZURE_STORAGE_SAS_TOKEN", "?sv=2021-12-02&sig=SECRET%3D", 1);
    s = (azure_storage *)azure_storage_open("azure://pgdtest", &o, &err);
    assert_non_null(s);
    url = azure_request_url(s, &call);
    assert_string_equal(url, TEST_ENDPOINT "/pgdtest/x?sv=2021-12-02&sig=SECRET%3D");
    assert_true(azure_request_headers(s, &call, TEST_DATE, &h));
    assert_int_equal(h.n, 2); /* date and version: no Authorization */
    http_headers_free(&h);
    free(url);
    storage_free(&s->base);
    unsetenv("AZURE_STORAGE_SAS_TOKEN");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_base64),
        cmocka_unit_test(test_base64_refused),
        cmocka_unit_test(test_uri_encode),
        cmocka_unit_test(test_string_to_sign),
        cmocka_unit_test(test_string_to_sign_empty_body),
        cmocka_unit_test(test_authorization),
        cmocka_unit_test(test_sas),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
