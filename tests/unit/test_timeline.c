/*
 * test_timeline.c - covers src/restore/timeline.c and wal_history_parse:
 * --target-timeline's values; the newest timeline found as PostgreSQL
 * finds it (history files of the backup's timeline + 1, + 2, ... until one
 * is missing, a gap ending the probe); a target whose history keeps the
 * backup's timeline past the backup's end is taken, one that leaves it
 * earlier, does not descend from it, is older than it or has no history
 * file is refused, each saying why; a damaged history file recovery would
 * read is refused by name, whatever the target: the target's own, and the
 * later ones recovery probes at its end to choose the next timeline.
 */
#include "helpers.h"

#include "pg/wal_history.h"
#include "wal/wal_archive.h"
#include "restore/timeline.h"

typedef struct fixture {
    char *dir;
    storage *repo;
    backup_info bi;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));

    assert_non_null(f);
    f->dir = test_tmpdir();
    f->repo = repo_in(f->dir);
    /* a backup on timeline 2 of a PostgreSQL 15, from 0/5000028 to 0/5000100 */
    f->bi.timeline = 2;
    f->bi.pg_version_num = 150000;
    f->bi.start_lsn = 0x5000028;
    f->bi.stop_lsn = 0x5000100;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;

    storage_free(f->repo);
    rm_rf(f->dir);
    free(f);
    return 0;
}

/* Archive timeline tli's history file holding `text`, as archive_command would. */
static void archive_history(fixture *f, uint32_t tli, const char *text)
{
    char path[4200];
    wal_push_result result;
    pgd_error err = {0};

    snprintf(path, sizeof(path), "%s/%08X.history", f->dir, tli);
    write_test_file(path, text, strlen(text));
    assert_true(
        wal_archive_push(f->repo, path, COMPRESS_LZ4, COMPRESS_LEVEL_DEFAULT, &result, &err));
}

/* --target-timeline `value` is refused, the message holding `want`, for reason `failure`. */
/* Cut timeline tli's archived history file short. */
static void damage_history(fixture *f, uint32_t tli)
{
    char path[4200];

    snprintf(path, sizeof(path), "%s/repo/wal/%08X/%08X.history.lz4", f->dir, tli, tli);
    assert_int_equal(truncate(path, 20), 0);
}

static void assert_refused_as(fixture *f, const char *value, timeline_failure failure,
                              const char *want)
{
    timeline_choice c;
    timeline_path p;
    char why[256];
    pgd_error err = {0};

    assert_true(timeline_parse(value, &c, why, sizeof(why)));
    assert_false(timeline_resolve(f->repo, &f->bi, &c, &p, &err));
    assert_int_equal(p.failure, failure);
    assert_null(p.legs);
    if (strstr(err.msg, want) == NULL)
        fail_msg("--target-timeline %s: \"%s\" does not say \"%s\"", value, err.msg, want);
}

static void assert_refused(fixture *f, const char *value, const char *want)
{
    assert_refused_as(f, value, TIMELINE_REFUSED, want);
}

/*
 * --target-timeline `value` follows timeline `want`; `legs` lists the way
 * as "tli@begin" pairs ("2@0 3@6000000 4@7000000").
 */
static void assert_follows(fixture *f, const char *value, uint32_t want, const char *legs)
{
    timeline_choice c;
    timeline_path p;
    char why[256], got[512] = "";
    pgd_error err = {0};

    assert_true(timeline_parse(value, &c, why, sizeof(why)));
    if (!timeline_resolve(f->repo, &f->bi, &c, &p, &err))
        fail_msg("--target-timeline %s: %s", value, err.msg);
    assert_int_equal(p.target, want);
    for (size_t i = 0; i < p.nlegs; i++)
        snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%u@%llX", i ? " " : "",
                 p.legs[i].tli, (unsigned long long)p.legs[i].begin);
    assert_string_equal(got, legs);
    timeline_log_path(&p, &f->bi, &c);
    timeline_path_free(&p);
}

static void test_parse(void **state)
{
    timeline_choice c;
    char why[256];
    const char *bad[] = {"", "0", "-1", "01", "0x10", "4294967296", "2 ", "Latest", "current2"};

    (void)state;
    assert_true(timeline_parse("latest", &c, why, sizeof(why)));
    assert_int_equal(c.goal, TIMELINE_LATEST);
    assert_true(timeline_parse("current", &c, why, sizeof(why)));
    assert_int_equal(c.goal, TIMELINE_CURRENT);
    assert_true(timeline_parse("4294967295", &c, why, sizeof(why)));
    assert_int_equal(c.goal, TIMELINE_NUMBER);
    assert_int_equal(c.number, 4294967295u);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        why[0] = '\0';
        if (timeline_parse(bad[i], &c, why, sizeof(why)))
            fail_msg("\"%s\" was taken", bad[i]);
        assert_non_null(strstr(why, "expected latest, current or a timeline number"));
    }
}

static void test_history_parse(void **state)
{
    const char *text = "# a comment\n1\t0/3000000\tno recovery target specified\n\n"
                       "  2\t1/5000A28\tat restore point \"x\"\n";
    wal_history_entry *e;
    size_t n;

    (void)state;
    wal_history_parse(text, strlen(text), &e, &n);
    assert_int_equal(n, 2);
    assert_int_equal(e[0].tli, 1);
    assert_int_equal(e[0].end, 0x3000000);
    assert_int_equal(e[1].tli, 2);
    assert_int_equal(e[1].end, UINT64_C(0x100000000) | 0x5000A28);
    free(e);
}

static void test_no_newer_timeline(void **state)
{
    fixture *f = *state;

    /* the repository holds no history file at all: the backup's own timeline */
    assert_follows(f, "latest", 2, "2@0");
    f->bi.pg_version_num = 110000; /* before 12 the default is current: nothing is read */
    archive_history(f, 3, "1\t0/1000000\tno recovery target specified\n");
    {
        timeline_choice c = {.goal = TIMELINE_DEFAULT};
        timeline_path p;
        pgd_error err = {0};
        assert_true(timeline_resolve(f->repo, &f->bi, &c, &p, &err));
        assert_int_equal(p.target, 2);
        assert_int_equal(p.nlegs, 1);
        timeline_path_free(&p);
        f->bi.pg_version_num = 150000;
        assert_false(timeline_resolve(f->repo, &f->bi, &c, &p, &err));
        assert_int_equal(p.failure, TIMELINE_REFUSED);
    }
}

static void test_newest_descends(void **state)
{
    fixture *f = *state;

    archive_history(f, 3,
                    "1\t0/1000000\tno recovery target specified\n"
                    "2\t0/6000000\tno recovery target specified\n");
    archive_history(f, 4,
                    "1\t0/1000000\tno recovery target specified\n"
                    "2\t0/6000000\tno recovery target specified\n"
                    "3\t0/7000000\tno recovery target specified\n");
    /* 6 exists, 5 does not: PostgreSQL stops at the gap */
    archive_history(f, 6, "1\t0/1000000\tno recovery target specified\n");
    assert_follows(f, "latest", 4, "2@0 3@6000000 4@7000000");
    assert_follows(f, "3", 3, "2@0 3@6000000");
    assert_follows(f, "current", 2, "2@0");
    assert_follows(f, "2", 2, "2@0");
    /* leaving exactly at the backup's end is fine */
    f->bi.stop_lsn = 0x6000000;
    assert_follows(f, "latest", 4, "2@0 3@6000000 4@7000000");
    f->bi.stop_lsn = 0x6000001;
    assert_refused(f, "latest",
                   "recovery would follow timeline 4, the newest PostgreSQL finds in the "
                   "repository, which leaves "
                   "the backup's timeline 2 at 0/6000000, before the backup's end at 0/6000001");
    assert_refused(f, "latest", "--target-timeline current recovers along the backup's own");
    assert_follows(f, "current", 2, "2@0");
}

static void test_refused(void **state)
{
    fixture *f = *state;

    /* timeline 3 comes from timeline 1: it never passes through timeline 2 */
    archive_history(f, 3, "1\t0/4000000\tno recovery target specified\n");
    assert_refused(f, "latest",
                   "recovery would follow timeline 3, the newest PostgreSQL finds in the "
                   "repository, which does "
                   "not descend from the backup's timeline 2: the restored server would not start");
    assert_refused(f, "3", "recovery would follow timeline 3, which does not descend");
    assert_refused(f, "1", "--target-timeline 1 is older than the backup's timeline 2");
    assert_refused(f, "9", "timeline 9 has no history file in repository");
    assert_refused(f, "9", "(\"recovery target timeline 9 does not exist\")");
}

static void test_damaged_history(void **state)
{
    fixture *f = *state;

    archive_history(f, 3, "2\t0/9000000\tno recovery target specified\n");
    assert_follows(f, "latest", 3, "2@0 3@9000000");
    /* the object cut short: refused, naming the file, whichever way it is asked */
    damage_history(f, 3);
    assert_refused_as(f, "latest", TIMELINE_DAMAGED,
                      "the history of timeline 3, which recovery would read: ");
    assert_refused_as(f, "latest", TIMELINE_DAMAGED, "00000003.history");
    assert_refused_as(f, "latest", TIMELINE_DAMAGED,
                      "(PostgreSQL reads it whatever --target-timeline says: the restored server "
                      "would not start until it is repaired in the repository)");
    assert_refused_as(f, "3", TIMELINE_DAMAGED, "the history of timeline 3");
    /* recovery along the backup's own timeline still reads it at its end, for the next one */
    assert_refused_as(f, "current", TIMELINE_DAMAGED, "the history of timeline 3");
    assert_refused_as(f, "2", TIMELINE_DAMAGED, "the history of timeline 3");
}

/* The history of the backup's own timeline is read too: recovery reads its target's. */
static void test_damaged_own_history(void **state)
{
    fixture *f = *state;

    archive_history(f, 2, "1\t0/4000000\tno recovery target specified\n");
    assert_follows(f, "latest", 2, "2@0");
    assert_follows(f, "current", 2, "2@0");
    damage_history(f, 2);
    assert_refused_as(f, "latest", TIMELINE_DAMAGED, "the history of timeline 2, which recovery");
    assert_refused_as(f, "current", TIMELINE_DAMAGED, "the history of timeline 2, which recovery");
    assert_refused_as(f, "2", TIMELINE_DAMAGED, "the history of timeline 2, which recovery");
    /* recovery along a newer timeline still fetches it first (restoreTimeLineHistoryFiles) */
    archive_history(f, 3,
                    "1\t0/4000000\tno recovery target specified\n"
                    "2\t0/9000000\tno recovery target specified\n");
    assert_refused_as(f, "latest", TIMELINE_DAMAGED, "the history of timeline 2, which recovery");
    assert_refused_as(f, "3", TIMELINE_DAMAGED, "the history of timeline 2, which recovery");
}

/* --target-timeline N fetches the history of every timeline from the backup's up to N. */
static void test_damaged_history_between(void **state)
{
    fixture *f = *state;

    archive_history(f, 3, "1\t0/4000000\tno recovery target specified\n");
    archive_history(f, 4,
                    "1\t0/4000000\tno recovery target specified\n"
                    "2\t0/9000000\tno recovery target specified\n");
    assert_follows(f, "4", 4, "2@0 4@9000000");
    damage_history(f, 3);
    /* timeline 3 is on no timeline's way here, and recovery fetches it all the same */
    assert_refused_as(f, "4", TIMELINE_DAMAGED, "the history of timeline 3, which recovery");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_history_parse),
        cmocka_unit_test_setup_teardown(test_no_newer_timeline, setup, teardown),
        cmocka_unit_test_setup_teardown(test_newest_descends, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damaged_history, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damaged_own_history, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damaged_history_between, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
