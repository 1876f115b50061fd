/*
 * test_pg_manifest.c - covers src/repo/pg_manifest.c: the backup_manifest
 * is in the format of the backed-up server's release (version 1 up to
 * PostgreSQL 16, version 2 with the System-Identifier from 17), valid JSON,
 * and its last line is the SHA-256 of the rest, as PostgreSQL's parser
 * (src/common/parse_manifest.c) checks it.
 */
#include "helpers.h"

#include <jansson.h>
#include <openssl/evp.h>

#include "repo/pg_manifest.h"

#define SYSID "7412345678901234567"

typedef struct fixture {
    manifest m;
    backup_info bi;
} fixture;

static int fixture_setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    manifest_file data = {.path = "base/5/16384",
                          .size = 8192,
                          .mode = 0600,
                          .mtime = 1700000000,
                          .crc = 0x04030201,
                          .partition = 1};
    manifest_file dir = {.path = "base/5", .is_dir = true, .mode = 0700, .mtime = 1700000000};

    manifest_init(&f->m);
    f->m.backup_label = strdup("START WAL LOCATION: 0/2000028 (file 000000010000000000000002)\n"
                               "START TIMELINE: 1\n");
    f->m.tablespace_map = strdup("");
    manifest_add_file(&f->m, &dir);
    manifest_add_file(&f->m, &data);
    f->bi.stop_time = 1700000100;
    f->bi.timeline = 1;
    f->bi.start_lsn = 0x2000028;
    f->bi.stop_lsn = 0x2000138;
    snprintf(f->bi.system_identifier, sizeof(f->bi.system_identifier), SYSID);
    *state = f;
    return 0;
}

static int fixture_teardown(void **state)
{
    fixture *f = *state;

    manifest_free(&f->m);
    free(f);
    return 0;
}

static char *build(fixture *f, int pg_version_num)
{
    pgd_error err = {0};
    char *out = NULL;

    f->bi.pg_version_num = pg_version_num;
    assert_true(pg_manifest_build(&f->m, &f->bi, &out, &err));
    assert_false(err.set);
    return out;
}

static void test_version_follows_the_server(void **state)
{
    (void)state;
    assert_int_equal(pg_manifest_version(140013), 1);
    assert_int_equal(pg_manifest_version(150008), 1);
    assert_int_equal(pg_manifest_version(160099), 1);
    assert_int_equal(pg_manifest_version(170000), 2);
    assert_int_equal(pg_manifest_version(180004), 2);
}

static void test_version_1_up_to_16_has_no_system_identifier(void **state)
{
    fixture *f = *state;
    int versions[] = {140013, 150008, 160004};

    for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
        char *out = build(f, versions[i]);
        assert_true(strncmp(out,
                            "{ \"PostgreSQL-Backup-Manifest-Version\": 1,\n"
                            "\"Files\": [\n{ \"Path\": \"backup_label\", ",
                            strlen("{ \"PostgreSQL-Backup-Manifest-Version\": 1,\n"
                                   "\"Files\": [\n{ \"Path\": \"backup_label\", ")) == 0);
        assert_null(strstr(out, "System-Identifier"));
        free(out);
    }
}

static void test_version_2_from_17_carries_the_system_identifier(void **state)
{
    fixture *f = *state;
    int versions[] = {170000, 170006, 180004};
    const char *head = "{ \"PostgreSQL-Backup-Manifest-Version\": 2,\n"
                       "\"System-Identifier\": " SYSID ",\n"
                       "\"Files\": [\n{ \"Path\": \"backup_label\", ";

    for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
        char *out = build(f, versions[i]);
        assert_true(strncmp(out, head, strlen(head)) == 0);
        free(out);
    }
}

/* Every field PostgreSQL's parser reads, with the types it expects. */
static void test_is_json_with_the_fields_postgresql_reads(void **state)
{
    fixture *f = *state;
    char *out = build(f, 170002);
    json_error_t jerr;
    json_t *root = json_loads(out, 0, &jerr), *files, *file, *ranges, *range;

    assert_non_null(root);
    assert_int_equal(
        json_integer_value(json_object_get(root, "PostgreSQL-Backup-Manifest-Version")), 2);
    assert_true(json_is_integer(json_object_get(root, "System-Identifier")));
    assert_int_equal(json_integer_value(json_object_get(root, "System-Identifier")),
                     7412345678901234567LL);
    files = json_object_get(root, "Files");
    assert_int_equal(json_array_size(files), 2); /* backup_label and the data file, not the dir */
    file = json_array_get(files, 1);
    assert_string_equal(json_string_value(json_object_get(file, "Path")), "base/5/16384");
    assert_int_equal(json_integer_value(json_object_get(file, "Size")), 8192);
    assert_string_equal(json_string_value(json_object_get(file, "Last-Modified")),
                        "2023-11-14 22:13:20 GMT");
    assert_string_equal(json_string_value(json_object_get(file, "Checksum-Algorithm")), "CRC32C");
    assert_string_equal(json_string_value(json_object_get(file, "Checksum")), "01020304");
    ranges = json_object_get(root, "WAL-Ranges");
    assert_int_equal(json_array_size(ranges), 1);
    range = json_array_get(ranges, 0);
    assert_int_equal(json_integer_value(json_object_get(range, "Timeline")), 1);
    assert_string_equal(json_string_value(json_object_get(range, "Start-LSN")), "0/2000028");
    assert_string_equal(json_string_value(json_object_get(range, "End-LSN")), "0/2000138");
    json_decref(root);
    free(out);
}

/* The last line holds the SHA-256 of everything up to and including the newline before it. */
static void test_manifest_checksum_covers_all_but_the_last_line(void **state)
{
    fixture *f = *state;
    int versions[] = {160004, 180004};

    for (size_t v = 0; v < sizeof(versions) / sizeof(versions[0]); v++) {
        char *out = build(f, versions[v]);
        size_t len = strlen(out), penultimate = 0;
        unsigned char digest[32];
        unsigned int dlen = 0;
        char hex[65], want[128];

        assert_true(len > 0 && out[len - 1] == '\n');
        for (size_t i = 0; i + 1 < len; i++)
            if (out[i] == '\n')
                penultimate = i;
        assert_int_equal(EVP_Digest(out, penultimate + 1, digest, &dlen, EVP_sha256(), NULL), 1);
        for (int i = 0; i < 32; i++)
            snprintf(hex + 2 * i, 3, "%02x", digest[i]);
        snprintf(want, sizeof(want), "\"Manifest-Checksum\": \"%s\"}\n", hex);
        assert_string_equal(out + penultimate + 1, want);
        free(out);
    }
}

static void test_version_2_refuses_a_system_identifier_that_is_not_a_number(void **state)
{
    fixture *f = *state;
    const char *bad[] = {"", "12a", "-1", "1 2", "123456789012345678901"};

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        pgd_error err = {0};
        char *out = NULL;

        snprintf(f->bi.system_identifier, sizeof(f->bi.system_identifier), "%s", bad[i]);
        f->bi.pg_version_num = 170002;
        assert_false(pg_manifest_build(&f->m, &f->bi, &out, &err));
        assert_null(out);
        assert_non_null(strstr(err.msg, "invalid system identifier"));
    }
    /* version 1 does not carry it */
    snprintf(f->bi.system_identifier, sizeof(f->bi.system_identifier), "%s", "");
    free(build(f, 160004));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_follows_the_server),
        cmocka_unit_test_setup_teardown(test_version_1_up_to_16_has_no_system_identifier,
                                        fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_version_2_from_17_carries_the_system_identifier,
                                        fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_is_json_with_the_fields_postgresql_reads,
                                        fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_manifest_checksum_covers_all_but_the_last_line,
                                        fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(
            test_version_2_refuses_a_system_identifier_that_is_not_a_number, fixture_setup,
            fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
