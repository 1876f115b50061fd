/*
 * test_delta_parent.c - covers the timeline rule of src/backup/delta_parent.c:
 * a parent on the current timeline serves; one on an ancestor serves only
 * if it started before that timeline's switch point; a later or unrelated
 * timeline, or no history, does not. And the check a delta makes before its
 * sentinel: its parent (sentinel, same start LSN, manifest) and the parent's
 * chain still in the repository. A --delta-from that names no backup is
 * the caller's mistake: an error of kind PGD_ERR_USAGE.
 */
#include "helpers.h"

#include "backup/delta_parent.h"
#include "repo/layout.h"

#define FULL_ID  "20261129T100000F"
#define DELTA_ID "20261129T110000D"

static const char *HISTORY_3 = "1\t0/3000000\tno recovery target specified\n"
                               "2\t0/5000000\tat restore point \"x\"\n";

static void test_timeline_rule(void **state)
{
    (void)state;
    assert_true(delta_parent_timeline_ok(3, 0x9000000, 3, NULL));
    assert_true(delta_parent_timeline_ok(1, 0x2000000, 3, HISTORY_3));
    assert_false(
        delta_parent_timeline_ok(1, 0x3000000, 3, HISTORY_3)); /* at the switch: after it */
    assert_true(delta_parent_timeline_ok(2, 0x4FFFFFF, 3, HISTORY_3));
    assert_false(delta_parent_timeline_ok(2, 0x5000028, 3, HISTORY_3));
    assert_false(delta_parent_timeline_ok(4, 0x1000000, 3, HISTORY_3)); /* a later timeline */
    assert_false(delta_parent_timeline_ok(1, 0x1000000, 3, NULL));      /* no history file */
    assert_false(delta_parent_timeline_ok(2, 0x1000000, 3, "1\t0/3000000\tx\n")); /* not listed */
}

static void put_text(storage *repo, const char *path, const char *text)
{
    pgd_error err = {0};

    assert_true(storage_put(repo, path, text, strlen(text), 0, &err));
}

/* A sentinel (start LSN `lsn`) and a manifest.json for `id`. */
static void put_backup(storage *repo, const char *id, const char *parent, pg_lsn lsn)
{
    char path[LAYOUT_PATH_MAX];
    backup_info bi;
    pgd_error err = {0};
    char *json;

    memset(&bi, 0, sizeof(bi));
    snprintf(bi.id, sizeof(bi.id), "%s", id);
    snprintf(bi.type, sizeof(bi.type), "%s", parent != NULL ? "delta" : "full");
    if (parent != NULL) {
        snprintf(bi.parent, sizeof(bi.parent), "%s", parent);
        bi.depth = 1;
    }
    bi.start_lsn = lsn;
    bi.stop_lsn = 0x9000100;
    snprintf(bi.start_wal, sizeof(bi.start_wal), "000000010000000000000003");
    snprintf(bi.stop_wal, sizeof(bi.stop_wal), "000000010000000000000009");
    bi.timeline = 1;
    snprintf(bi.page_checksums, sizeof(bi.page_checksums), "off");
    assert_true(backup_info_to_json(&bi, &json, &err));
    layout_sentinel_path(id, path, sizeof(path));
    put_text(repo, path, json);
    free(json);
    layout_manifest_path(id, path, sizeof(path));
    put_text(repo, path, "{}");
}

static void test_parent_still_there(void **state)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    delta_parent p;
    pgd_error err = {0};
    char path[LAYOUT_PATH_MAX];

    (void)state;
    memset(&p, 0, sizeof(p));
    put_backup(repo, FULL_ID, NULL, 0x3000028);
    put_backup(repo, DELTA_ID, FULL_ID, 0x5000028);
    /* the parent is the delta: it, its manifest and its chain are there */
    assert_true(backup_info_load(repo, DELTA_ID, &p.info, &(bool){false}, &err));
    assert_true(delta_parent_still_there(repo, &p, &err));
    /* its chain's full lost its sentinel */
    layout_sentinel_path(FULL_ID, path, sizeof(path));
    assert_true(storage_remove(repo, path, &err));
    assert_false(delta_parent_still_there(repo, &p, &err));
    assert_non_null(strstr(err.msg, "chain of parent backup " DELTA_ID));
    assert_non_null(strstr(err.msg, "backup " FULL_ID " is no longer in the repository"));
    err_clear(&err);
    put_backup(repo, FULL_ID, NULL, 0x3000028);
    /* the parent's manifest is gone */
    layout_manifest_path(DELTA_ID, path, sizeof(path));
    assert_true(storage_remove(repo, path, &err));
    assert_false(delta_parent_still_there(repo, &p, &err));
    assert_non_null(strstr(err.msg, "parent backup " DELTA_ID " has lost its manifest"));
    err_clear(&err);
    /* the parent's sentinel is gone */
    layout_sentinel_path(DELTA_ID, path, sizeof(path));
    assert_true(storage_remove(repo, path, &err));
    assert_false(delta_parent_still_there(repo, &p, &err));
    assert_non_null(strstr(err.msg, "parent backup " DELTA_ID " is no longer in the repository"));
    err_clear(&err);
    /* another backup under the same id (another start LSN) is not the parent */
    put_backup(repo, DELTA_ID, FULL_ID, 0x7000028);
    assert_false(delta_parent_still_there(repo, &p, &err));
    assert_non_null(strstr(err.msg, "is not the backup this delta was taken on"));
    storage_free(repo);
    rm_rf(dir);
}

/* --delta-from that is no id, or an id the repository does not hold: a usage error */
static void test_delta_from_naming_no_backup_is_a_usage_error(void **state)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    delta_parent p;
    pgd_error err = {0};
    delta_parent_request req = {.from = "yesterday", .max_steps = DELTA_MAX_STEPS_DEFAULT};

    (void)state;
    assert_false(delta_parent_choose(repo, &req, &p, &err));
    assert_true(err_is(&err, PGD_ERR_USAGE));
    assert_non_null(strstr(err.msg, "invalid value \"yesterday\" for option \"--delta-from\""));
    delta_parent_free(&p);
    err_clear(&err);
    req.from = FULL_ID;
    assert_false(delta_parent_choose(repo, &req, &p, &err));
    assert_true(err_is(&err, PGD_ERR_USAGE));
    assert_non_null(strstr(err.msg, "backup \"" FULL_ID "\" not found"));
    delta_parent_free(&p);
    storage_free(repo);
    rm_rf(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_timeline_rule),
        cmocka_unit_test(test_parent_still_there),
        cmocka_unit_test(test_delta_from_naming_no_backup_is_a_usage_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
