/*
 * test_partition_read.c - covers src/repo/partition_read.c: a partition
 * stored through the fs driver in a temporary repository is read, its
 * entries checked against the manifest and its files' bytes handed over;
 * a missing, truncated or damaged partition, a file whose CRC-32C is not
 * the manifest's, and a tar header that declares another size than the
 * manifest's are refused, each with the message restore and verify share.
 */
#include "helpers.h"

#include "compress/compress.h"
#include "repo/layout.h"
#include "repo/partition_read.h"
#include "repo/tar.h"
#include "util/crc32c.h"

#define ID   "20261129T000000F"
#define PART "part_0001.tar"

static const char data[] = "15\n";

/* What the callbacks saw. */
typedef struct seen {
    char bytes[64];
    size_t len;
    size_t files;
    size_t links;
} seen;

static bool collect_data(void *arg, const char *buf, size_t n, uint64_t off, pgd_error *err)
{
    seen *s = arg;

    (void)err;
    assert_int_equal(off, s->len);
    assert_true(s->len + n <= sizeof(s->bytes));
    memcpy(s->bytes + s->len, buf, n);
    s->len += n;
    return true;
}

static bool collect_file(void *arg, partition_read *pr, const partition_read_file *pf,
                         pgd_error *err)
{
    seen *s = arg;
    partition_read_sink sink = {.data = collect_data, .arg = s};

    assert_string_equal(pf->path, "PG_VERSION");
    s->files++;
    return partition_read_file_data(pr, &sink, err);
}

static void collect_link(void *arg, size_t idx)
{
    seen *s = arg;

    assert_int_equal(idx, 0);
    s->links++;
}

static const partition_read_ops collect_ops = {
    .strict_dirs = true, .file = collect_file, .link_seen = collect_link};

/* A manifest for a partition holding base/, PG_VERSION (data) and link -> target. */
static void manifest_for(manifest *m, const char *part_name, const mem_out *stored)
{
    manifest_file dir = {.path = "base", .is_dir = true, .mode = 0700};
    manifest_file f = {.path = "PG_VERSION", .size = 3, .mode = 0600, .partition = 1};
    manifest_link l = {.path = "link", .target = "target", .partition = 1};

    manifest_init(m);
    f.crc = crc32c(data, 3);
    manifest_add_partition(m, part_name, stored->len, crc32c(stored->data, stored->len));
    manifest_add_file(m, &dir);
    manifest_add_file(m, &f);
    manifest_add_link(m, &l);
    manifest_build_index(m);
}

/*
 * The partition's stored bytes: base/, PG_VERSION whose header declares
 * `declared` bytes (the data, then zeros up to that size), link -> target,
 * through `kind`'s compressor.
 */
static void tar_partition(mem_out *stored, compress_kind kind, uint64_t declared)
{
    tar_entry d = {.path = "base", .mode = 0700, .type = TAR_DIR};
    tar_entry e = {.path = "PG_VERSION", .size = declared, .mode = 0600, .type = TAR_FILE};
    tar_entry l = {.path = "link", .linkpath = "target", .mode = 0777, .type = TAR_SYMLINK};
    pgd_error err = {0};
    out_stream *out;

    mem_out_init(stored);
    out = compress_out_new(kind, 1, &stored->base, PART, &err);
    assert_non_null(out);
    assert_true(tar_write_header(out, &d, &err));
    assert_true(tar_write_header(out, &e, &err));
    assert_true(out_write(out, data, declared < 3 ? (size_t)declared : 3, &err));
    assert_true(tar_write_zeros(
        out, declared - (declared < 3 ? declared : 3) + tar_padding(declared), &err));
    assert_true(tar_write_header(out, &l, &err));
    assert_true(tar_write_end(out, &err));
    assert_true(out_close(out, &err));
}

static void store(storage *repo, const char *part_name, const void *bytes, size_t len)
{
    char path[LAYOUT_PATH_MAX];
    pgd_error err = {0};

    layout_backup_object(ID, part_name, path, sizeof(path));
    assert_true(storage_put(repo, path, bytes, len, 0, &err));
}

/* Read partition 1 of `m` from `repo` with the collecting callbacks. */
static bool read_part(storage *repo, const manifest *m, seen *s, partition_read *pr, pgd_error *err)
{
    static char buf[4]; /* smaller than a file: its data comes in several pieces */

    *pr = (partition_read){.repo = repo,
                           .backup_id = ID,
                           .m = m,
                           .part_idx = 0,
                           .buf = buf,
                           .buflen = sizeof(buf),
                           .ops = &collect_ops,
                           .arg = s};
    memset(s, 0, sizeof(*s));
    return partition_read_run(pr, err);
}

static void check_good(compress_kind kind, const char *part_name)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    mem_out stored;
    manifest m;
    partition_read pr;
    seen s;
    pgd_error err = {0};

    tar_partition(&stored, kind, 3);
    store(repo, part_name, stored.data, stored.len);
    manifest_for(&m, part_name, &stored);
    assert_true(read_part(repo, &m, &s, &pr, &err));
    assert_false(err.set);
    assert_int_equal(s.files, 1);
    assert_int_equal(s.links, 1);
    assert_int_equal(s.len, 3);
    assert_memory_equal(s.bytes, data, 3);
    manifest_free(&m);
    mem_out_free(&stored);
    storage_free(repo);
    rm_rf(dir);
}

static void test_a_sound_partition_hands_over_every_entry(void **state)
{
    (void)state;
    check_good(COMPRESS_NONE, PART);
}

static void test_a_compressed_partition_is_decompressed(void **state)
{
    (void)state;
    check_good(COMPRESS_LZ4, PART ".lz4");
    check_good(COMPRESS_ZSTD, PART ".zst");
}

/*
 * A partition stored with some damage (`damage` may be NULL); the manifest
 * gives the size and CRC-32C of the sound bytes, or with
 * `manifest_of_damaged` those of the damaged ones, its CRC xor-ed with
 * `crc_xor`. Returns whether the read succeeded, the error in *err.
 */
typedef void (*damage_fn)(mem_out *stored);

static bool read_damaged(damage_fn damage, bool manifest_of_damaged, uint32_t crc_xor,
                         pgd_error *err)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    mem_out stored;
    manifest m;
    partition_read pr;
    seen s;
    bool ok;

    tar_partition(&stored, COMPRESS_NONE, 3);
    if (!manifest_of_damaged)
        manifest_for(&m, PART, &stored);
    if (damage != NULL)
        damage(&stored);
    if (manifest_of_damaged)
        manifest_for(&m, PART, &stored);
    m.partitions[0].crc ^= crc_xor;
    store(repo, PART, stored.data, stored.len);
    ok = read_part(repo, &m, &s, &pr, err);
    assert_false(pr.open_failed);
    manifest_free(&m);
    mem_out_free(&stored);
    storage_free(repo);
    rm_rf(dir);
    return ok;
}

/* The end-of-archive blocks cut off. */
static void cut_end(mem_out *stored)
{
    stored->len -= 2 * TAR_BLOCK;
}

/* A byte of PG_VERSION's data changed: the header block is the second 512 bytes. */
static void flip_data(mem_out *stored)
{
    stored->data[2 * TAR_BLOCK] ^= 1;
}

static void test_a_truncated_partition_is_refused(void **state)
{
    pgd_error err = {0};

    (void)state;
    assert_false(read_damaged(cut_end, false, 0, &err));
    assert_non_null(strstr(err.msg, PART));
    /* cut to a size whose CRC the manifest gives: the archive's own end is missing */
    err_clear(&err);
    assert_false(read_damaged(cut_end, true, 0, &err));
    assert_non_null(strstr(err.msg, PART));
}

static void test_a_file_whose_crc_is_not_the_manifests_is_refused(void **state)
{
    pgd_error err = {0};
    char want[512];

    (void)state;
    /* the partition as stored is what the manifest says; the file in it is not */
    assert_false(read_damaged(flip_data, true, 0, &err));
    snprintf(want, sizeof(want),
             "checksum mismatch for file \"PG_VERSION\" in backup \"" ID "\" (partition \"" PART
             "\"): %08x, the manifest says %08x",
             crc32c("05\n", 3), crc32c(data, 3));
    assert_string_equal(err.msg, want);
}

static void test_a_partition_whose_crc_is_not_the_manifests_is_refused(void **state)
{
    pgd_error err = {0};

    (void)state;
    /* every entry sound: only the partition's own CRC-32C, checked at its end, differs */
    assert_false(read_damaged(NULL, false, 1, &err));
    assert_non_null(strstr(err.msg, "checksum mismatch in \""));
    assert_non_null(strstr(err.msg, "backups/" ID "/" PART "\""));
}

static void test_a_missing_partition_is_named(void **state)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    mem_out stored;
    manifest m;
    partition_read pr;
    seen s;
    pgd_error err = {0};
    char want[8192];

    (void)state;
    tar_partition(&stored, COMPRESS_NONE, 3);
    manifest_for(&m, PART, &stored);
    assert_false(read_part(repo, &m, &s, &pr, &err));
    assert_false(pr.open_failed);
    snprintf(want, sizeof(want),
             "partition \"" PART "\" of backup \"" ID "\" is missing from repository \"%s\"",
             repo->uri);
    assert_string_equal(err.msg, want);
    assert_int_equal(s.files, 0);
    manifest_free(&m);
    mem_out_free(&stored);
    storage_free(repo);
    rm_rf(dir);
}

/* PG_VERSION's header declares `declared` bytes where the manifest says 3. */
static bool read_declaring(uint64_t declared, size_t keep, seen *s, pgd_error *err)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    tar_entry e = {.path = "PG_VERSION", .size = declared, .mode = 0600, .type = TAR_FILE};
    tar_entry d = {.path = "base", .mode = 0700, .type = TAR_DIR};
    mem_out stored;
    manifest m;
    partition_read pr;
    bool ok;

    if (keep > 0) {
        /* a header that declares more than is stored: only `keep` bytes of data follow */
        mem_out_init(&stored);
        assert_true(tar_write_header(&stored.base, &d, err));
        assert_true(tar_write_header(&stored.base, &e, err));
        assert_true(tar_write_zeros(&stored.base, keep, err));
    } else {
        tar_partition(&stored, COMPRESS_NONE, declared);
    }
    store(repo, PART, stored.data, stored.len);
    manifest_for(&m, PART, &stored);
    ok = read_part(repo, &m, s, &pr, err);
    manifest_free(&m);
    mem_out_free(&stored);
    storage_free(repo);
    rm_rf(dir);
    return ok;
}

/*
 * A header that declares more than the manifest's size (the manifest's
 * bytes and CRC-32C would pass, the rest would be skipped unseen) or less
 * is refused before any of the entry's data is handed over.
 */
static void test_a_tar_header_that_declares_another_size_is_refused(void **state)
{
    pgd_error err = {0};
    seen s;

    (void)state;
    assert_false(read_declaring(8192, 0, &s, &err));
    assert_string_equal(err.msg, "tar header of file \"PG_VERSION\" in partition \"" PART
                                 "\" of backup \"" ID "\" declares 8192 bytes; the manifest "
                                 "says 3");
    assert_int_equal(s.files, 0);
    err_clear(&err);
    assert_false(read_declaring(53687091200, TAR_BLOCK, &s, &err)); /* 50 GiB */
    assert_string_equal(err.msg, "tar header of file \"PG_VERSION\" in partition \"" PART
                                 "\" of backup \"" ID "\" declares 53687091200 bytes; the "
                                 "manifest says 3");
    assert_int_equal(s.files, 0);
    err_clear(&err);
    assert_false(read_declaring(2, 0, &s, &err));
    assert_non_null(strstr(err.msg, "declares 2 bytes; the manifest says 3"));
    assert_int_equal(s.files, 0);
}

/* An entry the manifest does not list, and a hard link, are refused. */
static void test_entries_outside_the_manifest_are_refused(void **state)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    tar_entry x = {.path = "extra", .size = 0, .mode = 0600, .type = TAR_FILE};
    tar_entry h = {.path = "hard", .linkpath = "PG_VERSION", .mode = 0600, .type = TAR_HARDLINK};
    tar_entry *entries[] = {&x, &h};
    const char *want[] = {"file \"extra\" in partition \"" PART "\" of backup \"" ID
                          "\" is not in the manifest",
                          "refusing hard link \"hard\" -> \"PG_VERSION\" in partition \"" PART
                          "\" of backup \"" ID "\": pgdirect never writes one"};

    (void)state;
    for (size_t i = 0; i < 2; i++) {
        mem_out stored;
        manifest m;
        partition_read pr;
        seen s;
        pgd_error err = {0};

        mem_out_init(&stored);
        assert_true(tar_write_header(&stored.base, entries[i], &err));
        assert_true(tar_write_end(&stored.base, &err));
        store(repo, PART, stored.data, stored.len);
        manifest_for(&m, PART, &stored);
        assert_false(read_part(repo, &m, &s, &pr, &err));
        assert_string_equal(err.msg, want[i]);
        manifest_free(&m);
        mem_out_free(&stored);
    }
    storage_free(repo);
    rm_rf(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_sound_partition_hands_over_every_entry),
        cmocka_unit_test(test_a_compressed_partition_is_decompressed),
        cmocka_unit_test(test_a_truncated_partition_is_refused),
        cmocka_unit_test(test_a_file_whose_crc_is_not_the_manifests_is_refused),
        cmocka_unit_test(test_a_partition_whose_crc_is_not_the_manifests_is_refused),
        cmocka_unit_test(test_a_missing_partition_is_named),
        cmocka_unit_test(test_a_tar_header_that_declares_another_size_is_refused),
        cmocka_unit_test(test_entries_outside_the_manifest_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
