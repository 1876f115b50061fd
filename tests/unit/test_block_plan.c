/*
 * test_block_plan.c - covers src/backup/block_plan.c, the pure parts of
 * src/pg/wal_summary.c (finding a fork's runs, the coverage of a range of
 * LSNs) and delta_summary_assign in src/backup/delta_summary.c: how a WAL
 * summary's rows map to relation files (tablespace OIDs of base/, global/
 * and pg_tblspc, segments, relative block numbers), the limit block rule,
 * growth since the parent, the database marker, the fall backs to the page
 * scan, and which files get no plan at all.
 */
#include "helpers.h"

#include "backup/block_plan.h"
#include "backup/delta_summary.h"
#include "pg/wal_summary.h"

#define SEG   PG_SEGMENT_PAGES
#define PAGES 1000 /* a file's pages in most tests */
#define DB    5
#define REL   16384
#define SPC   16500 /* a user tablespace */

static const block_plan_limits limits = {.segment_pages = SEG, .max_pages = 100000};

#define CHANGE(spc, db, rel, fork, start, count)                                                   \
    {                                                                                              \
        spc, db, rel, fork, false, start, count                                                    \
    }
#define LIMIT(spc, db, rel, fork, at)                                                              \
    {                                                                                              \
        spc, db, rel, fork, true, at, 1                                                            \
    }

static block_plan plan_of(const wal_summary_run *runs, size_t n, const char *path, uint64_t pages,
                          uint64_t parent_pages)
{
    wal_summary ws = {(wal_summary_run *)runs, n};
    block_plan_file f = {.size = pages * PG_PAGE_SIZE, .parent_size = parent_pages * PG_PAGE_SIZE};
    block_plan p;

    assert_true(relfile_parse(path, &f.rel));
    block_plan_for_file(&ws, &f, &limits, &p);
    return p;
}

static void assert_run(const block_plan *p, size_t i, uint32_t start, uint32_t count)
{
    assert_true(i < p->nruns);
    assert_int_equal(p->runs[i].start, start);
    assert_int_equal(p->runs[i].count, count);
}

static void test_tablespace_oids(void **state)
{
    relfile rel;

    (void)state;
    assert_true(relfile_parse("base/5/16384", &rel));
    assert_int_equal(block_plan_spc_oid(&rel), WAL_SUMMARY_SPC_DEFAULT);
    assert_true(relfile_parse("global/1262", &rel));
    assert_int_equal(block_plan_spc_oid(&rel), WAL_SUMMARY_SPC_GLOBAL);
    assert_true(relfile_parse("pg_tblspc/16500/PG_17_202406281/5/16384", &rel));
    assert_int_equal(block_plan_spc_oid(&rel), SPC);
}

/* Rows of the file's own relation, fork and place are taken; others are not. */
static void test_rows_map_to_their_file(void **state)
{
    const wal_summary_run runs[] = {
        CHANGE(WAL_SUMMARY_SPC_DEFAULT, 4, REL, 0, 1, 1),      /* another database */
        CHANGE(WAL_SUMMARY_SPC_DEFAULT, DB, REL, 0, 10, 3),    /* ours */
        CHANGE(WAL_SUMMARY_SPC_DEFAULT, DB, REL, 0, 13, 2),    /* adjacent: one read */
        CHANGE(WAL_SUMMARY_SPC_DEFAULT, DB, REL, 0, 500, 1),   /* ours */
        CHANGE(WAL_SUMMARY_SPC_DEFAULT, DB, REL, 2, 0, 1),     /* the vm fork */
        CHANGE(WAL_SUMMARY_SPC_DEFAULT, DB, REL + 1, 0, 2, 1), /* another relation */
        CHANGE(SPC, DB, REL, 0, 7, 1),                         /* same ids, other tablespace */
    };
    block_plan p = plan_of(runs, 7, "base/5/16384", PAGES, PAGES);

    (void)state;
    assert_int_equal(p.kind, BLOCK_PLAN_SPARSE);
    assert_int_equal(p.nruns, 2);
    assert_run(&p, 0, 10, 5);
    assert_run(&p, 1, 500, 1);
    assert_int_equal(p.pages, 6);
    block_plan_free(&p);
    p = plan_of(runs, 7, "pg_tblspc/16500/PG_17_202406281/5/16384", PAGES, PAGES);
    assert_int_equal(p.nruns, 1);
    assert_run(&p, 0, 7, 1);
    block_plan_free(&p);
}

/* Absolute block numbers become relative to the segment; runs are cut at its edges. */
static void test_segments(void **state)
{
    const wal_summary_run runs[] = {
        CHANGE(WAL_SUMMARY_SPC_DEFAULT, DB, REL, 0, SEG - 2, 4), /* across segments 0 and 1 */
        CHANGE(WAL_SUMMARY_SPC_DEFAULT, DB, REL, 0, 2 * SEG + 1, 1),
    };
    block_plan p = plan_of(runs, 2, "base/5/16384", SEG, SEG);

    (void)state;
    assert_int_equal(p.nruns, 1);
    assert_run(&p, 0, SEG - 2, 2);
    block_plan_free(&p);
    p = plan_of(runs, 2, "base/5/16384.1", PAGES, PAGES);
    assert_int_equal(p.nruns, 1);
    assert_run(&p, 0, 0, 2);
    block_plan_free(&p);
    p = plan_of(runs, 2, "base/5/16384.2", PAGES, PAGES);
    assert_int_equal(p.nruns, 1);
    assert_run(&p, 0, 1, 1);
    block_plan_free(&p);
    /* a change past the file's end now (it shrank again since): not read */
    p = plan_of(runs, 2, "base/5/16384.2", 1, 1);
    assert_int_equal(p.kind, BLOCK_PLAN_SPARSE);
    assert_int_equal(p.nruns, 0);
    block_plan_free(&p);
}

/* Cut to L and grown again: every block from L to the end now is read, changed or not. */
static void test_limit_block_reads_all_after_it(void **state)
{
    const wal_summary_run runs[] = {
        CHANGE(WAL_SUMMARY_SPC_DEFAULT, DB, REL, 0, 3, 1),
        CHANGE(WAL_SUMMARY_SPC_DEFAULT, DB, REL, 0, 900, 1),
        LIMIT(WAL_SUMMARY_SPC_DEFAULT, DB, REL, 0, 950),
        LIMIT(WAL_SUMMARY_SPC_DEFAULT, DB, REL, 0, 960), /* the lowest limit counts */
    };
    block_plan p = plan_of(runs, 4, "base/5/16384", PAGES, PAGES);

    (void)state;
    assert_int_equal(p.kind, BLOCK_PLAN_SPARSE);
    assert_int_equal(p.nruns, 3);
    assert_run(&p, 0, 3, 1);
    assert_run(&p, 1, 900, 1);
    assert_run(&p, 2, 950, PAGES - 950);
    block_plan_free(&p);
}

/* A limit at or before the segment's first block: the segment began anew, read whole. */
static void test_limit_at_segment_start_is_whole(void **state)
{
    const wal_summary_run runs[] = {LIMIT(WAL_SUMMARY_SPC_DEFAULT, DB, REL, 0, SEG)};
    block_plan p = plan_of(runs, 1, "base/5/16384.1", PAGES, PAGES);

    (void)state;
    assert_int_equal(p.kind, BLOCK_PLAN_WHOLE);
    block_plan_free(&p);
    p = plan_of(runs, 1, "base/5/16384", SEG, SEG); /* segment 0 ends at the limit */
    assert_int_equal(p.kind, BLOCK_PLAN_SPARSE);
    assert_int_equal(p.nruns, 0);
    block_plan_free(&p);
    const wal_summary_run dropped[] = {LIMIT(WAL_SUMMARY_SPC_DEFAULT, DB, REL, 0, 0)};
    p = plan_of(dropped, 1, "base/5/16384", PAGES, PAGES);
    assert_int_equal(p.kind, BLOCK_PLAN_WHOLE);
    block_plan_free(&p);
}

/* Grown since the parent: the new blocks are read even where the summaries are silent. */
static void test_growth_is_read(void **state)
{
    const wal_summary_run runs[] = {CHANGE(WAL_SUMMARY_SPC_DEFAULT, DB, REL, 0, 5, 1)};
    block_plan p = plan_of(runs, 1, "base/5/16384", PAGES, PAGES - 10);

    (void)state;
    assert_int_equal(p.nruns, 2);
    assert_run(&p, 0, 5, 1);
    assert_run(&p, 1, PAGES - 10, 10);
    block_plan_free(&p);
    /* not named at all: only the growth, or nothing (an increment of no pages) */
    p = plan_of(runs, 1, "base/5/16385", PAGES, PAGES - 1);
    assert_int_equal(p.kind, BLOCK_PLAN_SPARSE);
    assert_int_equal(p.nruns, 1);
    assert_run(&p, 0, PAGES - 1, 1);
    block_plan_free(&p);
    p = plan_of(runs, 1, "base/5/16385", PAGES, PAGES + 50);
    assert_int_equal(p.kind, BLOCK_PLAN_SPARSE);
    assert_int_equal(p.pages, 0);
    block_plan_free(&p);
}

/* A database created or dropped since the parent (relfilenode 0): all its files whole. */
static void test_database_marker_is_whole(void **state)
{
    const wal_summary_run runs[] = {LIMIT(WAL_SUMMARY_SPC_DEFAULT, DB, 0, 0, 0),
                                    CHANGE(WAL_SUMMARY_SPC_DEFAULT, DB, REL, 0, 1, 1)};
    block_plan p = plan_of(runs, 2, "base/5/16384", PAGES, PAGES);

    (void)state;
    assert_int_equal(p.kind, BLOCK_PLAN_WHOLE);
    block_plan_free(&p);
    p = plan_of(runs, 2, "base/6/16384", PAGES, PAGES);
    assert_int_equal(p.kind, BLOCK_PLAN_SPARSE);
    block_plan_free(&p);
}

/* Nearly all changed, more than the buffer holds, or a size we do not understand: page scan. */
static void test_falls_back_to_scan(void **state)
{
    const wal_summary_run most[] = {CHANGE(WAL_SUMMARY_SPC_DEFAULT, DB, REL, 0, 0, 901)};
    const wal_summary_run some[] = {CHANGE(WAL_SUMMARY_SPC_DEFAULT, DB, REL, 0, 0, 900)};
    wal_summary ws = {(wal_summary_run *)some, 1};
    block_plan_file f = {.size = PAGES * PG_PAGE_SIZE, .parent_size = PAGES * PG_PAGE_SIZE};
    block_plan_limits small = {.segment_pages = SEG, .max_pages = 899};
    block_plan p = plan_of(most, 1, "base/5/16384", PAGES, PAGES);

    (void)state;
    assert_int_equal(p.kind, BLOCK_PLAN_SCAN);
    assert_null(p.runs);
    p = plan_of(some, 1, "base/5/16384", PAGES, PAGES);
    assert_int_equal(p.kind, BLOCK_PLAN_SPARSE);
    block_plan_free(&p);
    assert_true(relfile_parse("base/5/16384", &f.rel));
    block_plan_for_file(&ws, &f, &small, &p);
    assert_int_equal(p.kind, BLOCK_PLAN_SCAN);
    f.size += 100; /* not whole pages */
    block_plan_for_file(&ws, &f, &limits, &p);
    assert_int_equal(p.kind, BLOCK_PLAN_SCAN);
}

static void test_bytes_within(void **state)
{
    block_run runs[] = {{2, 3}, {10, 2}};
    block_plan p = {.kind = BLOCK_PLAN_SPARSE, .runs = runs, .nruns = 2, .pages = 5};

    (void)state;
    assert_int_equal(block_plan_bytes_within(&p, UINT64_MAX), 5 * PG_PAGE_SIZE);
    assert_int_equal(block_plan_bytes_within(&p, 11 * PG_PAGE_SIZE), 4 * PG_PAGE_SIZE);
    assert_int_equal(block_plan_bytes_within(&p, 3 * PG_PAGE_SIZE + 100), PG_PAGE_SIZE + 100);
    assert_int_equal(block_plan_bytes_within(&p, PG_PAGE_SIZE), 0);
}

static void test_ranges_cover(void **state)
{
    uint64_t start[] = {100, 200, 250, 400}, end[] = {200, 300, 260, 500}, gap;

    (void)state;
    assert_true(wal_summary_ranges_cover(start, end, 4, 150, 300, &gap));
    assert_true(wal_summary_ranges_cover(start, end, 4, 100, 100, &gap));
    assert_false(wal_summary_ranges_cover(start, end, 4, 50, 150, &gap)); /* begins later */
    assert_int_equal(gap, 50);
    assert_false(wal_summary_ranges_cover(start, end, 4, 150, 450, &gap)); /* 300..400 missing */
    assert_int_equal(gap, 300);
    assert_false(wal_summary_ranges_cover(start, end, 0, 150, 151, &gap));
}

/* Only main forks the parent has get a plan; FSM, VM, new and non-relation files keep today's. */
static void test_assign_only_candidates(void **state)
{
    const char *paths[] = {"base/5/16384", "base/5/16384_fsm", "base/5/16384_vm",
                           "base/5/99999", "PG_VERSION",       "base/5/16390"};
    pipeline_file files[6];
    const wal_summary_run runs[] = {CHANGE(WAL_SUMMARY_SPC_DEFAULT, DB, REL, 0, 1, 1),
                                    CHANGE(WAL_SUMMARY_SPC_DEFAULT, DB, REL, 1, 0, 1)};
    wal_summary ws = {(wal_summary_run *)runs, 2};
    manifest parent;
    delta_summary ds = {0};

    (void)state;
    manifest_init(&parent);
    for (size_t i = 0; i < 6; i++) {
        manifest_file mf = {.path = (char *)paths[i],
                            .size = PAGES * PG_PAGE_SIZE,
                            .file_size = PAGES * PG_PAGE_SIZE};
        files[i] = (pipeline_file){
            .path = paths[i], .source = paths[i], .size = PAGES * PG_PAGE_SIZE, .mode = 0600};
        if (i != 3) /* base/5/99999 is new since the parent */
            manifest_add_file(&parent, &mf);
    }
    manifest_build_index(&parent);
    delta_summary_assign(&ws, &parent, &limits, files, 6, &ds);
    assert_non_null(files[0].plan);
    assert_int_equal(files[0].plan->pages, 1);
    assert_null(files[1].plan);
    assert_null(files[2].plan);
    assert_null(files[3].plan);
    assert_null(files[4].plan);
    assert_non_null(files[5].plan); /* unchanged: an increment of no pages */
    assert_int_equal(files[5].plan->kind, BLOCK_PLAN_SPARSE);
    assert_int_equal(files[5].plan->pages, 0);
    delta_summary_free(&ds);
    manifest_free(&parent);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tablespace_oids),
        cmocka_unit_test(test_rows_map_to_their_file),
        cmocka_unit_test(test_segments),
        cmocka_unit_test(test_limit_block_reads_all_after_it),
        cmocka_unit_test(test_limit_at_segment_start_is_whole),
        cmocka_unit_test(test_growth_is_read),
        cmocka_unit_test(test_database_marker_is_whole),
        cmocka_unit_test(test_falls_back_to_scan),
        cmocka_unit_test(test_bytes_within),
        cmocka_unit_test(test_ranges_cover),
        cmocka_unit_test(test_assign_only_candidates),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
