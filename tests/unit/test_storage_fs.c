/* test_storage_fs.c - covers src/storage/fs.c and storage.c: atomic objects, listing. */
#include "helpers.h"

#include <sys/time.h>

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

static void touch_aged(const char *path, time_t age_s)
{
    struct timeval times[2];

    write_test_file(path, "x", 1);
    gettimeofday(&times[0], NULL);
    times[0].tv_sec -= age_s;
    times[1] = times[0];
    assert_int_equal(utimes(path, times), 0);
}

static void test_remove_stale_temp(void **state)
{
    char *dir = test_tmpdir();
    char path[4300];
    pgd_error err = {0};
    storage *s;

    (void)state;
    s = storage_open(dir, NULL, &err);
    assert_non_null(s);
    snprintf(path, sizeof(path), "%s/wal", dir);
    assert_int_equal(mkdir(path, 0750), 0);
    snprintf(path, sizeof(path), "%s/wal/00000001", dir);
    assert_int_equal(mkdir(path, 0750), 0);
    snprintf(path, sizeof(path), "%s/wal/00000001/a.lz4.tmp.123.0", dir);
    touch_aged(path, 7200); /* a killed writer's, two hours idle */
    snprintf(path, sizeof(path), "%s/wal/00000001/b.lz4.tmp.124.7", dir);
    touch_aged(path, 10); /* a writer at work */
    snprintf(path, sizeof(path), "%s/wal/00000001/c.lz4", dir);
    touch_aged(path, 7200); /* an object */
    snprintf(path, sizeof(path), "%s/wal/00000001/notes.tmp.txt", dir);
    touch_aged(path, 7200); /* not one of ours */
    snprintf(path, sizeof(path), "%s/wal/old.tmp.1.2", dir);
    touch_aged(path, 7200); /* above the directory swept */

    assert_true(storage_remove_stale_temp(s, "wal/00000001", 3600, &err));
    snprintf(path, sizeof(path), "%s/wal/00000001/a.lz4.tmp.123.0", dir);
    assert_int_equal(access(path, F_OK), -1);
    snprintf(path, sizeof(path), "%s/wal/00000001/b.lz4.tmp.124.7", dir);
    assert_int_equal(access(path, F_OK), 0);
    snprintf(path, sizeof(path), "%s/wal/00000001/c.lz4", dir);
    assert_int_equal(access(path, F_OK), 0);
    snprintf(path, sizeof(path), "%s/wal/00000001/notes.tmp.txt", dir);
    assert_int_equal(access(path, F_OK), 0);
    snprintf(path, sizeof(path), "%s/wal/old.tmp.1.2", dir);
    assert_int_equal(access(path, F_OK), 0);

    /* recursive from the top; a directory that does not exist is nothing to do */
    assert_true(storage_remove_stale_temp(s, "", 3600, &err));
    assert_int_equal(access(path, F_OK), -1);
    assert_true(storage_remove_stale_temp(s, "no/such/dir", 3600, &err));
    assert_false(err.set);
    storage_free(s);
    rm_rf(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_get_list_remove),
        cmocka_unit_test(test_unwritable_repository_is_named),
        cmocka_unit_test(test_uris),
        cmocka_unit_test(test_remove_stale_temp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
