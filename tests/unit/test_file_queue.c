/*
 * test_file_queue.c - covers src/backup/file_queue.c: the order of the files and their
 * partition groups.
 */
#include "helpers.h"

#include "backup/file_queue.h"

#define PART  (1u << 20)  /* partition size of these tests */
#define BIG   (PART / 2)  /* a database at least a quarter of a partition */
#define SMALL (PART / 16) /* and one below */

static io_plan_place test_file_queue_place = {.read_size = 1 << 20};
static const io_plan test_file_queue_plan = {.places = &test_file_queue_place, .nplaces = 1};

static datadir_entry test_file_queue_entries[] = {
    {.path = "global/1262", .size = 8192},
    {.path = "base/5/1259", .size = 3 * SMALL},     /* postgres: initdb's, group 0 */
    {.path = "base/16390/16400", .size = BIG},      /* big: 16390 */
    {.path = "base/16390/16400_fsm", .size = 8192}, /* its fsm: 16390 too */
    {.path = "base/16390/PG_VERSION", .size = 3},   /* not a relation file: group 0 */
    {.path = "base/16391/16400", .size = SMALL},    /* small: group 0 */
    {.path = "pg_tblspc/16384/PG_15_202209061/16390/16500", .size = BIG / 2}, /* 16390's */
    {.path = "pg_tblspc/16384/PG_15_202209061/16392/16500", .size = 2 * BIG}, /* big: 16392 */
    {.path = "base/16390", .is_dir = true},
    {.path = "pg_tblspc/16384", .link = "/srv/ts"},
};
#define NENTRIES (sizeof(test_file_queue_entries) / sizeof(test_file_queue_entries[0]))

static const pipeline_file *test_file_queue_find(const pipeline_file *files, const char *path)
{
    for (size_t i = 0; i < NENTRIES; i++)
        if (strcmp(files[i].path, path) == 0)
            return &files[i];
    fail_msg("no file %s", path);
    return NULL;
}

static pipeline_file *test_file_queue_build(uint64_t partition_size)
{
    datadir dd = {.entries = test_file_queue_entries, .n = NENTRIES};

    return file_queue_build(&dd, &test_file_queue_plan, partition_size);
}

/* A big user database's relation files, in the data directory or a tablespace, share its oid. */
static void test_big_database_has_its_own_group(void **state)
{
    pipeline_file *files = test_file_queue_build(PART);

    (void)state;
    assert_int_equal(test_file_queue_find(files, "base/16390/16400")->group, 16390);
    assert_int_equal(test_file_queue_find(files, "base/16390/16400_fsm")->group, 16390);
    assert_int_equal(
        test_file_queue_find(files, "pg_tblspc/16384/PG_15_202209061/16390/16500")->group, 16390);
    assert_int_equal(
        test_file_queue_find(files, "pg_tblspc/16384/PG_15_202209061/16392/16500")->group, 16392);
    free(files);
}

/* Everything else shares group 0: catalogs, initdb's databases, small ones, entries. */
static void test_the_rest_shares_group_zero(void **state)
{
    pipeline_file *files = test_file_queue_build(PART);
    const char *rest[] = {"global/1262",      "base/5/1259", "base/16390/PG_VERSION",
                          "base/16391/16400", "base/16390",  "pg_tblspc/16384"};

    (void)state;
    for (size_t i = 0; i < sizeof(rest) / sizeof(rest[0]); i++)
        assert_int_equal(test_file_queue_find(files, rest[i])->group, 0);
    free(files);
}

/* A partition size four times a database's makes it small: no group of its own. */
static void test_group_threshold_follows_partition_size(void **state)
{
    pipeline_file *files = test_file_queue_build(4 * (uint64_t)BIG * 2);

    (void)state;
    assert_int_equal(test_file_queue_find(files, "base/16390/16400")->group, 0);
    /* exactly a quarter: its own group */
    assert_int_equal(
        test_file_queue_find(files, "pg_tblspc/16384/PG_15_202209061/16392/16500")->group, 16392);
    free(files);
}

/*
 * The groups one after the other, the largest first (16392: 1 MiB, 16390: 768 KiB, group 0:
 * 256 KiB + a few bytes), each largest file first; entries without data last.
 */
static void test_groups_in_order_largest_first(void **state)
{
    pipeline_file *files = test_file_queue_build(PART);
    const char *order[] = {"pg_tblspc/16384/PG_15_202209061/16392/16500",
                           "base/16390/16400",
                           "pg_tblspc/16384/PG_15_202209061/16390/16500",
                           "base/16390/16400_fsm",
                           "base/5/1259",
                           "base/16391/16400",
                           "global/1262",
                           "base/16390/PG_VERSION"};

    (void)state;
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
        assert_string_equal(files[i].path, order[i]);
    assert_true(files[NENTRIES - 2].is_dir || files[NENTRIES - 2].link != NULL);
    assert_true(files[NENTRIES - 1].is_dir || files[NENTRIES - 1].link != NULL);
    free(files);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_big_database_has_its_own_group),
        cmocka_unit_test(test_the_rest_shares_group_zero),
        cmocka_unit_test(test_group_threshold_follows_partition_size),
        cmocka_unit_test(test_groups_in_order_largest_first),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
