/* test_storage_fs.c - covers src/storage/fs.c and storage.c: atomic objects, listing. */
#include "helpers.h"

#include "storage/storage.h"

typedef struct seen {
    char names[16][64];
    int n;
} seen;

static bool collect(void *arg, const char *name, uint64_t size, bool is_dir, pgd_error *err)
{
    seen *s = arg;
    (void)size;
    (void)is_dir;
    (void)err;
    snprintf(s->names[s->n++], 64, "%s", name);
    return true;
}

static void test_put_get_list_remove(void **state)
{
    char *dir = test_tmpdir();
    char uri[4200];
    pgd_error err = {0};
    storage *s;
    char *data;
    size_t len;
    bool missing, exists;
    seen names = {0};

    (void)state;
    snprintf(uri, sizeof(uri), "file://%s/repo", dir);
    s = storage_open(uri, NULL, &err);
    assert_non_null(s);
    assert_true(storage_check_writable(s, &err));
    assert_true(storage_put(s, "a/b/obj", "hello", 5, 0, &err));
    assert_true(storage_get(s, "a/b/obj", &data, &len, &missing, &err));
    assert_int_equal(len, 5);
    assert_string_equal(data, "hello");
    free(data);
    assert_true(storage_exists(s, "a/b/obj", &exists, &err));
    assert_true(exists);
    assert_false(storage_get(s, "a/b/none", &data, &len, &missing, &err));
    assert_true(missing);
    assert_false(err.set);

    /* no-replace refuses an existing object and leaves it intact */
    assert_false(storage_put(s, "a/b/obj", "other", 5, STORAGE_WRITE_NO_REPLACE, &err));
    assert_non_null(strstr(err.msg, "obj"));
    err_clear(&err);
    assert_true(storage_get(s, "a/b/obj", &data, &len, &missing, &err));
    assert_string_equal(data, "hello");
    free(data);

    /* an aborted write leaves nothing behind, not even its temporary file */
    {
        out_stream *out = storage_write_open(s, "a/b/aborted", 0, &err);
        assert_non_null(out);
        assert_true(out_write(out, "x", 1, &err));
        out_abort(out);
    }
    assert_true(storage_list(s, "a/b", collect, &names, &err));
    assert_int_equal(names.n, 1);
    assert_string_equal(names.names[0], "obj");
    assert_true(storage_remove(s, "a/b/obj", &err));
    assert_true(storage_exists(s, "a/b/obj", &exists, &err));
    assert_false(exists);
    names.n = 0;
    assert_true(storage_list(s, "no/such/dir", collect, &names, &err));
    assert_int_equal(names.n, 0);
    storage_free(s);
    rm_rf(dir);
}

static void test_unwritable_repository_is_named(void **state)
{
    pgd_error err = {0};
    storage *s = storage_open("/proc/pgdirect-repo", NULL, &err);

    (void)state;
    assert_non_null(s);
    assert_false(storage_check_writable(s, &err));
    assert_non_null(strstr(err.msg, "repository \"/proc/pgdirect-repo\" is not writable"));
    storage_free(s);
}

static void test_uris(void **state)
{
    pgd_error err = {0};

    (void)state;
    assert_null(storage_open("file://relative", NULL, &err));
    assert_non_null(strstr(err.msg, "file:///absolute/path"));
    err_clear(&err);
    assert_null(storage_open("ftp://x/y", NULL, &err));
    assert_non_null(strstr(err.msg, "unsupported repository"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_get_list_remove),
        cmocka_unit_test(test_unwritable_repository_is_named),
        cmocka_unit_test(test_uris),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
