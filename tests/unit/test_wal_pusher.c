/*
 * test_wal_pusher.c - covers src/wal/wal_pusher.c: every file PostgreSQL
 * marked ready is pushed and recorded with what was stored; a failure is
 * recorded with its cause and not tried again until the record is read; a
 * file that is not what its name says is never stored; records of files
 * PostgreSQL has acknowledged go; a repository that cannot be opened is
 * reported for every file waiting; the backlog counts what is not stored;
 * a worker that cannot be started stops the pusher, saying so, and the
 * workers that did start are stopped and joined. Copies in the spool's
 * queue (several repositories) are pushed once PostgreSQL no longer has
 * them, counted in the backlog until then, stored equal, and removed.
 */
#include "wal_test_segment.h"

#include "fail_thread.h"

#include <sys/stat.h>

#include "wal/wal_archive.h"
#include "wal/wal_pusher.h"
#include "wal/wal_spool.h"
#include "util/crc32c.h"

#define SYSID     UINT64_C(7100000000000000001)
#define OTHER_SYS UINT64_C(7100000000000000002)
#define NSEGS     5

typedef struct fixture {
    char *tmp;
    char pg_wal[4200], repo_path[4200], spool[4200];
    char names[NSEGS][25];
    bool repo_fails;
} fixture;

static storage *open_repo(void *arg, pgd_error *err)
{
    fixture *f = arg;

    if (f->repo_fails) {
        err_set(err, "could not reach repository \"%s\"", f->repo_path);
        return NULL;
    }
    return storage_open(f->repo_path, NULL, err);
}

static void mark_ready(fixture *f, const char *name)
{
    char path[4400];

    snprintf(path, sizeof(path), "%s/archive_status/%s.ready", f->pg_wal, name);
    write_test_file(path, "", 0);
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    char status[4400];
    pgd_error err = {0};

    assert_non_null(f);
    f->tmp = test_tmpdir();
    snprintf(f->pg_wal, sizeof(f->pg_wal), "%s/pg_wal", f->tmp);
    snprintf(status, sizeof(status), "%s/archive_status", f->pg_wal);
    snprintf(f->repo_path, sizeof(f->repo_path), "%s/repo", f->tmp);
    assert_int_equal(mkdir(f->pg_wal, 0700), 0);
    assert_int_equal(mkdir(status, 0700), 0);
    for (int i = 0; i < NSEGS; i++) {
        test_segment_file(f->pg_wal, 1, (uint64_t)i + 1, SYSID, f->names[i]);
        mark_ready(f, f->names[i]);
    }
    assert_true(wal_spool_open(f->tmp, WAL_SPOOL_PUSH, f->tmp, f->repo_path, f->spool,
                               sizeof(f->spool), &err));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;

    rm_rf(f->tmp);
    free(f);
    return 0;
}

static wal_pusher_stop last_stop; /* why the last run() stopped */

static bool run(fixture *f, pgd_error *err)
{
    wal_pusher_config cfg = {
        .pg_wal = f->pg_wal,
        .spool_dir = f->spool,
        .concurrency = 3,
        .kind = COMPRESS_LZ4,
        .level = COMPRESS_LEVEL_DEFAULT,
        .idle_exit_s = 0,
        .hooks = {.open_repo = open_repo, .open_arg = f},
    };
    last_stop = (wal_pusher_stop)-1;
    return wal_pusher_run(&cfg, &last_stop, err);
}

static uint32_t file_crc(fixture *f, const char *name)
{
    unsigned char *seg = malloc(TEST_SEG_SIZE);
    char path[4400];
    FILE *in;
    uint32_t crc;

    snprintf(path, sizeof(path), "%s/%s", f->pg_wal, name);
    in = fopen(path, "rb");
    assert_non_null(in);
    assert_int_equal(fread(seg, 1, TEST_SEG_SIZE, in), TEST_SEG_SIZE);
    fclose(in);
    crc = crc32c(seg, TEST_SEG_SIZE);
    free(seg);
    return crc;
}

static bool in_repo(fixture *f, const char *name)
{
    storage *repo;
    pgd_error err = {0};
    compress_kind kind;
    bool found;

    repo = storage_open(f->repo_path, NULL, &err);
    assert_non_null(repo);
    assert_true(wal_archive_find(repo, name, &found, &kind, &err));
    storage_free(repo);
    return found;
}

static void test_every_ready_file_is_pushed_and_recorded(void **state)
{
    fixture *f = *state;
    pgd_error err = {0};
    wal_queue_stat st;

    assert_true(wal_pusher_backlog(f->pg_wal, f->spool, &st, &err));
    assert_int_equal(st.files, NSEGS);
    assert_int_equal(st.bytes, (uint64_t)NSEGS * TEST_SEG_SIZE);
    assert_string_equal(st.oldest, f->names[0]);
    assert_true(run(f, &err));
    assert_int_equal(last_stop, WAL_PUSHER_STOP_IDLE);
    for (int i = 0; i < NSEGS; i++) {
        wal_push_record rec;
        assert_true(wal_spool_record_read(f->spool, f->names[i], &rec, &err));
        assert_int_equal(rec.kind, WAL_RECORD_OK);
        assert_int_equal(rec.sum.size, TEST_SEG_SIZE);
        assert_int_equal(rec.sum.crc, file_crc(f, f->names[i]));
        assert_true(in_repo(f, f->names[i]));
    }
    assert_true(wal_pusher_backlog(f->pg_wal, f->spool, &st, &err));
    assert_int_equal(st.files, 0);
    assert_int_equal(st.bytes, 0);
}

static void test_failure_is_recorded_and_waits_for_its_reader(void **state)
{
    fixture *f = *state;
    char other[4400], name[25];
    pgd_error err = {0};
    wal_push_result result;
    wal_push_record rec, again;
    storage *repo;

    /* the repository already holds another file under the name of the third segment */
    snprintf(other, sizeof(other), "%s/other", f->tmp);
    assert_int_equal(mkdir(other, 0700), 0);
    test_segment_file(other, 1, 3, OTHER_SYS, name);
    assert_string_equal(name, f->names[2]);
    snprintf(other + strlen(other), sizeof(other) - strlen(other), "/%s", name);
    repo = storage_open(f->repo_path, NULL, &err);
    assert_true(
        wal_archive_push(repo, other, COMPRESS_ZSTD, COMPRESS_LEVEL_DEFAULT, &result, &err));
    storage_free(repo);

    assert_true(run(f, &err));
    assert_true(wal_spool_record_read(f->spool, name, &rec, &err));
    assert_int_equal(rec.kind, WAL_RECORD_ERROR);
    assert_non_null(strstr(rec.msg, "with different content"));
    assert_true(wal_spool_record_read(f->spool, f->names[3], &again, &err));
    assert_int_equal(again.kind, WAL_RECORD_OK); /* the others went on */

    assert_true(run(f, &err));
    assert_true(wal_spool_record_read(f->spool, name, &again, &err));
    assert_int_equal(again.kind, WAL_RECORD_ERROR);
    assert_true(again.written.tv_sec == rec.written.tv_sec &&
                again.written.tv_nsec == rec.written.tv_nsec);
}

static void test_a_file_that_is_not_its_name_is_not_stored(void **state)
{
    fixture *f = *state;
    char path[4400];
    pgd_error err = {0};
    wal_push_record rec;
    FILE *out;

    snprintf(path, sizeof(path), "%s/%s", f->pg_wal, f->names[1]);
    out = fopen(path, "r+b");
    assert_non_null(out);
    assert_int_equal(fseek(out, 8, SEEK_SET), 0); /* xlp_pageaddr of the first page */
    assert_int_equal(fputc(0x55, out), 0x55);
    fclose(out);
    assert_true(run(f, &err));
    assert_true(wal_spool_record_read(f->spool, f->names[1], &rec, &err));
    assert_int_equal(rec.kind, WAL_RECORD_ERROR);
    assert_non_null(strstr(rec.msg, "refusing to archive"));
    assert_false(in_repo(f, f->names[1]));
}

static void test_records_of_acknowledged_files_go(void **state)
{
    fixture *f = *state;
    char ready[4400], done[4400];
    pgd_error err = {0};
    wal_push_record rec;

    assert_true(run(f, &err));
    snprintf(ready, sizeof(ready), "%s/archive_status/%s.ready", f->pg_wal, f->names[0]);
    snprintf(done, sizeof(done), "%s/archive_status/%s.done", f->pg_wal, f->names[0]);
    assert_int_equal(rename(ready, done), 0);
    assert_true(run(f, &err));
    assert_true(wal_spool_record_read(f->spool, f->names[0], &rec, &err));
    assert_int_equal(rec.kind, WAL_RECORD_NONE);
    assert_true(wal_spool_record_read(f->spool, f->names[1], &rec, &err));
    assert_int_equal(rec.kind, WAL_RECORD_OK);
}

static void test_unreachable_repository_is_reported_for_every_file(void **state)
{
    fixture *f = *state;
    pgd_error err = {0};
    wal_push_record rec;

    f->repo_fails = true;
    assert_true(run(f, &err));
    assert_int_equal(last_stop, WAL_PUSHER_STOP_NO_REPO);
    for (int i = 0; i < NSEGS; i++) {
        assert_true(wal_spool_record_read(f->spool, f->names[i], &rec, &err));
        assert_int_equal(rec.kind, WAL_RECORD_ERROR);
        assert_non_null(strstr(rec.msg, "could not reach repository"));
    }
}

static void test_stops_when_the_data_directory_is_gone(void **state)
{
    fixture *f = *state;
    char cmd[4400];
    pgd_error err = {0};

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->pg_wal);
    assert_int_equal(system(cmd), 0);
    assert_true(run(f, &err));
    assert_int_equal(last_stop, WAL_PUSHER_STOP_GONE);
}

/* The second of three workers cannot start: an error that names it; nothing stored or recorded. */
static void test_a_worker_that_cannot_start_stops_the_pusher(void **state)
{
    fixture *f = *state;
    pgd_error err = {0};
    wal_push_record rec;

    fail_thread_at = 2;
    assert_false(run(f, &err));
    fail_thread_at = 0;
    assert_string_equal(err.msg,
                        "could not start pusher thread 2 of 3: Resource temporarily unavailable");
    for (int i = 0; i < NSEGS; i++) {
        assert_false(in_repo(f, f->names[i]));
        assert_true(wal_spool_record_read(f->spool, f->names[i], &rec, &err));
        assert_int_equal(rec.kind, WAL_RECORD_NONE);
    }
    /* and the next pusher pushes them all */
    assert_true(run(f, &err));
    for (int i = 0; i < NSEGS; i++)
        assert_true(in_repo(f, f->names[i]));
}

static void test_queued_copies_are_pushed_and_removed(void **state)
{
    fixture *f = *state;
    char path[4400], fetched[4400];
    uint32_t crc0 = file_crc(f, f->names[0]);
    pgd_error err = {0};
    wal_queue_stat st;
    storage *repo;
    bool found;

    /* names[0] and [1] acknowledged with a copy queued, then recycled by PostgreSQL */
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof(path), "%s/%s", f->pg_wal, f->names[i]);
        assert_true(wal_spool_queue_add(f->spool, f->names[i], path, &err));
        assert_int_equal(unlink(path), 0);
        snprintf(path, sizeof(path), "%s/archive_status/%s.ready", f->pg_wal, f->names[i]);
        assert_int_equal(unlink(path), 0);
    }
    assert_true(wal_pusher_backlog(f->pg_wal, f->spool, &st, &err));
    assert_int_equal(st.files, NSEGS); /* 3 ready, 2 queued */
    assert_int_equal(st.bytes, (uint64_t)NSEGS * TEST_SEG_SIZE);
    assert_string_equal(st.oldest, f->names[0]);
    assert_true(run(f, &err));
    assert_int_equal(last_stop, WAL_PUSHER_STOP_IDLE);
    for (int i = 0; i < NSEGS; i++)
        assert_true(in_repo(f, f->names[i]));
    assert_true(wal_spool_queue_stat(f->spool, &st, &err));
    assert_int_equal(st.files, 0);
    assert_true(wal_pusher_backlog(f->pg_wal, f->spool, &st, &err));
    assert_int_equal(st.files, 0);
    /* what was stored from the copy is the file PostgreSQL had */
    repo = storage_open(f->repo_path, NULL, &err);
    assert_non_null(repo);
    snprintf(fetched, sizeof(fetched), "%s/fetched", f->tmp);
    assert_true(wal_archive_fetch(repo, f->names[0], fetched, &found, &err));
    assert_true(found);
    storage_free(repo);
    snprintf(path, sizeof(path), "%s/%s", f->pg_wal, f->names[0]);
    assert_int_equal(rename(fetched, path), 0);
    assert_int_equal(file_crc(f, f->names[0]), crc0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
        T(test_every_ready_file_is_pushed_and_recorded),
        T(test_failure_is_recorded_and_waits_for_its_reader),
        T(test_a_file_that_is_not_its_name_is_not_stored),
        T(test_records_of_acknowledged_files_go),
        T(test_unreachable_repository_is_reported_for_every_file),
        T(test_stops_when_the_data_directory_is_gone),
        T(test_a_worker_that_cannot_start_stops_the_pusher),
        T(test_queued_copies_are_pushed_and_removed),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
