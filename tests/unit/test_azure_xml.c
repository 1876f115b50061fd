/*
 * test_azure_xml.c - covers src/storage/azure/xml.c and the pure parts of
 * listing.c and writer.c: List Blobs pages (blobs with sizes, prefixes,
 * NextMarker; damaged pages refused), error bodies, the Put Block List
 * body, what a page hands the callback, block sizes and block ids.
 */
#include "helpers.h"

#include "storage/azure/internal.h"

#define TEST_KEY "cGdkaXJlY3QtdGVzdC1rZXktMzItYnl0ZXMtbG9uZyE="

/* A page as Azure (and Azurite) answer it: namespace-free, blobs then prefixes. */
static const char page_xml[] =
    "<?xml version=\"1.0\" encoding=\"utf-8\"?>"
    "<EnumerationResults ServiceEndpoint=\"http://127.0.0.1:10000/acct\" ContainerName=\"c\">"
    "<Prefix>p/wal/</Prefix><MaxResults>2</MaxResults><Delimiter>/</Delimiter><Blobs>"
    "<Blob><Name>p/wal/a &amp; b</Name><Properties><Content-Length>123</Content-Length>"
    "<BlobType>BlockBlob</BlobType></Properties></Blob>"
    "<BlobPrefix><Name>p/wal/00000001/</Name></BlobPrefix>"
    "</Blobs><NextMarker>2!72!MDAwMDA</NextMarker></EnumerationResults>";

static void test_listing_parse(void **state)
{
    azure_xml_listing l;
    pgd_error err = {0};

    (void)state;
    assert_true(azure_xml_listing_parse(page_xml, strlen(page_xml), &l, &err));
    assert_int_equal(l.n, 2);
    assert_string_equal(l.entries[0].name, "p/wal/a & b");
    assert_int_equal(l.entries[0].size, 123);
    assert_false(l.entries[0].is_prefix);
    assert_string_equal(l.entries[1].name, "p/wal/00000001/");
    assert_true(l.entries[1].is_prefix);
    assert_string_equal(l.next_marker, "2!72!MDAwMDA");
    azure_xml_listing_free(&l);
}

/* the last page: an empty NextMarker */
static void test_listing_last_page(void **state)
{
    static const char xml[] = "<EnumerationResults><Blobs/><NextMarker/></EnumerationResults>";
    azure_xml_listing l;
    pgd_error err = {0};

    (void)state;
    assert_true(azure_xml_listing_parse(xml, strlen(xml), &l, &err));
    assert_int_equal(l.n, 0);
    assert_null(l.next_marker);
    azure_xml_listing_free(&l);
}

static void expect_bad_listing(const char *xml, const char *want)
{
    azure_xml_listing l;
    pgd_error err = {0};

    if (azure_xml_listing_parse(xml, strlen(xml), &l, &err))
        fail_msg("accepted: %s", xml);
    if (strstr(err.msg, want) == NULL)
        fail_msg("got \"%s\", want \"%s\"", err.msg, want);
    assert_int_equal(l.n, 0);
    assert_null(l.entries);
}

static void test_listing_refused(void **state)
{
    (void)state;
    expect_bad_listing("", "empty");
    expect_bad_listing("<EnumerationResults><Blobs>", "not well-formed");
    expect_bad_listing("<Error><Code>X</Code></Error>", "not an EnumerationResults");
    expect_bad_listing("<EnumerationResults><Blobs><Blob><Name>a</Name><Properties>"
                       "<Content-Length>-1</Content-Length></Properties></Blob></Blobs>"
                       "</EnumerationResults>",
                       "blob \"a\" has no valid Content-Length");
    expect_bad_listing("<EnumerationResults><Blobs><Blob><Properties/></Blob></Blobs>"
                       "</EnumerationResults>",
                       "a Blob without a Name");
    expect_bad_listing("<!DOCTYPE x [<!ENTITY e \"x\">]><EnumerationResults/>", "DTD");
}

static void test_error(void **state)
{
    static const char xml[] = "<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>"
                              "AuthenticationFailed</Code><Message>Server failed\nRequestId:1"
                              "</Message></Error>";
    azure_xml_fault f = {{0}, {0}};

    (void)state;
    assert_true(azure_xml_error(xml, strlen(xml), &f));
    assert_string_equal(f.code, "AuthenticationFailed");
    assert_string_equal(f.message, "Server failed RequestId:1"); /* one line */
    assert_false(azure_xml_error(page_xml, strlen(page_xml), &f));
    assert_false(azure_xml_error("not xml", 7, &f));
}

static void test_block_list(void **state)
{
    char *ids[] = {"QUJD", "REVG"};
    size_t len;
    char *xml = azure_xml_block_list(ids, 2, &len);

    (void)state;
    assert_string_equal(xml, "<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList>"
                             "<Latest>QUJD</Latest><Latest>REVG</Latest></BlockList>");
    assert_int_equal(len, strlen(xml));
    free(xml);
}

/* ids are base64 of the same length whatever the number (Azure's rule for one blob) */
static void test_block_id(void **state)
{
    char *a = azure_writer_block_id("0123456789abcdef", 1);
    char *b = azure_writer_block_id("0123456789abcdef", 50000);
    unsigned char raw[64];
    size_t len;

    (void)state;
    assert_int_equal(strlen(a), strlen(b));
    assert_true(azure_sign_base64_decode(b, raw, sizeof(raw), &len));
    assert_memory_equal(raw, "0123456789abcdef-050000", len);
    free(a);
    free(b);
}

static void test_block_size(void **state)
{
    (void)state;
    assert_int_equal(azure_writer_block_size(AZURE_BLOCK_DEFAULT, 1), AZURE_BLOCK_DEFAULT);
    assert_int_equal(azure_writer_block_size(AZURE_BLOCK_DEFAULT, AZURE_BLOCKS_PER_SIZE),
                     AZURE_BLOCK_DEFAULT);
    assert_int_equal(azure_writer_block_size(AZURE_BLOCK_DEFAULT, AZURE_BLOCKS_PER_SIZE + 1),
                     2 * AZURE_BLOCK_DEFAULT);
    assert_int_equal(azure_writer_block_size(AZURE_BLOCK_DEFAULT, AZURE_BLOCKS_MAX),
                     AZURE_BLOCK_MAX);
}

typedef struct seen {
    char names[4][64];
    int n;
} seen;

static bool collect(void *arg, const char *name, uint64_t size, bool is_dir, pgd_error *err)
{
    seen *s = arg;

    (void)err;
    snprintf(s->names[s->n++], 64, "%s %llu%s", name, (unsigned long long)size, is_dir ? "/" : "");
    return true;
}

static azure_storage *open_azure(void)
{
    azure_options o = {.endpoint = "http://127.0.0.1:1/acct"};
    pgd_error err = {0};
    storage *s;

    unsetenv("AZURE_STORAGE_CONNECTION_STRING");
    setenv("AZURE_STORAGE_ACCOUNT", "acct", 1);
    setenv("AZURE_STORAGE_KEY", TEST_KEY, 1);
    s = azure_storage_open("azure://ccc/p", &o, &err);
    if (s == NULL)
        fail_msg("%s", err.msg);
    return (azure_storage *)s;
}

static void test_deliver(void **state)
{
    azure_storage *s = open_azure();
    char *prefix = azure_listing_prefix(s, "wal/");
    azure_xml_listing l;
    pgd_error err = {0};
    seen got = {.n = 0};
    azure_xml_entry outside = {"p/other/x", 1, false}, deep = {"p/wal/a/b", 1, false};
    azure_xml_listing bad = {&outside, 1, NULL};

    (void)state;
    assert_string_equal(prefix, "p/wal/");
    assert_true(azure_xml_listing_parse(page_xml, strlen(page_xml), &l, &err));
    assert_true(azure_listing_deliver(s, "wal", prefix, &l, collect, &got, &err));
    assert_int_equal(got.n, 2);
    assert_string_equal(got.names[0], "a & b 123");
    assert_string_equal(got.names[1], "00000001 0/");
    azure_xml_listing_free(&l);

    assert_false(azure_listing_deliver(s, "wal", prefix, &bad, collect, &got, &err));
    assert_non_null(strstr(err.msg, "which is not under it"));
    err = (pgd_error){0};
    bad.entries = &deep;
    assert_false(azure_listing_deliver(s, "wal", prefix, &bad, collect, &got, &err));
    assert_non_null(strstr(err.msg, "not directly under it"));
    free(prefix);
    storage_free(&s->base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_listing_parse),   cmocka_unit_test(test_listing_last_page),
        cmocka_unit_test(test_listing_refused), cmocka_unit_test(test_error),
        cmocka_unit_test(test_block_list),      cmocka_unit_test(test_block_id),
        cmocka_unit_test(test_block_size),      cmocka_unit_test(test_deliver),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
