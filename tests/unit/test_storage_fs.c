/*
 * test_storage_fs.c - covers src/storage/fs.c and storage.c: atomic objects,
 * listing; a write-back error is the writer's error (not lost to the
 * fdatasync at close), a file system without sync_file_range is written
 * all the same, and every directory created is fsynced in its parent; the
 * sweep for stale temporary files stats no object (the link wraps lstat).
 */
#include "helpers.h"

#include <dirent.h>
#include <sys/time.h>
#include <time.h>

#include "fail_sync.h"

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
    assert_non_null(strstr(err.msg, "invalid repository \"ftp://x/y\": unsupported scheme"));
}

/*
 * The root of a local repository: missing (itself or a directory above it)
 * is an answer, not an error, and opening or asking creates nothing; a file
 * in its place is an error naming it.
 */
static void test_root_exists(void **state)
{
    char *dir = test_tmpdir(), path[4200], file[4200];
    pgd_error err = {0};
    storage *s;
    bool exists = true;

    (void)state;
    snprintf(path, sizeof(path), "%s/repo", dir);
    assert_non_null(s = storage_open(path, NULL, &err));
    assert_true(storage_root_exists(s, &exists, &err));
    assert_false(exists);
    assert_false(err.set);
    assert_int_equal(access(path, F_OK), -1); /* not created by looking */
    assert_int_equal(mkdir(path, 0700), 0);
    assert_true(storage_root_exists(s, &exists, &err));
    assert_true(exists);
    storage_free(s);

    /* a file where the directory should be, and a path under that file */
    snprintf(file, sizeof(file), "%s/file", dir);
    write_test_file(file, "x", 1);
    assert_non_null(s = storage_open(file, NULL, &err));
    assert_false(storage_root_exists(s, &exists, &err));
    assert_non_null(strstr(err.msg, "repository \""));
    assert_non_null(strstr(err.msg, "/file\" is not a directory"));
    storage_free(s);
    err_clear(&err);
    snprintf(path, sizeof(path), "file://%s/file/repo", dir);
    assert_non_null(s = storage_open(path, NULL, &err));
    assert_true(storage_root_exists(s, &exists, &err));
    assert_false(exists);
    storage_free(s);
    rm_rf(dir);
}

/*
 * A file last written `age_s` seconds ago by time(2), the clock the sweep
 * reads: gettimeofday can be a tick ahead of it, and a file stamped by
 * that clock at a second's start could be newer than the sweep's "now".
 */
static void touch_aged(const char *path, time_t age_s)
{
    struct timeval times[2];

    write_test_file(path, "x", 1);
    times[0] = (struct timeval){.tv_sec = time(NULL) - age_s, .tv_usec = 0};
    times[1] = times[0];
    assert_int_equal(utimes(path, times), 0);
}

/*
 * lstat, as fs.c calls it (lstat64 under _FILE_OFFSET_BITS=64), counting
 * the calls on a name that is not a temporary file's.
 */
int __real_lstat64(const char *path, struct stat *st);
static unsigned lstat_objects;
int __wrap_lstat64(const char *path, struct stat *st)
{
    if (strstr(path, ".tmp.") == NULL)
        lstat_objects++;
    return __real_lstat64(path, st);
}

/* Does readdir say what `dir`'s entries are (d_type), as most file systems do? */
static bool dir_types_known(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    bool known = true;

    assert_non_null(d);
    while ((de = readdir(d)) != NULL)
        known = known && de->d_type != DT_UNKNOWN;
    closedir(d);
    return known;
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

    for (int i = 0; i < 100; i++) {
        snprintf(path, sizeof(path), "%s/wal/00000001/0000000100000000000000%02X.lz4", dir, i);
        touch_aged(path, 7200); /* archived segments: the sweep grew with them */
    }

    lstat_objects = 0;
    assert_true(storage_remove_stale_temp(s, "wal/00000001", 3600, &err));
    snprintf(path, sizeof(path), "%s/wal/00000001", dir);
    if (dir_types_known(path))
        assert_int_equal(lstat_objects, 0);
    snprintf(path, sizeof(path), "%s/wal/00000001/0000000100000000000000%02X.lz4", dir, 99);
    assert_int_equal(access(path, F_OK), 0);
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

    /* an age of 0 (no writer left): what was written this very second is stale too */
    snprintf(path, sizeof(path), "%s/wal/00000001/d.lz4.tmp.125.0", dir);
    touch_aged(path, 0);
    assert_true(storage_remove_stale_temp(s, "wal/00000001", 0, &err));
    assert_int_equal(access(path, F_OK), -1);
    snprintf(path, sizeof(path), "%s/wal/00000001/b.lz4.tmp.124.7", dir);
    assert_int_equal(access(path, F_OK), -1);
    snprintf(path, sizeof(path), "%s/wal/old.tmp.1.2", dir);

    /* recursive from the top; a directory that does not exist is nothing to do */
    lstat_objects = 0;
    assert_true(storage_remove_stale_temp(s, "", 3600, &err));
    assert_int_equal(access(path, F_OK), -1);
    assert_true(lstat_objects > 0); /* its directories: the wrap sees fs.c's calls */
    assert_true(storage_remove_stale_temp(s, "no/such/dir", 3600, &err));
    assert_false(err.set);
    storage_free(s);
    rm_rf(dir);
}

/* The temporaries of one object: beside it, stale ones only, nothing else and nothing below. */
static void test_remove_stale_temp_of(void **state)
{
    char *dir = test_tmpdir();
    char path[4300];
    pgd_error err = {0};
    storage *s;
    static const char *const kept[] = {
        "keyring.pgdirect.tmp.9.1",     /* a rotation at work */
        "keyring.pgdirect",             /* the object itself */
        "keyring.pgdirect2.tmp.1.0",    /* another object's */
        "keyring.pgdirect.tmp.x",       /* not a temporary name */
        "wal/keyring.pgdirect.tmp.1.0", /* below the object's folder */
    };

    (void)state;
    s = storage_open(dir, NULL, &err);
    assert_non_null(s);
    snprintf(path, sizeof(path), "%s/wal", dir);
    assert_int_equal(mkdir(path, 0750), 0);
    snprintf(path, sizeof(path), "%s/keyring.pgdirect.tmp.123.0", dir);
    touch_aged(path, 7200); /* a killed rotation's */
    snprintf(path, sizeof(path), "%s/keyring.pgdirect.tmp.9.1", dir);
    touch_aged(path, 10);
    for (size_t i = 1; i < sizeof(kept) / sizeof(kept[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, kept[i]);
        touch_aged(path, 7200);
    }
    assert_true(storage_remove_stale_temp_of(s, "keyring.pgdirect", 3600, &err));
    snprintf(path, sizeof(path), "%s/keyring.pgdirect.tmp.123.0", dir);
    assert_int_equal(access(path, F_OK), -1);
    for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, kept[i]);
        if (access(path, F_OK) != 0)
            fail_msg("%s was removed", kept[i]);
    }
    /* an age of 0: the one at work goes too, the others stay */
    assert_true(storage_remove_stale_temp_of(s, "keyring.pgdirect", 0, &err));
    snprintf(path, sizeof(path), "%s/keyring.pgdirect.tmp.9.1", dir);
    assert_int_equal(access(path, F_OK), -1);
    snprintf(path, sizeof(path), "%s/wal/keyring.pgdirect.tmp.1.0", dir);
    assert_int_equal(access(path, F_OK), 0);
    assert_false(err.set);
    storage_free(s);
    rm_rf(dir);
}

#define BIG_OBJECT (20u * 1024 * 1024) /* more than two flush-behind windows */

/* Write BIG_OBJECT bytes of a pattern to `path`; false (err set) at the first failure. */
static bool write_big(storage *s, const char *path, pgd_error *err)
{
    static char chunk[1024 * 1024];
    out_stream *out = storage_write_open(s, path, 0, err);

    if (out == NULL)
        return false;
    for (unsigned i = 0; i < BIG_OBJECT / sizeof(chunk); i++) {
        memset(chunk, 'a' + (int)i % 26, sizeof(chunk));
        if (!out_write(out, chunk, sizeof(chunk), err)) {
            out_abort(out);
            return false;
        }
    }
    return out_close(out, err);
}

static storage *open_repo(const char *dir, pgd_error *err)
{
    char uri[4200];

    snprintf(uri, sizeof(uri), "file://%s/repo", dir);
    return storage_open(uri, NULL, err);
}

/* A write-back error reported by sync_file_range fails the write, naming the file; nothing stays.
 */
static void test_writeback_error_fails_the_write(void **state)
{
    char *dir = test_tmpdir();
    pgd_error err = {0};
    storage *s = open_repo(dir, &err);
    seen names = {0};
    bool exists;

    (void)state;
    assert_non_null(s);
    fail_writeback_errno = EIO;
    fail_writeback_waits_only = true;
    assert_false(write_big(s, "wal/obj", &err));
    fail_writeback_errno = 0;
    assert_non_null(strstr(err.msg, "could not write file \""));
    assert_non_null(strstr(err.msg, "/repo/wal/obj"));
    assert_non_null(strstr(err.msg, "back to disk: Input/output error"));
    err_clear(&err);
    assert_true(storage_exists(s, "wal/obj", &exists, &err));
    assert_false(exists);
    assert_true(storage_list(s, "wal", collect, &names, &err));
    assert_int_equal(names.n, 0);
    storage_free(s);
    rm_rf(dir);
}

/* Without sync_file_range (EINVAL) the object is written whole all the same. */
static void test_no_sync_file_range_still_writes(void **state)
{
    char *dir = test_tmpdir();
    pgd_error err = {0};
    storage *s = open_repo(dir, &err);
    char *data;
    size_t len;
    bool missing;

    (void)state;
    assert_non_null(s);
    fail_writeback_errno = EINVAL;
    fail_writeback_waits_only = false;
    assert_true(write_big(s, "wal/obj", &err));
    fail_writeback_errno = 0;
    assert_true(storage_get(s, "wal/obj", &data, &len, &missing, &err));
    assert_int_equal(len, BIG_OBJECT);
    assert_int_equal(data[0], 'a');
    assert_int_equal(data[BIG_OBJECT - 1], 'a' + (BIG_OBJECT / (1024 * 1024) - 1) % 26);
    free(data);
    storage_free(s);
    rm_rf(dir);
}

/* Every directory a write creates is fsynced in its parent, up to the repository's parent. */
static void test_new_directories_are_synced_in_their_parents(void **state)
{
    char *dir = test_tmpdir();
    char real[PATH_MAX], want[PATH_MAX + 32];
    pgd_error err = {0};
    storage *s = open_repo(dir, &err);
    const char *const dirs[] = {"", "/repo", "/repo/x", "/repo/x/y", "/repo/x/y/z"};

    (void)state;
    assert_non_null(s);
    assert_non_null(realpath(dir, real));
    synced_dirs_n = 0;
    assert_true(storage_put(s, "x/y/z/obj", "hello", 5, 0, &err));
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        snprintf(want, sizeof(want), "%s%s", real, dirs[i]);
        if (!dir_was_synced(want))
            fail_msg("directory \"%s\" was not fsynced", want);
    }
    /* a directory fsync that fails is the write's error */
    fail_dir_fsync = true;
    assert_false(storage_put(s, "x/w/obj", "hello", 5, 0, &err));
    fail_dir_fsync = false;
    assert_non_null(strstr(err.msg, "could not fsync directory"));
    storage_free(s);
    rm_rf(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_get_list_remove),
        cmocka_unit_test(test_unwritable_repository_is_named),
        cmocka_unit_test(test_uris),
        cmocka_unit_test(test_root_exists),
        cmocka_unit_test(test_remove_stale_temp),
        cmocka_unit_test(test_remove_stale_temp_of),
        cmocka_unit_test(test_writeback_error_fails_the_write),
        cmocka_unit_test(test_no_sync_file_range_still_writes),
        cmocka_unit_test(test_new_directories_are_synced_in_their_parents),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
