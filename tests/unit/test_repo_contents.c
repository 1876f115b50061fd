/*
 * test_repo_contents.c - covers src/repo/repo_contents.c: what delete
 * reads from a repository (backups and their chain links, directories
 * without a sentinel and their claims, WAL timelines and the WAL before a
 * segment), on a local repository built by hand.
 */
#include "helpers.h"

#include <unistd.h>

#include "repo/backup_info.h"
#include "repo/layout.h"
#include "repo/repo_contents.h"
#include "util/process.h"

#define FULL_ID     "20261129T100000F"
#define DELTA_ID    "20261129T110000D"
#define ORPHAN_ID   "20261129T113000D"
#define DAMAGED_ID  "20261129T120000F"
#define YOUNG_ID    "20261129T130000F"
#define DEAD_ID     "20261129T140000F"
#define ALIVE_ID    "20261129T150000F"
#define NOCLAIM_ID  "20261129T160000F"
#define EMPTY_ID    "20261129T170000F"
#define KILLED_ID   "20261129T180000F"
#define REUSED_ID   "20261129T190000F"
#define REBOOT_ID   "20261129T200000F"
#define GARBAGE_AGE 3600
#define DAY         (24 * 3600)

static void put_text(storage *repo, const char *path, const char *text)
{
    pgd_error err = {0};

    assert_true(storage_put(repo, path, text, strlen(text), 0, &err));
}

static void put_sentinel(storage *repo, const char *id, const char *parent)
{
    char path[LAYOUT_PATH_MAX], text[256];
    backup_info bi;
    pgd_error err = {0};
    char *json;

    memset(&bi, 0, sizeof(bi));
    snprintf(bi.id, sizeof(bi.id), "%s", id);
    snprintf(bi.type, sizeof(bi.type), "%s", parent != NULL ? "delta" : "full");
    if (parent != NULL) {
        snprintf(bi.parent, sizeof(bi.parent), "%s", parent);
        bi.depth = 1;
        bi.parent_start_lsn = 0x2000028;
    }
    bi.start_lsn = 0x3000028;
    bi.stop_lsn = 0x3000100;
    snprintf(bi.start_wal, sizeof(bi.start_wal), "000000010000000000000003");
    snprintf(bi.stop_wal, sizeof(bi.stop_wal), "000000010000000000000003");
    bi.timeline = 1;
    snprintf(bi.page_checksums, sizeof(bi.page_checksums), "off");
    assert_true(backup_info_to_json(&bi, &json, &err));
    layout_sentinel_path(id, path, sizeof(path));
    put_text(repo, path, json);
    free(json);
    /* the manifest restore LATEST (and so retention) reads of the newest backups */
    snprintf(text, sizeof(text),
             "{\"format\": 1, \"id\": \"%s\", \"compression\": \"none\", \"partitions\": [], "
             "\"tablespaces\": [], \"files\": []}",
             id);
    layout_manifest_path(id, path, sizeof(path));
    put_text(repo, path, text);
}

/* backups/<id>/claim.json, and one more object under the directory. */
static void put_claim(storage *repo, const char *id, int64_t start, const char *host, long pid)
{
    char path[LAYOUT_PATH_MAX], text[512];

    snprintf(text, sizeof(text), "{\"start_time\": %lld, \"host\": \"%s\", \"pid\": %ld}",
             (long long)start, host, pid);
    layout_backup_object(id, CLAIM_NAME, path, sizeof(path));
    put_text(repo, path, text);
    layout_backup_object(id, "part_0001.tar", path, sizeof(path));
    put_text(repo, path, "partial");
}

/* A claim as this version writes it: this host's boot id and the process's start and pid namespace.
 */
static void put_claim_of(storage *repo, const char *id, int64_t start, const char *boot_id,
                         long pid, unsigned long long pid_start)
{
    char path[LAYOUT_PATH_MAX], text[768];
    process_identity me;

    process_self(&me);
    snprintf(text, sizeof(text),
             "{\"start_time\": %lld, \"host\": \"%s\", \"pid\": %ld, \"boot_id\": \"%s\", "
             "\"pid_start\": %llu, \"pid_ns\": %llu}",
             (long long)start, me.host, pid, boot_id ? boot_id : me.boot_id, pid_start,
             (unsigned long long)me.pid_ns);
    layout_backup_object(id, CLAIM_NAME, path, sizeof(path));
    put_text(repo, path, text);
    layout_backup_object(id, "part_0001.tar", path, sizeof(path));
    put_text(repo, path, "partial");
}

static const retention_backup *find_backup(const repo_contents *c, const char *id)
{
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->backups[i].id, id) == 0)
            return &c->backups[i];
    return NULL;
}

static const repo_dir *find_dir(const repo_contents *c, const char *id)
{
    for (size_t i = 0; i < c->ndirs; i++)
        if (strcmp(c->dirs[i].id, id) == 0)
            return &c->dirs[i];
    return NULL;
}

static void test_backups_and_their_chain_links(void **state)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    repo_contents c = {0};
    pgd_error err = {0};
    char path[LAYOUT_PATH_MAX];
    const retention_backup *b;

    (void)state;
    put_sentinel(repo, FULL_ID, NULL);
    put_sentinel(repo, DELTA_ID, FULL_ID);
    put_sentinel(repo, ORPHAN_ID, ""); /* a delta whose sentinel names no parent */
    layout_sentinel_path(DAMAGED_ID, path, sizeof(path));
    put_text(repo, path, "{ not json");
    assert_true(repo_contents_scan_backups(repo, &c, &err));
    assert_int_equal(c.n, 4);
    b = find_backup(&c, FULL_ID);
    assert_non_null(b);
    assert_false(b->damaged);
    assert_string_equal(b->start_wal, "000000010000000000000003");
    assert_true(b->start_lsn == 0x3000028);
    b = find_backup(&c, DELTA_ID);
    assert_non_null(b);
    assert_false(b->damaged);
    assert_string_equal(b->parent, FULL_ID);
    b = find_backup(&c, ORPHAN_ID);
    assert_non_null(b);
    assert_true(b->damaged); /* it cannot be restored: never counted as kept */
    b = find_backup(&c, DAMAGED_ID);
    assert_non_null(b);
    assert_true(b->damaged);
    repo_contents_free(&c);
    storage_free(repo);
    rm_rf(dir);
}

static void test_directories_are_classified_by_their_claim(void **state)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    repo_contents c = {0};
    pgd_error err = {0};
    char host[256] = "", path[LAYOUT_PATH_MAX];
    int64_t now = (int64_t)time(NULL);
    const repo_dir *d;

    (void)state;
    assert_int_equal(gethostname(host, sizeof(host) - 1), 0);
    put_sentinel(repo, FULL_ID, NULL);
    layout_backup_object(FULL_ID, "part_0001.tar", path, sizeof(path));
    put_text(repo, path, "complete");
    put_claim(repo, YOUNG_ID, now - 60, "elsewhere", 1);
    /* a pid that cannot exist (above pid_max's ceiling): the process is gone */
    put_claim(repo, DEAD_ID, now - DAY, host, 0x7ffffff0L);
    put_claim(repo, ALIVE_ID, now - DAY, host, (long)getpid());
    {
        process_identity me;
        process_self(&me);
        /* a minute old, of this host and boot, its process gone: garbage at once */
        put_claim_of(repo, KILLED_ID, now - 60, NULL, 0x7ffffff0L, 12345);
        /* this process's pid, but a process that started at another time: the pid was reused */
        put_claim_of(repo, REUSED_ID, now - 60, NULL, (long)getpid(), me.start_ticks + 1);
        /* a claim of an earlier boot of this host */
        put_claim_of(repo, REBOOT_ID, now - 60, "00000000-0000-0000-0000-000000000000",
                     (long)getpid(), me.start_ticks);
    }
    layout_backup_object(NOCLAIM_ID, "part_0001.tar", path, sizeof(path));
    put_text(repo, path, "no claim");
    /* backups/<id>/ holding only an empty sub-directory: nothing to remove */
    layout_backup_object(EMPTY_ID, "sub/x", path, sizeof(path));
    put_text(repo, path, "x");
    layout_backup_object(EMPTY_ID, "sub/x", path, sizeof(path));
    assert_true(storage_remove_many(repo, (const char *const[]){path}, 1, &err));
    /* not backup ids: ignored */
    put_text(repo, BACKUPS_DIR "/notanid/x", "x");
    put_text(repo, BACKUPS_DIR "/20261129T999999F.tmp", "x");

    assert_true(repo_contents_scan_dirs(repo, GARBAGE_AGE, &c, &err));
    d = find_dir(&c, FULL_ID);
    assert_non_null(d);
    assert_true(d->sentinel);
    d = find_dir(&c, YOUNG_ID);
    assert_non_null(d);
    assert_false(d->sentinel);
    assert_int_equal(d->objects, 2);
    assert_int_equal(d->state, RETENTION_CLAIM_RUNNING);
    assert_non_null(strstr(d->why, "less than --garbage-age"));
    d = find_dir(&c, DEAD_ID);
    assert_non_null(d);
    assert_int_equal(d->state, RETENTION_CLAIM_DEAD);
    d = find_dir(&c, ALIVE_ID);
    assert_non_null(d);
    assert_int_equal(d->state, RETENTION_CLAIM_RUNNING);
    assert_non_null(strstr(d->why, "still running"));
    d = find_dir(&c, KILLED_ID);
    assert_non_null(d);
    assert_int_equal(d->state, RETENTION_CLAIM_DEAD);
    assert_non_null(strstr(d->why, "which has ended"));
    d = find_dir(&c, REUSED_ID);
    assert_non_null(d);
    assert_int_equal(d->state, RETENTION_CLAIM_DEAD);
    assert_non_null(strstr(d->why, "the pid is another's now"));
    d = find_dir(&c, REBOOT_ID);
    assert_non_null(d);
    assert_int_equal(d->state, RETENTION_CLAIM_DEAD);
    assert_non_null(strstr(d->why, "before its last boot"));
    d = find_dir(&c, NOCLAIM_ID);
    assert_non_null(d);
    assert_int_equal(d->objects, 1);
    assert_int_equal(d->state, RETENTION_CLAIM_UNKNOWN);
    assert_null(find_dir(&c, "notanid"));
    repo_contents_free(&c);
    storage_free(repo);
    rm_rf(dir);
}

/* A running delta's claim names its parent (backup/backup_id.c); delete keeps that one. */
static void test_a_delta_claim_names_its_parent(void **state)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    repo_contents c = {0};
    pgd_error err = {0};
    char path[LAYOUT_PATH_MAX], text[512];
    int64_t now = (int64_t)time(NULL);
    const repo_dir *d;

    (void)state;
    put_sentinel(repo, FULL_ID, NULL);
    snprintf(text, sizeof(text),
             "{\"id\": \"%s\", \"host\": \"elsewhere\", \"pid\": 1, \"start_time\": %lld, "
             "\"parent\": \"%s\", \"parent_start_lsn\": \"0/3000028\"}",
             DELTA_ID, (long long)now, FULL_ID);
    layout_backup_object(DELTA_ID, CLAIM_NAME, path, sizeof(path));
    put_text(repo, path, text);
    /* a parent that is no id is not believed */
    snprintf(text, sizeof(text),
             "{\"host\": \"elsewhere\", \"pid\": 1, \"start_time\": %lld, \"parent\": \"../x\"}",
             (long long)now);
    layout_backup_object(ORPHAN_ID, CLAIM_NAME, path, sizeof(path));
    put_text(repo, path, text);
    put_claim(repo, YOUNG_ID, now, "elsewhere", 1); /* a full's claim: no parent */
    assert_true(repo_contents_scan_dirs(repo, GARBAGE_AGE, &c, &err));
    d = find_dir(&c, DELTA_ID);
    assert_non_null(d);
    assert_int_equal(d->state, RETENTION_CLAIM_RUNNING);
    assert_string_equal(d->parent, FULL_ID);
    d = find_dir(&c, ORPHAN_ID);
    assert_non_null(d);
    assert_string_equal(d->parent, "");
    d = find_dir(&c, YOUNG_ID);
    assert_non_null(d);
    assert_string_equal(d->parent, "");
    repo_contents_free(&c);
    storage_free(repo);
    rm_rf(dir);
}

static void test_wal_timelines_and_the_wal_before_a_segment(void **state)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    repo_contents_names tl, before;
    pgd_error err = {0};

    (void)state;
    put_text(repo, WAL_DIR "/00000002/000000020000000000000004", "w");
    put_text(repo, WAL_DIR "/00000001/000000010000000000000002.zst", "w");
    put_text(repo, WAL_DIR "/00000001/000000010000000000000001.lz4", "w");
    put_text(repo, WAL_DIR "/00000001/000000010000000000000003", "w");
    put_text(repo, WAL_DIR "/00000001/000000010000000000000004.lz4", "w");
    put_text(repo, WAL_DIR "/00000001/00000001.history", "h");
    put_text(repo, WAL_DIR "/0000000g/000000010000000000000001", "not a timeline");
    put_text(repo, WAL_DIR "/lowercase/x", "not a timeline");

    assert_true(repo_contents_wal_timelines(repo, &tl, &err));
    assert_int_equal(tl.n, 2);
    assert_string_equal(tl.names[0], "00000001");
    assert_string_equal(tl.names[1], "00000002");

    assert_true(
        repo_contents_wal_before(repo, "00000001", "000000010000000000000003", &before, &err));
    assert_int_equal(before.n, 2);
    assert_string_equal(before.names[0], WAL_DIR "/00000001/000000010000000000000001.lz4");
    assert_string_equal(before.names[1], WAL_DIR "/00000001/000000010000000000000002.zst");
    repo_contents_names_free(&before);
    /* a timeline without files before the segment, and one that does not exist */
    assert_true(
        repo_contents_wal_before(repo, "00000002", "000000010000000000000003", &before, &err));
    assert_int_equal(before.n, 0);
    repo_contents_names_free(&before);
    repo_contents_names_free(&tl);
    storage_free(repo);
    rm_rf(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backups_and_their_chain_links),
        cmocka_unit_test(test_directories_are_classified_by_their_claim),
        cmocka_unit_test(test_a_delta_claim_names_its_parent),
        cmocka_unit_test(test_wal_timelines_and_the_wal_before_a_segment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
