/*
 * test_wal_archive.c - covers src/wal/wal_archive.c: one file per WAL name
 * whatever the compression, even when another push stores a file between
 * this push's store and its look at the other compressions; a fetch that
 * says "not archived" only from a repository that is there, and the
 * prefetcher's fetch, which leaves that verdict to it and does not list; a
 * fetch asks the repository once for a file that is there; a push of a new
 * file looks before storing only under its own suffix; of one file stored twice with the same
 * content, the one earlier in wal_archive_kinds' order stays; a push whose
 * object could not be made durable is not acknowledged, and the next push
 * of that file makes it durable before it says "identical".
 *
 * The other push is played by a storage wrapper: right after this push's
 * object is closed, it stores the other file under another suffix.
 */
#include "helpers.h"

#include <limits.h>

#include "fail_sync.h"
#include "repo/layout.h"
#include "wal/wal_archive.h"

#define SEG_SIZE  (16u << 20)
#define PAGE_SIZE 8192u
#define SEG_NAME  "000000010000000000000021"

/* A segment one record runs through (page headers, then its bytes); sysid tells files apart. */
static unsigned char *make_segment(uint64_t sysid)
{
    unsigned char *seg = malloc(SEG_SIZE);
    uint16_t magic = 0xD110, info;
    uint32_t tli = 1, rem = 2 * SEG_SIZE, seg_size = SEG_SIZE, page = PAGE_SIZE;
    uint64_t start = 0x21ull * SEG_SIZE;

    assert_non_null(seg);
    fill_pattern(seg, SEG_SIZE, 7);
    for (uint32_t off = 0; off < SEG_SIZE; off += PAGE_SIZE) {
        uint64_t addr = start + off;
        unsigned char *p = seg + off;
        info = off == 0 ? 0x0003 : 0x0001;
        memcpy(p, &magic, 2);
        memcpy(p + 2, &info, 2);
        memcpy(p + 4, &tli, 4);
        memcpy(p + 8, &addr, 8);
        memcpy(p + 16, &rem, 4);
        if (off == 0) {
            memcpy(p + 24, &sysid, 8);
            memcpy(p + 32, &seg_size, 4);
            memcpy(p + 36, &page, 4);
        }
        rem -= PAGE_SIZE - (off == 0 ? 40 : 24);
    }
    return seg;
}

/* ---- a storage that lets "another push" in after each close ---- */

typedef struct racy {
    storage base;
    storage *inner;
    const char *other_path; /* stored after our next close, once */
    const unsigned char *other_data;
    size_t other_len;
    compress_kind other_kind;
    unsigned lookups, lists; /* read_open and exists calls; list calls */
    bool ignore_no_replace;  /* a store that does not honour If-None-Match */
} racy;

typedef struct racy_out {
    out_stream base;
    out_stream *inner;
    racy *r;
} racy_out;

static bool racy_out_write(out_stream *s, const void *buf, size_t len, pgd_error *err)
{
    return out_write(((racy_out *)s)->inner, buf, len, err);
}

static bool racy_out_close(out_stream *s, pgd_error *err)
{
    racy_out *o = (racy_out *)s;
    racy *r = o->r;
    bool ok = out_close(o->inner, err);

    free(o);
    if (ok && r->other_path != NULL) {
        out_stream *other = storage_write_open(r->inner, r->other_path, 0, err);
        const char *path = r->other_path;
        r->other_path = NULL;
        assert_non_null(other);
        other = compress_out_new_trailed(r->other_kind, COMPRESS_LEVEL_DEFAULT, other, path, err);
        assert_true(out_write(other, r->other_data, r->other_len, err));
        assert_true(out_close(other, err));
    }
    return ok;
}

static void racy_out_abort(out_stream *s)
{
    out_abort(((racy_out *)s)->inner);
    free(s);
}

static const out_stream_ops racy_out_ops = {racy_out_write, racy_out_close, racy_out_abort};

static out_stream *racy_write_open(storage *s, const char *path, unsigned flags, pgd_error *err)
{
    racy *r = (racy *)s;
    racy_out *o = calloc(1, sizeof(*o));

    o->base.ops = &racy_out_ops;
    o->r = r;
    if (r->ignore_no_replace)
        flags &= ~(unsigned)STORAGE_WRITE_NO_REPLACE;
    o->inner = storage_write_open(r->inner, path, flags, err);
    if (o->inner == NULL) {
        free(o);
        return NULL;
    }
    return &o->base;
}

static in_stream *racy_read_open(storage *s, const char *path, bool *missing, pgd_error *err)
{
    ((racy *)s)->lookups++;
    return storage_read_open(((racy *)s)->inner, path, missing, err);
}

static bool racy_exists(storage *s, const char *path, bool *exists, pgd_error *err)
{
    ((racy *)s)->lookups++;
    return storage_exists(((racy *)s)->inner, path, exists, err);
}

static bool racy_list(storage *s, const char *dir, storage_list_cb cb, void *arg, pgd_error *err)
{
    ((racy *)s)->lists++;
    return storage_list(((racy *)s)->inner, dir, cb, arg, err);
}

static bool racy_remove(storage *s, const char *path, pgd_error *err)
{
    return storage_remove(((racy *)s)->inner, path, err);
}

static void racy_free(storage *s)
{
    (void)s;
}

static const storage_ops racy_ops = {
    .write_open = racy_write_open,
    .read_open = racy_read_open,
    .exists = racy_exists,
    .list = racy_list,
    .remove = racy_remove,
    .free = racy_free,
};

typedef struct fixture {
    char *dir;
    char seg_path[4200], other_path[4200];
    unsigned char *seg, *other;
    storage *fs;
    racy r;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    pgd_error err = {0};
    char sub[4200];

    f->dir = test_tmpdir();
    f->seg = make_segment(1);
    f->other = make_segment(2);
    snprintf(sub, sizeof(sub), "%s/ours", f->dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    snprintf(f->seg_path, sizeof(f->seg_path), "%s/ours/" SEG_NAME, f->dir);
    write_test_file(f->seg_path, f->seg, SEG_SIZE);
    snprintf(sub, sizeof(sub), "%s/theirs", f->dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    snprintf(f->other_path, sizeof(f->other_path), "%s/theirs/" SEG_NAME, f->dir);
    write_test_file(f->other_path, f->other, SEG_SIZE);
    snprintf(sub, sizeof(sub), "%s/repo", f->dir);
    f->fs = storage_open(sub, NULL, &err);
    assert_non_null(f->fs);
    f->r.base.ops = &racy_ops;
    f->r.base.uri = f->fs->uri;
    f->r.inner = f->fs;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;

    storage_free(f->fs);
    free(f->seg);
    free(f->other);
    rm_rf(f->dir);
    free(f);
    return 0;
}

/* After our next close, "another push" stores `data` as the object of `kind` (path: its storage).
 */
static void other_push_after_ours(fixture *f, compress_kind kind, const unsigned char *data,
                                  char path[LAYOUT_PATH_MAX])
{
    layout_wal_path(SEG_NAME, kind, path, LAYOUT_PATH_MAX);
    f->r.other_path = path;
    f->r.other_data = data;
    f->r.other_len = SEG_SIZE;
    f->r.other_kind = kind;
}

static bool stored(fixture *f, compress_kind kind)
{
    char path[LAYOUT_PATH_MAX];
    pgd_error err = {0};
    bool exists;

    layout_wal_path(SEG_NAME, kind, path, sizeof(path));
    assert_true(storage_exists(f->fs, path, &exists, &err));
    return exists;
}

static void test_push_then_identical_push(void **state)
{
    fixture *f = *state;
    wal_push_result result;
    pgd_error err = {0};

    assert_true(
        wal_archive_push(f->fs, f->seg_path, COMPRESS_LZ4, COMPRESS_LEVEL_DEFAULT, &result, &err));
    assert_int_equal(result, WAL_PUSH_STORED);
    assert_true(
        wal_archive_push(f->fs, f->seg_path, COMPRESS_ZSTD, COMPRESS_LEVEL_DEFAULT, &result, &err));
    assert_int_equal(result, WAL_PUSH_IDENTICAL);
    assert_false(stored(f, COMPRESS_ZSTD));
    assert_false(wal_archive_push(f->fs, f->other_path, COMPRESS_NONE, COMPRESS_LEVEL_DEFAULT,
                                  &result, &err));
    assert_non_null(strstr(err.msg, "with different content (as \"" SEG_NAME ".lz4\")"));
    assert_false(stored(f, COMPRESS_NONE));
}

static void test_other_file_stored_meanwhile_wins(void **state)
{
    fixture *f = *state;
    char other[LAYOUT_PATH_MAX];
    wal_push_result result;
    pgd_error err = {0};

    /* after our .lz4 is stored, "another push" stores its different file as .zst */
    other_push_after_ours(f, COMPRESS_ZSTD, f->other, other);
    assert_false(wal_archive_push(&f->r.base, f->seg_path, COMPRESS_LZ4, COMPRESS_LEVEL_DEFAULT,
                                  &result, &err));
    assert_non_null(strstr(err.msg, "different content"));
    assert_false(stored(f, COMPRESS_LZ4)); /* ours was taken back */
    assert_true(stored(f, COMPRESS_ZSTD)); /* theirs stands, alone */
    assert_false(stored(f, COMPRESS_NONE));
}

static void test_identical_file_stored_meanwhile_is_fine(void **state)
{
    fixture *f = *state;
    char other[LAYOUT_PATH_MAX];
    wal_push_result result;
    pgd_error err = {0};

    other_push_after_ours(f, COMPRESS_NONE, f->seg, other);
    assert_true(wal_archive_push(&f->r.base, f->seg_path, COMPRESS_LZ4, COMPRESS_LEVEL_DEFAULT,
                                 &result, &err));
    assert_int_equal(result, WAL_PUSH_STORED);
    assert_true(stored(f, COMPRESS_LZ4));
    assert_true(stored(f, COMPRESS_NONE));
}

/* A push of a new file looks under its own suffix, stores, then looks under the two others. */
static void test_new_file_looked_for_once_before(void **state)
{
    fixture *f = *state;
    wal_push_result result;
    pgd_error err = {0};

    assert_true(wal_archive_push(&f->r.base, f->seg_path, COMPRESS_LZ4, COMPRESS_LEVEL_DEFAULT,
                                 &result, &err));
    assert_int_equal(result, WAL_PUSH_STORED);
    assert_int_equal(f->r.lookups, 3);
    assert_int_equal(f->r.lists, 0);
    assert_true(stored(f, COMPRESS_LZ4));
}

/* A store that would replace an object: a different file under an archived name still fails. */
static void test_archived_file_kept_where_no_replace_is_ignored(void **state)
{
    fixture *f = *state;
    wal_push_result result;
    pgd_error err = {0};

    assert_true(
        wal_archive_push(f->fs, f->seg_path, COMPRESS_LZ4, COMPRESS_LEVEL_DEFAULT, &result, &err));
    f->r.ignore_no_replace = true;
    assert_false(wal_archive_push(&f->r.base, f->other_path, COMPRESS_LZ4, COMPRESS_LEVEL_DEFAULT,
                                  &result, &err));
    assert_non_null(strstr(err.msg, "with different content (as \"" SEG_NAME ".lz4\")"));
    err_clear(&err);
    assert_true(
        wal_archive_push(f->fs, f->seg_path, COMPRESS_LZ4, COMPRESS_LEVEL_DEFAULT, &result, &err));
    assert_int_equal(result, WAL_PUSH_IDENTICAL); /* the archived file is the first one still */
}

/*
 * The same file stored meanwhile with a compression earlier in the order:
 * ours goes, and the push says "identical". (Later in the order: both stay,
 * test_identical_file_stored_meanwhile_is_fine.)
 */
static void test_identical_file_earlier_in_the_order_stored_meanwhile(void **state)
{
    fixture *f = *state;
    char other[LAYOUT_PATH_MAX];
    wal_push_result result;
    pgd_error err = {0};

    other_push_after_ours(f, COMPRESS_LZ4, f->seg, other);
    assert_true(wal_archive_push(&f->r.base, f->seg_path, COMPRESS_ZSTD, COMPRESS_LEVEL_DEFAULT,
                                 &result, &err));
    assert_int_equal(result, WAL_PUSH_IDENTICAL);
    assert_true(stored(f, COMPRESS_LZ4));
    assert_false(stored(f, COMPRESS_ZSTD));
}

/* A re-push with a compression earlier in the order than the archived one keeps both. */
static void test_repush_earlier_in_the_order(void **state)
{
    fixture *f = *state;
    wal_push_result result;
    pgd_error err = {0};

    assert_true(
        wal_archive_push(f->fs, f->seg_path, COMPRESS_ZSTD, COMPRESS_LEVEL_DEFAULT, &result, &err));
    assert_int_equal(result, WAL_PUSH_STORED);
    assert_true(
        wal_archive_push(f->fs, f->seg_path, COMPRESS_LZ4, COMPRESS_LEVEL_DEFAULT, &result, &err));
    assert_int_equal(result, WAL_PUSH_STORED);
    assert_true(stored(f, COMPRESS_LZ4));
    assert_true(stored(f, COMPRESS_ZSTD));
}

static void test_fetch_not_archived_only_from_a_repository(void **state)
{
    fixture *f = *state;
    char dest[4300], empty[4300];
    wal_push_result result;
    pgd_error err = {0};
    storage *none;
    bool found = true;

    snprintf(dest, sizeof(dest), "%s/fetched", f->dir);
    snprintf(empty, sizeof(empty), "%s/empty", f->dir);
    none = storage_open(empty, NULL, &err);
    assert_false(wal_archive_fetch(none, SEG_NAME, dest, &found, &err));
    assert_non_null(strstr(err.msg, "holds no WAL and no backups"));
    storage_free(none);
    err_clear(&err);

    assert_true(
        wal_archive_push(f->fs, f->seg_path, COMPRESS_LZ4, COMPRESS_LEVEL_DEFAULT, &result, &err));
    assert_true(wal_archive_fetch(f->fs, "000000010000000000000022", dest, &found, &err));
    assert_false(found);
    assert_false(err.set);
    assert_true(wal_archive_fetch(f->fs, SEG_NAME, dest, &found, &err));
    assert_true(found);
}

/* One request to the repository for an archived file: opening it is the lookup (a HEAD on S3). */
static void test_fetch_looks_an_archived_file_up_once(void **state)
{
    fixture *f = *state;
    char dest[4300];
    wal_push_result result;
    pgd_error err = {0};
    bool found = false;

    snprintf(dest, sizeof(dest), "%s/fetched", f->dir);
    assert_true(
        wal_archive_push(f->fs, f->seg_path, COMPRESS_LZ4, COMPRESS_LEVEL_DEFAULT, &result, &err));
    assert_true(wal_archive_fetch(&f->r.base, SEG_NAME, dest, &found, &err));
    assert_true(found);
    assert_int_equal(f->r.lookups, 1);
    assert_int_equal(f->r.lists, 0);
}

/*
 * The prefetcher polls for segments not archived yet: one lookup per
 * compression and no listing each time, so no verdict on the repository
 * either (an empty one is no error here; wal_archive_fetch gives that).
 */
static void test_prefetch_fetch_of_a_missing_file_is_no_verdict(void **state)
{
    fixture *f = *state;
    char dest[4300], empty[4300];
    wal_file_sum sum;
    pgd_error err = {0};
    bool found = true;

    snprintf(dest, sizeof(dest), "%s/fetched", f->dir);
    snprintf(empty, sizeof(empty), "%s/empty", f->dir);
    storage_free(f->fs);
    f->fs = f->r.inner = storage_open(empty, NULL, &err);
    assert_non_null(f->fs);
    assert_true(wal_archive_fetch_sum(&f->r.base, SEG_NAME, dest, &found, &sum, &err));
    assert_false(found);
    assert_false(err.set);
    assert_int_equal(f->r.lookups, 3);
    assert_int_equal(f->r.lists, 0);
}

/*
 * The directory fsync after the rename fails: the object is visible, not
 * durable. The push fails (it found "its" object: before, that counted as
 * stored by another push, then identical). The next push finds the same
 * file and fsyncs it and its directory before saying "identical".
 */
static void test_a_push_not_made_durable_is_not_acknowledged(void **state)
{
    fixture *f = *state;
    wal_push_result result;
    pgd_error err = {0};
    char path[LAYOUT_PATH_MAX], dir[PATH_MAX], want[PATH_MAX + LAYOUT_PATH_MAX];

    /* the timeline's directory exists: only the fsync after the rename fails */
    assert_true(storage_put(f->fs, "wal/00000001/placeholder", "x", 1, 0, &err));
    fail_dir_fsync = true;
    assert_false(
        wal_archive_push(f->fs, f->seg_path, COMPRESS_LZ4, COMPRESS_LEVEL_DEFAULT, &result, &err));
    fail_dir_fsync = false;
    assert_non_null(strstr(err.msg, "could not fsync directory"));
    assert_true(stored(f, COMPRESS_LZ4));

    err_clear(&err);
    synced_dirs_n = 0;
    assert_true(
        wal_archive_push(f->fs, f->seg_path, COMPRESS_LZ4, COMPRESS_LEVEL_DEFAULT, &result, &err));
    assert_int_equal(result, WAL_PUSH_IDENTICAL);
    snprintf(want, sizeof(want), "%s/repo", f->dir);
    assert_non_null(realpath(want, dir));
    layout_wal_path(SEG_NAME, COMPRESS_LZ4, path, sizeof(path));
    *strrchr(path, '/') = '\0';
    snprintf(want, sizeof(want), "%s/%s", dir, path);
    assert_true(dir_was_synced(want));
}

/* A push sweeps after every 64th segment and after any other kind of file. */
static void test_sweep_due(void **state)
{
    (void)state;
    assert_true(wal_archive_sweep_due("000000010000000000000000"));
    assert_true(wal_archive_sweep_due("000000010000000000000040"));
    assert_true(wal_archive_sweep_due("0000000100000003000000C0"));
    assert_false(wal_archive_sweep_due("000000010000000000000001"));
    assert_false(wal_archive_sweep_due("00000001000000000000003F"));
    assert_false(wal_archive_sweep_due("0000000100000003000000FF"));
    assert_true(wal_archive_sweep_due("00000002.history"));
    assert_true(wal_archive_sweep_due("000000010000000000000001.partial"));
    assert_true(wal_archive_sweep_due("000000010000000000000001.00000028.backup"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sweep_due),
        cmocka_unit_test_setup_teardown(test_push_then_identical_push, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_file_stored_meanwhile_wins, setup, teardown),
        cmocka_unit_test_setup_teardown(test_new_file_looked_for_once_before, setup, teardown),
        cmocka_unit_test_setup_teardown(test_archived_file_kept_where_no_replace_is_ignored, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_identical_file_earlier_in_the_order_stored_meanwhile,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_repush_earlier_in_the_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_identical_file_stored_meanwhile_is_fine, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_fetch_not_archived_only_from_a_repository, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_fetch_looks_an_archived_file_up_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prefetch_fetch_of_a_missing_file_is_no_verdict, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_push_not_made_durable_is_not_acknowledged, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
