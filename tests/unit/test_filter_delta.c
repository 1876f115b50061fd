/*
 * test_filter_delta.c - covers src/backup/filter_delta.c alone: which pages
 * of a relation file a delta takes (newer LSN, invalid header, all zeros,
 * past the parent's size, a short last page) and which it leaves; the
 * increment it passes on decodes to exactly those; files that are not
 * candidates (FSM and VM forks, files new since the parent, non-relation
 * files) pass through whole; a file whose chosen pages exceed the buffer
 * bound goes whole, its first part read again from the file.
 */
#include "helpers.h"

#include "backup/block_plan.h"
#include "backup/filter_delta.h"
#include "pg/relfile.h"
#include "repo/increment.h"

#define THRESHOLD 0x100000000ull
#define OLD_LSN   0x0FFFFFFFull
#define NEW_LSN   0x100000028ull

typedef struct sink {
    file_filter base;
    char path[256];
    uint64_t declared;
    unsigned char *data;
    size_t len;
    file_filter_result seen;
    int begins;
} sink;

static bool sink_begin(file_filter *f, const file_filter_file *file, pgd_error *err)
{
    sink *s = (sink *)f;

    (void)err;
    snprintf(s->path, sizeof(s->path), "%s", file->path);
    s->declared = file->size;
    s->begins++;
    return true;
}

static bool sink_data(file_filter *f, file_chunk *chunk, pgd_error *err)
{
    sink *s = (sink *)f;

    (void)err;
    assert_int_equal(chunk->offset, s->len);
    s->data = realloc(s->data, s->len + chunk->len);
    memcpy(s->data + s->len, chunk->data, chunk->len);
    s->len += chunk->len;
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

/* A page with a sane header (PageInit's) and the given LSN. */
static void make_page(unsigned char *p, uint64_t lsn, unsigned char fill)
{
    uint16_t lower = 28, upper = 8000, special = PG_PAGE_SIZE, version = PG_PAGE_SIZE | 4;

    uint32_t xlogid = (uint32_t)(lsn >> 32), xrecoff = (uint32_t)lsn;

    memset(p, fill, PG_PAGE_SIZE);
    memcpy(p, &xlogid, sizeof(xlogid)); /* PageXLogRecPtr: the high half first */
    memcpy(p + 4, &xrecoff, sizeof(xrecoff));
    memset(p + 8, 0, 4); /* checksum, flags */
    memcpy(p + 12, &lower, 2);
    memcpy(p + 14, &upper, 2);
    memcpy(p + 16, &special, 2);
    memcpy(p + 18, &version, 2);
}

typedef struct run {
    manifest parent;
    sink s;
    file_filter *f;
} run;

static void run_setup(run *r, uint64_t parent_size, size_t max_buffer, const char *extra_parent)
{
    manifest_file pf = {.path = "base/5/16384", .size = parent_size, .file_size = parent_size};
    manifest_file fsm = {
        .path = "base/5/16384_fsm", .size = 3 * PG_PAGE_SIZE, .file_size = 3 * PG_PAGE_SIZE};
    manifest_file vm = {.path = "base/5/16384_vm", .size = PG_PAGE_SIZE, .file_size = PG_PAGE_SIZE};
    filter_delta_config cfg = {
        .threshold_lsn = THRESHOLD, .max_buffer = max_buffer, .reread = READ_MODE_BUFFERED};

    memset(r, 0, sizeof(*r));
    manifest_init(&r->parent);
    manifest_add_file(&r->parent, &pf);
    manifest_add_file(&r->parent, &fsm);
    manifest_add_file(&r->parent, &vm);
    if (extra_parent != NULL) {
        manifest_file x = {.path = (char *)extra_parent, .size = 3, .file_size = 3};
        manifest_add_file(&r->parent, &x);
    }
    manifest_build_index(&r->parent);
    cfg.parent = &r->parent;
    r->s.base.ops = &sink_ops;
    r->f = filter_delta_new(&r->s.base, &cfg);
    assert_non_null(r->f);
}

static void run_free(run *r)
{
    file_filter_free(r->f);
    free(r->s.data);
    manifest_free(&r->parent);
}

/* One file through the filter, `chunk_pages` pages a chunk. */
static void run_file(run *r, const char *path, const char *source, const unsigned char *data,
                     size_t len, size_t chunk_pages)
{
    file_filter_file ff = {.path = path, .source = source, .size = len, .mode = 0600};
    relfile rel;
    pgd_error err = {0};
    unsigned char *copy = malloc(len + 1);

    if (relfile_parse(path, &rel)) {
        ff.is_relation = true;
        ff.segment = rel.segment;
    }
    memcpy(copy, data, len);
    free(r->s.data);
    r->s.data = NULL;
    r->s.len = 0;
    r->s.begins = 0;
    assert_true(file_filter_begin(r->f, &ff, &err));
    for (size_t off = 0; off < len; off += chunk_pages * PG_PAGE_SIZE) {
        size_t n = len - off < chunk_pages * PG_PAGE_SIZE ? len - off : chunk_pages * PG_PAGE_SIZE;
        file_chunk c = {.data = copy + off, .len = n, .room = n, .offset = off};
        if (!file_filter_data(r->f, &c, &err))
            fail_msg("data: %s", err.msg);
    }
    memset(&r->s.seen, 0, sizeof(r->s.seen));
    if (!file_filter_end(r->f, &r->s.seen, &err))
        fail_msg("end: %s", err.msg);
    assert_int_equal(r->s.begins, 1);
    free(copy);
}

typedef struct decoded {
    uint32_t n, block[16];
    unsigned char first[16][16];
} decoded;

static bool decoded_page(void *arg, uint32_t block, const unsigned char *page, pgd_error *err)
{
    decoded *d = arg;

    (void)err;
    d->block[d->n] = block;
    memcpy(d->first[d->n], page + 24, 16);
    d->n++;
    return true;
}

static void decode(const sink *s, uint64_t file_size, decoded *d)
{
    increment_reader rd;
    pgd_error err = {0};

    memset(d, 0, sizeof(*d));
    increment_reader_init(&rd, s->path, true, s->len, file_size, s->seen.inc_blocks);
    if (!increment_reader_feed(&rd, s->data, s->len, decoded_page, d, &err) ||
        !increment_reader_finish(&rd, &err))
        fail_msg("decode: %s", err.msg);
    increment_reader_free(&rd);
}

static void test_header_validity(void **state)
{
    unsigned char page[PG_PAGE_SIZE];
    uint16_t bad;

    (void)state;
    make_page(page, OLD_LSN, 'a');
    assert_true(filter_delta_header_valid(page));
    bad = 8000 + 1; /* pd_lower above pd_upper */
    memcpy(page + 12, &bad, 2);
    assert_false(filter_delta_header_valid(page));
    make_page(page, OLD_LSN, 'a');
    bad = 0x0100; /* a flag PostgreSQL does not define */
    memcpy(page + 10, &bad, 2);
    assert_false(filter_delta_header_valid(page));
    make_page(page, OLD_LSN, 'a');
    bad = 8190; /* pd_special not MAXALIGNed */
    memcpy(page + 16, &bad, 2);
    memcpy(page + 14, &bad, 2);
    assert_false(filter_delta_header_valid(page));
}

/*
 * 7 pages, the parent had 5: 0 old (left), 1 new LSN, 2 zeros, 3 bad header with an old LSN,
 * 4 old (left), 5 and 6 past the parent's size with old LSNs.
 */
static void test_page_rules(void **state)
{
    unsigned char *file = calloc(7, PG_PAGE_SIZE);
    uint16_t bad = 9000;
    run r;
    decoded d;

    (void)state;
    make_page(file + 0 * PG_PAGE_SIZE, OLD_LSN, 'a');
    make_page(file + 1 * PG_PAGE_SIZE, NEW_LSN, 'b');
    make_page(file + 3 * PG_PAGE_SIZE, OLD_LSN, 'd');
    memcpy(file + 3 * PG_PAGE_SIZE + 12, &bad, 2);
    make_page(file + 4 * PG_PAGE_SIZE, OLD_LSN, 'e');
    make_page(file + 5 * PG_PAGE_SIZE, OLD_LSN, 'f');
    make_page(file + 6 * PG_PAGE_SIZE, THRESHOLD - 1, 'g');
    run_setup(&r, 5 * PG_PAGE_SIZE, 1 << 20, NULL);
    for (size_t chunk = 1; chunk <= 7; chunk += 3) {
        run_file(&r, "base/5/16384", NULL, file, 7 * PG_PAGE_SIZE, chunk);
        assert_string_equal(r.s.path, "base/5/INCREMENTAL.16384");
        assert_true(r.s.seen.increment);
        assert_int_equal(r.s.seen.inc_blocks, 5);
        assert_int_equal(r.s.seen.file_size, 7 * PG_PAGE_SIZE);
        assert_int_equal(r.s.declared, increment_size(5));
        assert_int_equal(r.s.len, increment_size(5));
        decode(&r.s, 7 * PG_PAGE_SIZE, &d);
        assert_int_equal(d.n, 5);
        assert_int_equal(d.block[0], 1);
        assert_int_equal(d.block[1], 2);
        assert_int_equal(d.block[2], 3);
        assert_int_equal(d.block[3], 5);
        assert_int_equal(d.block[4], 6);
        assert_int_equal(d.first[0][0], 'b');
        assert_int_equal(d.first[1][0], 0);
        assert_int_equal(d.first[2][0], 'd');
    }
    run_free(&r);
    free(file);
}

/* The last, partial page is taken and zero-padded; file_size keeps the real size. */
static void test_short_last_page(void **state)
{
    size_t len = 2 * PG_PAGE_SIZE + 100;
    unsigned char *file = calloc(3, PG_PAGE_SIZE);
    run r;
    decoded d;

    (void)state;
    make_page(file, OLD_LSN, 'a');
    make_page(file + PG_PAGE_SIZE, OLD_LSN, 'b');
    memset(file + 2 * PG_PAGE_SIZE, 'z', 100);
    run_setup(&r, 3 * PG_PAGE_SIZE, 1 << 20, NULL);
    run_file(&r, "base/5/16384", NULL, file, len, 2);
    assert_true(r.s.seen.increment);
    assert_int_equal(r.s.seen.file_size, len);
    decode(&r.s, len, &d);
    assert_int_equal(d.n, 1);
    assert_int_equal(d.block[0], 2);
    run_free(&r);
    free(file);
}

/* FSM and VM forks, files new since the parent and non-relation files pass whole, unchanged. */
static void test_whole_files(void **state)
{
    const char *paths[] = {"base/5/16384_fsm", "base/5/16384_vm", "base/5/16999", "PG_VERSION"};
    unsigned char *file = calloc(3, PG_PAGE_SIZE);
    run r;

    (void)state;
    for (int i = 0; i < 3; i++)
        make_page(file + i * PG_PAGE_SIZE, OLD_LSN, 'a' + (unsigned char)i);
    run_setup(&r, 5 * PG_PAGE_SIZE, 1 << 20, "PG_VERSION");
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        run_file(&r, paths[i], NULL, file, 3 * PG_PAGE_SIZE, 1);
        assert_string_equal(r.s.path, paths[i]);
        assert_false(r.s.seen.increment);
        assert_int_equal(r.s.len, 3 * PG_PAGE_SIZE);
        assert_memory_equal(r.s.data, file, 3 * PG_PAGE_SIZE);
    }
    run_free(&r);
    free(file);
}

/*
 * A buffer of 2 pages, 5 new pages: at the third the file goes whole; the
 * first two are read again from the file (whose copy on disk differs in a
 * byte, to tell the re-read from a replay of the first read).
 */
static void test_buffer_bound_goes_whole(void **state)
{
    unsigned char *file = calloc(5, PG_PAGE_SIZE), *on_disk = calloc(5, PG_PAGE_SIZE);
    char *dir = test_tmpdir(), source[512];
    run r;

    (void)state;
    for (int i = 0; i < 5; i++)
        make_page(file + i * PG_PAGE_SIZE, NEW_LSN, 'a' + (unsigned char)i);
    memcpy(on_disk, file, 5 * PG_PAGE_SIZE);
    on_disk[100] = 'X';
    snprintf(source, sizeof(source), "%s/16384", dir);
    write_test_file(source, on_disk, 5 * PG_PAGE_SIZE);
    run_setup(&r, 5 * PG_PAGE_SIZE, 2 * PG_PAGE_SIZE, NULL);
    run_file(&r, "base/5/16384", source, file, 5 * PG_PAGE_SIZE, 1);
    assert_string_equal(r.s.path, "base/5/16384");
    assert_false(r.s.seen.increment);
    assert_int_equal(r.s.declared, 5 * PG_PAGE_SIZE);
    assert_int_equal(r.s.len, 5 * PG_PAGE_SIZE);
    assert_int_equal(r.s.data[100], 'X');
    assert_memory_equal(r.s.data + 101, file + 101, 5 * PG_PAGE_SIZE - 101);
    /* the next file starts afresh: an increment again */
    run_file(&r, "base/5/16384", source, file, 2 * PG_PAGE_SIZE, 1);
    assert_true(r.s.seen.increment);
    run_free(&r);
    rm_rf(dir);
    free(file);
    free(on_disk);
}

/*
 * A file read by a WAL-summary plan: every page handed on is stored, old
 * LSN or not (the summaries said it changed), the increment's file size is
 * the file's at open, not the end of the last page read; WHOLE passes the
 * file through; a file not in the parent with no plan stays whole.
 */
static void test_sparse_plan_stores_every_page_handed(void **state)
{
    enum { PAGES = 10 };
    unsigned char *data = malloc(PAGES * PG_PAGE_SIZE);
    block_run runs[] = {{1, 1}, {6, 2}};
    block_plan plan = {.kind = BLOCK_PLAN_SPARSE, .runs = runs, .nruns = 2, .pages = 3};
    file_filter_file ff = {.path = "base/5/16384",
                           .source = "/nonexistent",
                           .size = PAGES * PG_PAGE_SIZE,
                           .mode = 0600,
                           .is_relation = true,
                           .plan = &plan};
    const uint32_t at[] = {1, 6, 7};
    pgd_error err = {0};
    decoded d;
    run r;

    (void)state;
    for (uint32_t b = 0; b < PAGES; b++)
        make_page(data + b * PG_PAGE_SIZE, OLD_LSN, (unsigned char)('a' + b));
    run_setup(&r, PAGES * PG_PAGE_SIZE, 1 << 20, NULL);
    assert_true(file_filter_begin(r.f, &ff, &err));
    for (size_t i = 0; i < 3; i++) {
        file_chunk c = {.data = data + at[i] * PG_PAGE_SIZE,
                        .len = PG_PAGE_SIZE,
                        .room = PG_PAGE_SIZE,
                        .offset = (uint64_t)at[i] * PG_PAGE_SIZE};
        assert_true(file_filter_data(r.f, &c, &err));
    }
    assert_true(file_filter_end(r.f, &r.s.seen, &err));
    assert_true(r.s.seen.increment);
    assert_int_equal(r.s.seen.file_size, PAGES * PG_PAGE_SIZE);
    assert_int_equal(r.s.seen.inc_blocks, 3);
    decode(&r.s, PAGES * PG_PAGE_SIZE, &d);
    assert_int_equal(d.n, 3);
    for (uint32_t i = 0; i < 3; i++) {
        assert_int_equal(d.block[i], at[i]);
        assert_int_equal(d.first[i][0], 'a' + at[i]);
    }
    /* WHOLE: the file's bytes pass through as they are */
    plan.kind = BLOCK_PLAN_WHOLE;
    free(r.s.data);
    r.s = (sink){.base = r.s.base};
    assert_true(file_filter_begin(r.f, &ff, &err));
    for (size_t off = 0; off < PAGES * PG_PAGE_SIZE; off += 4 * PG_PAGE_SIZE) {
        size_t n = PAGES * PG_PAGE_SIZE - off < 4 * PG_PAGE_SIZE ? PAGES * PG_PAGE_SIZE - off
                                                                 : 4 * PG_PAGE_SIZE;
        file_chunk c = {.data = data + off, .len = n, .room = n, .offset = off};
        assert_true(file_filter_data(r.f, &c, &err));
    }
    assert_true(file_filter_end(r.f, &r.s.seen, &err));
    assert_false(r.s.seen.increment);
    assert_int_equal(r.s.len, PAGES * PG_PAGE_SIZE);
    assert_memory_equal(r.s.data, data, PAGES * PG_PAGE_SIZE);
    run_free(&r);
    free(data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header_validity),
        cmocka_unit_test(test_page_rules),
        cmocka_unit_test(test_short_last_page),
        cmocka_unit_test(test_whole_files),
        cmocka_unit_test(test_buffer_bound_goes_whole),
        cmocka_unit_test(test_sparse_plan_stores_every_page_handed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
