/*
 * test_s3_xml.c - covers src/storage/s3/xml.c: S3's XML answers as AWS
 * documents them, as moto and s3rver send them, and as a broken or hostile
 * server could (tests/data/s3, see its README); and keys escaped for the
 * DeleteObjects body.
 */
#include "helpers.h"

#include "storage/s3/internal.h"

static char *fixture(const char *name, size_t *len)
{
    const char *dir = getenv("PGD_TEST_S3");
    char path[4096];
    FILE *f;
    char *buf;
    long n;

    assert_non_null(dir);
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "rb");
    if (f == NULL)
        fail_msg("no fixture %s", path);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* ---- errors ---- */

static void expect_error(const char *name, const char *code, const char *message)
{
    size_t len;
    char *body = fixture(name, &len);
    s3_xml_fault f;

    assert_true(s3_xml_error(body, len, &f));
    assert_string_equal(f.code, code);
    assert_string_equal(f.message, message);
    free(body);
}

static void test_error_code_and_message(void **state)
{
    (void)state;
    expect_error("moto_error_nosuchbucket.xml", "NoSuchBucket",
                 "The specified bucket does not exist");
    expect_error("s3rver_error_nosuchbucket.xml", "NoSuchBucket",
                 "The specified bucket does not exist");
    expect_error("aws_complete_error_200.xml", "InternalError",
                 "We encountered an internal error. Please try again.");
}

/* AWS's SignatureDoesNotMatch carries the access key id: only Code and Message are taken. */
static void test_error_keeps_no_credential(void **state)
{
    size_t len;
    char *body = fixture("aws_error_signature.xml", &len);
    s3_xml_fault f;

    (void)state;
    assert_true(s3_xml_error(body, len, &f));
    assert_string_equal(f.code, "SignatureDoesNotMatch");
    assert_null(strstr(f.message, "AKIA"));
    assert_null(strstr(f.code, "AKIA"));
    free(body);
}

/* The server's message is printed on one line: newlines and tabs become spaces. */
static void test_error_message_is_one_line(void **state)
{
    (void)state;
    expect_error("hostile_error_control_chars.xml", "AccessDenied", "line one line two tab");
}

static void test_not_an_error(void **state)
{
    size_t len;
    char *body = fixture("moto_list_page.xml", &len);
    s3_xml_fault f;

    (void)state;
    assert_false(s3_xml_error(body, len, &f));
    assert_false(s3_xml_error("", 0, &f));
    assert_false(s3_xml_error(NULL, 0, &f));
    assert_false(s3_xml_error("<Error><Code>x", 14, &f)); /* cut: not well-formed */
    assert_false(s3_xml_error("Service Unavailable", 19, &f));
    free(body);
}

/* ---- multipart ---- */

static void expect_upload_id(const char *name, const char *want)
{
    size_t len;
    char *body = fixture(name, &len), *id = NULL;
    pgd_error err = {0};

    if (!s3_xml_upload_id(body, len, &id, &err))
        fail_msg("%s: %s", name, err.msg);
    assert_string_equal(id, want);
    free(id);
    free(body);
}

static void test_upload_id(void **state)
{
    pgd_error err = {0};
    char *id = NULL;
    static const char no_id[] = "<InitiateMultipartUploadResult><Bucket>b</Bucket>"
                                "</InitiateMultipartUploadResult>";
    static const char empty_id[] = "<InitiateMultipartUploadResult><UploadId></UploadId>"
                                   "</InitiateMultipartUploadResult>";

    (void)state;
    expect_upload_id("aws_initiate.xml",
                     "VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA");
    expect_upload_id("s3rver_initiate.xml", "50da5c26a34a0e508dfd8d8035f91931");
    expect_upload_id("moto_initiate.xml",
                     "omMm0YtK5RtUCnLH7BA3Ppo5tdstvR3AiGadVLgNJEMYPiiVd2mt3w0FGA");
    assert_false(s3_xml_upload_id(no_id, sizeof(no_id) - 1, &id, &err));
    assert_non_null(strstr(err.msg, "no UploadId"));
    assert_null(id);
    err_clear(&err);
    assert_false(s3_xml_upload_id(empty_id, sizeof(empty_id) - 1, &id, &err));
    assert_null(id);
}

static void test_complete_success(void **state)
{
    const char *names[] = {"aws_complete.xml", "moto_complete.xml", "s3rver_complete.xml"};

    (void)state;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        size_t len;
        char *body = fixture(names[i], &len);
        s3_xml_fault f;
        pgd_error err = {0};
        if (!s3_xml_complete(body, len, &f, &err))
            fail_msg("%s: %s", names[i], err.msg);
        free(body);
    }
}

/* 200 OK with an <Error> body is a failed upload, with its code. */
static void test_complete_error_in_200(void **state)
{
    size_t len;
    char *body = fixture("aws_complete_error_200.xml", &len);
    s3_xml_fault f;
    pgd_error err = {0};

    (void)state;
    assert_false(s3_xml_complete(body, len, &f, &err));
    assert_false(err.set);
    assert_string_equal(f.code, "InternalError");
    free(body);
}

static void test_complete_unexpected(void **state)
{
    size_t len;
    char *body = fixture("hostile_complete_other_root.xml", &len);
    s3_xml_fault f;
    pgd_error err = {0};

    (void)state;
    assert_false(s3_xml_complete(body, len, &f, &err));
    assert_non_null(strstr(err.msg, "<Something>"));
    err_clear(&err);
    assert_false(s3_xml_complete("", 0, &f, &err)); /* an empty 200 is not a completed upload */
    assert_true(err.set);
    free(body);
}

/* ---- listing ---- */

static s3_xml_listing parse_listing(const char *name)
{
    size_t len;
    char *body = fixture(name, &len);
    s3_xml_listing l;
    pgd_error err = {0};

    if (!s3_xml_listing_parse(body, len, &l, &err))
        fail_msg("%s: %s", name, err.msg);
    free(body);
    return l;
}

static void expect_entry(const s3_xml_listing *l, size_t i, const char *name, uint64_t size,
                         bool is_prefix)
{
    assert_true(i < l->n);
    assert_string_equal(l->entries[i].name, name);
    assert_int_equal(l->entries[i].size, size);
    assert_int_equal(l->entries[i].is_prefix, is_prefix);
}

/* Keys with entities come back decoded: & < > " ' and é. */
static void test_listing_page(void **state)
{
    const char *names[] = {"moto_list_page.xml", "s3rver_list_page.xml"};

    (void)state;
    for (size_t i = 0; i < 2; i++) {
        s3_xml_listing l = parse_listing(names[i]);
        assert_int_equal(l.n, 4);
        expect_entry(&l, 0, "p/backups/20261129T215959F.done.json", 10, false);
        expect_entry(&l, 1, "p/backups/a&b<c>\"'\xc3\xa9.json", 10, false);
        expect_entry(&l, 2, "p/backups/20261129T215959F/", 0, true);
        expect_entry(&l, 3, "p/backups/x/", 0, true);
        assert_false(l.truncated);
        s3_xml_listing_free(&l);
    }
}

static void test_listing_truncated_with_token(void **state)
{
    s3_xml_listing l;

    (void)state;
    l = parse_listing("aws_list_page.xml");
    assert_true(l.truncated);
    assert_string_equal(l.next_token, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
    assert_int_equal(l.n, 3);
    expect_entry(&l, 0, "photos/sample.jpg", 142863, false);
    expect_entry(&l, 1, "photos/2006/", 0, true);
    s3_xml_listing_free(&l);
    l = parse_listing("moto_list_truncated.xml");
    assert_true(l.truncated);
    assert_string_equal(l.next_token, "145c269f1d80aa2628f2acbb27805a97");
    s3_xml_listing_free(&l);
    l = parse_listing("s3rver_list_truncated.xml");
    assert_true(l.truncated);
    assert_non_null(l.next_token);
    s3_xml_listing_free(&l);
}

static void expect_listing_error(const char *name, const char *want)
{
    size_t len;
    char *body = fixture(name, &len);
    s3_xml_listing l;
    pgd_error err = {0};

    if (s3_xml_listing_parse(body, len, &l, &err))
        fail_msg("%s: parsed, want an error containing \"%s\"", name, want);
    if (strstr(err.msg, want) == NULL)
        fail_msg("%s: got \"%s\", want \"%s\"", name, err.msg, want);
    assert_null(l.entries);
    free(body);
}

/* A page that is not the whole answer is an error, never a short list. */
static void test_listing_refuses_what_is_not_whole(void **state)
{
    (void)state;
    expect_listing_error("hostile_list_truncated_no_token.xml", "no NextContinuationToken");
    expect_listing_error("hostile_list_no_is_truncated.xml", "IsTruncated is missing");
    expect_listing_error("hostile_list_bad_size.xml", "invalid size \"-1\"");
    expect_listing_error("hostile_list_no_key.xml", "has no Key");
    expect_listing_error("hostile_list_cut.xml", "not well-formed");
    expect_listing_error("moto_error_nosuchbucket.xml", "an error: NoSuchBucket: The specified");
    expect_listing_error("moto_delete.xml", "a <DeleteResult>, not a ListBucketResult");
}

/* Entity expansion is how a hostile document grows: a DTD is refused outright. */
static void test_listing_refuses_dtd(void **state)
{
    (void)state;
    expect_listing_error("hostile_dtd_small.xml", "DTD");
    expect_listing_error("hostile_dtd_laughs.xml", "the answer"); /* libxml2 stops it first */
}

/* ---- DeleteObjects ---- */

static void test_delete_result_names_every_failure(void **state)
{
    size_t len, n;
    char *body = fixture("aws_delete_errors.xml", &len);
    s3_xml_delete_failure *f;
    pgd_error err = {0};

    (void)state;
    assert_true(s3_xml_delete_result(body, len, &f, &n, &err));
    assert_int_equal(n, 2);
    assert_string_equal(f[0].key, "p/backups/a&b.tar");
    assert_string_equal(f[0].fault.code, "AccessDenied");
    assert_string_equal(f[1].key, "p/backups/c d \xc3\xa9.tar");
    assert_string_equal(f[1].fault.code, "InternalError");
    s3_xml_delete_failures_free(f, n);
    free(body);
}

static void test_delete_result_success(void **state)
{
    const char *names[] = {"moto_delete.xml", "s3rver_delete.xml"};

    (void)state;
    for (size_t i = 0; i < 2; i++) {
        size_t len, n = 99;
        char *body = fixture(names[i], &len);
        s3_xml_delete_failure *f = NULL;
        pgd_error err = {0};
        assert_true(s3_xml_delete_result(body, len, &f, &n, &err));
        assert_int_equal(n, 0);
        assert_null(f);
        free(body);
    }
}

static void test_delete_result_error_root(void **state)
{
    size_t len, n;
    char *body = fixture("moto_error_nosuchbucket.xml", &len);
    s3_xml_delete_failure *f;
    pgd_error err = {0};

    (void)state;
    assert_false(s3_xml_delete_result(body, len, &f, &n, &err));
    assert_non_null(strstr(err.msg, "NoSuchBucket"));
    err_clear(&err);
    assert_false(s3_xml_delete_result("", 0, &f, &n, &err)); /* a 200 with nothing is no answer */
    assert_true(err.set);
    free(body);
}

/* ---- multipart uploads in progress ---- */

static void test_time(void **state)
{
    int64_t t;

    (void)state;
    assert_true(s3_xml_time("2026-11-30T18:23:01.000Z", &t));
    assert_int_equal(t, 1796062981);
    assert_true(s3_xml_time("1970-01-01T00:00:00Z", &t));
    assert_int_equal(t, 0);
    assert_false(s3_xml_time("2026-11-30T18:23:01+02:00", &t)); /* S3 speaks UTC */
    assert_false(s3_xml_time("yesterday", &t));
    assert_false(s3_xml_time(NULL, &t));
}

static void test_uploads(void **state)
{
    size_t len;
    char *body = fixture("moto_uploads.xml", &len);
    s3_xml_uploads u;
    pgd_error err = {0};

    (void)state;
    assert_true(s3_xml_uploads_parse(body, len, &u, &err));
    assert_int_equal(u.n, 2);
    assert_string_equal(u.items[0].key, "p/backups/x/part_0001.tar");
    assert_string_equal(u.items[1].key, "p/wal/y a&b");
    assert_int_equal(u.items[1].initiated, 1289422113); /* moto's fixed 2010-11-10T20:48:33 */
    assert_false(u.truncated);
    s3_xml_uploads_free(&u);
    free(body);
    body = fixture("aws_uploads_truncated.xml", &len);
    assert_true(s3_xml_uploads_parse(body, len, &u, &err));
    assert_true(u.truncated);
    assert_string_equal(u.next_key_marker, "my-movie.m2ts");
    assert_string_equal(u.next_upload_id_marker, "YW55IGlkZWEgd2h5IGVsdmluZydzIHVwbG9hZCBmYWlsZWQ");
    s3_xml_uploads_free(&u);
    free(body);
    body = fixture("moto_list_page.xml", &len);
    assert_false(s3_xml_uploads_parse(body, len, &u, &err));
    assert_non_null(strstr(err.msg, "not a ListMultipartUploadsResult"));
    free(body);
}

/* ListObjectVersions: versions and delete markers alike, and where a truncated page goes on. */
static void test_versions(void **state)
{
    static const char page[] =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
        "<ListVersionsResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        "<Name>b</Name><Prefix>p/wal/</Prefix><IsTruncated>true</IsTruncated>"
        "<NextKeyMarker>p/wal/b</NextKeyMarker><NextVersionIdMarker>v3</NextVersionIdMarker>"
        "<Version><Key>p/wal/a&amp;b</Key><VersionId>v1</VersionId><IsLatest>true</IsLatest>"
        "</Version><DeleteMarker><Key>p/wal/b</Key><VersionId>v2</VersionId></DeleteMarker>"
        "<Version><Key>p/wal/b</Key><VersionId>v3</VersionId></Version></ListVersionsResult>";
    static const char no_id[] = "<ListVersionsResult><IsTruncated>false</IsTruncated><Version>"
                                "<Key>k</Key></Version></ListVersionsResult>";
    static const char no_marker[] =
        "<ListVersionsResult><IsTruncated>true</IsTruncated></ListVersionsResult>";
    s3_xml_versions v;
    pgd_error err = {0};

    (void)state;
    assert_true(s3_xml_versions_parse(page, strlen(page), &v, &err));
    assert_int_equal(v.n, 3);
    assert_string_equal(v.items[0].key, "p/wal/a&b");
    assert_string_equal(v.items[1].version_id, "v2"); /* a delete marker is a version to delete */
    assert_string_equal(v.items[2].version_id, "v3");
    assert_true(v.truncated);
    assert_string_equal(v.next_key_marker, "p/wal/b");
    assert_string_equal(v.next_version_id_marker, "v3");
    s3_xml_versions_free(&v);
    assert_false(s3_xml_versions_parse(no_id, strlen(no_id), &v, &err));
    assert_non_null(strstr(err.msg, "without a Key or a VersionId"));
    err = (pgd_error){0};
    assert_false(s3_xml_versions_parse(no_marker, strlen(no_marker), &v, &err));
    assert_non_null(strstr(err.msg, "no NextKeyMarker"));
}

/* GetBucketVersioning: Enabled and Suspended keep versions; never enabled does not. */
static void test_versioning(void **state)
{
    static const struct {
        const char *body;
        bool versioned;
    } cases[] = {
        {"<VersioningConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
         "<Status>Enabled</Status></VersioningConfiguration>",
         true},
        {"<VersioningConfiguration><Status>Suspended</Status></VersioningConfiguration>", true},
        {"<VersioningConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"/>", false},
        {"<GetBucketVersioningResponse><Status>Enabled</Status></GetBucketVersioningResponse>",
         true}, /* moto's root */
    };
    pgd_error err = {0};
    bool versioned;

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_true(s3_xml_versioning(cases[i].body, strlen(cases[i].body), &versioned, &err));
        assert_int_equal(versioned, cases[i].versioned);
    }
    /* s3rver ignores the subresource and lists the bucket: a store without versions */
    assert_true(s3_xml_versioning("<ListBucketResult><Name>b</Name></ListBucketResult>", 51,
                                  &versioned, &err));
    assert_false(versioned);
    assert_false(s3_xml_versioning("<Other/>", 8, &versioned, &err));
}

static void test_parts(void **state)
{
    size_t len;
    char *body = fixture("moto_parts.xml", &len), *marker;
    int64_t latest;
    bool truncated;
    pgd_error err = {0};

    (void)state;
    assert_true(s3_xml_parts_parse(body, len, &latest, &truncated, &marker, &err));
    assert_int_equal(latest, 1796063930); /* 2026-11-30T18:38:50Z */
    assert_false(truncated);
    assert_null(marker);
    free(body);
    body = fixture("moto_parts_truncated.xml", &len);
    assert_true(s3_xml_parts_parse(body, len, &latest, &truncated, &marker, &err));
    assert_true(truncated);
    assert_string_equal(marker, "1");
    free(marker);
    free(body);
}

/* ---- escaping ---- */

static void test_escape(void **state)
{
    char *e;

    (void)state;
    e = s3_xml_escape("clu ster+\xc3\xa9&1/<a>\"b'");
    assert_string_equal(e, "clu ster+\xc3\xa9&amp;1/&lt;a&gt;&quot;b&apos;");
    free(e);
    e = s3_xml_escape("");
    assert_string_equal(e, "");
    free(e);
}

/* What is escaped parses back to itself. */
static void test_escape_round_trip(void **state)
{
    const char *key = "p/a&b<c>\"d'e \xc3\xa9";
    char *escaped = s3_xml_escape(key), *doc;
    s3_xml_listing l;
    pgd_error err = {0};

    (void)state;
    assert_true(asprintf(&doc,
                         "<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>%s"
                         "</Key><Size>7</Size></Contents></ListBucketResult>",
                         escaped) > 0);
    assert_true(s3_xml_listing_parse(doc, strlen(doc), &l, &err));
    assert_int_equal(l.n, 1);
    assert_string_equal(l.entries[0].name, key);
    s3_xml_listing_free(&l);
    free(doc);
    free(escaped);
}

/* GetObjectLockConfiguration: AWS's (Days or Years), moto's (both, one 0), none, damaged. */
static void test_lock_config(void **state)
{
    static const char aws_days[] =
        "<ObjectLockConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        "<ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention>"
        "<Mode>GOVERNANCE</Mode><Days>30</Days></DefaultRetention></Rule>"
        "</ObjectLockConfiguration>";
    static const char aws_years[] = "<ObjectLockConfiguration><ObjectLockEnabled>Enabled"
                                    "</ObjectLockEnabled><Rule><DefaultRetention><Mode>COMPLIANCE"
                                    "</Mode><Years>2</Years></DefaultRetention></Rule>"
                                    "</ObjectLockConfiguration>";
    static const char moto[] = "<ObjectLockConfiguration><ObjectLockEnabled>Enabled"
                               "</ObjectLockEnabled><Rule><DefaultRetention><Mode>COMPLIANCE"
                               "</Mode><Days>3</Days><Years>0</Years></DefaultRetention></Rule>"
                               "</ObjectLockConfiguration>";
    static const char no_rule[] = "<ObjectLockConfiguration><ObjectLockEnabled>Enabled"
                                  "</ObjectLockEnabled></ObjectLockConfiguration>";
    static const char no_period[] = "<ObjectLockConfiguration><ObjectLockEnabled>Enabled"
                                    "</ObjectLockEnabled><Rule><DefaultRetention><Mode>GOVERNANCE"
                                    "</Mode></DefaultRetention></Rule></ObjectLockConfiguration>";
    static const char bad_days[] = "<ObjectLockConfiguration><ObjectLockEnabled>Enabled"
                                   "</ObjectLockEnabled><Rule><DefaultRetention><Mode>GOVERNANCE"
                                   "</Mode><Days>-1</Days></DefaultRetention></Rule>"
                                   "</ObjectLockConfiguration>";
    s3_lock_config lc;
    pgd_error err = {0};

    (void)state;
    assert_true(s3_xml_lock_config(aws_days, sizeof(aws_days) - 1, &lc, &err));
    assert_true(lc.enabled);
    assert_string_equal(lc.mode, "GOVERNANCE");
    assert_int_equal(lc.days, 30);
    assert_true(s3_xml_lock_config(aws_years, sizeof(aws_years) - 1, &lc, &err));
    assert_int_equal(lc.days, 730);
    assert_true(s3_xml_lock_config(moto, sizeof(moto) - 1, &lc, &err));
    assert_string_equal(lc.mode, "COMPLIANCE");
    assert_int_equal(lc.days, 3);
    assert_true(s3_xml_lock_config(no_rule, sizeof(no_rule) - 1, &lc, &err));
    assert_true(lc.enabled);
    assert_string_equal(lc.mode, "");
    assert_int_equal(lc.days, 0);
    assert_false(s3_xml_lock_config(no_period, sizeof(no_period) - 1, &lc, &err));
    assert_non_null(strstr(err.msg, "not one of Days and Years"));
    err_clear(&err);
    assert_false(s3_xml_lock_config(bad_days, sizeof(bad_days) - 1, &lc, &err));
    assert_non_null(strstr(err.msg, "invalid period \"-1\""));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_code_and_message),
        cmocka_unit_test(test_error_keeps_no_credential),
        cmocka_unit_test(test_error_message_is_one_line),
        cmocka_unit_test(test_not_an_error),
        cmocka_unit_test(test_upload_id),
        cmocka_unit_test(test_complete_success),
        cmocka_unit_test(test_complete_error_in_200),
        cmocka_unit_test(test_complete_unexpected),
        cmocka_unit_test(test_listing_page),
        cmocka_unit_test(test_listing_truncated_with_token),
        cmocka_unit_test(test_listing_refuses_what_is_not_whole),
        cmocka_unit_test(test_listing_refuses_dtd),
        cmocka_unit_test(test_delete_result_names_every_failure),
        cmocka_unit_test(test_delete_result_success),
        cmocka_unit_test(test_delete_result_error_root),
        cmocka_unit_test(test_time),
        cmocka_unit_test(test_versions),
        cmocka_unit_test(test_versioning),
        cmocka_unit_test(test_uploads),
        cmocka_unit_test(test_parts),
        cmocka_unit_test(test_escape),
        cmocka_unit_test(test_escape_round_trip),
        cmocka_unit_test(test_lock_config),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
