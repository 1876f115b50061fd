/*
 * test_s3_listing.c - covers the pure parts of src/storage/s3/listing.c: a
 * ListObjectsV2 page handed over as names under the directory (anything
 * else refused), and the DeleteObjects body with its keys escaped.
 */
#include "helpers.h"

#include "storage/s3/internal.h"

static s3_storage *open_s3(const char *uri)
{
    s3_options o = {.endpoint = "http://127.0.0.1:1", .access_key = "A", .secret_key = "S"};
    pgd_error err = {0};
    storage *s = s3_storage_open(uri, &o, &err);

    if (s == NULL)
        fail_msg("%s: %s", uri, err.msg);
    return (s3_storage *)s;
}

typedef struct seen {
    char names[8][64];
    uint64_t sizes[8];
    bool dirs[8];
    int n;
} seen;

static bool collect(void *arg, const char *name, uint64_t size, bool is_dir, pgd_error *err)
{
    seen *s = arg;

    (void)err;
    snprintf(s->names[s->n], sizeof(s->names[0]), "%s", name);
    s->sizes[s->n] = size;
    s->dirs[s->n++] = is_dir;
    return true;
}

static s3_xml_entry entry(const char *name, uint64_t size, bool is_prefix)
{
    return (s3_xml_entry){(char *)name, size, is_prefix};
}

static void test_deliver(void **state)
{
    s3_storage *s = open_s3("s3://bucket/a&b");
    s3_xml_entry e[] = {entry("a&b/backups/", 0, false), /* a "directory" marker: skipped */
                        entry("a&b/backups/x.done.json", 42, false),
                        entry("a&b/backups/20261129T215959F/", 0, true)};
    s3_xml_listing page = {e, 3, false, NULL};
    seen got = {0};
    pgd_error err = {0};

    (void)state;
    assert_true(s3_listing_deliver(s, "backups", "a&b/backups/", &page, collect, &got, &err));
    assert_int_equal(got.n, 2);
    assert_string_equal(got.names[0], "x.done.json");
    assert_int_equal(got.sizes[0], 42);
    assert_false(got.dirs[0]);
    assert_string_equal(got.names[1], "20261129T215959F");
    assert_true(got.dirs[1]);
    storage_free(&s->base);
}

static void expect_refused(const char *name, bool is_prefix, const char *want)
{
    s3_storage *s = open_s3("s3://bucket/p");
    s3_xml_entry e[] = {entry(name, 1, is_prefix)};
    s3_xml_listing page = {e, 1, false, NULL};
    seen got = {0};
    pgd_error err = {0};

    assert_false(s3_listing_deliver(s, "backups", "p/backups/", &page, collect, &got, &err));
    assert_int_equal(got.n, 0);
    if (strstr(err.msg, want) == NULL)
        fail_msg("%s: got \"%s\", want \"%s\"", name, err.msg, want);
    storage_free(&s->base);
}

/* What the server lists must lie directly under the directory asked for. */
static void test_deliver_refuses(void **state)
{
    (void)state;
    expect_refused("q/backups/x", false, "not under it");
    expect_refused("p/backups/x/y", false, "ignore the delimiter");
    expect_refused("p/backups/x/y/", true, "ignore the delimiter");
    expect_refused("p/backups//", true, "not directly under it");
}

static void test_delete_body(void **state)
{
    s3_storage *s = open_s3("s3://bucket/clu ster+\xc3\xa9&1");
    const char *paths[] = {"backups/x/part_0001.tar", "backups/<y>\"'"};
    size_t len;
    char *body = s3_listing_delete_body(s, paths, 2, &len);

    (void)state;
    assert_string_equal(body, "<Delete><Quiet>true</Quiet>"
                              "<Object><Key>clu ster+\xc3\xa9&amp;1/backups/x/part_0001.tar</Key>"
                              "</Object><Object><Key>clu ster+\xc3\xa9&amp;1/backups/&lt;y&gt;"
                              "&quot;&apos;</Key></Object></Delete>");
    assert_int_equal(len, strlen(body));
    free(body);
    storage_free(&s->base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deliver),
        cmocka_unit_test(test_deliver_refuses),
        cmocka_unit_test(test_delete_body),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
