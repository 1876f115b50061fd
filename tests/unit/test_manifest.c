/* test_manifest.c - covers src/repo/manifest.c: round trip and validation. */
#include "helpers.h"

#include "repo/increment.h"
#include "repo/manifest.h"

static void test_round_trip(void **state)
{
    manifest m, back;
    pgd_error err = {0};
    char *json;
    manifest_file f1 = {.path = "base/1/1259",
                        .size = 81920,
                        .mode = 0600,
                        .mtime = 123,
                        .crc = 0xdeadbeef,
                        .partition = 1};
    manifest_file d1 = {.path = "base", .is_dir = true, .mode = 0700, .mtime = 5};
    manifest_file f2 = {.path = "pg_tblspc/16384/PG_15_202209061/5/16385",
                        .size = 0,
                        .mode = 0600,
                        .mtime = 7,
                        .crc = 0,
                        .partition = 2};

    (void)state;
    manifest_init(&m);
    m.id = strdup("20261129T215959F");
    m.compression = COMPRESS_ZSTD;
    m.backup_label = strdup("START WAL LOCATION: 0/2000028 (file 000000010000000000000002)\n");
    m.tablespace_map = strdup("16384 /srv/ts1\n");
    manifest_add_partition(&m, "part_0001.tar.zst", 1000, 0x01020304);
    manifest_add_partition(&m, "part_0002.tar.zst", 2000, 0xffffffff);
    manifest_add_tablespace(&m, 16384, "ts1", "/srv/ts1");
    manifest_add_file(&m, &f1);
    manifest_add_file(&m, &d1);
    manifest_add_file(&m, &f2);
    assert_true(manifest_to_json(&m, &json, &err));

    assert_true(manifest_from_json(&back, json, "test manifest", &err));
    assert_string_equal(back.id, "20261129T215959F");
    assert_int_equal(back.compression, COMPRESS_ZSTD);
    assert_string_equal(back.backup_label, m.backup_label);
    assert_string_equal(back.tablespace_map, m.tablespace_map);
    assert_int_equal(back.npartitions, 2);
    assert_int_equal(back.partitions[1].crc, 0xffffffff);
    assert_int_equal(back.partitions[0].size, 1000);
    assert_int_equal(back.ntablespaces, 1);
    assert_int_equal(back.tablespaces[0].oid, 16384);
    assert_string_equal(back.tablespaces[0].location, "/srv/ts1");
    assert_int_equal(back.nfiles, 3);
    manifest_build_index(&back);
    {
        long i = manifest_find(&back, "base/1/1259");
        assert_true(i >= 0);
        assert_int_equal(back.files[i].crc, 0xdeadbeef);
        assert_int_equal(back.files[i].size, 81920);
        assert_int_equal(back.files[i].mode, 0600);
        assert_int_equal(back.files[i].partition, 1);
        i = manifest_find(&back, "base");
        assert_true(i >= 0 && back.files[i].is_dir);
        assert_int_equal(manifest_find(&back, "nope"), -1);
    }
    free(json);
    manifest_free(&m);
    manifest_free(&back);
}

/* Links round-trip as "link" entries of files[], kept apart from files in memory. */
static void test_links_round_trip(void **state)
{
    manifest m, back;
    pgd_error err = {0};
    char *json;
    manifest_file f = {.path = "base/1/1259", .size = 1, .mode = 0600, .partition = 1};
    manifest_link l1 = {.path = "postgresql.conf",
                        .target = "/etc/postgresql/15/main/postgresql.conf",
                        .mode = 0777,
                        .mtime = 9,
                        .partition = 1};
    manifest_link l2 = {.path = "loop", .target = ".", .mode = 0777, .partition = 1};

    (void)state;
    manifest_init(&m);
    m.id = strdup("20261129T215959F");
    manifest_add_partition(&m, "part_0001.tar.lz4", 1000, 1);
    manifest_add_file(&m, &f);
    manifest_add_link(&m, &l1);
    manifest_add_link(&m, &l2);
    assert_true(manifest_to_json(&m, &json, &err));
    assert_non_null(strstr(json, "\"type\":\"link\""));
    assert_true(manifest_from_json(&back, json, "test manifest", &err));
    assert_int_equal(back.nfiles, 1);
    assert_int_equal(back.nlinks, 2);
    manifest_build_index(&back);
    assert_int_equal(manifest_find_link(&back, "loop"), 0);
    assert_string_equal(back.links[1].path, "postgresql.conf");
    assert_string_equal(back.links[1].target, "/etc/postgresql/15/main/postgresql.conf");
    assert_int_equal(back.links[1].mtime, 9);
    assert_int_equal(back.links[1].partition, 1);
    assert_int_equal(manifest_find_link(&back, "base/1/1259"), -1);
    assert_int_equal(manifest_find(&back, "loop"), -1);
    free(json);
    manifest_free(&m);
    manifest_free(&back);
}

/* A file with pages that failed their data checksum: the count and the first block numbers. */
static void test_bad_pages_round_trip(void **state)
{
    manifest m, back;
    pgd_error err = {0};
    char *json;
    manifest_file bad = {.path = "base/5/16384.1",
                         .size = 8192 * 20,
                         .mode = 0600,
                         .partition = 1,
                         .pages_bad = MANIFEST_BAD_BLOCKS_MAX + 2};
    manifest_file good = {.path = "base/5/16385", .size = 8192, .mode = 0600, .partition = 1};

    (void)state;
    for (uint32_t b = 0; b < MANIFEST_BAD_BLOCKS_MAX; b++)
        bad.bad_blocks[b] = 131072 + 2 * b;
    manifest_init(&m);
    m.id = strdup("20261129T215959F");
    manifest_add_partition(&m, "part_0001.tar.lz4", 1000, 1);
    manifest_add_file(&m, &bad);
    manifest_add_file(&m, &good);
    assert_true(manifest_to_json(&m, &json, &err));
    assert_non_null(strstr(json, "\"checksum_errors\":10"));
    assert_non_null(strstr(json, "\"bad_blocks\":[131072,131074,"));
    assert_int_equal(strstr(strstr(json, "16385"), "checksum_errors"), NULL); /* only when bad */
    assert_true(manifest_from_json(&back, json, "test manifest", &err));
    assert_int_equal(back.files[0].pages_bad, MANIFEST_BAD_BLOCKS_MAX + 2);
    assert_memory_equal(back.files[0].bad_blocks, bad.bad_blocks, sizeof(bad.bad_blocks));
    assert_int_equal(back.files[1].pages_bad, 0);
    free(json);
    manifest_free(&m);
    manifest_free(&back);
}

/* A manifest written before links were recorded (no "link" entry) reads as one without links. */
static void test_manifest_without_links_reads(void **state)
{
    manifest m;
    pgd_error err = {0};

    (void)state;
    assert_true(manifest_from_json(
        &m,
        "{\"format\": 1, \"id\": \"a\", \"compression\": \"lz4\", \"partitions\": [{\"name\": "
        "\"part_0001.tar.lz4\", \"size\": 1, \"crc32c\": \"00000000\"}], \"tablespaces\": [], "
        "\"files\": [{\"path\": \"x\", \"type\": \"file\", \"mode\": 384, \"mtime\": 0, "
        "\"size\": 1, \"crc32c\": \"00000000\", \"partition\": 1}], \"backup_label\": \"\", "
        "\"tablespace_map\": \"\"}",
        "old manifest", &err));
    assert_int_equal(m.nfiles, 1);
    assert_int_equal(m.nlinks, 0);
    manifest_build_index(&m);
    assert_int_equal(manifest_find_link(&m, "x"), -1);
    manifest_free(&m);
}

static void expect_invalid(const char *json, const char *fragment)
{
    manifest m;
    pgd_error err = {0};

    assert_false(manifest_from_json(&m, json, "manifest of backup \"X\"", &err));
    assert_non_null(strstr(err.msg, fragment));
}

static void test_invalid_manifests_are_refused(void **state)
{
    (void)state;
    expect_invalid("{", "could not parse manifest of backup \"X\"");
    expect_invalid("{\"format\": 2, \"id\": \"a\", \"compression\": \"lz4\", \"partitions\": [], "
                   "\"tablespaces\": [], \"files\": []}",
                   "format 2");
    expect_invalid("{\"format\": 1, \"id\": \"a\", \"compression\": \"rar\", \"partitions\": [], "
                   "\"tablespaces\": [], \"files\": []}",
                   "unknown compression");
    /* a file pointing at a partition that does not exist */
    expect_invalid("{\"format\": 1, \"id\": \"a\", \"compression\": \"lz4\", \"partitions\": [], "
                   "\"tablespaces\": [], \"files\": [{\"path\": \"x\", \"type\": \"file\", "
                   "\"mode\": 384, \"mtime\": 0, \"size\": 1, \"crc32c\": \"00000000\", "
                   "\"partition\": 1}]}",
                   "invalid file entry \"x\"");
    expect_invalid("{\"format\": 1, \"id\": \"a\", \"compression\": \"lz4\", \"partitions\": "
                   "[{\"name\": \"p\", \"size\": 1, \"crc32c\": \"zz\"}], \"tablespaces\": [], "
                   "\"files\": []}",
                   "invalid partition 0");
    /* a link without a target, and one in a partition that does not exist */
    expect_invalid("{\"format\": 1, \"id\": \"a\", \"compression\": \"lz4\", \"partitions\": [], "
                   "\"tablespaces\": [], \"files\": [{\"path\": \"l\", \"type\": \"link\", "
                   "\"mode\": 511, \"mtime\": 0, \"partition\": 1}]}",
                   "invalid link entry \"l\"");
    expect_invalid("{\"format\": 1, \"id\": \"a\", \"compression\": \"lz4\", \"partitions\": [], "
                   "\"tablespaces\": [], \"files\": [{\"path\": \"l\", \"type\": \"link\", "
                   "\"target\": \".\", \"mode\": 511, \"mtime\": 0, \"partition\": 1}]}",
                   "invalid link entry \"l\"");
}

/* A delta's manifest: format 2, parent, gone[], increments; and what a reader must refuse. */
static void test_delta_round_trip(void **state)
{
    manifest m, back;
    pgd_error err = {0};
    char *json, *bad;
    manifest_file inc = {.path = "base/5/16384",
                         .size = increment_size(2),
                         .mode = 0600,
                         .crc = 0x11223344,
                         .partition = 1,
                         .increment = true,
                         .file_size = 5 * INCREMENT_PAGE_SIZE,
                         .inc_blocks = 2};
    manifest_file whole = {.path = "PG_VERSION", .size = 3, .mode = 0600, .partition = 1};
    long i;

    (void)state;
    manifest_init(&m);
    m.id = strdup("20261129T220000D");
    m.delta = true;
    m.parent = strdup("20261129T215959F");
    manifest_add_gone(&m, "base/5/99999");
    manifest_add_partition(&m, "part_0001.tar", 10, 1);
    manifest_add_file(&m, &inc);
    manifest_add_file(&m, &whole);
    assert_true(manifest_to_json(&m, &json, &err));
    assert_non_null(strstr(json, "\"format\": 2"));
    assert_true(manifest_from_json(&back, json, "test manifest", &err));
    assert_true(back.delta);
    assert_string_equal(back.parent, "20261129T215959F");
    assert_int_equal(back.ngone, 1);
    assert_string_equal(back.gone[0], "base/5/99999");
    manifest_build_index(&back);
    i = manifest_find(&back, "base/5/16384");
    assert_true(i >= 0 && back.files[i].increment);
    assert_int_equal(back.files[i].file_size, 5 * INCREMENT_PAGE_SIZE);
    assert_int_equal(back.files[i].inc_blocks, 2);
    i = manifest_find(&back, "PG_VERSION");
    assert_true(i >= 0 && !back.files[i].increment);
    assert_int_equal(back.files[i].file_size, 3);
    manifest_free(&back);

    /* format 2 that calls itself a full, and a format 1 with an increment, are refused */
    bad = strdup(json);
    memcpy(strstr(bad, "\"delta\""), "\"full\" ", 7);
    assert_false(manifest_from_json(&back, bad, "test manifest", &err));
    err_clear(&err);
    free(bad);
    m.delta = false;
    free(json);
    assert_true(manifest_to_json(&m, &json, &err));
    assert_false(manifest_from_json(&back, json, "test manifest", &err));
    assert_non_null(strstr(err.msg, "base/5/16384"));
    free(json);
    manifest_free(&m);
}

/* databases[]: recorded (even empty) or absent (an older backup), and checked on the way in. */
static void test_databases_round_trip(void **state)
{
    manifest m, back;
    pgd_error err = {0};
    char *json;

    (void)state;
    manifest_init(&m);
    m.id = strdup("20261129T215959F");
    manifest_add_partition(&m, "part_0001.tar.lz4", 1000, 1);
    assert_true(manifest_to_json(&m, &json, &err));
    assert_null(strstr(json, "databases"));
    assert_true(manifest_from_json(&back, json, "test manifest", &err));
    assert_false(back.has_databases);
    manifest_free(&back);
    free(json);

    manifest_add_database(&m, 1, "template1", true);
    manifest_add_database(&m, 16390, "app \"x\"", false);
    assert_true(manifest_to_json(&m, &json, &err));
    assert_true(manifest_from_json(&back, json, "test manifest", &err));
    assert_true(back.has_databases);
    assert_int_equal(back.ndatabases, 2);
    assert_int_equal(back.databases[1].oid, 16390);
    assert_string_equal(back.databases[1].name, "app \"x\"");
    assert_false(back.databases[1].is_template);
    assert_true(back.databases[0].is_template);
    manifest_free(&back);
    free(json);
    manifest_free(&m);

    /* a bad entry is refused, naming it */
    assert_false(
        manifest_from_json(&back,
                           "{\"format\":1,\"id\":\"x\",\"compression\":\"lz4\","
                           "\"partitions\":[],\"tablespaces\":[],\"files\":[],"
                           "\"databases\":[{\"oid\":0,\"name\":\"a\",\"template\":false}]}",
                           "test manifest", &err));
    assert_non_null(strstr(err.msg, "invalid database 0"));
    err_clear(&err);
    assert_false(manifest_from_json(&back,
                                    "{\"format\":1,\"id\":\"x\",\"compression\":\"lz4\","
                                    "\"partitions\":[],\"tablespaces\":[],\"files\":[],"
                                    "\"databases\":{}}",
                                    "test manifest", &err));
    assert_non_null(strstr(err.msg, "invalid databases"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_invalid_manifests_are_refused),
        cmocka_unit_test(test_links_round_trip),
        cmocka_unit_test(test_manifest_without_links_reads),
        cmocka_unit_test(test_bad_pages_round_trip),
        cmocka_unit_test(test_delta_round_trip),
        cmocka_unit_test(test_databases_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
