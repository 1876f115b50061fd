/*
 * test_backup_info.c - covers src/repo/backup_info.c: sentinels written and
 * read back, and damaged sentinels reported one by one instead of failing
 * the whole repository; LATEST passes over a backup whose manifest is
 * missing or does not parse, reading only the manifests it depends on.
 */
#include "helpers.h"

#include <jansson.h>

#include "repo/backup_info.h"
#include "repo/layout.h"

#define OLD_ID    "20261129T100000F"
#define NEW_ID    "20261129T110000F"
#define NEWEST_ID "20261129T120000F"

static void put_sentinel_text(storage *repo, const char *id, const char *text)
{
    char path[LAYOUT_PATH_MAX];
    pgd_error err = {0};

    layout_sentinel_path(id, path, sizeof(path));
    assert_true(storage_put(repo, path, text, strlen(text), 0, &err));
}

static void put_manifest_text(storage *repo, const char *id, const char *text)
{
    char path[LAYOUT_PATH_MAX];
    pgd_error err = {0};

    layout_manifest_path(id, path, sizeof(path));
    assert_true(storage_put(repo, path, text, strlen(text), 0, &err));
}

/* The manifest of an empty full backup named `id`. */
static void put_manifest(storage *repo, const char *id)
{
    char text[256];

    snprintf(text, sizeof(text),
             "{\"format\": 1, \"id\": \"%s\", \"compression\": \"none\", \"partitions\": [], "
             "\"tablespaces\": [], \"files\": []}",
             id);
    put_manifest_text(repo, id, text);
}

/*
 * A sentinel, and the manifest LATEST reads; with checksum errors (pages
 * that failed) when bad > 0, marked when `failed`.
 */
static void put_sentinel_checked(storage *repo, const char *id, uint64_t bad, bool failed)
{
    backup_info bi;
    pgd_error err = {0};
    char *json;

    memset(&bi, 0, sizeof(bi));
    snprintf(bi.id, sizeof(bi.id), "%s", id);
    snprintf(bi.type, sizeof(bi.type), "full");
    bi.start_lsn = 0x2000028;
    bi.stop_lsn = 0x2000100;
    snprintf(bi.start_wal, sizeof(bi.start_wal), "000000010000000000000002");
    snprintf(bi.stop_wal, sizeof(bi.stop_wal), "000000010000000000000002");
    bi.timeline = 1;
    snprintf(bi.page_checksums, sizeof(bi.page_checksums), "verified");
    bi.pages_checked = 1000;
    bi.checksum_errors = bad;
    bi.checksum_error_files = bad > 0;
    bi.checksum_failed = failed;
    bi.from_standby = true;
    assert_true(backup_info_to_json(&bi, &json, &err));
    put_sentinel_text(repo, id, json);
    free(json);
    put_manifest(repo, id);
}

static void put_sentinel(storage *repo, const char *id)
{
    put_sentinel_checked(repo, id, 0, false);
}

static void test_round_trip(void **state)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    backup_info bi;
    pgd_error err = {0};
    bool missing;

    (void)state;
    put_sentinel(repo, OLD_ID);
    assert_true(backup_info_load(repo, OLD_ID, &bi, &missing, &err));
    assert_string_equal(bi.id, OLD_ID);
    assert_int_equal(bi.timeline, 1);
    assert_false(bi.damaged);
    assert_false(backup_info_load(repo, NEW_ID, &bi, &missing, &err));
    assert_true(missing);
    assert_false(err.set);
    storage_free(repo);
    rm_rf(dir);
}

/* Empty, not JSON, the wrong id, a bad timeline: each named with its cause, the others listed. */
static void test_scan_reports_each_damaged_sentinel(void **state)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    backup_info *all;
    pgd_error err = {0};
    size_t n;

    (void)state;
    put_sentinel(repo, OLD_ID);
    put_sentinel_text(repo, NEW_ID, "");
    put_sentinel_text(repo, NEWEST_ID, "{\"id\": \"20261129T1");
    put_sentinel_text(repo, "20261129T130000F", "{}");
    assert_true(backup_info_scan(repo, &all, &n, &err));
    assert_int_equal(n, 4);
    assert_false(all[0].damaged);
    assert_true(all[1].damaged);
    assert_string_equal(all[1].id, NEW_ID);
    assert_string_equal(all[1].damage,
                        "sentinel \"" BACKUPS_DIR "/" NEW_ID SENTINEL_SUFFIX "\" is empty");
    assert_true(all[2].damaged);
    assert_non_null(strstr(all[2].damage, "could not parse sentinel"));
    assert_true(all[3].damaged);
    assert_non_null(strstr(all[3].damage, "invalid sentinel"));
    free(all);

    /* backup_info_list keeps only the usable one */
    assert_true(backup_info_list(repo, &all, &n, &err));
    assert_int_equal(n, 1);
    assert_string_equal(all[0].id, OLD_ID);
    free(all);
    storage_free(repo);
    rm_rf(dir);
}

static void test_sentinel_naming_another_backup_is_damaged(void **state)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    backup_info bi;
    pgd_error err = {0};
    char path[LAYOUT_PATH_MAX], *text;
    size_t len;
    bool missing;

    (void)state;
    put_sentinel(repo, OLD_ID);
    layout_sentinel_path(OLD_ID, path, sizeof(path));
    assert_true(storage_get(repo, path, &text, &len, &missing, &err));
    put_sentinel_text(repo, NEW_ID, text); /* a copy under another name */
    free(text);
    assert_false(backup_info_resolve(repo, NEW_ID, &bi, &err));
    assert_non_null(strstr(err.msg, "backup " NEW_ID " is damaged"));
    assert_non_null(strstr(err.msg, "names backup \"" OLD_ID "\""));
    storage_free(repo);
    rm_rf(dir);
}

static void test_latest_skips_newer_damaged_backups(void **state)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    backup_info bi;
    pgd_error err = {0};

    (void)state;
    put_sentinel(repo, OLD_ID);
    put_sentinel(repo, NEW_ID);
    put_sentinel_text(repo, NEWEST_ID, "not json");
    assert_true(backup_info_resolve(repo, "LATEST", &bi, &err));
    assert_string_equal(bi.id, NEW_ID);
    assert_false(backup_info_resolve(repo, NEWEST_ID, &bi, &err));
    assert_non_null(strstr(err.msg, "backup " NEWEST_ID " is damaged: could not parse sentinel"));
    storage_free(repo);
    rm_rf(dir);
}

/*
 * A sentinel that cannot be read (here: a directory stands under its name,
 * as unreadable as one of another owner) is no verdict on its backup: the
 * scan fails naming it, and LATEST is not quietly an older backup.
 */
static void test_unreadable_sentinel_fails_the_scan(void **state)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    char path[4400];
    backup_info bi, *all;
    pgd_error err = {0};
    size_t n;

    (void)state;
    put_sentinel(repo, OLD_ID);
    snprintf(path, sizeof(path), "%s/repo/" BACKUPS_DIR "/" NEW_ID SENTINEL_SUFFIX, dir);
    assert_int_equal(mkdir(path, 0700), 0);
    assert_false(backup_info_scan(repo, &all, &n, &err));
    assert_non_null(strstr(err.msg, NEW_ID SENTINEL_SUFFIX));
    assert_non_null(strstr(err.msg, "Is a directory"));
    err_clear(&err);
    assert_false(backup_info_resolve(repo, "LATEST", &bi, &err));
    assert_non_null(strstr(err.msg, NEW_ID SENTINEL_SUFFIX));
    storage_free(repo);
    rm_rf(dir);
}

static void test_latest_fails_when_every_backup_is_damaged(void **state)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    backup_info bi;
    pgd_error err = {0};

    (void)state;
    put_sentinel_text(repo, OLD_ID, "");
    assert_false(backup_info_resolve(repo, "LATEST", &bi, &err));
    assert_non_null(strstr(err.msg, "no usable backup"));
    assert_non_null(strstr(err.msg, "the 1 there is damaged (the newest, " OLD_ID ": sentinel"));
    storage_free(repo);
    rm_rf(dir);
}

static void test_checksum_counts_round_trip(void **state)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    backup_info bi;
    pgd_error err = {0};
    bool missing = false;

    (void)state;
    put_sentinel_checked(repo, OLD_ID, 2, true);
    assert_true(backup_info_load(repo, OLD_ID, &bi, &missing, &err));
    assert_string_equal(bi.page_checksums, "verified");
    assert_int_equal(bi.pages_checked, 1000);
    assert_int_equal(bi.checksum_errors, 2);
    assert_int_equal(bi.checksum_error_files, 1);
    assert_true(bi.checksum_failed);
    assert_true(bi.from_standby);
    storage_free(repo);
    rm_rf(dir);
}

/* Sentinels written before pages were verified have none of the fields. */
static void test_sentinel_without_checksum_fields_loads(void **state)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    const char *keys[] = {"page_checksums",       "pages_checked",   "checksum_errors",
                          "checksum_error_files", "checksum_failed", "from_standby"};
    backup_info bi = {0};
    pgd_error err = {0};
    bool missing = false;
    char *json, *old;
    json_t *o;

    (void)state;
    snprintf(bi.id, sizeof(bi.id), OLD_ID);
    snprintf(bi.start_wal, sizeof(bi.start_wal), "000000010000000000000002");
    snprintf(bi.stop_wal, sizeof(bi.stop_wal), "000000010000000000000002");
    bi.timeline = 1;
    assert_true(backup_info_to_json(&bi, &json, &err));
    o = json_loads(json, 0, NULL);
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        assert_int_equal(json_object_del(o, keys[i]), 0);
    old = json_dumps(o, 0);
    put_sentinel_text(repo, OLD_ID, old);
    assert_true(backup_info_load(repo, OLD_ID, &bi, &missing, &err));
    assert_string_equal(bi.page_checksums, "");
    assert_int_equal(bi.checksum_errors, 0);
    assert_false(bi.checksum_failed);
    assert_false(bi.from_standby);
    free(old);
    free(json);
    json_decref(o);
    storage_free(repo);
    rm_rf(dir);
}

static void test_more_errors_than_pages_checked_is_damage(void **state)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    backup_info bi;
    pgd_error err = {0};
    bool missing = false;

    (void)state;
    put_sentinel_checked(repo, OLD_ID, 1001, false);
    assert_false(backup_info_load(repo, OLD_ID, &bi, &missing, &err));
    assert_non_null(strstr(err.msg, "bad \"pages_checked\""));
    storage_free(repo);
    rm_rf(dir);
}

static void test_latest_passes_over_a_backup_marked_for_checksum_errors(void **state)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    backup_info bi;
    pgd_error err = {0};

    (void)state;
    put_sentinel_checked(repo, OLD_ID, 3, false); /* warn: bad pages, not marked */
    put_sentinel_checked(repo, NEW_ID, 2, true);
    assert_true(backup_info_resolve(repo, "LATEST", &bi, &err));
    assert_string_equal(bi.id, OLD_ID);
    assert_true(backup_info_resolve(repo, NEW_ID, &bi, &err)); /* by id: as it is */
    assert_true(bi.checksum_failed);
    storage_free(repo);
    rm_rf(dir);
}

static void test_latest_fails_when_the_only_backup_is_marked(void **state)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    backup_info bi;
    pgd_error err = {0};

    (void)state;
    put_sentinel_checked(repo, NEW_ID, 2, true);
    assert_false(backup_info_resolve(repo, "LATEST", &bi, &err));
    assert_non_null(strstr(err.msg, "the 1 there is unusable (the newest, " NEW_ID
                                    ": 2 pages failed their data checksum"));
    assert_non_null(strstr(err.msg, "restore it by id"));
    storage_free(repo);
    rm_rf(dir);
}

/*
 * A newest backup whose manifest is cut short, missing, or another backup's
 * is damaged as a damaged sentinel makes it: LATEST passes it over for the
 * older good one, and check_latest says why.
 */
static void test_latest_skips_a_newer_backup_whose_manifest_is_damaged(void **state)
{
    static const struct {
        const char *manifest; /* NULL: none */
        const char *why;
    } cases[] = {
        {"{\"format\": 1, \"id\": \"20261129T1",
         "could not parse manifest of backup \"" NEW_ID "\""},
        {"", "could not parse manifest of backup \"" NEW_ID "\""},
        {NULL, "manifest of backup \"" NEW_ID "\" is missing from repository"},
        {"{\"format\": 1, \"id\": \"" OLD_ID "\", \"compression\": \"none\", \"partitions\": [], "
         "\"tablespaces\": [], \"files\": []}",
         "manifest of backup \"" NEW_ID "\" names backup \"" OLD_ID "\""},
    };

    (void)state;
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        char *dir = test_tmpdir();
        storage *repo = repo_in(dir);
        char path[LAYOUT_PATH_MAX];
        backup_info bi, *all;
        pgd_error err = {0};
        size_t n;

        put_sentinel(repo, OLD_ID);
        put_sentinel(repo, NEW_ID);
        if (cases[c].manifest != NULL) {
            put_manifest_text(repo, NEW_ID, cases[c].manifest);
        } else {
            layout_manifest_path(NEW_ID, path, sizeof(path));
            assert_true(storage_remove(repo, path, &err));
        }
        assert_true(backup_info_scan(repo, &all, &n, &err));
        assert_int_equal(n, 2);
        assert_false(all[1].damaged); /* the sentinel alone says nothing */
        assert_true(backup_info_check_latest(repo, all, n, &err));
        assert_false(all[0].damaged);
        assert_true(all[1].damaged);
        assert_non_null(strstr(all[1].damage, cases[c].why));
        free(all);
        assert_true(backup_info_resolve(repo, "LATEST", &bi, &err));
        assert_string_equal(bi.id, OLD_ID);
        assert_false(err.set);
        storage_free(repo);
        rm_rf(dir);
    }
}

/*
 * Only the manifests LATEST depends on are read: the newest usable
 * backup's, not an older one's (list stays one GET), nor that of a newer
 * backup passed over on its sentinel.
 */
static void test_check_latest_reads_only_the_manifests_latest_needs(void **state)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    backup_info *all;
    pgd_error err = {0};
    size_t n;

    (void)state;
    put_sentinel(repo, OLD_ID);
    put_manifest_text(repo, OLD_ID, "not json");
    put_sentinel(repo, NEW_ID);
    put_sentinel_checked(repo, NEWEST_ID, 2, true);
    put_manifest_text(repo, NEWEST_ID, "not json");
    assert_true(backup_info_scan(repo, &all, &n, &err));
    assert_int_equal(n, 3);
    assert_true(backup_info_check_latest(repo, all, n, &err));
    assert_false(all[0].damaged);
    assert_false(all[1].damaged);
    assert_false(all[2].damaged);
    free(all);

    /* the newest usable one's is read: damaged, it is passed over for an older one */
    put_manifest_text(repo, NEW_ID, "not json");
    assert_true(backup_info_scan(repo, &all, &n, &err));
    assert_true(backup_info_check_latest(repo, all, n, &err));
    assert_true(all[0].damaged);
    assert_true(all[1].damaged);
    assert_false(all[2].damaged);
    free(all);
    storage_free(repo);
    rm_rf(dir);
}

/*
 * A manifest that cannot be read (a directory stands under its name) is no
 * verdict on its backup, as with a sentinel: LATEST fails naming it and is
 * not quietly an older backup.
 */
static void test_unreadable_manifest_fails_latest(void **state)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    char path[LAYOUT_PATH_MAX], full[4400];
    backup_info bi, *all;
    pgd_error err = {0};
    size_t n;

    (void)state;
    put_sentinel(repo, OLD_ID);
    put_sentinel(repo, NEW_ID);
    layout_manifest_path(NEW_ID, path, sizeof(path));
    assert_true(storage_remove(repo, path, &err));
    snprintf(full, sizeof(full), "%s/repo/%s", dir, path);
    assert_int_equal(mkdir(full, 0700), 0);
    assert_true(backup_info_scan(repo, &all, &n, &err));
    assert_false(backup_info_check_latest(repo, all, n, &err));
    assert_non_null(
        strstr(err.msg, "nothing can be said of backup " NEW_ID ", whose manifest cannot be read"));
    assert_non_null(strstr(err.msg, "Is a directory"));
    free(all);
    err_clear(&err);
    assert_false(backup_info_resolve(repo, "LATEST", &bi, &err));
    assert_non_null(strstr(err.msg, NEW_ID "/" MANIFEST_NAME));
    storage_free(repo);
    rm_rf(dir);
}

/*
 * find: a damaged sentinel is returned as such (a verdict, for verify); a
 * missing backup, an invalid id and a sentinel that cannot be read are
 * errors naming it.
 */
static void test_find_returns_a_damaged_sentinel_as_damaged(void **state)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    char path[4400];
    backup_info bi;
    pgd_error err = {0};

    (void)state;
    put_sentinel(repo, OLD_ID);
    put_sentinel_text(repo, NEW_ID, "{\"id\": \"20261129T1");
    assert_true(backup_info_find(repo, OLD_ID, &bi, &err));
    assert_false(bi.damaged);
    assert_string_equal(bi.id, OLD_ID);
    assert_true(backup_info_find(repo, NEW_ID, &bi, &err));
    assert_true(bi.damaged);
    assert_string_equal(bi.id, NEW_ID);
    assert_non_null(strstr(bi.damage, "could not parse sentinel"));
    assert_false(err.set);
    assert_false(backup_info_find(repo, NEWEST_ID, &bi, &err));
    assert_non_null(strstr(err.msg, "backup \"" NEWEST_ID "\" not found in repository"));
    err_clear(&err);
    assert_false(backup_info_find(repo, "yesterday", &bi, &err));
    assert_non_null(strstr(err.msg, "invalid backup id \"yesterday\""));
    err_clear(&err);
    snprintf(path, sizeof(path), "%s/repo/" BACKUPS_DIR "/" NEWEST_ID SENTINEL_SUFFIX, dir);
    assert_int_equal(mkdir(path, 0700), 0);
    assert_false(backup_info_find(repo, NEWEST_ID, &bi, &err));
    assert_non_null(strstr(err.msg, "could not read the sentinel of backup " NEWEST_ID));
    storage_free(repo);
    rm_rf(dir);
}

/* A full (or, with a parent, a delta) with LSNs; its sentinel's JSON. */
static char *lsn_sentinel_json(const char *parent, pg_lsn parent_start)
{
    backup_info bi;
    pgd_error err = {0};
    char *json;

    memset(&bi, 0, sizeof(bi));
    snprintf(bi.id, sizeof(bi.id), "%s", NEW_ID);
    snprintf(bi.type, sizeof(bi.type), parent != NULL ? "delta" : "full");
    if (parent != NULL) {
        snprintf(bi.parent, sizeof(bi.parent), "%s", parent);
        bi.depth = 1;
        bi.parent_start_lsn = parent_start;
    }
    bi.start_lsn = (pg_lsn)0x1A << 32 | 0xFF000028;
    bi.stop_lsn = (pg_lsn)0x1A << 32 | 0xFF000100;
    snprintf(bi.start_wal, sizeof(bi.start_wal), "000000010000001A000000FF");
    snprintf(bi.stop_wal, sizeof(bi.stop_wal), "000000010000001A000000FF");
    bi.timeline = 1;
    assert_true(backup_info_to_json(&bi, &json, &err));
    return json;
}

/* The sentinel keeps PostgreSQL's text form, "X/Y"; loaded, the LSNs are numbers. */
static void test_lsns_are_text_on_disk_and_numbers_when_loaded(void **state)
{
    char *json = lsn_sentinel_json(NULL, 0);
    backup_info bi;
    pgd_error err = {0};

    (void)state;
    assert_non_null(strstr(json, "\"start_lsn\": \"1A/FF000028\""));
    assert_non_null(strstr(json, "\"stop_lsn\": \"1A/FF000100\""));
    assert_non_null(strstr(json, "\"parent_start_lsn\": \"\""));
    assert_true(backup_info_from_json(&bi, json, "sentinel", &err));
    assert_true(bi.start_lsn == ((pg_lsn)0x1A << 32 | 0xFF000028));
    assert_true(bi.stop_lsn == ((pg_lsn)0x1A << 32 | 0xFF000100));
    assert_true(bi.parent_start_lsn == 0);
    free(json);
    json = lsn_sentinel_json(OLD_ID, 0x3000028);
    assert_non_null(strstr(json, "\"parent_start_lsn\": \"0/3000028\""));
    assert_true(backup_info_from_json(&bi, json, "sentinel", &err));
    assert_true(bi.parent_start_lsn == 0x3000028);
    free(json);
    /* hex digits in either case, as PostgreSQL reads a pg_lsn */
    json = lsn_sentinel_json(NULL, 0);
    {
        char *at = strstr(json, "1A/FF000028");
        memcpy(at, "1a/ff000028", strlen("1a/ff000028"));
    }
    assert_true(backup_info_from_json(&bi, json, "sentinel", &err));
    assert_true(bi.start_lsn == ((pg_lsn)0x1A << 32 | 0xFF000028));
    free(json);
}

/* json with `field` set to `value` (a string), or removed when value is NULL. */
static char *with_field(const char *json, const char *field, const char *value)
{
    json_error_t jerr;
    json_t *o = json_loads(json, 0, &jerr);
    char *out;

    assert_non_null(o);
    if (value != NULL)
        json_object_set_new(o, field, json_string(value));
    else
        json_object_del(o, field);
    out = json_dumps(o, 0);
    json_decref(o);
    return out;
}

static void expect_bad_field(const char *json, const char *field, const char *value)
{
    char *bad = with_field(json, field, value), want[128];
    backup_info bi;
    pgd_error err = {0};

    snprintf(want, sizeof(want), "invalid sentinel \"x\": bad \"%s\"", field);
    assert_false(backup_info_from_json(&bi, bad, "sentinel \"x\"", &err));
    assert_string_equal(err.msg, want);
    free(bad);
}

/* A negative count damages the sentinel, naming the field (found by fuzz_backup_info). */
static void test_a_negative_count_is_a_damaged_sentinel_naming_the_field(void **state)
{
    const char *fields[] = {"size", "compressed_size", "files"};
    char *full = lsn_sentinel_json(NULL, 0);

    (void)state;
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        json_t *o = json_loads(full, 0, NULL);
        char *bad, want[128];
        backup_info bi;
        pgd_error err = {0};

        json_object_set_new(o, fields[i], json_integer(-1));
        bad = json_dumps(o, 0);
        json_decref(o);
        snprintf(want, sizeof(want), "invalid sentinel \"x\": bad \"%s\"", fields[i]);
        assert_false(backup_info_from_json(&bi, bad, "sentinel \"x\"", &err));
        assert_string_equal(err.msg, want);
        free(bad);
    }
    free(full);
}

/*
 * The page cache's evictions a backup measured: kept as written; not measured (-1) leaves the field
 * out and loads as -1, as a sentinel written before it was recorded does; a negative one is damage.
 */
static void test_pages_evicted_round_trip_and_absence(void **state)
{
    char *full = lsn_sentinel_json(NULL, 0);
    json_t *o = json_loads(full, 0, NULL);
    backup_info bi;
    pgd_error err = {0};
    char *json;

    (void)state;
    assert_non_null(o);
    assert_true(backup_info_from_json(&bi, full, "sentinel \"x\"", &err));
    assert_int_equal(bi.pages_evicted, 0); /* written by a builder that left it 0 */
    bi.pages_evicted = 1234;
    assert_true(backup_info_to_json(&bi, &json, &err));
    assert_true(backup_info_from_json(&bi, json, "sentinel \"x\"", &err));
    assert_int_equal(bi.pages_evicted, 1234);
    free(json);
    bi.pages_evicted = -1;
    assert_true(backup_info_to_json(&bi, &json, &err));
    assert_null(strstr(json, "pages_evicted"));
    assert_true(backup_info_from_json(&bi, json, "sentinel \"x\"", &err));
    assert_int_equal(bi.pages_evicted, -1);
    free(json);
    json_object_set_new(o, "pages_evicted", json_integer(-1));
    json = json_dumps(o, 0);
    assert_false(backup_info_from_json(&bi, json, "sentinel \"x\"", &err));
    assert_string_equal(err.msg, "invalid sentinel \"x\": bad \"pages_evicted\"");
    free(json);
    json_decref(o);
    free(full);
}

/* A value that is no LSN damages the sentinel when it is loaded; the message names the field. */
static void test_a_bad_lsn_is_a_damaged_sentinel_naming_the_field(void **state)
{
    const char *bad[] = {"", "0", "0/", "/0", "G/0", "0/2000028x", " 0/0", "123456789/0", "-1/0"};
    char *full = lsn_sentinel_json(NULL, 0), *delta = lsn_sentinel_json(OLD_ID, 0x3000028);
    char *dir = test_tmpdir(), *text;
    storage *repo = repo_in(dir);
    backup_info *all, bi;
    pgd_error err = {0};
    size_t n;
    bool missing = false;

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        expect_bad_field(full, "start_lsn", bad[i]);
        expect_bad_field(full, "stop_lsn", bad[i]);
        expect_bad_field(delta, "parent_start_lsn", bad[i]);
        if (bad[i][0] != '\0')
            expect_bad_field(full, "parent_start_lsn", bad[i]);
    }
    /* a delta's threshold is required; a full's may be absent, as before deltas */
    expect_bad_field(delta, "parent_start_lsn", NULL);
    text = with_field(full, "parent_start_lsn", NULL);
    assert_true(backup_info_from_json(&bi, text, "sentinel", &err));
    free(text);
    /* in a repository: the scan lists it as damaged, naming the backup's sentinel and the field */
    text = with_field(full, "stop_lsn", "0/2000028x");
    put_sentinel_text(repo, NEW_ID, text);
    free(text);
    assert_true(backup_info_scan(repo, &all, &n, &err));
    assert_int_equal(n, 1);
    assert_true(all[0].damaged);
    assert_string_equal(all[0].damage,
                        "invalid sentinel \"backups/" NEW_ID ".done.json\": bad \"stop_lsn\"");
    free(all);
    assert_false(backup_info_load(repo, NEW_ID, &bi, &missing, &err));
    assert_false(missing);
    assert_string_equal(err.msg,
                        "invalid sentinel \"backups/" NEW_ID ".done.json\": bad \"stop_lsn\"");
    free(full);
    free(delta);
    storage_free(repo);
    rm_rf(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_scan_reports_each_damaged_sentinel),
        cmocka_unit_test(test_sentinel_naming_another_backup_is_damaged),
        cmocka_unit_test(test_latest_skips_newer_damaged_backups),
        cmocka_unit_test(test_latest_fails_when_every_backup_is_damaged),
        cmocka_unit_test(test_unreadable_sentinel_fails_the_scan),
        cmocka_unit_test(test_checksum_counts_round_trip),
        cmocka_unit_test(test_sentinel_without_checksum_fields_loads),
        cmocka_unit_test(test_more_errors_than_pages_checked_is_damage),
        cmocka_unit_test(test_latest_passes_over_a_backup_marked_for_checksum_errors),
        cmocka_unit_test(test_latest_fails_when_the_only_backup_is_marked),
        cmocka_unit_test(test_latest_skips_a_newer_backup_whose_manifest_is_damaged),
        cmocka_unit_test(test_check_latest_reads_only_the_manifests_latest_needs),
        cmocka_unit_test(test_unreadable_manifest_fails_latest),
        cmocka_unit_test(test_find_returns_a_damaged_sentinel_as_damaged),
        cmocka_unit_test(test_lsns_are_text_on_disk_and_numbers_when_loaded),
        cmocka_unit_test(test_a_bad_lsn_is_a_damaged_sentinel_naming_the_field),
        cmocka_unit_test(test_a_negative_count_is_a_damaged_sentinel_naming_the_field),
        cmocka_unit_test(test_pages_evicted_round_trip_and_absence),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
