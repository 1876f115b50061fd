/*
 * test_wal_spool.c - covers src/wal/wal_spool.c: one spool directory per
 * data directory and repository; push records that say exactly what was
 * stored, and nothing when they cannot be read; segment arithmetic across
 * a log boundary; prefetched files served only when they match their
 * recorded size, CRC and database system, removed otherwise; the request
 * window; the lock of the background process; a repository's queue:
 * copies made durably with the file's time, counted, the half-written ones
 * swept, and the queues of repositories no longer given found.
 */
#include "wal_test_segment.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wal/wal_spool.h"
#include "util/crc32c.h"

#define SYSID     UINT64_C(7000000000000000001)
#define OTHER_SYS UINT64_C(7000000000000000002)
#define REPO_ID   "file:///var/lib/pgdirect"
#define DATADIR   "/srv/pg/main"
#define SEG1      "000000010000000000000001"
#define HISTORY2  "00000002.history"

typedef struct fixture {
    char *tmp;
    char dir[4200]; /* an opened spool directory */
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    pgd_error err = {0};

    assert_non_null(f);
    f->tmp = test_tmpdir();
    assert_true(
        wal_spool_open(f->tmp, WAL_SPOOL_PUSH, DATADIR, REPO_ID, f->dir, sizeof(f->dir), &err));
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

static void write_text(const char *path, const char *text)
{
    write_test_file(path, text, strlen(text));
}

static bool exists(const char *dir, const char *file)
{
    char path[4400];

    snprintf(path, sizeof(path), "%s/%s", dir, file);
    return access(path, F_OK) == 0;
}

static void test_one_directory_per_data_directory_and_repository(void **state)
{
    fixture *f = *state;
    char again[4200], other_repo[4200], other_dir[4200], root[4200];
    pgd_error err = {0};

    assert_true(
        wal_spool_open(f->tmp, WAL_SPOOL_PUSH, DATADIR, REPO_ID, again, sizeof(again), &err));
    assert_string_equal(again, f->dir);
    assert_true(wal_spool_open(f->tmp, WAL_SPOOL_PUSH, DATADIR, "s3://b/p at http://x", other_repo,
                               sizeof(other_repo), &err));
    assert_true(wal_spool_open(f->tmp, WAL_SPOOL_PUSH, "/srv/pg/other", REPO_ID, other_dir,
                               sizeof(other_dir), &err));
    assert_string_not_equal(other_repo, f->dir);
    assert_string_not_equal(other_dir, f->dir);
    assert_true(exists(f->dir, "out"));
    assert_true(wal_spool_default_root("/var/lib/postgresql/15/main", root, sizeof(root), &err));
    assert_string_equal(root, "/var/lib/postgresql/15/pgdirect-spool");
}

static void test_a_directory_of_another_cluster_is_refused(void **state)
{
    fixture *f = *state;
    char path[4400], dir[4200];
    pgd_error err = {0};

    snprintf(path, sizeof(path), "%s/info", f->dir);
    write_text(path, "data directory: /elsewhere\nrepository: x\n");
    assert_false(wal_spool_open(f->tmp, WAL_SPOOL_PUSH, DATADIR, REPO_ID, dir, sizeof(dir), &err));
    assert_non_null(strstr(err.msg, "belongs to another data directory or repository"));
}

static void test_ok_record_says_what_was_stored(void **state)
{
    fixture *f = *state;
    wal_file_sum sum = {16777216, 0xdeadbeef};
    wal_push_record rec;
    pgd_error err = {0};

    assert_true(wal_spool_record_read(f->dir, SEG1, &rec, &err));
    assert_int_equal(rec.kind, WAL_RECORD_NONE);
    assert_true(wal_spool_record_ok(f->dir, SEG1, &sum, &err));
    assert_true(wal_spool_record_read(f->dir, SEG1, &rec, &err));
    assert_int_equal(rec.kind, WAL_RECORD_OK);
    assert_int_equal(rec.sum.size, 16777216);
    assert_int_equal(rec.sum.crc, 0xdeadbeef);
    assert_true(exists(f->dir, "out/" SEG1 ".ok"));
    assert_true(wal_spool_record_remove(f->dir, SEG1, WAL_RECORD_OK, &err));
    assert_true(wal_spool_record_read(f->dir, SEG1, &rec, &err));
    assert_int_equal(rec.kind, WAL_RECORD_NONE);
}

static void test_error_record_carries_the_message(void **state)
{
    fixture *f = *state;
    wal_push_record rec;
    pgd_error err = {0};

    assert_true(wal_spool_record_error(f->dir, HISTORY2, "could not reach the bucket", &err));
    assert_true(wal_spool_record_read(f->dir, HISTORY2, &rec, &err));
    assert_int_equal(rec.kind, WAL_RECORD_ERROR);
    assert_string_equal(rec.msg, "could not reach the bucket");
    assert_true(rec.written.tv_sec > 0);
}

static void test_torn_ok_record_reads_as_none_and_goes(void **state)
{
    fixture *f = *state;
    char path[4400];
    wal_push_record rec;
    pgd_error err = {0};

    snprintf(path, sizeof(path), "%s/out/" SEG1 ".ok", f->dir);
    write_text(path, "size 167");
    assert_true(wal_spool_record_read(f->dir, SEG1, &rec, &err));
    assert_int_equal(rec.kind, WAL_RECORD_NONE);
    assert_false(exists(f->dir, "out/" SEG1 ".ok"));
    write_text(path, "size 1\ncrc32c 00000001\ntrailing\n");
    assert_true(wal_spool_record_read(f->dir, SEG1, &rec, &err));
    assert_int_equal(rec.kind, WAL_RECORD_NONE);
}

static void test_records_only_for_wal_names(void **state)
{
    fixture *f = *state;
    wal_file_sum sum = {1, 1};
    pgd_error err = {0};

    assert_false(wal_spool_record_ok(f->dir, "../../etc/passwd", &sum, &err));
    assert_non_null(strstr(err.msg, "is not a WAL file name"));
}

typedef struct seen {
    int ok, error, other;
} seen;

static bool count_record(void *arg, const char *name, wal_record_kind kind, pgd_error *err)
{
    seen *s = arg;

    (void)name;
    (void)err;
    if (kind == WAL_RECORD_OK)
        s->ok++;
    else if (kind == WAL_RECORD_ERROR)
        s->error++;
    else
        s->other++;
    return true;
}

static void test_sweep_removes_only_half_written_records(void **state)
{
    fixture *f = *state;
    char path[4400];
    wal_file_sum sum = {1, 2};
    pgd_error err = {0};
    seen s = {0};

    assert_true(wal_spool_record_ok(f->dir, SEG1, &sum, &err));
    assert_true(wal_spool_record_error(f->dir, HISTORY2, "no", &err));
    snprintf(path, sizeof(path), "%s/out/000000010000000000000002.ok.tmp.4242", f->dir);
    write_text(path, "size");
    assert_true(wal_spool_record_list(f->dir, count_record, &s, &err));
    assert_int_equal(s.ok, 1);
    assert_int_equal(s.error, 1);
    assert_int_equal(s.other, 1);
    assert_true(wal_spool_record_sweep(f->dir, &err));
    assert_false(exists(f->dir, "out/000000010000000000000002.ok.tmp.4242"));
    assert_true(exists(f->dir, "out/" SEG1 ".ok"));
    assert_true(exists(f->dir, "out/" HISTORY2 ".error"));
}

static void test_segment_after_crosses_log_boundaries(void **state)
{
    char out[25];

    (void)state;
    assert_true(wal_spool_segment_after("0000000100000000000000FE", 16u << 20, 1, out));
    assert_string_equal(out, "0000000100000000000000FF");
    assert_true(wal_spool_segment_after("0000000100000000000000FF", 16u << 20, 1, out));
    assert_string_equal(out, "000000010000000100000000");
    assert_true(wal_spool_segment_after("000000020000000000000003", 1u << 30, 2, out));
    assert_string_equal(out, "000000020000000100000001");
    assert_true(wal_spool_segment_after("000000010000000000000FFF", 1u << 20, 1, out));
    assert_string_equal(out, "000000010000000100000000");
    assert_false(wal_spool_segment_after("000000010000000000000100", 16u << 20, 1, out));
    assert_false(wal_spool_segment_after(HISTORY2, 16u << 20, 1, out));
    assert_false(wal_spool_segment_after(SEG1, 3u << 20, 1, out));
}

static void test_request_window_is_the_next_segments_of_its_timeline(void **state)
{
    fixture *f = *state;
    wal_fetch_request req = {.name = "000000010000000000000005",
                             .seg_size = 16u << 20,
                             .sysid = SYSID,
                             .count = 3},
                      back;
    pgd_error err = {0};
    bool missing;

    assert_true(wal_spool_request_read(f->dir, &back, &missing, &err));
    assert_true(missing);
    assert_true(wal_spool_request_write(f->dir, &req, &err));
    assert_true(wal_spool_request_read(f->dir, &back, &missing, &err));
    assert_false(missing);
    assert_string_equal(back.name, req.name);
    assert_int_equal(back.seg_size, req.seg_size);
    assert_true(back.sysid == SYSID);
    assert_int_equal(back.count, 3);
    assert_false(wal_spool_request_wants(&req, "000000010000000000000005"));
    assert_true(wal_spool_request_wants(&req, "000000010000000000000006"));
    assert_true(wal_spool_request_wants(&req, "000000010000000000000008"));
    assert_false(wal_spool_request_wants(&req, "000000010000000000000009"));
    assert_false(wal_spool_request_wants(&req, "000000010000000000000004"));
    assert_false(wal_spool_request_wants(&req, "000000020000000000000006"));
}

static void test_malformed_request_is_an_error(void **state)
{
    fixture *f = *state;
    char path[4400];
    wal_fetch_request back;
    pgd_error err = {0};
    bool missing;

    snprintf(path, sizeof(path), "%s/request", f->dir);
    write_text(path, SEG1 " 12345 1 3\n");
    assert_false(wal_spool_request_read(f->dir, &back, &missing, &err));
    assert_non_null(strstr(err.msg, "is malformed"));
}

/* Publish a prefetched copy of segment `segno` of `sysid`; its name goes to name. */
static void publish(fixture *f, uint64_t segno, uint64_t sysid, char name[25])
{
    char part[4400];
    unsigned char *seg = test_segment(1, segno, sysid);
    wal_file_sum sum = {TEST_SEG_SIZE, crc32c(seg, TEST_SEG_SIZE)};
    pgd_error err = {0};

    test_segment_name(1, segno, name);
    wal_spool_part_path(f->dir, name, part, sizeof(part));
    write_test_file(part, seg, TEST_SEG_SIZE);
    free(seg);
    assert_true(wal_spool_entry_publish(f->dir, name, part, &sum, &err));
}

static void test_intact_entry_is_served_once(void **state)
{
    fixture *f = *state;
    char name[25], dest[4400], why[256];
    unsigned char *want = test_segment(1, 7, SYSID);
    wal_entry_result result;
    pgd_error err = {0};
    bool ready, partial;

    publish(f, 7, SYSID, name);
    assert_true(wal_spool_entry_state(f->dir, name, &ready, &partial, &err));
    assert_true(ready);
    assert_false(partial);
    snprintf(dest, sizeof(dest), "%s/RECOVERYXLOG", f->tmp);
    assert_true(wal_spool_entry_take(f->dir, name, dest, SYSID, &result, why, sizeof(why), &err));
    assert_int_equal(result, WAL_ENTRY_SERVED);
    {
        FILE *in = fopen(dest, "rb");
        unsigned char *got = malloc(TEST_SEG_SIZE + 1);
        assert_non_null(in);
        assert_int_equal(fread(got, 1, TEST_SEG_SIZE + 1, in), TEST_SEG_SIZE);
        assert_memory_equal(got, want, TEST_SEG_SIZE);
        fclose(in);
        free(got);
    }
    assert_true(wal_spool_entry_take(f->dir, name, dest, SYSID, &result, why, sizeof(why), &err));
    assert_int_equal(result, WAL_ENTRY_MISSING);
    free(want);
}

/* Where publish() put segment `segno` of `sysid`: <name>.<size>.<crc32c> */
static void entry_path(fixture *f, uint64_t segno, uint64_t sysid, char *out, size_t outlen)
{
    unsigned char *seg = test_segment(1, segno, sysid);
    char name[25];

    test_segment_name(1, segno, name);
    snprintf(out, outlen, "%s/%s.%u.%08x", f->dir, name, TEST_SEG_SIZE, crc32c(seg, TEST_SEG_SIZE));
    free(seg);
}

static void test_corrupt_entry_is_removed_not_served(void **state)
{
    fixture *f = *state;
    char name[25], dest[4400], why[256], path[4400];
    wal_entry_result result;
    pgd_error err = {0};
    bool ready, partial;
    int fd;

    publish(f, 8, SYSID, name);
    entry_path(f, 8, SYSID, path, sizeof(path));
    fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, "X", 1, TEST_SEG_SIZE / 2), 1);
    close(fd);
    snprintf(dest, sizeof(dest), "%s/RECOVERYXLOG", f->tmp);
    assert_true(wal_spool_entry_take(f->dir, name, dest, SYSID, &result, why, sizeof(why), &err));
    assert_int_equal(result, WAL_ENTRY_CORRUPT);
    assert_non_null(strstr(why, "CRC-32C"));
    assert_int_equal(access(dest, F_OK), -1);
    assert_int_equal(access(path, F_OK), -1);
    assert_true(wal_spool_entry_state(f->dir, name, &ready, &partial, &err));
    assert_false(ready);
}

static void test_truncated_entry_is_removed_not_served(void **state)
{
    fixture *f = *state;
    char name[25], dest[4400], why[256], path[4400];
    wal_entry_result result;
    pgd_error err = {0};

    publish(f, 9, SYSID, name);
    entry_path(f, 9, SYSID, path, sizeof(path));
    assert_int_equal(truncate(path, 4096), 0);
    snprintf(dest, sizeof(dest), "%s/RECOVERYXLOG", f->tmp);
    assert_true(wal_spool_entry_take(f->dir, name, dest, SYSID, &result, why, sizeof(why), &err));
    assert_int_equal(result, WAL_ENTRY_CORRUPT);
    assert_non_null(strstr(why, "4096 bytes where 1048576 were downloaded"));
    assert_int_equal(access(dest, F_OK), -1);
}

static void test_entry_of_another_system_is_stale(void **state)
{
    fixture *f = *state;
    char name[25], dest[4400], why[256];
    wal_entry_result result;
    pgd_error err = {0};

    publish(f, 10, OTHER_SYS, name);
    snprintf(dest, sizeof(dest), "%s/RECOVERYXLOG", f->tmp);
    assert_true(wal_spool_entry_take(f->dir, name, dest, SYSID, &result, why, sizeof(why), &err));
    assert_int_equal(result, WAL_ENTRY_STALE);
    assert_non_null(strstr(why, "of database system 7000000000000000002"));
    assert_int_equal(access(dest, F_OK), -1);
}

static void test_prune_keeps_only_the_window(void **state)
{
    fixture *f = *state;
    char n3[25], n4[25], n5[25], part[4400];
    wal_fetch_request req = {.seg_size = TEST_SEG_SIZE, .sysid = SYSID, .count = 1};
    pgd_error err = {0};
    bool ready, partial;

    publish(f, 3, SYSID, n3);
    publish(f, 4, SYSID, n4);
    publish(f, 5, SYSID, n5);
    wal_spool_part_path(f->dir, "000000010000000000000006", part, sizeof(part));
    write_text(part, "x");
    test_segment_name(1, 3, req.name); /* wants 4 only */
    assert_true(wal_spool_entry_prune(f->dir, &req, false, &err));
    assert_true(wal_spool_entry_state(f->dir, n3, &ready, &partial, &err));
    assert_false(ready);
    assert_true(wal_spool_entry_state(f->dir, n4, &ready, &partial, &err));
    assert_true(ready);
    assert_true(wal_spool_entry_state(f->dir, n5, &ready, &partial, &err));
    assert_false(ready);
    assert_true(wal_spool_entry_state(f->dir, "000000010000000000000006", &ready, &partial, &err));
    assert_true(partial);
    assert_true(wal_spool_entry_prune(f->dir, NULL, true, &err));
    assert_true(wal_spool_entry_state(f->dir, n4, &ready, &partial, &err));
    assert_false(ready);
    assert_true(wal_spool_entry_state(f->dir, "000000010000000000000006", &ready, &partial, &err));
    assert_false(partial);
    assert_true(exists(f->dir, "info")); /* only WAL files are pruned */
}

static void test_settings_tell_a_running_process_to_make_way(void **state)
{
    fixture *f = *state;
    pgd_error err = {0};
    bool changed = true;

    assert_true(wal_spool_settings_changed(f->dir, "aaaa", &changed, &err));
    assert_false(changed); /* nothing recorded yet */
    assert_true(wal_spool_settings_write(f->dir, "aaaa", &err));
    assert_true(wal_spool_settings_changed(f->dir, "aaaa", &changed, &err));
    assert_false(changed);
    assert_true(wal_spool_settings_write(f->dir, "bbbb", &err));
    assert_true(wal_spool_settings_changed(f->dir, "aaaa", &changed, &err));
    assert_true(changed);
}

static void test_lock_is_held_until_its_holder_lets_go(void **state)
{
    fixture *f = *state;
    pgd_error err = {0};
    bool busy, held;
    int fd, fd2;

    assert_true(wal_spool_lock_held(f->dir, &held, &err));
    assert_false(held);
    assert_true(wal_spool_lock_take(f->dir, &fd, &busy, &err));
    assert_false(busy);
    assert_true(wal_spool_lock_held(f->dir, &held, &err));
    assert_true(held);
    assert_true(wal_spool_lock_take(f->dir, &fd2, &busy, &err));
    assert_true(busy);
    assert_int_equal(fd2, -1);
    close(fd);
    assert_true(wal_spool_lock_held(f->dir, &held, &err));
    assert_false(held);
}

static void test_identity_comes_from_the_first_page(void **state)
{
    fixture *f = *state;
    char name[25], path[4400];
    uint64_t sysid;
    uint32_t seg_size;
    pgd_error err = {0};

    test_segment_file(f->tmp, 1, 2, SYSID, name);
    snprintf(path, sizeof(path), "%s/%s", f->tmp, name);
    assert_true(wal_spool_segment_identity(path, &sysid, &seg_size, &err));
    assert_true(sysid == SYSID);
    assert_int_equal(seg_size, TEST_SEG_SIZE);
    write_text(path, "short");
    assert_false(wal_spool_segment_identity(path, &sysid, &seg_size, &err));
}

static void test_queue_holds_copies_counted_oldest_first(void **state)
{
    fixture *f = *state;
    char src[4400], copy[4400], tmp[4400];
    const char *later = "000000010000000000000002";
    pgd_error err = {0};
    wal_queue_stat st;
    struct stat a, b;

    assert_true(wal_spool_queue_stat(f->dir, &st, &err));
    assert_int_equal(st.files, 0);
    assert_string_equal(st.oldest, "");
    snprintf(src, sizeof(src), "%s/src", f->tmp);
    write_text(src, "0123456789");
    assert_true(wal_spool_queue_add(f->dir, later, src, &err));
    assert_true(wal_spool_queue_add(f->dir, SEG1, src, &err));
    assert_true(wal_spool_queue_stat(f->dir, &st, &err));
    assert_int_equal(st.files, 2);
    assert_int_equal(st.bytes, 20);
    assert_string_equal(st.oldest, SEG1);
    wal_spool_queue_path(f->dir, SEG1, copy, sizeof(copy));
    assert_int_equal(stat(src, &a), 0);
    assert_int_equal(stat(copy, &b), 0);
    assert_int_equal(a.st_mtime, b.st_mtime); /* the age of the WAL, not of the copy */
    assert_int_equal(st.oldest_mtime, a.st_mtime);
    /* not a WAL name: refused; a missing source: an error naming it, nothing left behind */
    assert_false(wal_spool_queue_add(f->dir, "backup_label", src, &err));
    err_clear(&err);
    assert_false(wal_spool_queue_add(f->dir, "000000010000000000000003", "/nonexistent/x", &err));
    assert_non_null(strstr(err.msg, "/nonexistent/x"));
    err_clear(&err);
    snprintf(tmp, sizeof(tmp), "%s/queue/.000000010000000000000004.tmp.123", f->dir);
    write_text(tmp, "half");
    assert_true(wal_spool_queue_stat(f->dir, &st, &err));
    assert_int_equal(st.files, 2);
    assert_true(wal_spool_queue_sweep(f->dir, &err));
    assert_int_equal(access(tmp, F_OK), -1);
    assert_true(wal_spool_queue_remove(f->dir, SEG1, &err));
    assert_true(wal_spool_queue_remove(f->dir, SEG1, &err)); /* missing is fine */
    assert_true(wal_spool_queue_stat(f->dir, &st, &err));
    assert_int_equal(st.files, 1);
    assert_string_equal(st.oldest, later);
}

typedef struct orphan_seen {
    int n;
    char repo[256];
    unsigned files;
} orphan_seen;

static bool note_orphan(void *arg, const char *dir, const char *repo_id, const wal_queue_stat *st,
                        pgd_error *err)
{
    orphan_seen *o = arg;

    (void)dir;
    (void)err;
    o->n++;
    snprintf(o->repo, sizeof(o->repo), "%s", repo_id);
    o->files = st->files;
    return true;
}

static void test_queue_of_a_repository_no_longer_given_is_found(void **state)
{
    fixture *f = *state;
    char other[4200], third[4200], src[4400];
    const char *given[] = {REPO_ID};
    const char *both[] = {REPO_ID, "s3://b/p at http://127.0.0.1:9"};
    pgd_error err = {0};
    orphan_seen seen = {0};

    assert_true(wal_spool_open(f->tmp, WAL_SPOOL_PUSH, DATADIR, "s3://b/p at http://127.0.0.1:9",
                               other, sizeof(other), &err));
    assert_true(wal_spool_open(f->tmp, WAL_SPOOL_PUSH, "/srv/pg/other", "s3://c/q", third,
                               sizeof(third), &err));
    snprintf(src, sizeof(src), "%s/src", f->tmp);
    write_text(src, "0123456789");
    /* control: an empty queue is nothing to report */
    assert_true(wal_spool_queue_orphans(f->tmp, DATADIR, given, 1, note_orphan, &seen, &err));
    assert_int_equal(seen.n, 0);
    assert_true(wal_spool_queue_add(other, SEG1, src, &err));
    assert_true(wal_spool_queue_add(third, SEG1, src, &err)); /* another cluster's: not ours */
    assert_true(wal_spool_queue_orphans(f->tmp, DATADIR, given, 1, note_orphan, &seen, &err));
    assert_int_equal(seen.n, 1);
    assert_string_equal(seen.repo, "s3://b/p at http://127.0.0.1:9");
    assert_int_equal(seen.files, 1);
    seen.n = 0;
    assert_true(wal_spool_queue_orphans(f->tmp, DATADIR, both, 2, note_orphan, &seen, &err));
    assert_int_equal(seen.n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
        T(test_one_directory_per_data_directory_and_repository),
        T(test_a_directory_of_another_cluster_is_refused),
        T(test_ok_record_says_what_was_stored),
        T(test_error_record_carries_the_message),
        T(test_torn_ok_record_reads_as_none_and_goes),
        T(test_records_only_for_wal_names),
        T(test_sweep_removes_only_half_written_records),
        T(test_segment_after_crosses_log_boundaries),
        T(test_request_window_is_the_next_segments_of_its_timeline),
        T(test_malformed_request_is_an_error),
        T(test_intact_entry_is_served_once),
        T(test_corrupt_entry_is_removed_not_served),
        T(test_truncated_entry_is_removed_not_served),
        T(test_entry_of_another_system_is_stale),
        T(test_prune_keeps_only_the_window),
        T(test_queue_holds_copies_counted_oldest_first),
        T(test_queue_of_a_repository_no_longer_given_is_found),
        T(test_settings_tell_a_running_process_to_make_way),
        T(test_lock_is_held_until_its_holder_lets_go),
        T(test_identity_comes_from_the_first_page),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
