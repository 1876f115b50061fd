/*
 * test_tee.c - covers src/storage/tee.c: writes reach every repository, reads
 * come from the first that has the object, listings are the union; a
 * no-replace object one repository holds is taken back from the others; a
 * repository that fails leaves the run with TEE_DROP_FAILED and fails the
 * write without; a read passes over a failing repository, and "missing"
 * only when none failed; a repository the caller found failing is dropped
 * by tee_storage_drop the same way. The failing repository is a local one whose root
 * is a regular file (ENOTDIR on every path under it, even for root).
 */
#include "helpers.h"

#include "storage/tee.h"

typedef struct tee_fixture {
    char *dir;
    char a[4200], b[4200], bad[4200];
} tee_fixture;

static void tee_fixture_init(tee_fixture *f)
{
    FILE *fp;

    f->dir = test_tmpdir();
    snprintf(f->a, sizeof(f->a), "%s/a", f->dir);
    snprintf(f->b, sizeof(f->b), "%s/b", f->dir);
    snprintf(f->bad, sizeof(f->bad), "%s/not_a_dir", f->dir);
    fp = fopen(f->bad, "w");
    assert_non_null(fp);
    fclose(fp);
}

static storage *tee_of_two(const char *first, const char *second, unsigned flags)
{
    storage *c[2] = {storage_fs_new(first), storage_fs_new(second)};

    return tee_storage_new(c, 2, flags);
}

typedef struct names {
    char v[8][32];
    int n;
} names;

static bool names_add(void *arg, const char *name, uint64_t size, bool is_dir, pgd_error *err)
{
    names *n = arg;

    (void)size;
    (void)is_dir;
    (void)err;
    snprintf(n->v[n->n++], sizeof(n->v[0]), "%s", name);
    return true;
}

static void test_writes_reach_every_repository(void **state)
{
    tee_fixture f;
    pgd_error err = {0};
    storage *t, *one;
    char *data;
    size_t len;
    bool missing;
    names n = {0};

    (void)state;
    tee_fixture_init(&f);
    t = tee_of_two(f.a, f.b, 0);
    assert_int_equal(tee_storage_count(t), 2);
    assert_true(storage_put(t, "d/x", "both", 4, 0, &err));
    for (size_t i = 0; i < 2; i++) {
        one = tee_storage_child(t, i);
        assert_true(storage_get(one, "d/x", &data, &len, &missing, &err));
        assert_string_equal(data, "both");
        free(data);
    }
    /* an object only the second has is read from it; the listing is the union */
    assert_true(storage_put(tee_storage_child(t, 1), "d/y", "second", 6, 0, &err));
    assert_true(storage_get(t, "d/y", &data, &len, &missing, &err));
    assert_string_equal(data, "second");
    free(data);
    assert_true(storage_list(t, "d", names_add, &n, &err));
    assert_int_equal(n.n, 2);
    storage_free(t);
    rm_rf(f.dir);
}

static void test_no_replace_refused_by_one_is_taken_back(void **state)
{
    tee_fixture f;
    pgd_error err = {0};
    storage *t;
    bool exists;

    (void)state;
    tee_fixture_init(&f);
    t = tee_of_two(f.a, f.b, TEE_DROP_FAILED);
    assert_true(storage_put(tee_storage_child(t, 1), "claim", "theirs", 6, 0, &err));
    assert_false(storage_put(t, "claim", "mine", 4, STORAGE_WRITE_NO_REPLACE, &err));
    assert_true(err_is(&err, PGD_ERR_EXISTS));
    err_clear(&err);
    /* not in the first (taken back), and the second keeps its own */
    assert_true(storage_exists(tee_storage_child(t, 0), "claim", &exists, &err));
    assert_false(exists);
    assert_true(storage_exists(tee_storage_child(t, 1), "claim", &exists, &err));
    assert_true(exists);
    storage_free(t);
    rm_rf(f.dir);
}

static void test_failing_repository_leaves_the_run(void **state)
{
    tee_fixture f;
    pgd_error err = {0};
    const pgd_error *why;
    storage *t;
    char *data;
    size_t len;
    bool missing;

    (void)state;
    tee_fixture_init(&f);
    t = tee_of_two(f.bad, f.a, TEE_DROP_FAILED);
    assert_false(tee_storage_dropped(t, 0, &why));
    assert_true(storage_put(t, "obj", "kept", 4, 0, &err));
    assert_false(err.set);
    assert_true(tee_storage_dropped(t, 0, &why));
    assert_true(why->set);
    assert_false(tee_storage_dropped(t, 1, &why));
    assert_true(storage_get(tee_storage_child(t, 1), "obj", &data, &len, &missing, &err));
    assert_string_equal(data, "kept");
    free(data);
    storage_free(t);

    /* every repository failing fails the write */
    t = tee_of_two(f.bad, f.bad, TEE_DROP_FAILED);
    assert_false(storage_put(t, "obj", "x", 1, 0, &err));
    assert_non_null(strstr(err.msg, "every repository failed"));
    storage_free(t);
    rm_rf(f.dir);
}

static void test_failing_repository_fails_a_strict_write(void **state)
{
    tee_fixture f;
    pgd_error err = {0};
    const pgd_error *why;
    storage *t;

    (void)state;
    tee_fixture_init(&f);
    t = tee_of_two(f.a, f.bad, 0);
    assert_false(storage_put(t, "obj", "x", 1, 0, &err));
    assert_true(err.set);
    assert_false(tee_storage_dropped(t, 1, &why));
    storage_free(t);
    rm_rf(f.dir);
}

/* The caller's own failure of one repository: dropped with TEE_DROP_FAILED, as a write's is. */
static void test_drop_by_the_caller(void **state)
{
    tee_fixture f;
    pgd_error e = {0}, err = {0};
    const pgd_error *why;
    storage *t;
    bool exists;

    (void)state;
    tee_fixture_init(&f);
    err_set(&e, "could not read its chain");
    t = tee_of_two(f.a, f.b, TEE_DROP_FAILED);
    assert_true(tee_storage_drop(t, 1, &e, &err));
    assert_false(err.set);
    assert_true(tee_storage_dropped(t, 1, &why));
    assert_string_equal(why->msg, "could not read its chain");
    assert_false(tee_storage_dropped(t, 0, &why));
    assert_true(storage_put(t, "obj", "x", 1, 0, &err)); /* written to the one left only */
    assert_true(storage_exists(tee_storage_child(t, 0), "obj", &exists, &err) && exists);
    assert_true(storage_exists(tee_storage_child(t, 1), "obj", &exists, &err) && !exists);
    /* dropping the last one left fails: nothing would be written any more */
    assert_false(tee_storage_drop(t, 0, &e, &err));
    assert_non_null(strstr(err.msg, "every repository failed"));
    storage_free(t);
    /* without TEE_DROP_FAILED the failure is always the caller's */
    memset(&err, 0, sizeof(err));
    t = tee_of_two(f.a, f.b, 0);
    assert_false(tee_storage_drop(t, 1, &e, &err));
    assert_string_equal(err.msg, "could not read its chain");
    storage_free(t);
    rm_rf(f.dir);
}

static void test_read_passes_over_a_failing_repository(void **state)
{
    tee_fixture f;
    pgd_error err = {0};
    storage *t;
    char *data;
    size_t len;
    bool missing;

    (void)state;
    tee_fixture_init(&f);
    t = tee_of_two(f.bad, f.a, 0);
    assert_true(storage_put(tee_storage_child(t, 1), "obj", "second", 6, 0, &err));
    assert_true(storage_get(t, "obj", &data, &len, &missing, &err));
    assert_string_equal(data, "second");
    free(data);
    /* none has it, one failed: an error, not "missing" */
    assert_false(storage_get(t, "none", &data, &len, &missing, &err));
    assert_false(missing);
    assert_true(err.set);
    err_clear(&err);
    storage_free(t);
    /* none has it, none failed: missing */
    t = tee_of_two(f.a, f.b, 0);
    assert_false(storage_get(t, "none", &data, &len, &missing, &err));
    assert_true(missing);
    assert_false(err.set);
    storage_free(t);
    rm_rf(f.dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_writes_reach_every_repository),
        cmocka_unit_test(test_no_replace_refused_by_one_is_taken_back),
        cmocka_unit_test(test_failing_repository_leaves_the_run),
        cmocka_unit_test(test_failing_repository_fails_a_strict_write),
        cmocka_unit_test(test_read_passes_over_a_failing_repository),
        cmocka_unit_test(test_drop_by_the_caller),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
