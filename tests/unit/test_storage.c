/* test_storage.c - covers src/storage/storage.c (choosing a back end by URI, the whole-object
 * helpers every back end shares) and src/storage/null.c (the repository that keeps nothing).
 */
#include "helpers.h"

#include <limits.h>

#include "storage/storage.h"

static bool count_entry(void *arg, const char *name, uint64_t size, bool is_dir, pgd_error *err)
{
    (void)name;
    (void)size;
    (void)is_dir;
    (void)err;
    (*(int *)arg)++;
    return true;
}

static void test_open_refuses_what_is_not_a_repository(void **state)
{
    pgd_error err = {0};

    (void)state;
    assert_null(storage_open(NULL, NULL, &err));
    assert_string_equal(err.msg, "no repository given (--repo)");
    err_clear(&err);
    assert_null(storage_open("", NULL, &err));
    assert_string_equal(err.msg, "no repository given (--repo)");
    err_clear(&err);
    assert_null(storage_open("file://relative/path", NULL, &err));
    assert_non_null(strstr(err.msg, "invalid repository \"file://relative/path\""));
    err_clear(&err);
    assert_null(storage_open("ftp://host/x", NULL, &err));
    assert_non_null(strstr(err.msg, "invalid repository \"ftp://host/x\": unsupported scheme"));
}

/* What --repo may be, decided from its text: a relative path never, from any source. */
static void test_uri_forms(void **state)
{
    static const char *const good[] = {
        "/var/lib/pgdirect", "/",     "file:///srv/b",         "s3://bucket",
        "s3://bucket/p/q",   "null:", "azure://container/p/q", "s3://bucket/a..b/.c/d.",
        "/srv/../backups"};
    static const struct {
        const char *uri, *why;
    } bad[] = {
        {"backups", "a relative path (archive_command and restore_command run in the data "
                    "directory); expected an absolute path, file:///path, s3://bucket/prefix, "
                    "azure://container/prefix or sftp://user@host[:port]/path"},
        {"./backups", "a relative path"},
        {"'/var/lib/pgdirect'", "a relative path"}, /* a quote taken literally */
        {"", "empty; expected an absolute path"},
        {"file://relative", "expected file:///absolute/path"},
        {"s3://", "no bucket; expected s3://bucket/prefix"},
        {"s3:///prefix", "no bucket"},
        {"azure://", "no container; expected azure://container/prefix"},
        {"azure:///prefix", "no container"},
        {"ftp://host/x", "unsupported scheme; expected an absolute path"},
        {"s3://bucket/a/../b", "the prefix holds a \"..\" segment, which URLs remove"},
        {"s3://bucket/./b", "the prefix holds a \".\" segment"},
        {"azure://container/a/..", "the prefix holds a \"..\" segment"},
        {"s3://AKIA:x@bucket/p", "credentials in the URI"},
        {"azure://acct@container/p", "credentials in the URI"},
        {"sftp://pg:x@host", "a password in the URI"},
    };
    pgd_error err = {0};
    const char *why;

    (void)state;
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        assert_true(storage_uri_valid(good[i], &why));
        assert_null(why);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_false(storage_uri_valid(bad[i].uri, &why));
        assert_non_null(why);
        assert_true(strncmp(why, bad[i].why, strlen(bad[i].why)) == 0);
    }
    /* storage_open refuses them too, naming the repository */
    assert_null(storage_open("backups", NULL, &err));
    assert_string_equal(err.msg, "invalid repository \"backups\": a relative path "
                                 "(archive_command and restore_command run in the data "
                                 "directory); expected an absolute path, file:///path, "
                                 "s3://bucket/prefix, azure://container/prefix or "
                                 "sftp://user@host[:port]/path");
}

/* What a message shows of a URI: never a password of its user part, nor a value after '?'. */
static void test_uri_redact_masks_passwords_and_query_values(void **state)
{
    static const char *const keep[] = {"s3-region", "s3-endpoint", NULL};
    static const struct {
        const char *uri, *shown;
    } cases[] = {
        {"sftp://pg:hunter2@host", "sftp://pg:***@host"},
        {"sftp://pg:hunter2@host/srv", "sftp://pg:***@host/srv"},
        {"sftp://pg:hun@ter2@host/srv", "sftp://pg:***@host/srv"},
        {"sftp://pg:hun/ter2@host/srv", "sftp://pg:***@host/srv"},
        {"sftp://pg:hun?ter=2@host/srv", "sftp://pg:***@host/srv"},
        {"s3://AKIA:hunter2@bucket/p", "s3://AKIA:***@bucket/p"},
        {"gs://u:hunter2@b", "gs://u:***@b"},
        {"azure://c/p?sv=2020&sig=hunter2", "azure://c/p?sv=***&sig=***"},
        {"s3://b/p?s3-region=eu&X-Amz-Signature=hunter2",
         "s3://b/p?s3-region=eu&X-Amz-Signature=***"},
        {"s3://b/p?hunter2", "s3://b/p?***"},
        {"s3://b/p?s3-endpoint=http://u:hunter2@h:9000",
         "s3://b/p?s3-endpoint=http://u:***@h:9000"},
        /* nothing to mask: unchanged */
        {"sftp://pg@host:22/srv", "sftp://pg@host:22/srv"},
        {"s3://bucket/a:b@c", "s3://bucket/a:b@c"},
        {"/srv/a:b@c", "/srv/a:b@c"},
        {"", ""},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *shown = storage_uri_redact(cases[i].uri, keep);
        if (strcmp(shown, cases[i].shown) != 0)
            fail_msg("%s: shown as \"%s\", expected \"%s\"", cases[i].uri, shown, cases[i].shown);
        free(shown);
    }
}

/* Credentials in a URI are refused before any driver sees them, and never echoed. */
static void test_open_refuses_credentials_without_echoing_them(void **state)
{
    static const char *const uris[] = {"sftp://pg:hunter2@host",     "sftp://pg:hunter2@host/srv",
                                       "s3://AKIA:hunter2@bucket/p", "s3://AKIA@bucket/p",
                                       "azure://acct:hunter2@c/p",   "file://u:hunter2@h/x"};

    (void)state;
    for (size_t i = 0; i < sizeof(uris) / sizeof(uris[0]); i++) {
        pgd_error err = {0};
        const char *why;
        assert_false(storage_uri_valid(uris[i], &why));
        assert_null(storage_open(uris[i], NULL, &err));
        assert_true(err_is(&err, PGD_ERR_USAGE));
        /* the message names the repository (positive control), without its password */
        if (strstr(err.msg, "invalid repository \"") == NULL || strstr(err.msg, "hunter2") != NULL)
            fail_msg("%s: got \"%s\"", uris[i], err.msg);
    }
}

/* The temporary names fs.c and the SFTP driver write under, and nothing else. */
static void test_temp_names(void **state)
{
    static const char *const temp[] = {"part_0001.tar.lz4.tmp.123.0", "x.tmp.1.22",
                                       "a.tmp.b.tmp.7.8"};
    static const char *const not_temp[] = {"part_0001.tar.lz4", ".tmp.1.2",   "x.tmp.1",
                                           "x.tmp.1.",          "x.tmp..2",   "x.tmp.1.2x",
                                           "x.tmp.a.2",         "x.tmp.1.2.", "x.tmp.1.2.tmp.3"};

    (void)state;
    for (size_t i = 0; i < sizeof(temp) / sizeof(temp[0]); i++)
        if (!storage_is_temp_name(temp[i]))
            fail_msg("\"%s\" is a temporary name", temp[i]);
    for (size_t i = 0; i < sizeof(not_temp) / sizeof(not_temp[0]); i++)
        if (storage_is_temp_name(not_temp[i]))
            fail_msg("\"%s\" is not a temporary name", not_temp[i]);
}

static void test_file_uri_and_plain_path_are_the_same_repository(void **state)
{
    char *tmp = test_tmpdir(), uri[PATH_MAX + 8], *data;
    pgd_error err = {0};
    storage *by_uri, *by_path;
    size_t len;
    bool missing;

    (void)state;
    snprintf(uri, sizeof(uri), "file://%s", tmp);
    assert_non_null(by_uri = storage_open(uri, NULL, &err));
    assert_non_null(by_path = storage_open(tmp, NULL, &err));
    assert_true(storage_put(by_uri, "x", "abc", 3, 0, &err));
    assert_true(storage_get(by_path, "x", &data, &len, &missing, &err));
    assert_int_equal(len, 3);
    assert_memory_equal(data, "abc", 3);
    free(data);
    storage_free(by_uri);
    storage_free(by_path);
    rm_rf(tmp);
}

/* storage_get grows its buffer past the first 64 KiB and NUL-terminates what it read */
static void test_get_reads_an_object_larger_than_its_first_buffer(void **state)
{
    enum { OBJECT_SIZE = 200 * 1024 + 7 };
    char *tmp = test_tmpdir(), *data;
    unsigned char *content = malloc(OBJECT_SIZE);
    pgd_error err = {0};
    storage *repo;
    size_t len;
    bool missing;

    (void)state;
    fill_pattern(content, OBJECT_SIZE, 7);
    assert_non_null(repo = storage_open(tmp, NULL, &err));
    assert_true(storage_put(repo, "big", content, OBJECT_SIZE, 0, &err));
    assert_true(storage_get(repo, "big", &data, &len, &missing, &err));
    assert_false(missing);
    assert_int_equal(len, OBJECT_SIZE);
    assert_memory_equal(data, content, OBJECT_SIZE);
    assert_int_equal(data[len], '\0');
    free(data);
    assert_false(storage_get(repo, "absent", &data, &len, &missing, &err));
    assert_true(missing);
    assert_null(data);
    storage_free(repo);
    free(content);
    rm_rf(tmp);
}

static void test_remove_many_falls_back_to_one_by_one(void **state)
{
    char *tmp = test_tmpdir();
    const char *paths[] = {"a", "b", "c"};
    pgd_error err = {0};
    storage *repo;
    bool exists;

    (void)state;
    assert_non_null(repo = storage_open(tmp, NULL, &err));
    for (size_t i = 0; i < 3; i++)
        assert_true(storage_put(repo, paths[i], "x", 1, 0, &err));
    assert_true(storage_remove_many(repo, paths, 3, &err));
    for (size_t i = 0; i < 3; i++) {
        assert_true(storage_exists(repo, paths[i], &exists, &err));
        assert_false(exists);
    }
    storage_free(repo);
    rm_rf(tmp);
}

static void test_check_writable_names_the_repository(void **state)
{
    char *tmp = test_tmpdir(), ro[PATH_MAX];
    pgd_error err = {0};
    storage *repo;
    int entries = 0;

    (void)state;
    assert_non_null(repo = storage_open(tmp, NULL, &err));
    assert_true(storage_check_writable(repo, &err));
    /* the probe is gone again */
    assert_true(storage_list(repo, "", count_entry, &entries, &err));
    assert_int_equal(entries, 0);
    storage_free(repo);
    if (geteuid() != 0) { /* root writes anywhere */
        snprintf(ro, sizeof(ro), "%s/ro", tmp);
        assert_int_equal(mkdir(ro, 0500), 0);
        assert_non_null(repo = storage_open(ro, NULL, &err));
        assert_false(storage_check_writable(repo, &err));
        assert_non_null(strstr(err.msg, "is not writable"));
        assert_non_null(strstr(err.msg, ro));
        storage_free(repo);
    }
    rm_rf(tmp);
}

/* null: every write succeeds and nothing is ever there to read, list or find */
static void test_null_keeps_nothing(void **state)
{
    const char *paths[] = {"a", "b"};
    pgd_error err = {0};
    storage *repo = storage_open("null:", NULL, &err);
    out_stream *out;
    char *data = (char *)"not touched";
    size_t len = 99;
    bool missing = false, exists = true;
    int entries = 0;

    (void)state;
    assert_non_null(repo);
    assert_string_equal(repo->uri, "null:");
    assert_true(storage_check_writable(repo, &err));
    assert_true(storage_put(repo, "backups/x/part_0001.tar", "data", 4, 0, &err));
    assert_false(storage_get(repo, "backups/x/part_0001.tar", &data, &len, &missing, &err));
    assert_true(missing);
    assert_null(data);
    assert_int_equal(len, 0);
    assert_false(err.set); /* missing is not an error */
    assert_true(storage_exists(repo, "backups/x/part_0001.tar", &exists, &err));
    assert_false(exists);
    assert_true(storage_list(repo, "backups", count_entry, &entries, &err));
    assert_int_equal(entries, 0);
    assert_true(storage_remove_many(repo, paths, 2, &err));
    assert_true(storage_remove_stale_temp(repo, "backups", 0, &err));
    exists = false;
    assert_true(storage_root_exists(repo, &exists, &err)); /* no root to be missing */
    assert_true(exists);
    /* an aborted write is freed like a closed one (ASan and valgrind see a leak otherwise) */
    assert_non_null(out = storage_write_open(repo, "y", 0, &err));
    assert_true(out_write(out, "z", 1, &err));
    out_abort(out);
    storage_free(repo);
    storage_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_refuses_what_is_not_a_repository),
        cmocka_unit_test(test_uri_forms),
        cmocka_unit_test(test_uri_redact_masks_passwords_and_query_values),
        cmocka_unit_test(test_open_refuses_credentials_without_echoing_them),
        cmocka_unit_test(test_temp_names),
        cmocka_unit_test(test_file_uri_and_plain_path_are_the_same_repository),
        cmocka_unit_test(test_get_reads_an_object_larger_than_its_first_buffer),
        cmocka_unit_test(test_remove_many_falls_back_to_one_by_one),
        cmocka_unit_test(test_check_writable_names_the_repository),
        cmocka_unit_test(test_null_keeps_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
