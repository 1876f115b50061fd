/*
 * test_filter_page_checksum.c - covers src/backup/filter_page_checksum.c
 * alone, on pages PostgreSQL wrote (tests/data/pages): good pages pass, a
 * bad page is read again from the file and reported only if that copy is
 * bad too, new pages and pages newer than the backup's start are not
 * judged, other files are not looked at, and the bytes go on untouched.
 */
#include "helpers.h"

#include "backup/filter_page_checksum.h"
#include "pg/page_checksum.h"

#define FIXTURE_PAGES 3
#define LSN_FAR       UINT64_MAX /* every page is older than this start */

typedef struct sink {
    file_filter base;
    const unsigned char *last_data;
    uint64_t bytes;
    file_filter_result seen;
} sink;

static bool sink_begin(file_filter *f, const file_filter_file *file, pgd_error *err)
{
    (void)f, (void)file, (void)err;
    return true;
}

static bool sink_data(file_filter *f, file_chunk *chunk, pgd_error *err)
{
    sink *s = (sink *)f;

    (void)err;
    s->last_data = chunk->data;
    s->bytes += chunk->len;
    return true;
}

static bool sink_end(file_filter *f, file_filter_result *result, pgd_error *err)
{
    (void)err;
    ((sink *)f)->seen = *result;
    return true;
}

static void sink_free(file_filter *f)
{
    (void)f; /* the test owns it */
}

static const file_filter_ops sink_ops = {sink_begin, sink_data, sink_end, sink_free};

typedef struct fixture {
    char *dir;
    char source[512];
    unsigned char *pages; /* FIXTURE_PAGES pages of heap_seg1: blocks 131072.. */
} fixture;

static int fixture_setup(void **state)
{
    fixture *fx = calloc(1, sizeof(*fx));
    char path[512];
    FILE *f;

    snprintf(path, sizeof(path), "%s/heap_seg1", getenv("PGD_TEST_PAGES"));
    fx->pages = malloc(FIXTURE_PAGES * PG_PAGE_SIZE);
    f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fread(fx->pages, PG_PAGE_SIZE, FIXTURE_PAGES, f), FIXTURE_PAGES);
    fclose(f);
    fx->dir = test_tmpdir();
    snprintf(fx->source, sizeof(fx->source), "%s/16384.1", fx->dir);
    write_test_file(fx->source, fx->pages, FIXTURE_PAGES * PG_PAGE_SIZE);
    *state = fx;
    return 0;
}

static int fixture_teardown(void **state)
{
    fixture *fx = *state;

    rm_rf(fx->dir);
    free(fx->pages);
    free(fx);
    return 0;
}

/* Pass `data` (FIXTURE_PAGES pages) through a new filter, one page a chunk; returns its result. */
static file_filter_result run_filter(const fixture *fx, unsigned char *data, bool is_relation,
                                     uint64_t start_lsn)
{
    sink s = {.base = {.ops = &sink_ops}};
    filter_page_checksum_config cfg = {.start_lsn = start_lsn, .reread = READ_MODE_DIRECT};
    pgd_error err = {0};
    file_filter *f = filter_page_checksum_new(&s.base, &cfg);
    file_filter_file file = {.path = "base/5/16384.1",
                             .source = fx->source,
                             .size = FIXTURE_PAGES * PG_PAGE_SIZE,
                             .is_relation = is_relation,
                             .segment = 1};
    file_filter_result result = {0};

    assert_non_null(f);
    assert_true(file_filter_begin(f, &file, &err));
    for (size_t b = 0; b < FIXTURE_PAGES; b++) {
        file_chunk chunk = {.data = data + b * PG_PAGE_SIZE,
                            .len = PG_PAGE_SIZE,
                            .room = PG_PAGE_SIZE,
                            .offset = b * PG_PAGE_SIZE};
        assert_true(file_filter_data(f, &chunk, &err));
        assert_ptr_equal(s.last_data, chunk.data); /* the same bytes, not a copy */
    }
    assert_true(file_filter_end(f, &result, &err));
    assert_int_equal(s.bytes, FIXTURE_PAGES * PG_PAGE_SIZE);
    assert_memory_equal(&s.seen, &result, sizeof(result)); /* handed down */
    file_filter_free(f);
    return result;
}

static void test_good_pages_pass(void **state)
{
    fixture *fx = *state;
    file_filter_result r = run_filter(fx, fx->pages, true, LSN_FAR);

    assert_int_equal(r.pages_checked, FIXTURE_PAGES);
    assert_int_equal(r.pages_bad, 0);
    assert_int_equal(r.pages_reread, 0);
}

static void test_bad_page_that_is_bad_on_disk_is_reported_with_its_block(void **state)
{
    fixture *fx = *state;
    file_filter_result r;

    fx->pages[2 * PG_PAGE_SIZE + 5000] ^= 0xff;
    write_test_file(fx->source, fx->pages, FIXTURE_PAGES * PG_PAGE_SIZE);
    r = run_filter(fx, fx->pages, true, LSN_FAR);
    assert_int_equal(r.pages_checked, FIXTURE_PAGES);
    assert_int_equal(r.pages_bad, 1);
    assert_int_equal(r.bad_blocks[0], 131074);
}

/* A torn read: the copy in memory is bad, the device has a good one. */
static void test_bad_page_that_reads_back_good_is_not_reported(void **state)
{
    fixture *fx = *state;
    unsigned char *torn = malloc(FIXTURE_PAGES * PG_PAGE_SIZE);
    file_filter_result r;

    memcpy(torn, fx->pages, FIXTURE_PAGES * PG_PAGE_SIZE);
    torn[1 * PG_PAGE_SIZE + 6000] ^= 0xff;
    r = run_filter(fx, torn, true, LSN_FAR);
    assert_int_equal(r.pages_bad, 0);
    assert_int_equal(r.pages_reread, 1);
    assert_int_equal(r.pages_checked, FIXTURE_PAGES);
    free(torn);
}

/* The file vanished before the page could be read again: WAL replay deals with it. */
static void test_bad_page_of_a_vanished_file_is_not_reported(void **state)
{
    fixture *fx = *state;
    file_filter_result r;

    fx->pages[PG_PAGE_SIZE + 100] ^= 0xff;
    assert_int_equal(unlink(fx->source), 0);
    r = run_filter(fx, fx->pages, true, LSN_FAR);
    assert_int_equal(r.pages_bad, 0);
}

static void test_pages_newer_than_the_start_are_not_judged(void **state)
{
    fixture *fx = *state;
    uint64_t lsn = UINT64_MAX;
    file_filter_result r;

    for (size_t b = 0; b < FIXTURE_PAGES; b++)
        if (page_checksum_lsn(fx->pages + b * PG_PAGE_SIZE) < lsn)
            lsn = page_checksum_lsn(fx->pages + b * PG_PAGE_SIZE);
    assert_true(lsn > 0);
    fx->pages[100] ^= 0xff;                   /* in the page body of block 131072: would fail */
    r = run_filter(fx, fx->pages, true, lsn); /* start == the oldest page's LSN */
    assert_int_equal(r.pages_checked, 0);
    assert_int_equal(r.pages_bad, 0);
}

static void test_zero_pages_are_skipped_and_other_files_not_read(void **state)
{
    fixture *fx = *state;
    file_filter_result r;

    memset(fx->pages + PG_PAGE_SIZE, 0, PG_PAGE_SIZE);
    r = run_filter(fx, fx->pages, true, LSN_FAR);
    assert_int_equal(r.pages_checked, FIXTURE_PAGES - 1);
    assert_int_equal(r.pages_bad, 0);
    fx->pages[100] ^= 0xff;
    r = run_filter(fx, fx->pages, false, LSN_FAR);
    assert_int_equal(r.pages_checked, 0);
    assert_int_equal(r.pages_bad, 0);
}

static void test_many_bad_pages_are_counted_and_the_first_listed(void **state)
{
    fixture *fx = *state;
    sink s = {.base = {.ops = &sink_ops}};
    filter_page_checksum_config cfg = {.start_lsn = LSN_FAR, .reread = READ_MODE_BUFFERED};
    pgd_error err = {0};
    file_filter *f = filter_page_checksum_new(&s.base, &cfg);
    enum { NPAGES = FILE_FILTER_BAD_BLOCKS_MAX + 3 };
    unsigned char *bad = calloc(NPAGES, PG_PAGE_SIZE);
    file_filter_file file = {.path = "base/5/16384.1",
                             .source = fx->source,
                             .size = NPAGES * PG_PAGE_SIZE,
                             .is_relation = true,
                             .segment = 1};
    file_filter_result r = {0};
    file_chunk chunk = {
        .data = bad, .len = NPAGES * PG_PAGE_SIZE, .room = NPAGES * PG_PAGE_SIZE, .offset = 0};

    for (size_t b = 0; b < NPAGES; b++) /* block 131072's page everywhere: wrong elsewhere */
        memcpy(bad + b * PG_PAGE_SIZE, fx->pages, PG_PAGE_SIZE);
    write_test_file(fx->source, bad, NPAGES * PG_PAGE_SIZE);
    assert_true(file_filter_begin(f, &file, &err));
    assert_true(file_filter_data(f, &chunk, &err));
    assert_true(file_filter_end(f, &r, &err));
    assert_int_equal(r.pages_checked, NPAGES);
    assert_int_equal(r.pages_bad, NPAGES - 1);
    for (size_t i = 0; i < FILE_FILTER_BAD_BLOCKS_MAX; i++)
        assert_int_equal(r.bad_blocks[i], 131073 + i);
    file_filter_free(f);
    free(bad);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_good_pages_pass, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(
            test_bad_page_that_is_bad_on_disk_is_reported_with_its_block, fixture_setup,
            fixture_teardown),
        cmocka_unit_test_setup_teardown(test_bad_page_that_reads_back_good_is_not_reported,
                                        fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_bad_page_of_a_vanished_file_is_not_reported,
                                        fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_pages_newer_than_the_start_are_not_judged,
                                        fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_zero_pages_are_skipped_and_other_files_not_read,
                                        fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_many_bad_pages_are_counted_and_the_first_listed,
                                        fixture_setup, fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
