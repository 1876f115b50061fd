/*
 * test_wal_prefetch.c - covers src/wal/wal_prefetch.c: the segments after
 * the one served are downloaded, checked and published under their size
 * and CRC, and only those; a segment not in the repository is left out
 * (not recorded as missing); a segment of another database system is not
 * kept; downloads a killed fetcher left are removed when the next starts;
 * a download is written back (fsync) before it is published, and one the
 * disk failed to write back is not published;
 * a worker that cannot be started stops the prefetcher, saying so, and the
 * workers that did start are stopped and joined.
 */
#include "wal_test_segment.h"

#include "fail_sync.h"
#include "fail_thread.h"

#include <sys/stat.h>

#include "wal/wal_archive.h"
#include "wal/wal_prefetch.h"
#include "wal/wal_spool.h"

#define SYSID     UINT64_C(7200000000000000001)
#define OTHER_SYS UINT64_C(7200000000000000002)
#define NSEGS     6 /* segments 1..6 are in the repository */

typedef struct fixture {
    char *tmp;
    char repo_path[4200], spool[4200], src[4200];
} fixture;

static storage *open_repo(void *arg, pgd_error *err)
{
    return storage_open(((fixture *)arg)->repo_path, NULL, err);
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    pgd_error err = {0};
    storage *repo;

    assert_non_null(f);
    f->tmp = test_tmpdir();
    snprintf(f->repo_path, sizeof(f->repo_path), "%s/repo", f->tmp);
    snprintf(f->src, sizeof(f->src), "%s/src", f->tmp);
    assert_int_equal(mkdir(f->src, 0700), 0);
    repo = storage_open(f->repo_path, NULL, &err);
    assert_non_null(repo);
    for (uint64_t i = 1; i <= NSEGS; i++) {
        char name[25], path[4400];
        wal_push_result result;
        test_segment_file(f->src, 1, i, SYSID, name);
        snprintf(path, sizeof(path), "%s/%s", f->src, name);
        assert_true(
            wal_archive_push(repo, path, COMPRESS_LZ4, COMPRESS_LEVEL_DEFAULT, &result, &err));
    }
    storage_free(repo);
    assert_true(wal_spool_open(f->tmp, WAL_SPOOL_FETCH, f->tmp, f->repo_path, f->spool,
                               sizeof(f->spool), &err));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;

    fail_file_fsync = false; /* a test that failed half-way leaves the disk working */
    rm_rf(f->tmp);
    free(f);
    return 0;
}

static void request(fixture *f, uint64_t after, uint64_t sysid, unsigned count)
{
    wal_fetch_request req = {.seg_size = TEST_SEG_SIZE, .sysid = sysid, .count = count};
    pgd_error err = {0};

    test_segment_name(1, after, req.name);
    assert_true(wal_spool_request_write(f->spool, &req, &err));
}

static wal_prefetch_stop last_stop; /* why the last run stopped */

static bool run_err(fixture *f, pgd_error *err)
{
    wal_prefetch_config cfg = {
        .spool_dir = f->spool,
        .concurrency = 2,
        .idle_exit_s = 0,
        .hooks = {.open_repo = open_repo, .open_arg = f},
    };

    last_stop = (wal_prefetch_stop)-1;
    return wal_prefetch_run(&cfg, &last_stop, err);
}

static bool run(fixture *f)
{
    pgd_error err = {0};
    bool ok = run_err(f, &err);

    if (!ok)
        print_error("%s\n", err.msg);
    return ok;
}

static void state_of(fixture *f, uint64_t segno, bool *ready, bool *partial)
{
    char name[25];
    pgd_error err = {0};

    test_segment_name(1, segno, name);
    assert_true(wal_spool_entry_state(f->spool, name, ready, partial, &err));
}

/* Segments from..to are all published (ready) or all absent; none is half downloaded. */
static void assert_spooled(fixture *f, uint64_t from, uint64_t to, bool ready)
{
    for (uint64_t i = from; i <= to; i++) {
        bool is_ready, partial;

        state_of(f, i, &is_ready, &partial);
        assert_int_equal(is_ready, ready);
        assert_false(partial);
    }
}

static void test_the_window_is_downloaded_and_served_intact(void **state)
{
    fixture *f = *state;

    request(f, 2, SYSID, 3);
    assert_true(run(f));
    assert_int_equal(last_stop, WAL_PREFETCH_STOP_IDLE);
    assert_spooled(f, 1, 2, false);
    assert_spooled(f, 3, 5, true);
    assert_spooled(f, 6, NSEGS, false);
    {
        char name[25], dest[4400], src[4400], why[256], cmd[9000];
        wal_entry_result result;
        pgd_error err = {0};

        test_segment_name(1, 4, name);
        snprintf(dest, sizeof(dest), "%s/served", f->tmp);
        snprintf(src, sizeof(src), "%s/%s", f->src, name);
        assert_true(
            wal_spool_entry_take(f->spool, name, dest, SYSID, &result, why, sizeof(why), &err));
        assert_int_equal(result, WAL_ENTRY_SERVED);
        snprintf(cmd, sizeof(cmd), "cmp -s '%s' '%s'", dest, src);
        assert_int_equal(system(cmd), 0);
    }
}

static void test_missing_segments_are_only_left_out(void **state)
{
    fixture *f = *state;

    request(f, 5, SYSID, 3);
    assert_true(run(f));
    assert_spooled(f, 6, 6, true);
    assert_spooled(f, 7, 8, false);
}

static void test_segments_of_another_system_are_not_kept(void **state)
{
    fixture *f = *state;

    request(f, 1, OTHER_SYS, 2);
    assert_true(run(f));
    assert_spooled(f, 2, 3, false);
}

static void test_downloads_of_a_killed_fetcher_are_removed(void **state)
{
    fixture *f = *state;
    char name[25], part[4400];
    bool ready, partial;

    test_segment_name(1, 9, name);
    wal_spool_part_path(f->spool, name, part, sizeof(part));
    write_test_file(part, "half", 4);
    request(f, 1, SYSID, 1);
    assert_true(run(f));
    state_of(f, 9, &ready, &partial);
    assert_false(partial);
    state_of(f, 2, &ready, &partial);
    assert_true(ready);
}

/*
 * PostgreSQL fsyncs each file restore_command gives it, in the startup
 * process: the prefetcher writes a download back first, beside replay. A
 * download the disk failed to write back is never published.
 */
static void test_a_download_not_written_back_is_not_published(void **state)
{
    fixture *f = *state;

    request(f, 2, SYSID, 2);
    fail_file_fsync = true;
    assert_true(run(f));
    fail_file_fsync = false;
    assert_spooled(f, 3, 4, false);
    /* the disk works again: the next prefetcher downloads the window */
    assert_true(run(f));
    assert_spooled(f, 3, 4, true);
}

static void test_no_request_no_work(void **state)
{
    fixture *f = *state;

    assert_true(run(f));
    assert_int_equal(last_stop, WAL_PREFETCH_STOP_NO_REQUEST);
}

/* The second of two workers cannot start: an error that names it, and nothing downloaded. */
static void test_a_worker_that_cannot_start_stops_the_prefetcher(void **state)
{
    fixture *f = *state;
    pgd_error err = {0};

    request(f, 2, SYSID, 3);
    fail_thread_at = 2;
    assert_false(run_err(f, &err));
    fail_thread_at = 0;
    assert_string_equal(err.msg,
                        "could not start prefetch thread 2 of 2: Resource temporarily unavailable");
    assert_spooled(f, 1, NSEGS, false);
    /* and the next prefetcher downloads the window */
    assert_true(run(f));
    assert_spooled(f, 3, 5, true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
        T(test_the_window_is_downloaded_and_served_intact),
        T(test_missing_segments_are_only_left_out),
        T(test_segments_of_another_system_are_not_kept),
        T(test_downloads_of_a_killed_fetcher_are_removed),
        T(test_a_download_not_written_back_is_not_published),
        T(test_no_request_no_work),
        T(test_a_worker_that_cannot_start_stops_the_prefetcher),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
