/*
 * test_wal_segment.c - covers src/pg/wal_segment.c: a WAL file is what its
 * name says, or the check says why not.
 *
 * The segments are built here the way PostgreSQL writes them (long header
 * on the first page, short headers after, records MAXALIGNed, continued
 * across pages with XLP_FIRST_IS_CONTRECORD and xlp_rem_len, CRC-32C over
 * the data then the header), small (1 MiB) so that the tests stay fast.
 */
#include "helpers.h"

#include "pg/wal_segment.h"
#include "util/crc32c.h"

#define SEG_SIZE       (1u << 20)
#define PAGE_SIZE      8192u
#define PG15_MAGIC     0xD110
#define LONG_HEADER    40
#define SHORT_HEADER   24
#define REC_HEADER     24
#define INFO_CONT      0x0001
#define INFO_LONG      0x0002
#define INFO_OVERWRITE 0x0008
#define RM_HEAP        10
#define XLOG_SWITCH    0x40

/* Segment 0/3 of timeline 1 (16 MiB segments would be 000000010000000000000003 too). */
#define SEG_NAME "000000010000000000000003"
#define SEG_LSN  (3ull * SEG_SIZE)

typedef struct builder {
    unsigned char *buf;
    uint32_t seg_size;
    uint64_t seg_lsn;
    uint32_t tli;
    size_t pos;
    uint64_t prev; /* LSN of the last record written */
} builder;

static void put16(unsigned char *p, uint16_t v)
{
    memcpy(p, &v, sizeof(v));
}
static void put32(unsigned char *p, uint32_t v)
{
    memcpy(p, &v, sizeof(v));
}
static void put64(unsigned char *p, uint64_t v)
{
    memcpy(p, &v, sizeof(v));
}

static void page_header(builder *b, size_t at, uint16_t info, uint32_t rem_len)
{
    unsigned char *p = b->buf + at;

    put16(p, PG15_MAGIC);
    put16(p + 2, info | (at == 0 ? INFO_LONG : 0));
    put32(p + 4, b->tli);
    put64(p + 8, b->seg_lsn + at);
    put32(p + 16, rem_len);
    if (at == 0) {
        put64(p + 24, 7000000000000000000ull); /* system identifier */
        put32(p + 32, b->seg_size);
        put32(p + 36, PAGE_SIZE);
    }
}

/*
 * A segment with its first page header; `cont` bytes of a record from the
 * previous segment come first.
 */
static builder build_start(uint32_t seg_size, uint64_t seg_lsn, uint32_t tli, uint32_t cont)
{
    builder b = {calloc(1, seg_size), seg_size, seg_lsn, tli, LONG_HEADER, 0};

    assert_non_null(b.buf);
    page_header(&b, 0, cont ? INFO_CONT : 0, cont);
    while (cont > 0) {
        size_t room = PAGE_SIZE - b.pos % PAGE_SIZE, k = cont < room ? cont : room;
        memset(b.buf + b.pos, 0x5A, k);
        b.pos += k;
        cont -= (uint32_t)k;
        if (cont > 0) {
            page_header(&b, b.pos, INFO_CONT, cont);
            b.pos += SHORT_HEADER;
        }
    }
    b.pos = (b.pos + 7) & ~(size_t)7;
    return b;
}

/* Append one record; false when it would not start in the segment. */
static bool add_record(builder *b, uint8_t rmid, uint8_t info, uint32_t data_len, uint32_t seed)
{
    uint32_t tot = REC_HEADER + data_len, left = tot, crc;
    unsigned char *rec = malloc(tot);
    size_t done = 0;

    assert_non_null(rec);
    if (b->pos % PAGE_SIZE == 0) {
        if (b->pos >= b->seg_size) {
            free(rec);
            return false;
        }
        page_header(b, b->pos, 0, 0);
        b->pos += SHORT_HEADER;
    }
    fill_pattern(rec + REC_HEADER, data_len, seed);
    memset(rec, 0, REC_HEADER);
    put32(rec, tot);
    put32(rec + 4, 1000 + seed); /* xid */
    put64(rec + 8, b->prev);
    rec[16] = info;
    rec[17] = rmid;
    crc = crc32c_update(CRC32C_INIT, rec + REC_HEADER, data_len);
    crc = crc32c_final(crc32c_update(crc, rec, 20));
    put32(rec + 20, crc);
    b->prev = b->seg_lsn + b->pos;
    while (left > 0 && b->pos < b->seg_size) {
        size_t room = PAGE_SIZE - b->pos % PAGE_SIZE, k = left < room ? left : room;
        memcpy(b->buf + b->pos, rec + done, k);
        b->pos += k;
        done += k;
        left -= (uint32_t)k;
        if (left > 0 && b->pos < b->seg_size) {
            page_header(b, b->pos, INFO_CONT, left);
            b->pos += SHORT_HEADER;
        }
    }
    free(rec);
    b->pos = (b->pos + 7) & ~(size_t)7;
    return true;
}

/* Records of mixed sizes (some span pages) until `until`, then XLOG_SWITCH; the rest is zeroes. */
static unsigned char *build_switched(uint32_t tli, size_t until)
{
    builder b = build_start(SEG_SIZE, SEG_LSN, tli, 0);
    uint32_t seed = 1;

    for (; b.pos < until; seed++)
        add_record(&b, RM_HEAP, 0x10, seed % 7 == 0 ? 3 * PAGE_SIZE + 100 : 50 + seed % 300, seed);
    assert_true(add_record(&b, 0, XLOG_SWITCH, 0, seed));
    return b.buf;
}

/* Records up to the end; the last one runs on into the next segment. */
static unsigned char *build_full(uint32_t cont)
{
    builder b = build_start(SEG_SIZE, SEG_LSN, 1, cont);
    uint32_t seed = 1;

    while (add_record(&b, RM_HEAP, 0x10, 200 + seed % 1500, seed))
        seed++;
    return b.buf;
}

static bool check(const char *name, const unsigned char *data, size_t len, pgd_error *err)
{
    err_clear(err);
    return wal_segment_check_buffer(name, data, len, err);
}

static void assert_fails_with(const char *name, const unsigned char *data, size_t len,
                              const char *expect)
{
    pgd_error err = {0};

    assert_false(check(name, data, len, &err));
    if (strstr(err.msg, expect) == NULL)
        fail_msg("expected \"%s\" in \"%s\"", expect, err.msg);
    assert_non_null(strstr(err.msg, name));
}

static void test_valid_segment_with_switch(void **state)
{
    unsigned char *seg = build_switched(1, SEG_SIZE / 2);
    pgd_error err = {0};

    (void)state;
    assert_true(check(SEG_NAME, seg, SEG_SIZE, &err));
    free(seg);
}

static void test_valid_segment_full_to_the_end(void **state)
{
    unsigned char *seg = build_full(0);
    pgd_error err = {0};

    (void)state;
    assert_true(check(SEG_NAME, seg, SEG_SIZE, &err));
    free(seg);
}

static void test_valid_segment_starting_with_a_continued_record(void **state)
{
    unsigned char *seg = build_full(2 * PAGE_SIZE + 123);
    pgd_error err = {0};

    (void)state;
    assert_true(check(SEG_NAME, seg, SEG_SIZE, &err));
    free(seg);
}

static void test_record_header_split_across_pages(void **state)
{
    pgd_error err = {0};

    (void)state;
    /* 8 and 16 bytes left on the page: xl_tot_len fits, the rest of the header does not */
    for (uint32_t left = 8; left <= 16; left += 8) {
        builder b = build_start(SEG_SIZE, SEG_LSN, 1, 0);
        assert_true(add_record(&b, RM_HEAP, 0, PAGE_SIZE - left - LONG_HEADER - REC_HEADER, 1));
        assert_int_equal(b.pos, PAGE_SIZE - left);
        while (add_record(&b, RM_HEAP, 0, 200, 2))
            ;
        if (!check(SEG_NAME, b.buf, SEG_SIZE, &err))
            fail_msg("%s", err.msg);
        b.buf[PAGE_SIZE + SHORT_HEADER + 2] ^= 0x01; /* the split header's second part */
        assert_fails_with(SEG_NAME, b.buf, SEG_SIZE, "is corrupt");
        free(b.buf);
    }
}

static void test_fed_byte_by_byte_and_in_odd_pieces(void **state)
{
    unsigned char *seg = build_switched(1, SEG_SIZE - 3 * PAGE_SIZE);
    size_t pieces[] = {1, 3, 7, 24, 41, 8191, 8193, 65536};
    pgd_error err = {0};

    (void)state;
    for (size_t i = 0; i < sizeof(pieces) / sizeof(pieces[0]); i++) {
        wal_segment_check *c = wal_segment_check_new(SEG_NAME, &err);
        size_t step = pieces[i];
        assert_non_null(c);
        for (size_t off = 0; off < SEG_SIZE; off += step)
            assert_true(wal_segment_check_update(
                c, seg + off, SEG_SIZE - off < step ? SEG_SIZE - off : step, &err));
        assert_true(wal_segment_check_finish(c, &err));
        wal_segment_check_free(c);
    }
    /* and corruption is found whatever the pieces */
    seg[SEG_SIZE / 4] ^= 0x01;
    for (size_t i = 0; i < sizeof(pieces) / sizeof(pieces[0]); i++) {
        wal_segment_check *c = wal_segment_check_new(SEG_NAME, &err);
        bool ok = true;
        err_clear(&err);
        for (size_t off = 0; ok && off < SEG_SIZE; off += pieces[i])
            ok = wal_segment_check_update(
                c, seg + off, SEG_SIZE - off < pieces[i] ? SEG_SIZE - off : pieces[i], &err);
        assert_false(ok && wal_segment_check_finish(c, &err));
        assert_non_null(strstr(err.msg, "is corrupt"));
        wal_segment_check_free(c);
    }
    free(seg);
}

static void test_wrong_magic(void **state)
{
    unsigned char *seg = build_switched(1, SEG_SIZE / 2);

    (void)state;
    put16(seg, 0xD0FF);
    assert_fails_with(SEG_NAME, seg, SEG_SIZE, "page magic 0xD0FF");
    put16(seg, 0xD120); /* a version after the ones we know */
    assert_fails_with(SEG_NAME, seg, SEG_SIZE, "PostgreSQL 12 to 18");
    free(seg);
}

static void test_every_known_magic_passes(void **state)
{
    const uint16_t magics[] = {0xD101, 0xD106, 0xD10D, 0xD110, 0xD113, 0xD116, 0xD118};
    unsigned char *seg = build_switched(1, 3 * PAGE_SIZE);
    pgd_error err = {0};

    (void)state;
    for (size_t i = 0; i < sizeof(magics) / sizeof(magics[0]); i++) {
        for (size_t page = 0; page < SEG_SIZE; page += PAGE_SIZE)
            if (seg[page] != 0 || seg[page + 1] != 0) /* pages after the switch are zeroes */
                put16(seg + page, magics[i]);
        assert_true(check(SEG_NAME, seg, SEG_SIZE, &err));
    }
    free(seg);
}

static void test_wrong_timeline(void **state)
{
    unsigned char *seg = build_switched(2, SEG_SIZE / 2);
    pgd_error err = {0};

    (void)state;
    /* pages of timeline 2 under a timeline-1 name */
    assert_fails_with(SEG_NAME, seg, SEG_SIZE, "on timeline 2");
    /* under a timeline-2 name it is right; under timeline 3 too (a copy of the parent's) */
    assert_true(check("000000020000000000000003", seg, SEG_SIZE, &err));
    assert_true(check("000000030000000000000003", seg, SEG_SIZE, &err));
    /* a page going back to an older timeline is not */
    put32(seg + 5 * PAGE_SIZE + 4, 1);
    assert_fails_with("000000020000000000000003", seg, SEG_SIZE, "timeline 1, after pages on 2");
    free(seg);
}

static void test_wrong_page_address(void **state)
{
    unsigned char *seg = build_switched(1, SEG_SIZE / 2);

    (void)state;
    /* segment 0/3 under the name of 0/4, and of 0/3 with 2 MiB segments */
    assert_fails_with("000000010000000000000004", seg, SEG_SIZE, "not the segment its name says");
    put64(seg + 9 * PAGE_SIZE + 8, SEG_LSN + 10 * PAGE_SIZE);
    assert_fails_with(SEG_NAME, seg, SEG_SIZE, "says it is at 0/314000");
    free(seg);
}

static void test_truncated_or_too_long(void **state)
{
    unsigned char *seg = build_switched(1, SEG_SIZE / 2);
    unsigned char *longer = calloc(1, SEG_SIZE + 1);

    (void)state;
    assert_fails_with(SEG_NAME, seg, 0, "truncated: 0 bytes");
    assert_fails_with(SEG_NAME, seg, 39, "truncated: 39 bytes");
    assert_fails_with(SEG_NAME, seg, SEG_SIZE / 3, "of a 1048576-byte segment");
    assert_fails_with(SEG_NAME, seg, SEG_SIZE - 1, "truncated");
    memcpy(longer, seg, SEG_SIZE);
    assert_fails_with(SEG_NAME, longer, SEG_SIZE + 1, "more than the segment size 1048576");
    free(longer);
    free(seg);
}

static void test_flipped_byte_in_a_record(void **state)
{
    unsigned char *seg = build_switched(1, SEG_SIZE / 2);

    (void)state;
    seg[SEG_SIZE / 4 + 1001] ^= 0x40;
    assert_fails_with(SEG_NAME, seg, SEG_SIZE, "is corrupt");
    free(seg);
}

static void test_zeroes_where_records_should_be(void **state)
{
    unsigned char *seg = build_full(0);

    (void)state;
    /* what a segment copied before it was finished looks like */
    memset(seg + SEG_SIZE / 2, 0, SEG_SIZE / 2);
    assert_fails_with(SEG_NAME, seg, SEG_SIZE, "is corrupt");
    free(seg);
}

static void test_page_that_does_not_continue_the_record(void **state)
{
    builder b = build_start(SEG_SIZE, SEG_LSN, 1, 0);

    (void)state;
    assert_true(add_record(&b, RM_HEAP, 0, 2 * PAGE_SIZE, 1)); /* spans pages 0-2 */
    while (add_record(&b, RM_HEAP, 0, 500, 2))
        ;
    put16(b.buf + PAGE_SIZE + 2, 0); /* page 1 loses XLP_FIRST_IS_CONTRECORD */
    assert_fails_with(SEG_NAME, b.buf, SEG_SIZE, "does not continue the record");
    put16(b.buf + PAGE_SIZE + 2, INFO_CONT);
    put32(b.buf + PAGE_SIZE + 16, 1); /* wrong xlp_rem_len */
    assert_fails_with(SEG_NAME, b.buf, SEG_SIZE, "does not continue the record");
    free(b.buf);
}

static void test_overwritten_contrecord_restarts_the_records(void **state)
{
    builder b = build_start(SEG_SIZE, SEG_LSN, 1, 0);
    pgd_error err = {0};

    (void)state;
    /* a record cut off at the end of page 0 by a crash; page 1 starts afresh */
    while (b.pos < PAGE_SIZE - 64)
        assert_true(add_record(&b, RM_HEAP, 0, 8, 3));
    memset(b.buf + b.pos, 0, PAGE_SIZE - b.pos);
    put32(b.buf + b.pos, 500); /* the torn record: 500 bytes, never finished */
    put64(b.buf + b.pos + 8, b.prev);
    b.pos = PAGE_SIZE;
    page_header(&b, b.pos, INFO_OVERWRITE, 0);
    b.pos += SHORT_HEADER;
    b.prev = 0;
    while (add_record(&b, RM_HEAP, 0, 300, 4))
        ;
    if (!check(SEG_NAME, b.buf, SEG_SIZE, &err))
        fail_msg("%s", err.msg);
    free(b.buf);
}

static void test_partial_checks_its_header_and_size_only(void **state)
{
    unsigned char *seg = build_full(0);
    pgd_error err = {0};

    (void)state;
    memset(seg + SEG_SIZE / 2, 0xEE, SEG_SIZE / 2); /* whatever follows the last record */
    assert_true(check(SEG_NAME ".partial", seg, SEG_SIZE, &err));
    assert_fails_with(SEG_NAME ".partial", seg, SEG_SIZE - 100, "truncated");
    assert_fails_with("000000010000000000000005.partial", seg, SEG_SIZE, "name says");
    free(seg);
}

static void test_other_segment_sizes(void **state)
{
    builder b = build_start(2 * SEG_SIZE, 2 * SEG_SIZE, 1, 0); /* 2 MiB segment 0/200000 */
    pgd_error err = {0};

    (void)state;
    while (add_record(&b, RM_HEAP, 0, 700, 5))
        ;
    assert_true(check("000000010000000000000001", b.buf, 2 * SEG_SIZE, &err));
    assert_fails_with("000000010000000000000001", b.buf, SEG_SIZE, "of a 2097152-byte segment");
    put32(b.buf + 32, 3 * SEG_SIZE);
    assert_fails_with("000000010000000000000001", b.buf, 2 * SEG_SIZE, "not a power of two");
    free(b.buf);
}

static void test_history_files(void **state)
{
    const char *good = "1\t0/3000000\tno recovery target specified\n\n"
                       "2\t0/5000A28\tat restore point \"x\"\n";
    const char *bad;
    pgd_error err = {0};

    (void)state;
    assert_true(check("00000003.history", (const unsigned char *)good, strlen(good), &err));
    assert_fails_with("00000003.history", (const unsigned char *)good, 0, "is empty");
    assert_fails_with("00000003.history", (const unsigned char *)good, strlen(good) - 1,
                      "truncated");
    assert_fails_with("00000002.history", (const unsigned char *)good, strlen(good),
                      "timeline 2 in line 3");
    bad = "1 0/30000\n2 zz\n";
    assert_fails_with("00000003.history", (const unsigned char *)bad, strlen(bad),
                      "expected an LSN");
    bad = "# only a comment\n";
    assert_fails_with("00000003.history", (const unsigned char *)bad, strlen(bad),
                      "names no parent");
    /* PostgreSQL reads 1,023 bytes of a line: the rest would be a line of its own ("zzz") */
    {
        char longer[1200];
        snprintf(longer, sizeof(longer), "1\t0/3000000\t%*s\n", 1011, "zzz");
        assert_int_equal(strlen(longer), 1023 + 1);
        assert_true(check("00000002.history", (const unsigned char *)longer, strlen(longer), &err));
        snprintf(longer, sizeof(longer), "1\t0/3000000\t%*s\n", 1012, "zzz");
        assert_fails_with("00000002.history", (const unsigned char *)longer, strlen(longer),
                          "has a line longer than PostgreSQL reads in line 1 (1024 bytes, at most "
                          "1023)");
    }
}

static void test_backup_history_files(void **state)
{
    const char *good = "START WAL LOCATION: 0/2000028 (file 000000010000000000000002)\n"
                       "STOP WAL LOCATION: 0/2000100 (file 000000010000000000000002)\n";
    const char *name = "000000010000000000000002.00000028.backup";
    pgd_error err = {0};

    (void)state;
    assert_true(check(name, (const unsigned char *)good, strlen(good), &err));
    assert_fails_with("000000010000000000000003.00000028.backup", (const unsigned char *)good,
                      strlen(good), "does not name segment 000000010000000000000003");
    assert_fails_with(name, (const unsigned char *)good, 30, "truncated");
}

static void test_not_a_wal_file_name(void **state)
{
    pgd_error err = {0};

    (void)state;
    assert_null(wal_segment_check_new("00000001000000000000000g", &err));
    assert_non_null(strstr(err.msg, "not a WAL file name"));
    assert_int_equal(wal_name_kind("000000010000000000000003"), WAL_FILE_SEGMENT);
    assert_int_equal(wal_name_kind("000000010000000000000003.partial"), WAL_FILE_PARTIAL);
    assert_int_equal(wal_name_kind("0000000A.history"), WAL_FILE_HISTORY);
    assert_int_equal(wal_name_kind("000000010000000000000002.00000028.backup"), WAL_FILE_BACKUP);
    assert_int_equal(wal_name_kind("0000000a.history"), WAL_FILE_UNKNOWN);
}

static void test_stream_filter_fails_at_the_end(void **state)
{
    unsigned char *seg = build_switched(1, SEG_SIZE / 2), *buf = malloc(SEG_SIZE);
    pgd_error err = {0};
    in_stream *in;
    size_t n, total = 0;

    (void)state;
    in = wal_segment_check_in_new(mem_in_new(seg, SEG_SIZE), SEG_NAME, &err);
    assert_non_null(in);
    do {
        assert_true(in_read(in, buf, 4096, &n, &err));
        total += n;
    } while (n > 0);
    assert_int_equal(total, SEG_SIZE);
    in_close(in);

    in = wal_segment_check_in_new(mem_in_new(seg, SEG_SIZE - 8192), SEG_NAME, &err);
    while (in_read(in, buf, SEG_SIZE, &n, &err) && n > 0)
        ;
    assert_non_null(strstr(err.msg, "truncated"));
    in_close(in);
    free(buf);
    free(seg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_segment_with_switch),
        cmocka_unit_test(test_valid_segment_full_to_the_end),
        cmocka_unit_test(test_valid_segment_starting_with_a_continued_record),
        cmocka_unit_test(test_record_header_split_across_pages),
        cmocka_unit_test(test_fed_byte_by_byte_and_in_odd_pieces),
        cmocka_unit_test(test_wrong_magic),
        cmocka_unit_test(test_every_known_magic_passes),
        cmocka_unit_test(test_wrong_timeline),
        cmocka_unit_test(test_wrong_page_address),
        cmocka_unit_test(test_truncated_or_too_long),
        cmocka_unit_test(test_flipped_byte_in_a_record),
        cmocka_unit_test(test_zeroes_where_records_should_be),
        cmocka_unit_test(test_page_that_does_not_continue_the_record),
        cmocka_unit_test(test_overwritten_contrecord_restarts_the_records),
        cmocka_unit_test(test_partial_checks_its_header_and_size_only),
        cmocka_unit_test(test_other_segment_sizes),
        cmocka_unit_test(test_history_files),
        cmocka_unit_test(test_backup_history_files),
        cmocka_unit_test(test_not_a_wal_file_name),
        cmocka_unit_test(test_stream_filter_fails_at_the_end),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
