/*
 * test_pipeline.c - covers src/backup/pipeline.c: files that vanish, grow or
 * shrink between the walk and the read; partitions; CRCs; a reader thread
 * that cannot start; filters plugged in front (pages whole, with their
 * block numbers; a filter that replaces a file); links.
 *
 * Linked with -Wl,--wrap=io_engine_new: engine_fail_at = N makes the Nth
 * engine the pipeline creates fail, as io_uring_queue_init can; every
 * engine it creates is watched (engine_spy_submit, engine_spy_wait): the most distinct
 * files with reads in flight at once in one thread, counted from the
 * requests themselves, not from what the pipeline says.
 */
#include "helpers.h"

#include <dirent.h>
#include <pthread.h>
#include <sys/resource.h>
#include <stdatomic.h>

#include "backup/block_plan.h"
#include "backup/pipeline.h"
#include "repo/layout.h"
#include "repo/tar.h"
#include "util/crc32c.h"

#define ID "20261129T000000F"

static int engine_calls, engine_fail_at;

io_engine *__real_io_engine_new(io_engine_kind kind, unsigned depth, pgd_error *err);
io_engine *__wrap_io_engine_new(io_engine_kind kind, unsigned depth, pgd_error *err);

/* The reads a thread has in flight (their descriptors), and the most distinct files seen at once.
 */
#define ENGINE_SPY_MAX 64
static __thread int engine_spy_fds[ENGINE_SPY_MAX];
static __thread int engine_spy_inflight;
static atomic_int engine_spy_files_max;
static const io_engine_ops *engine_spy_real_ops[2];

static int engine_spy_distinct_files(void)
{
    int distinct = 0;

    for (int i = 0; i < engine_spy_inflight; i++) {
        bool seen = false;
        for (int j = 0; j < i && !seen; j++)
            seen = engine_spy_fds[j] == engine_spy_fds[i];
        distinct += !seen;
    }
    return distinct;
}

static bool engine_spy_submit(io_engine *e, io_request *r, pgd_error *err)
{
    int files;

    if (engine_spy_inflight == ENGINE_SPY_MAX) /* not cmocka's assert: a reader thread */
        abort();
    engine_spy_fds[engine_spy_inflight++] = r->fd;
    files = engine_spy_distinct_files();
    for (int max = atomic_load(&engine_spy_files_max);
         files > max && !atomic_compare_exchange_weak(&engine_spy_files_max, &max, files);)
        ;
    return engine_spy_real_ops[e->kind]->submit(e, r, err);
}

static bool engine_spy_wait(io_engine *e, io_request **done, pgd_error *err)
{
    if (!engine_spy_real_ops[e->kind]->wait(e, done, err))
        return false;
    for (int i = 0; i < engine_spy_inflight; i++) {
        if (engine_spy_fds[i] == (*done)->fd) {
            engine_spy_fds[i] = engine_spy_fds[--engine_spy_inflight];
            break;
        }
    }
    return true;
}

static void engine_spy_free(io_engine *e)
{
    engine_spy_real_ops[e->kind]->free(e);
}

static const io_engine_ops engine_spy_ops = {engine_spy_submit, engine_spy_wait, engine_spy_free};

io_engine *__wrap_io_engine_new(io_engine_kind kind, unsigned depth, pgd_error *err)
{
    io_engine *e;

    if (++engine_calls == engine_fail_at) {
        err_set(err, "injected engine failure");
        return NULL;
    }
    e = __real_io_engine_new(kind, depth, err);
    if (e != NULL) {
        engine_spy_real_ops[e->kind] = e->ops;
        e->ops = &engine_spy_ops;
    }
    return e;
}

/* Entries in directory dir/sub (0 when it does not exist). */
static int count_entries(const char *dir, const char *sub)
{
    char path[4300];
    struct dirent *de;
    int n = 0;
    DIR *d;

    snprintf(path, sizeof(path), "%s/%s", dir, sub);
    d = opendir(path);
    if (d == NULL)
        return 0;
    while ((de = readdir(d)) != NULL)
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

/* Read partition `name` back and return the size and data of entry `path` (malloc'd). */
static unsigned char *entry_data(storage *repo, const char *part, const char *path, uint64_t *size)
{
    char obj[LAYOUT_PATH_MAX];
    pgd_error err = {0};
    bool missing, end = false;
    in_stream *in;
    tar_reader r;
    unsigned char *data = NULL;

    layout_backup_object(ID, part, obj, sizeof(obj));
    in = storage_read_open(repo, obj, &missing, &err);
    assert_non_null(in);
    in = decompress_in_new(compress_from_suffix(part), in, obj, &err);
    tar_reader_init(&r, in, obj);
    while (!end) {
        tar_entry e;
        assert_true(tar_reader_next(&r, &e, &end, &err));
        if (!end && strcmp(e.path, path) == 0) {
            size_t n;
            data = malloc(e.size + 1);
            assert_true(tar_reader_data(&r, data, e.size + 1, &n, &err));
            assert_int_equal(n, e.size);
            *size = e.size;
        }
        tar_entry_free(&e);
    }
    in_close(in);
    return data;
}

static void test_vanished_grown_shrunk(void **state)
{
    char *dir = test_tmpdir();
    char grown[4200], shrunk[4200], steady[4200], gone[4200];
    unsigned char content[20000];
    pgd_error err = {0};
    storage *repo = repo_in(dir);
    pipeline_result res;
    uint64_t size;
    unsigned char *got;

    (void)state;
    fill_pattern(content, sizeof(content), 5);
    snprintf(grown, sizeof(grown), "%s/grown", dir);
    snprintf(shrunk, sizeof(shrunk), "%s/shrunk", dir);
    snprintf(steady, sizeof(steady), "%s/steady", dir);
    snprintf(gone, sizeof(gone), "%s/gone", dir);
    write_test_file(grown, content, 20000); /* walk saw 10000 bytes */
    write_test_file(shrunk, content, 3000); /* walk saw 9000 bytes */
    write_test_file(steady, content, 12345);

    pipeline_file files[] = {
        {.path = "base/1/grown", .source = grown, .size = 10000, .mode = 0600},
        {.path = "base/1/shrunk", .source = shrunk, .size = 9000, .mode = 0600},
        {.path = "base/1/steady", .source = steady, .size = 12345, .mode = 0600},
        {.path = "base/1/gone", .source = gone, .size = 8192, .mode = 0600},
        {.path = "base/1", .source = dir, .is_dir = true, .mode = 0700},
    };
    pipeline_config cfg = {.repo = repo,
                           .backup_id = ID,
                           .compression = COMPRESS_LZ4,
                           .compression_level = COMPRESS_LEVEL_DEFAULT,
                           .read_size = 8192,
                           .workers = 2,
                           .depth = 3,
                           .engine = IO_ENGINE_THREADS,
                           .partition_size = 1, /* one file per partition */
                           .mode = READ_MODE_DIRECT};

    assert_true(pipeline_run(&cfg, files, 5, &res, &err));
    assert_int_equal(res.npartitions, 4); /* the vanished file opens none */
    assert_true(res.read_modes & (1u << READ_MODE_DIRECT));

    assert_true(files[0].done);
    assert_int_equal(files[0].result.size, 10000); /* read to its size at walk time */
    assert_int_equal(files[0].result.crc, crc32c(content, 10000));
    assert_true(files[1].done);
    assert_int_equal(files[1].result.size, 3000); /* recorded at its new size */
    assert_int_equal(files[1].result.crc, crc32c(content, 3000));
    assert_true(files[2].done);
    assert_int_equal(files[2].result.crc, crc32c(content, 12345));
    assert_false(files[3].done); /* skipped */
    assert_true(files[4].done);
    assert_int_equal(res.bytes_read, 10000 + 3000 + 12345);

    /* the partitions hold the bytes: each file in exactly one of them */
    {
        int steady_found = 0, shrunk_found = 0;
        for (size_t i = 0; i < res.npartitions; i++) {
            got = entry_data(repo, res.partitions[i].name, "base/1/steady", &size);
            if (got != NULL) {
                steady_found++;
                assert_int_equal(size, 12345);
                assert_memory_equal(got, content, 12345);
                free(got);
            }
            got = entry_data(repo, res.partitions[i].name, "base/1/shrunk", &size);
            if (got != NULL) {
                shrunk_found++;
                assert_int_equal(size, 3000); /* the file was already short when opened */
                assert_memory_equal(got, content, 3000);
                free(got);
            }
        }
        assert_int_equal(steady_found, 1);
        assert_int_equal(shrunk_found, 1);
    }
    pipeline_result_free(&res);
    storage_free(repo);
    rm_rf(dir);
}

/* The partition being written when a read fails is aborted: no object, no temporary file. */
static void test_read_error_fails_and_aborts_the_open_partition(void **state)
{
    char *dir = test_tmpdir();
    char sub[4200], obj[4300];
    pgd_error err = {0};
    storage *repo = repo_in(dir);
    pipeline_result res;
    bool exists;

    (void)state;
    snprintf(sub, sizeof(sub), "%s/adir", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    /* a directory queued as a file: opening works, reading fails */
    pipeline_file files[] = {{.path = "x", .source = sub, .size = 4096, .mode = 0600}};
    pipeline_config cfg = {.repo = repo,
                           .backup_id = ID,
                           .compression = COMPRESS_NONE,
                           .read_size = 4096,
                           .workers = 1,
                           .depth = 2,
                           .engine = IO_ENGINE_THREADS,
                           .partition_size = 1 << 20,
                           .mode = READ_MODE_BUFFERED};
    assert_false(pipeline_run(&cfg, files, 1, &res, &err));
    assert_non_null(strstr(err.msg, sub));
    err_clear(&err);
    snprintf(obj, sizeof(obj), BACKUPS_DIR "/" ID "/part_0001.tar");
    assert_true(storage_exists(repo, obj, &exists, &err));
    assert_false(exists);
    assert_int_equal(count_entries(dir, "repo/" BACKUPS_DIR "/" ID), 0);
    storage_free(repo);
    rm_rf(dir);
}

/*
 * n files of `size` bytes of `content` written under dir (paths: n x 4200
 * bytes) and queued as files[0..n), named by their path under dir.
 */
static void queue_test_files(const char *dir, int n, const unsigned char *content, size_t size,
                             char (*paths)[4200], pipeline_file *files)
{
    for (int i = 0; i < n; i++) {
        snprintf(paths[i], sizeof(paths[i]), "%s/f%d", dir, i);
        write_test_file(paths[i], content, size);
        files[i] = (pipeline_file){
            .path = paths[i] + strlen(dir) + 1, .source = paths[i], .size = size, .mode = 0600};
    }
}

/*
 * A reader thread whose engine cannot be created fails the backup before
 * any thread reads: the others must not back up the whole cluster first.
 */
static void test_worker_that_cannot_start_stops_the_backup(void **state)
{
    enum { NFILES = 24, FILE_SIZE = 64 * 1024 };
    char *dir = test_tmpdir();
    char paths[NFILES][4200];
    unsigned char *content = malloc(FILE_SIZE);
    pipeline_file files[NFILES];
    pgd_error err = {0};
    storage *repo = repo_in(dir);
    pipeline_result res;

    (void)state;
    fill_pattern(content, FILE_SIZE, 3);
    queue_test_files(dir, NFILES, content, FILE_SIZE, paths, files);
    pipeline_config cfg = {.repo = repo,
                           .backup_id = ID,
                           .compression = COMPRESS_NONE,
                           .read_size = 8192,
                           .workers = 3,
                           .depth = 2,
                           .engine = IO_ENGINE_THREADS,
                           .partition_size = 1 << 30,
                           .mode = READ_MODE_BUFFERED};
    engine_calls = 0;
    engine_fail_at = 2;
    assert_false(pipeline_run(&cfg, files, NFILES, &res, &err));
    engine_fail_at = 0;
    for (int i = 0; i < NFILES; i++) /* nobody read anything */
        assert_false(files[i].done);
    assert_non_null(strstr(err.msg, "injected engine failure"));
    assert_non_null(strstr(err.msg, "reader thread 2"));
    assert_int_equal(count_entries(dir, "repo/" BACKUPS_DIR "/" ID), 0);
    free(content);
    storage_free(repo);
    rm_rf(dir);
}

/*
 * One large file read with many reads in flight (depth 8, small reads so
 * completions interleave) by each engine: the bytes come out in order.
 */
static void big_file_with(io_engine_kind engine, read_mode mode)
{
    char *dir = test_tmpdir();
    char path[4200];
    size_t len = 3 * 1024 * 1024 + 12345;
    unsigned char *content = malloc(len), *got;
    pgd_error err = {0};
    storage *repo = repo_in(dir);
    pipeline_result res;
    uint64_t size;

    fill_pattern(content, len, 11);
    snprintf(path, sizeof(path), "%s/big", dir);
    write_test_file(path, content, len);
    pipeline_file files[] = {
        {.path = "base/1/big", .source = path, .size = len, .mode = 0600, .read_size = 64 * 1024}};
    pipeline_config cfg = {.repo = repo,
                           .backup_id = ID,
                           .compression = COMPRESS_NONE,
                           .read_size = 8192,
                           .workers = 1,
                           .depth = 8,
                           .engine = engine,
                           .partition_size = 1 << 30,
                           .mode = mode};
    assert_true(pipeline_run(&cfg, files, 1, &res, &err));
    assert_int_equal(files[0].result.size, len);
    assert_int_equal(files[0].result.crc, crc32c(content, len));
    got = entry_data(repo, res.partitions[0].name, "base/1/big", &size);
    assert_non_null(got);
    assert_int_equal(size, len);
    assert_memory_equal(got, content, len);
    free(got);
    free(content);
    pipeline_result_free(&res);
    storage_free(repo);
    rm_rf(dir);
}

static void test_big_file_threads(void **state)
{
    (void)state;
    big_file_with(IO_ENGINE_THREADS, READ_MODE_DIRECT);
}

static void test_big_file_io_uring(void **state)
{
    char why[128];

    (void)state;
    if (!io_engine_uring_available(why, sizeof(why)))
        skip();
    big_file_with(IO_ENGINE_URING, READ_MODE_DIRECT);
}

static void test_big_file_cache_neutral(void **state)
{
    (void)state;
    big_file_with(IO_ENGINE_THREADS, READ_MODE_CACHE_NEUTRAL);
}

/*
 * A filter as a page checksum or delta filter will be: it records, for
 * each page of a relation file, the absolute block number, and checks
 * that chunks hold whole pages.
 */
typedef struct spy_record {
    bool relation;
    uint32_t segment;
    uint32_t blocks[64];
    size_t nblocks;
    bool split_page; /* a chunk that did not start on a page boundary */
} spy_record;

/* What the spy of the pipeline's single thread saw: it outlives the filter. */
static spy_record spy_seen;

typedef struct page_spy {
    file_filter base;
    spy_record *seen;
} page_spy;

static bool spy_begin(file_filter *f, const file_filter_file *file, pgd_error *err)
{
    spy_record *p = ((page_spy *)f)->seen;

    p->relation = file->is_relation;
    p->segment = file->segment;
    return file_filter_begin(f->next, file, err);
}

static bool spy_data(file_filter *f, file_chunk *chunk, pgd_error *err)
{
    spy_record *p = ((page_spy *)f)->seen;

    if (p->relation) {
        if (chunk->offset % PG_PAGE_SIZE != 0)
            p->split_page = true;
        for (size_t off = 0; off < chunk->len && p->nblocks < 64; off += PG_PAGE_SIZE)
            p->blocks[p->nblocks++] =
                p->segment * PG_SEGMENT_PAGES + (uint32_t)((chunk->offset + off) / PG_PAGE_SIZE);
    }
    return file_filter_data(f->next, chunk, err);
}

static bool spy_begin_passed_on(file_filter *f, const file_filter_file *file, pgd_error *err)
{
    return file_filter_begin(f->next, file, err);
}

static bool spy_end(file_filter *f, file_filter_result *result, pgd_error *err)
{
    return file_filter_end(f->next, result, err);
}

static void spy_free(file_filter *f)
{
    file_filter_free(f->next);
    free(f);
}

static const file_filter_ops spy_ops = {spy_begin, spy_data, spy_end, spy_free};

/* A test filter of `size` bytes (its file_filter first) in front of `next`. */
static file_filter *test_filter_new(size_t size, const file_filter_ops *ops, file_filter *next)
{
    file_filter *f = calloc(1, size);

    assert_non_null(f);
    *f = (file_filter){.ops = ops, .next = next};
    return f;
}

static file_filter *spy_make(file_filter *next, void *arg, pgd_error *err)
{
    page_spy *p = (page_spy *)test_filter_new(sizeof(page_spy), &spy_ops, next);

    (void)arg;
    (void)err;
    p->seen = &spy_seen;
    memset(&spy_seen, 0, sizeof(spy_seen));
    return &p->base;
}

/* Pages of a relation file reach a filter whole, with their block numbers, whatever the read size.
 */
static void test_a_filter_sees_every_page_with_its_block_number(void **state)
{
    enum { PAGES = 5 };
    char *dir = test_tmpdir();
    char path[4200];
    unsigned char *content = malloc(PAGES * PG_PAGE_SIZE);
    pgd_error err = {0};
    storage *repo = repo_in(dir);
    pipeline_result res;
    file_filter_maker spy = {spy_make, NULL};

    (void)state;
    fill_pattern(content, PAGES * PG_PAGE_SIZE, 21);
    snprintf(path, sizeof(path), "%s/16384.1", dir);
    write_test_file(path, content, PAGES * PG_PAGE_SIZE);
    /* 3 blocks of 4 KiB per read: not a whole number of pages */
    pipeline_file files[] = {{.path = "base/1/16384.1",
                              .source = path,
                              .size = PAGES * PG_PAGE_SIZE,
                              .mode = 0600,
                              .read_size = 3 * BLOCK_SIZE}};
    pipeline_config cfg = {.repo = repo,
                           .backup_id = ID,
                           .compression = COMPRESS_NONE,
                           .read_size = BLOCK_SIZE,
                           .workers = 1,
                           .depth = 2,
                           .engine = IO_ENGINE_THREADS,
                           .partition_size = 1 << 30,
                           .mode = READ_MODE_DIRECT,
                           .filters = &spy,
                           .nfilters = 1};
    assert_true(pipeline_run(&cfg, files, 1, &res, &err));
    assert_true(spy_seen.relation);
    assert_false(spy_seen.split_page);
    assert_int_equal(spy_seen.nblocks, PAGES);
    for (uint32_t i = 0; i < PAGES; i++)
        assert_int_equal(spy_seen.blocks[i], PG_SEGMENT_PAGES + i); /* segment 1 */
    assert_int_equal(files[0].result.crc, crc32c(content, PAGES * PG_PAGE_SIZE));
    pipeline_result_free(&res);
    free(content);
    storage_free(repo);
    rm_rf(dir);
}

/*
 * A filter that replaces a file's bytes, as a delta filter will: it passes
 * nothing of the file on and, at its end, a small file of its own. The
 * partition holds that instead, and the result describes it.
 */
typedef struct replacer {
    file_filter base;
    file_filter_file file;
    char name[256];
    char text[64];
    uint64_t pages;
} replacer;

static bool replacer_begin(file_filter *f, const file_filter_file *file, pgd_error *err)
{
    replacer *r = (replacer *)f;

    (void)err;
    r->file = *file;
    r->pages = 0;
    return true; /* nothing passed on yet: the size is not known */
}

static bool replacer_data(file_filter *f, file_chunk *chunk, pgd_error *err)
{
    (void)err;
    ((replacer *)f)->pages += (chunk->len + PG_PAGE_SIZE - 1) / PG_PAGE_SIZE;
    return true;
}

static bool replacer_end(file_filter *f, file_filter_result *result, pgd_error *err)
{
    replacer *r = (replacer *)f;
    file_filter_file out = r->file;
    file_chunk chunk;

    snprintf(r->name, sizeof(r->name), "%s.increment", r->file.path);
    snprintf(r->text, sizeof(r->text), "%llu pages", (unsigned long long)r->pages);
    out.path = r->name;
    out.size = strlen(r->text);
    chunk = (file_chunk){.data = (unsigned char *)r->text, .len = out.size, .room = out.size};
    return file_filter_begin(f->next, &out, err) && file_filter_data(f->next, &chunk, err) &&
           file_filter_end(f->next, result, err);
}

static const file_filter_ops replacer_ops = {replacer_begin, replacer_data, replacer_end, spy_free};

static file_filter *replacer_make(file_filter *next, void *arg, pgd_error *err)
{
    (void)arg;
    (void)err;
    return test_filter_new(sizeof(replacer), &replacer_ops, next);
}

static void test_a_filter_can_replace_the_file(void **state)
{
    char *dir = test_tmpdir();
    char path[4200];
    unsigned char content[3 * PG_PAGE_SIZE];
    pgd_error err = {0};
    storage *repo = repo_in(dir);
    pipeline_result res;
    file_filter_maker make = {replacer_make, NULL};
    uint64_t size;
    unsigned char *got;

    (void)state;
    fill_pattern(content, sizeof(content), 4);
    snprintf(path, sizeof(path), "%s/16384", dir);
    write_test_file(path, content, sizeof(content));
    pipeline_file files[] = {
        {.path = "base/1/16384", .source = path, .size = sizeof(content), .mode = 0600}};
    pipeline_config cfg = {.repo = repo,
                           .backup_id = ID,
                           .compression = COMPRESS_LZ4,
                           .read_size = PG_PAGE_SIZE,
                           .workers = 1,
                           .depth = 2,
                           .engine = IO_ENGINE_THREADS,
                           .partition_size = 1 << 30,
                           .mode = READ_MODE_DIRECT,
                           .filters = &make,
                           .nfilters = 1};
    assert_true(pipeline_run(&cfg, files, 1, &res, &err));
    assert_null(entry_data(repo, res.partitions[0].name, "base/1/16384", &size));
    got = entry_data(repo, res.partitions[0].name, "base/1/16384.increment", &size);
    assert_non_null(got);
    assert_int_equal(size, strlen("3 pages"));
    assert_memory_equal(got, "3 pages", size);
    assert_int_equal(files[0].result.size, size); /* the stored bytes, checksummed */
    assert_int_equal(files[0].result.crc, crc32c("3 pages", size));
    free(got);
    pipeline_result_free(&res);
    storage_free(repo);
    rm_rf(dir);
}

/* A symbolic link is a tar link entry: no data, its target kept. */
/*
 * A sparse read plan (a delta from WAL summaries): only its runs are read,
 * each run split at the read size, and the filters see exactly those pages
 * at their offsets; a run past the file's end at open is left out.
 */
static void test_a_sparse_plan_reads_only_its_runs(void **state)
{
    enum { PAGES = 19, WALKED = 20 };
    char *dir = test_tmpdir();
    char path[4200];
    unsigned char *content = malloc(PAGES * PG_PAGE_SIZE);
    pgd_error err = {0};
    storage *repo = repo_in(dir);
    pipeline_result res;
    file_filter_maker filters[] = {{spy_make, NULL}, {replacer_make, NULL}};
    block_run runs[] = {{2, 3}, {10, 1}, {18, 2}};
    block_plan plan = {.kind = BLOCK_PLAN_SPARSE, .runs = runs, .nruns = 3, .pages = 6};
    const uint32_t want[] = {2, 3, 4, 10, 18};

    (void)state;
    fill_pattern(content, PAGES * PG_PAGE_SIZE, 5);
    snprintf(path, sizeof(path), "%s/16384", dir);
    write_test_file(path, content, PAGES * PG_PAGE_SIZE);
    /* walked at 20 pages, 19 at open: block 19 is not read */
    pipeline_file files[] = {{.path = "base/1/16384",
                              .source = path,
                              .size = WALKED * PG_PAGE_SIZE,
                              .mode = 0600,
                              .read_size = 2 * PG_PAGE_SIZE,
                              .plan = &plan}};
    pipeline_config cfg = {.repo = repo,
                           .backup_id = ID,
                           .compression = COMPRESS_NONE,
                           .read_size = BLOCK_SIZE,
                           .workers = 1,
                           .depth = 2,
                           .engine = IO_ENGINE_THREADS,
                           .partition_size = 1 << 30,
                           .mode = READ_MODE_DIRECT,
                           .filters = filters,
                           .nfilters = 2};
    assert_true(pipeline_run(&cfg, files, 1, &res, &err));
    assert_int_equal(spy_seen.nblocks, 5);
    for (uint32_t i = 0; i < 5; i++)
        assert_int_equal(spy_seen.blocks[i], want[i]);
    assert_int_equal(res.bytes_read, 5 * PG_PAGE_SIZE);
    pipeline_result_free(&res);
    free(content);
    storage_free(repo);
    rm_rf(dir);
}

static void test_a_link_is_stored_as_a_link_entry(void **state)
{
    char *dir = test_tmpdir();
    pgd_error err = {0};
    storage *repo = repo_in(dir);
    pipeline_result res;
    char obj[LAYOUT_PATH_MAX];
    bool missing, end = false, found = false;
    in_stream *in;
    tar_reader r;

    (void)state;
    pipeline_file files[] = {{.path = "postgresql.conf",
                              .source = "/nonexistent",
                              .link = "/etc/pg.conf",
                              .mode = 0777}};
    pipeline_config cfg = {.repo = repo,
                           .backup_id = ID,
                           .compression = COMPRESS_NONE,
                           .read_size = PG_PAGE_SIZE,
                           .workers = 1,
                           .depth = 1,
                           .engine = IO_ENGINE_THREADS,
                           .partition_size = 1 << 30,
                           .mode = READ_MODE_DIRECT};
    assert_true(pipeline_run(&cfg, files, 1, &res, &err));
    assert_true(files[0].done);
    assert_int_equal(files[0].partition, res.partitions[0].number);
    layout_backup_object(ID, res.partitions[0].name, obj, sizeof(obj));
    in = storage_read_open(repo, obj, &missing, &err);
    tar_reader_init(&r, in, obj);
    while (!end) {
        tar_entry e;
        assert_true(tar_reader_next(&r, &e, &end, &err));
        if (!end && strcmp(e.path, "postgresql.conf") == 0) {
            assert_int_equal(e.type, TAR_SYMLINK);
            assert_string_equal(e.linkpath, "/etc/pg.conf");
            found = true;
        }
        tar_entry_free(&e);
    }
    assert_true(found);
    in_close(in);
    pipeline_result_free(&res);
    storage_free(repo);
    rm_rf(dir);
}

/*
 * Files of three groups, one thread, depth 4 (so it reads ahead across the group boundaries),
 * a partition size nothing reaches: a partition per group, each holding its group's files
 * whole, and the directory with group 0's.
 */
static void test_groups_never_share_a_partition(void **state)
{
    enum { NFILES = 6, FILE_SIZE = 3 * 8192 };
    static const uint32_t groups[NFILES] = {16390, 16390, 16391, 16391, 0, 0};
    char *dir = test_tmpdir();
    char paths[NFILES][4200], names[NFILES][32];
    unsigned char content[NFILES][FILE_SIZE];
    pipeline_file files[NFILES + 1];
    pgd_error err = {0};
    storage *repo = repo_in(dir);
    pipeline_result res;

    (void)state;
    memset(files, 0, sizeof(files));
    for (int i = 0; i < NFILES; i++) {
        fill_pattern(content[i], FILE_SIZE, 300 + (uint32_t)i);
        snprintf(paths[i], sizeof(paths[i]), "%s/f%d", dir, i);
        snprintf(names[i], sizeof(names[i]), "base/%u/%d", groups[i] ? groups[i] : 5, 16400 + i);
        write_test_file(paths[i], content[i], FILE_SIZE);
        files[i] = (pipeline_file){.path = names[i],
                                   .source = paths[i],
                                   .size = FILE_SIZE,
                                   .mode = 0600,
                                   .group = groups[i]};
    }
    files[NFILES] = (pipeline_file){.path = "base/5", .source = dir, .is_dir = true, .mode = 0700};
    pipeline_config cfg = {.repo = repo,
                           .backup_id = ID,
                           .compression = COMPRESS_LZ4,
                           .compression_level = COMPRESS_LEVEL_DEFAULT,
                           .read_size = 8192,
                           .workers = 1,
                           .depth = 4,
                           .engine = IO_ENGINE_THREADS,
                           .partition_size = 1 << 30,
                           .mode = READ_MODE_DIRECT};
    assert_true(pipeline_run(&cfg, files, NFILES + 1, &res, &err));
    assert_int_equal(res.npartitions, 3);
    for (int i = 0; i < NFILES; i++) {
        uint64_t size = 0;
        unsigned char *got;
        char part[64];

        assert_true(files[i].done);
        assert_int_equal(files[i].partition, (uint32_t)(i / 2 + 1));
        layout_partition_name(files[i].partition, COMPRESS_LZ4, part, sizeof(part));
        got = entry_data(repo, part, names[i], &size);
        assert_non_null(got);
        assert_int_equal(size, FILE_SIZE);
        assert_memory_equal(got, content[i], FILE_SIZE);
        free(got);
    }
    assert_int_equal(files[NFILES].partition, 3);
    pipeline_result_free(&res);
    storage_free(repo);
    rm_rf(dir);
}

/*
 * Many small files, one thread, depth 4: the thread keeps four reads in
 * flight in four files, not one read in one file, and every file comes out
 * whole, in its own partition, in the order the pool handed them out; an
 * empty file, a file that vanished and a directory among them.
 */
static void small_files_with(io_engine_kind engine, read_mode mode, int files_in_flight)
{
    enum { NFILES = 20, FILE_SIZE = 8192, GONE = 7, EMPTY = 11 };
    char *dir = test_tmpdir();
    char paths[NFILES][4200], names[NFILES][32];
    unsigned char content[NFILES][FILE_SIZE];
    pipeline_file files[NFILES + 1];
    pgd_error err = {0};
    storage *repo = repo_in(dir);
    pipeline_result res;

    memset(files, 0, sizeof(files));
    for (int i = 0; i < NFILES; i++) {
        fill_pattern(content[i], FILE_SIZE, 100 + (uint32_t)i);
        snprintf(paths[i], sizeof(paths[i]), "%s/f%d", dir, i);
        snprintf(names[i], sizeof(names[i]), "base/1/%d", 16384 + i);
        if (i != GONE)
            write_test_file(paths[i], content[i], i == EMPTY ? 0 : FILE_SIZE);
        files[i] = (pipeline_file){
            .path = names[i], .source = paths[i], .size = i == EMPTY ? 0 : FILE_SIZE, .mode = 0600};
    }
    files[NFILES] = (pipeline_file){.path = "base/1", .source = dir, .is_dir = true, .mode = 0700};
    pipeline_config cfg = {.repo = repo,
                           .backup_id = ID,
                           .compression = COMPRESS_LZ4,
                           .compression_level = COMPRESS_LEVEL_DEFAULT,
                           .read_size = 64 * 1024,
                           .workers = 1,
                           .depth = 4,
                           .engine = engine,
                           .partition_size = 1, /* one file per partition */
                           .mode = mode};
    atomic_store(&engine_spy_files_max, 0);
    assert_true(pipeline_run(&cfg, files, NFILES + 1, &res, &err));
    assert_int_equal(atomic_load(&engine_spy_files_max), files_in_flight);
    assert_int_equal(res.files_in_flight, files_in_flight);
    assert_int_equal(res.npartitions, NFILES); /* 18 files with bytes, the empty one, the dir */
    assert_int_equal(res.bytes_read, (uint64_t)(NFILES - 2) * FILE_SIZE);
    for (int i = 0; i < NFILES; i++) {
        uint64_t want = i == EMPTY ? 0 : FILE_SIZE, size = 0;
        unsigned char *got;
        char part[64];

        if (i == GONE) {
            assert_false(files[i].done);
            continue;
        }
        assert_true(files[i].done);
        assert_int_equal(files[i].result.size, want);
        assert_int_equal(files[i].result.crc, crc32c(content[i], want));
        /* one thread: partitions numbered in the order the files were consumed */
        assert_int_equal(files[i].partition, (uint32_t)(i < GONE ? i + 1 : i));
        layout_partition_name(files[i].partition, COMPRESS_LZ4, part, sizeof(part));
        got = entry_data(repo, part, names[i], &size);
        assert_non_null(got);
        assert_int_equal(size, want);
        assert_memory_equal(got, content[i], want);
        free(got);
    }
    assert_true(files[NFILES].done);
    assert_int_equal(files[NFILES].partition, NFILES);
    pipeline_result_free(&res);
    storage_free(repo);
    rm_rf(dir);
}

static void test_small_files_threads(void **state)
{
    (void)state;
    small_files_with(IO_ENGINE_THREADS, READ_MODE_DIRECT, 4);
}

static void test_small_files_io_uring(void **state)
{
    char why[128];

    (void)state;
    if (!io_engine_uring_available(why, sizeof(why)))
        skip();
    small_files_with(IO_ENGINE_URING, READ_MODE_DIRECT, 4);
}

static void test_small_files_cache_neutral(void **state)
{
    (void)state;
    small_files_with(IO_ENGINE_THREADS, READ_MODE_CACHE_NEUTRAL, 4);
}

/*
 * Under a low limit on open files (RLIMIT_NOFILE 74: 64 kept for the rest
 * of the process, 8 for the thread's partition and ring, 2 for its files),
 * the thread reads ahead in 2 files, and the backup succeeds: fewer files
 * in flight, not EMFILE.
 */
static void test_small_files_under_a_low_open_file_limit(void **state)
{
    struct rlimit saved, low;

    (void)state;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &saved), 0);
    low = saved;
    low.rlim_cur = 74;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    small_files_with(IO_ENGINE_THREADS, READ_MODE_DIRECT, 2);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &saved), 0);
}

/*
 * A filter that holds each thread at its first chunk until every thread
 * is there (or 5 s pass: one that failed never comes): at that moment each
 * thread holds its partition, its ring and every file it opened ahead.
 */
typedef struct rendezvous {
    file_filter base;
    bool arrived;
} rendezvous;

static pthread_mutex_t rendezvous_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t rendezvous_all = PTHREAD_COND_INITIALIZER;
static int rendezvous_count, rendezvous_want;

static bool rendezvous_data(file_filter *f, file_chunk *chunk, pgd_error *err)
{
    rendezvous *r = (rendezvous *)f;

    if (!r->arrived) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 5;
        r->arrived = true;
        pthread_mutex_lock(&rendezvous_lock);
        if (++rendezvous_count == rendezvous_want)
            pthread_cond_broadcast(&rendezvous_all);
        while (rendezvous_count < rendezvous_want &&
               pthread_cond_timedwait(&rendezvous_all, &rendezvous_lock, &until) == 0)
            ;
        pthread_mutex_unlock(&rendezvous_lock);
    }
    return file_filter_data(f->next, chunk, err);
}

/* begin and end as the page spy's: passed on */
static const file_filter_ops rendezvous_ops = {spy_begin_passed_on, rendezvous_data, spy_end,
                                               spy_free};

static file_filter *rendezvous_make(file_filter *next, void *arg, pgd_error *err)
{
    (void)arg;
    (void)err;
    return test_filter_new(sizeof(rendezvous), &rendezvous_ops, next);
}

/*
 * 64 reader threads under RLIMIT_NOFILE 256, all holding their most files
 * at once (the rendezvous filter): each thread's partition and io_uring
 * ring count against the limit too, so the threads read ahead in fewer
 * files and the backup succeeds. It failed with EMFILE when the share per
 * thread left them out (64 x 3 files + 64 rings + 64 partitions > 256).
 */
static void test_many_threads_under_an_open_file_limit(void **state)
{
    enum { NFILES = 3000, FILE_SIZE = 8192, THREADS = 64 };
    char *dir = test_tmpdir();
    char(*paths)[4200] = calloc(NFILES, sizeof(*paths));
    pipeline_file *files = calloc(NFILES, sizeof(*files));
    unsigned char content[FILE_SIZE];
    pgd_error err = {0};
    storage *repo = repo_in(dir);
    struct rlimit saved, low;
    pipeline_result res;
    file_filter_maker meet = {rendezvous_make, NULL};
    char why[128];
    bool ok;

    (void)state;
    fill_pattern(content, FILE_SIZE, 21);
    queue_test_files(dir, NFILES, content, FILE_SIZE, paths, files);
    pipeline_config cfg = {
        .repo = repo,
        .backup_id = ID,
        .compression = COMPRESS_NONE,
        .read_size = 64 * 1024,
        .workers = THREADS,
        .depth = 4,
        .engine = io_engine_uring_available(why, sizeof(why)) ? IO_ENGINE_URING : IO_ENGINE_THREADS,
        .partition_size = 1 << 30,
        .mode = READ_MODE_DIRECT,
        .filters = &meet,
        .nfilters = 1};
    rendezvous_count = 0;
    rendezvous_want = THREADS;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &saved), 0);
    low = saved;
    low.rlim_cur = 256;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    ok = pipeline_run(&cfg, files, NFILES, &res, &err);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &saved), 0);
    if (!ok)
        fail_msg("%s", err.msg);
    for (int i = 0; i < NFILES; i++)
        assert_true(files[i].done);
    assert_int_equal(res.bytes_read, (uint64_t)NFILES * FILE_SIZE);
    pipeline_result_free(&res);
    storage_free(repo);
    rm_rf(dir);
    free(files);
    free(paths);
}

/*
 * A read that fails in a file read ahead fails the backup with that
 * file's name, after the files before it were consumed; nothing after it
 * is stored, and the partition is aborted.
 */
static void test_a_read_error_ahead_names_its_file(void **state)
{
    enum { NFILES = 5, FILE_SIZE = 8192, BAD = 2 };
    char *dir = test_tmpdir();
    char paths[NFILES][4200];
    unsigned char content[FILE_SIZE];
    pipeline_file files[NFILES];
    pgd_error err = {0};
    storage *repo = repo_in(dir);
    pipeline_result res;

    (void)state;
    fill_pattern(content, FILE_SIZE, 9);
    queue_test_files(dir, NFILES, content, FILE_SIZE, paths, files);
    /* a directory queued as a file: opening works, reading fails */
    assert_int_equal(unlink(paths[BAD]), 0);
    assert_int_equal(mkdir(paths[BAD], 0700), 0);
    pipeline_config cfg = {.repo = repo,
                           .backup_id = ID,
                           .compression = COMPRESS_NONE,
                           .read_size = 64 * 1024,
                           .workers = 1,
                           .depth = 4,
                           .engine = IO_ENGINE_THREADS,
                           .partition_size = 1 << 30,
                           .mode = READ_MODE_BUFFERED};
    assert_false(pipeline_run(&cfg, files, NFILES, &res, &err));
    assert_non_null(strstr(err.msg, paths[BAD]));
    assert_true(files[0].done);
    assert_true(files[1].done);
    for (int i = BAD; i < NFILES; i++)
        assert_false(files[i].done);
    assert_int_equal(count_entries(dir, "repo/" BACKUPS_DIR "/" ID), 0);
    storage_free(repo);
    rm_rf(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vanished_grown_shrunk),
        cmocka_unit_test(test_read_error_fails_and_aborts_the_open_partition),
        cmocka_unit_test(test_worker_that_cannot_start_stops_the_backup),
        cmocka_unit_test(test_big_file_threads),
        cmocka_unit_test(test_big_file_io_uring),
        cmocka_unit_test(test_big_file_cache_neutral),
        cmocka_unit_test(test_a_filter_sees_every_page_with_its_block_number),
        cmocka_unit_test(test_a_filter_can_replace_the_file),
        cmocka_unit_test(test_a_link_is_stored_as_a_link_entry),
        cmocka_unit_test(test_a_sparse_plan_reads_only_its_runs),
        cmocka_unit_test(test_groups_never_share_a_partition),
        cmocka_unit_test(test_small_files_threads),
        cmocka_unit_test(test_small_files_io_uring),
        cmocka_unit_test(test_small_files_cache_neutral),
        cmocka_unit_test(test_small_files_under_a_low_open_file_limit),
        cmocka_unit_test(test_many_threads_under_an_open_file_limit),
        cmocka_unit_test(test_a_read_error_ahead_names_its_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
