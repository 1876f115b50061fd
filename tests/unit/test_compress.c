/* test_compress.c - covers src/compress/: round trips, corruption and truncation. */
#include "helpers.h"

#include <lz4frame.h>
#include <zstd.h>

#include "compress/compress.h"
#include "util/crc32c.h"

#define DATA_LEN (3 * 1024 * 1024 + 77)

#define ZSTD_FRAME_DESCRIPTOR_AT 4
#define ZSTD_CHECKSUM_FLAG_BIT   0x04

static unsigned char *make_data(void)
{
    unsigned char *d = malloc(DATA_LEN);
    /* half random, half compressible */
    fill_pattern(d, DATA_LEN / 2, 9);
    for (size_t i = DATA_LEN / 2; i < DATA_LEN; i++)
        d[i] = (unsigned char)(i % 7);
    return d;
}

/*
 * checksummed: the frame carries the codec's content checksum (what WAL objects had before their
 * CRC-32C trailer), else not (partitions, WAL objects now)
 */
static out_stream *compress_into(compress_kind kind, bool checksummed, mem_out *m)
{
    pgd_error err = {0};
    out_stream *out;

    mem_out_init(m);
    if (!checksummed || kind == COMPRESS_NONE)
        out = compress_out_new(kind, COMPRESS_LEVEL_DEFAULT, &m->base, "obj", &err);
    else if (kind == COMPRESS_LZ4)
        out = lz4_out_new(COMPRESS_LEVEL_DEFAULT, true, &m->base, "obj", &err);
    else
        out = zstd_out_new(COMPRESS_LEVEL_DEFAULT, true, &m->base, "obj", &err);
    assert_non_null(out);
    return out;
}

static void compress_all_as(compress_kind kind, bool checksummed, const unsigned char *data,
                            size_t len, mem_out *m)
{
    pgd_error err = {0};
    out_stream *out = compress_into(kind, checksummed, m);

    /* odd write sizes */
    for (size_t off = 0; off < len;) {
        size_t n = off % 3 == 0 ? 100000 : 777;
        if (n > len - off)
            n = len - off;
        assert_true(out_write(out, data + off, n, &err));
        off += n;
    }
    assert_true(out_close(out, &err));
    assert_true(m->closed);
}

static void compress_all(compress_kind kind, const unsigned char *data, size_t len, mem_out *m)
{
    compress_all_as(kind, false, data, len, m);
}

typedef in_stream *(*decompress_fn)(compress_kind kind, in_stream *src, const char *name,
                                    pgd_error *err);

/* Decompress through `open` with a small read buffer; returns false and fills err on failure. */
static bool decompress_with(decompress_fn open, compress_kind kind, const char *src, size_t len,
                            unsigned char *out, size_t *outlen, pgd_error *err)
{
    in_stream *in = open(kind, mem_in_new(src, len), "obj.lz4", err);
    size_t total = 0, n;
    bool ok = true;

    assert_non_null(in);
    for (;;) {
        if (!in_read(in, out + total, 4000, &n, err)) {
            ok = false;
            break;
        }
        if (n == 0)
            break;
        total += n;
        assert_true(total <= DATA_LEN);
    }
    in_close(in);
    *outlen = total;
    return ok;
}

static bool decompress_all(compress_kind kind, const char *src, size_t len, unsigned char *out,
                           size_t *outlen, pgd_error *err)
{
    return decompress_with(decompress_in_new, kind, src, len, out, outlen, err);
}

/* `m` decompresses to exactly data[0..len). */
static void assert_decompresses_to(compress_kind kind, const mem_out *m, const unsigned char *data,
                                   size_t len)
{
    unsigned char *back = malloc(DATA_LEN + 4000);
    pgd_error err = {0};
    size_t n;

    assert_true(decompress_all(kind, m->data, m->len, back, &n, &err));
    assert_int_equal(n, len);
    assert_memory_equal(back, data, len);
    free(back);
}

static void round_trip(compress_kind kind, bool checksummed)
{
    unsigned char *data = make_data();
    mem_out m;

    compress_all_as(kind, checksummed, data, DATA_LEN, &m);
    if (kind != COMPRESS_NONE)
        assert_true(m.len < DATA_LEN);
    assert_decompresses_to(kind, &m, data, DATA_LEN);
    mem_out_free(&m);
    free(data);
}

static void test_round_trips(void **state)
{
    (void)state;
    for (int checksummed = 0; checksummed < 2; checksummed++) {
        round_trip(COMPRESS_NONE, checksummed);
        round_trip(COMPRESS_LZ4, checksummed);
        round_trip(COMPRESS_ZSTD, checksummed);
    }
}

/* Does the frame at the start of `m` declare a content checksum? */
static bool frame_has_checksum(compress_kind kind, const mem_out *m)
{
    if (kind == COMPRESS_LZ4) {
        LZ4F_dctx *d;
        LZ4F_frameInfo_t info;
        size_t consumed = m->len;
        assert_false(LZ4F_isError(LZ4F_createDecompressionContext(&d, LZ4F_VERSION)));
        assert_false(LZ4F_isError(LZ4F_getFrameInfo(d, &info, m->data, &consumed)));
        LZ4F_freeDecompressionContext(d);
        return info.contentChecksumFlag == LZ4F_contentChecksumEnabled;
    }
    /* RFC 8878 3.1.1: the magic number, then the frame header descriptor, whose bit 2 it is */
    assert_true(m->len > ZSTD_FRAME_DESCRIPTOR_AT);
    assert_int_equal(ZSTD_getFrameContentSize(m->data, m->len) != ZSTD_CONTENTSIZE_ERROR, 1);
    return (m->data[ZSTD_FRAME_DESCRIPTOR_AT] & ZSTD_CHECKSUM_FLAG_BIT) != 0;
}

/*
 * Backup partitions carry no frame checksum (our CRC-32C covers the same bytes: it cost half the
 * CPU of an lz4 backup); the codecs still write one when asked (objects of older releases).
 */
static void test_frame_checksum_only_when_asked(void **state)
{
    compress_kind kinds[] = {COMPRESS_LZ4, COMPRESS_ZSTD};
    unsigned char *data = make_data();

    (void)state;
    for (int k = 0; k < 2; k++) {
        mem_out plain, checked;
        compress_all_as(kinds[k], false, data, DATA_LEN, &plain);
        compress_all_as(kinds[k], true, data, DATA_LEN, &checked);
        assert_false(frame_has_checksum(kinds[k], &plain));
        assert_true(frame_has_checksum(kinds[k], &checked));
        /* the checksum is the only difference: 4 bytes at the end of the frame */
        assert_int_equal(checked.len, plain.len + 4);
        mem_out_free(&plain);
        mem_out_free(&checked);
    }
    free(data);
}

/*
 * A backup writes a tar header, then a file's reads of 1 MiB each. Those are compressed as whole,
 * independent lz4 blocks from the caller's buffer: the header bytes held before them go out as a
 * block of their own (a flush), not joined to the read (which made LZ4F copy every byte).
 */
static void test_lz4_whole_pieces_after_a_flush(void **state)
{
    static const size_t writes[] = {512, 1 << 20, 300, 1 << 20, 5};
    unsigned char *data = make_data();
    pgd_error err = {0};
    LZ4F_frameInfo_t info;
    LZ4F_dctx *d;
    size_t off = 0, consumed, header;
    uint32_t first_block;
    mem_out m;
    out_stream *out = compress_into(COMPRESS_LZ4, false, &m);

    (void)state;
    for (size_t i = 0; i < sizeof(writes) / sizeof(writes[0]); i++) {
        assert_true(out_write(out, data + off, writes[i], &err));
        off += writes[i];
    }
    assert_true(out_close(out, &err));
    assert_decompresses_to(COMPRESS_LZ4, &m, data, off);

    assert_false(LZ4F_isError(LZ4F_createDecompressionContext(&d, LZ4F_VERSION)));
    consumed = m.len;
    assert_false(LZ4F_isError(LZ4F_getFrameInfo(d, &info, m.data, &consumed)));
    LZ4F_freeDecompressionContext(d);
    assert_int_equal(info.blockMode, LZ4F_blockIndependent);
    /* the first block holds the 512 bytes alone (its size word: bit 31 says "stored as is") */
    header = LZ4F_headerSize(m.data, m.len);
    assert_false(LZ4F_isError(header));
    memcpy(&first_block, m.data + header, sizeof(first_block));
    assert_true((first_block & 0x7FFFFFFFu) <= 512);
    mem_out_free(&m);
    free(data);
}

/* Writes of every size around the block size, mixed, both codecs' frames: what goes in comes out.
 */
static void test_lz4_mixed_write_sizes_round_trip(void **state)
{
    static const size_t sizes[] = {1, 511, 512, (1 << 20) - 1, 1 << 20, (1 << 20) + 1, 7, 2 << 20};
    unsigned char *data = make_data();
    (void)state;
    for (int checksummed = 0; checksummed < 2; checksummed++) {
        pgd_error err = {0};
        size_t off = 0;
        mem_out m;
        out_stream *out = compress_into(COMPRESS_LZ4, checksummed, &m);

        for (size_t i = 0; off < DATA_LEN; i = (i * 5 + 3) % (sizeof(sizes) / sizeof(sizes[0]))) {
            size_t len = sizes[i] < DATA_LEN - off ? sizes[i] : DATA_LEN - off;
            assert_true(out_write(out, data + off, len, &err));
            off += len;
        }
        assert_true(out_close(out, &err));
        assert_decompresses_to(COMPRESS_LZ4, &m, data, DATA_LEN);
        mem_out_free(&m);
    }
    free(data);
}

static void test_empty_stream_round_trips(void **state)
{
    compress_kind kinds[] = {COMPRESS_LZ4, COMPRESS_ZSTD};
    (void)state;
    for (int k = 0; k < 2; k++) {
        pgd_error err = {0};
        unsigned char back[16];
        mem_out m;
        size_t n;
        compress_all(kinds[k], (const unsigned char *)"", 0, &m);
        assert_true(m.len > 0); /* a frame header at least */
        assert_true(decompress_all(kinds[k], m.data, m.len, back, &n, &err));
        assert_int_equal(n, 0);
        mem_out_free(&m);
    }
}

/*
 * A flipped bit inside a frame without checksum may decompress to wrong bytes without an error
 * (our CRC-32C catches that: the restore tests); with the frame checksum it is an error. A
 * truncated frame is an error either way.
 */
static void corrupt_and_truncate(compress_kind kind, bool checksummed)
{
    unsigned char *data = make_data(), *back = malloc(DATA_LEN + 4000);
    pgd_error err = {0};
    mem_out m;
    size_t n;

    compress_all_as(kind, checksummed, data, DATA_LEN, &m);
    if (checksummed) {
        m.data[m.len / 2] ^= 0x01;
        assert_false(decompress_all(kind, m.data, m.len, back, &n, &err));
        assert_non_null(strstr(err.msg, "obj.lz4"));
        m.data[m.len / 2] ^= 0x01;
        err_clear(&err);
        /* the last bytes are the checksum itself */
        m.data[m.len - 1] ^= 0x01;
        assert_false(decompress_all(kind, m.data, m.len, back, &n, &err));
        assert_non_null(strstr(err.msg, "obj.lz4"));
        m.data[m.len - 1] ^= 0x01;
        err_clear(&err);
    }
    for (size_t cut = 1; cut <= 10; cut += 3) {
        assert_false(decompress_all(kind, m.data, m.len - cut, back, &n, &err));
        assert_non_null(strstr(err.msg, "obj.lz4"));
        err_clear(&err);
    }
    assert_false(decompress_all(kind, m.data, m.len - 10, back, &n, &err));
    assert_non_null(strstr(err.msg, "obj.lz4"));
    err_clear(&err);
    assert_false(decompress_all(kind, m.data, 0, back, &n, &err));
    mem_out_free(&m);
    free(data);
    free(back);
}

static void test_corruption_and_truncation_are_detected(void **state)
{
    (void)state;
    for (int checksummed = 0; checksummed < 2; checksummed++) {
        corrupt_and_truncate(COMPRESS_LZ4, checksummed);
        corrupt_and_truncate(COMPRESS_ZSTD, checksummed);
    }
}

/* ---- objects with the CRC-32C trailer (archived WAL) ---- */

#define TRAILER_LEN 24

static void compress_trailed(compress_kind kind, const unsigned char *data, size_t len, mem_out *m)
{
    pgd_error err = {0};
    out_stream *out;

    mem_out_init(m);
    out = compress_out_new_trailed(kind, COMPRESS_LEVEL_DEFAULT, &m->base, "obj", &err);
    assert_non_null(out);
    for (size_t off = 0; off < len;) {
        size_t n = len - off < 333333 ? len - off : 333333;
        assert_true(out_write(out, data + off, n, &err));
        off += n;
    }
    assert_true(out_close(out, &err));
    assert_true(m->closed);
}

/* Read `src` through the trailed decoder; false with err on failure. */
static bool decompress_trailed(compress_kind kind, const char *src, size_t len, unsigned char *out,
                               size_t *outlen, pgd_error *err)
{
    return decompress_with(decompress_in_new_trailed, kind, src, len, out, outlen, err);
}

/* decompress_trailed fails on `src` with an error naming the object and saying `what`. */
static void assert_trailed_fails(compress_kind kind, const char *src, size_t len, const char *what)
{
    unsigned char *back = malloc(DATA_LEN + 5000);
    pgd_error err = {0};
    size_t n;

    assert_false(decompress_trailed(kind, src, len, back, &n, &err));
    assert_non_null(strstr(err.msg, "obj.lz4"));
    if (strstr(err.msg, what) == NULL)
        fail_msg("\"%s\" does not say \"%s\"", err.msg, what);
    free(back);
}

/*
 * The trailer is the frame without checksum plus 24 bytes: a skippable frame that the plain
 * decoders (as lz4 -d and zstd -d) pass over, and that the trailed decoder checks.
 */
static void test_trailer_round_trips(void **state)
{
    compress_kind kinds[] = {COMPRESS_LZ4, COMPRESS_ZSTD};
    unsigned char *data = make_data(), *back = malloc(DATA_LEN + 5000);

    (void)state;
    for (int k = 0; k < 2; k++) {
        mem_out plain, trailed, empty;
        pgd_error err = {0};
        size_t n;

        compress_all(kinds[k], data, DATA_LEN, &plain);
        compress_trailed(kinds[k], data, DATA_LEN, &trailed);
        assert_false(frame_has_checksum(kinds[k], &trailed));
        assert_int_equal(trailed.len, plain.len + TRAILER_LEN);
        assert_memory_equal(trailed.data, plain.data, plain.len);
        /* magic 0x184D2A5D little-endian, a body of 16 bytes, "PGDC", CRC-32C, size */
        assert_memory_equal(trailed.data + plain.len, "\x5D\x2A\x4D\x18\x10\0\0\0PGDC", 12);
        assert_true(decompress_trailed(kinds[k], trailed.data, trailed.len, back, &n, &err));
        assert_int_equal(n, DATA_LEN);
        assert_memory_equal(back, data, DATA_LEN);
        assert_decompresses_to(kinds[k], &trailed, data, DATA_LEN);

        compress_trailed(kinds[k], data, 0, &empty);
        assert_true(decompress_trailed(kinds[k], empty.data, empty.len, back, &n, &err));
        assert_int_equal(n, 0);
        mem_out_free(&plain);
        mem_out_free(&trailed);
        mem_out_free(&empty);
    }
    /* no codec, no trailer: the object is the file */
    {
        mem_out none;
        compress_trailed(COMPRESS_NONE, data, DATA_LEN, &none);
        assert_int_equal(none.len, DATA_LEN);
        assert_memory_equal(none.data, data, DATA_LEN);
        mem_out_free(&none);
    }
    free(back);
    free(data);
}

/*
 * Without a frame checksum the codec decodes a flipped literal byte to wrong content without an
 * error: the trailer's CRC-32C is what says so. A wrong size, a trailer cut or missing, bytes
 * after it: each is an error naming the object.
 */
static void test_trailer_catches_damage(void **state)
{
    compress_kind kinds[] = {COMPRESS_LZ4, COMPRESS_ZSTD};
    unsigned char *data = make_data();

    (void)state;
    for (int k = 0; k < 2; k++) {
        mem_out m;
        char *longer;

        compress_trailed(kinds[k], data, DATA_LEN, &m);
        /* the first half of the data is random: stored as literals, near the frame's start */
        m.data[m.len / 8] ^= 0x20;
        assert_trailed_fails(kinds[k], m.data, m.len, "CRC-32C of its content");
        m.data[m.len / 8] ^= 0x20;
        m.data[m.len - 9] ^= 0x01; /* the CRC's last byte */
        assert_trailed_fails(kinds[k], m.data, m.len, "its trailer says");
        m.data[m.len - 9] ^= 0x01;
        m.data[m.len - 8] ^= 0x01; /* the size */
        assert_trailed_fails(kinds[k], m.data, m.len, "bytes of content, its trailer says");
        m.data[m.len - 8] ^= 0x01;
        /* cut where the codec's frame ends: whole for the codec, not for us */
        assert_trailed_fails(kinds[k], m.data, m.len - TRAILER_LEN, "cut short");
        for (size_t cut = 1; cut < TRAILER_LEN; cut += 5)
            assert_trailed_fails(kinds[k], m.data, m.len - cut, "");
        longer = malloc(m.len + 3);
        memcpy(longer, m.data, m.len);
        memcpy(longer + m.len, "abc", 3);
        assert_trailed_fails(kinds[k], longer, m.len + 3, "");
        free(longer);
        mem_out_free(&m);
    }
    free(data);
}

/*
 * Objects written before the trailer carry the codec's frame checksum: read as they are, and a
 * flipped byte is still an error (the codec's).
 */
static void test_trailer_reads_older_objects(void **state)
{
    compress_kind kinds[] = {COMPRESS_LZ4, COMPRESS_ZSTD};
    unsigned char *data = make_data(), *back = malloc(DATA_LEN + 5000);

    (void)state;
    for (int k = 0; k < 2; k++) {
        pgd_error err = {0};
        mem_out m;
        size_t n;

        compress_all_as(kinds[k], true, data, DATA_LEN, &m);
        assert_true(decompress_trailed(kinds[k], m.data, m.len, back, &n, &err));
        assert_int_equal(n, DATA_LEN);
        assert_memory_equal(back, data, DATA_LEN);
        m.data[m.len / 8] ^= 0x20;
        assert_trailed_fails(kinds[k], m.data, m.len, "");
        mem_out_free(&m);
    }
    free(back);
    free(data);
}

/* Appends b to a (both from compress_all_as); b is freed. */
static void mem_out_append(mem_out *a, mem_out *b)
{
    a->data = realloc(a->data, a->len + b->len);
    assert_non_null(a->data);
    memcpy(a->data + a->len, b->data, b->len);
    a->len += b->len;
    a->cap = a->len;
    mem_out_free(b);
}

/*
 * Without the trailer only one checksummed frame is taken: the reader sees the first frame's flags
 * alone, so a second frame (without a checksum, or a skippable one) could carry unchecked bytes.
 */
static void test_trailer_wants_one_frame_without_it(void **state)
{
    compress_kind kinds[] = {COMPRESS_LZ4, COMPRESS_ZSTD};
    /* a skippable frame (magic 0x184D2A50, 4 bytes of payload) both codecs pass over */
    static const unsigned char skippable[] = {0x50, 0x2A, 0x4D, 0x18, 4,   0,
                                              0,    0,    'j',  'u',  'n', 'k'};
    unsigned char *data = make_data();

    (void)state;
    for (int k = 0; k < 2; k++) {
        for (int second = 0; second < 3; second++) {
            pgd_error err = {0};
            mem_out m, more;

            compress_all_as(kinds[k], true, data, 1000, &m);
            if (second == 2) {
                mem_out_init(&more);
                assert_true(out_write(&more.base, skippable, sizeof(skippable), &err));
            } else {
                /* 0: a frame without the checksum, 1: one with it */
                compress_all_as(kinds[k], second == 1, data + 1000, 5000, &more);
            }
            mem_out_append(&m, &more);
            assert_trailed_fails(kinds[k], m.data, m.len, "holds more than one frame");
            mem_out_free(&m);
        }
        {
            pgd_error err = {0};
            mem_out m, head;

            mem_out_init(&head);
            assert_true(out_write(&head.base, skippable, sizeof(skippable), &err));
            compress_all_as(kinds[k], true, data, 1000, &m);
            mem_out_append(&head, &m);
            assert_trailed_fails(kinds[k], head.data, head.len, "does not begin with the");
            mem_out_free(&head);
        }
    }
    free(data);
}

/*
 * The trailed decoder's sum of its content: there once the end checked out (trailer, or one
 * checksummed frame), for a caller that records it instead of computing it again; not before the
 * end, not after a failed check, not for a stream of another kind.
 */
static void test_trailed_sum(void **state)
{
    compress_kind kinds[] = {COMPRESS_LZ4, COMPRESS_ZSTD};
    unsigned char *data = make_data(), *buf = malloc(DATA_LEN + 5000);
    uint32_t want_crc = crc32c(data, DATA_LEN), crc;
    uint64_t size;

    (void)state;
    for (int k = 0; k < 2; k++) {
        for (int legacy = 0; legacy < 3; legacy++) {
            pgd_error err = {0};
            mem_out m;
            in_stream *in;
            size_t n, total = 0;
            bool ok;

            if (legacy == 1)
                compress_all_as(kinds[k], true, data, DATA_LEN, &m); /* before the trailer */
            else
                compress_trailed(kinds[k], data, DATA_LEN, &m);
            if (legacy == 2)
                m.data[m.len - 9] ^= 0x01; /* the trailer's CRC */
            in = decompress_in_new_trailed(kinds[k], mem_in_new(m.data, m.len), "obj", &err);
            assert_non_null(in);
            assert_true(decompress_in_is_trailed(in));
            while ((ok = in_read(in, buf + total, 100000, &n, &err)) && n > 0) {
                total += n;
                assert_false(decompress_in_trailed_sum(in, &crc, &size));
            }
            assert_int_equal(total, DATA_LEN);
            assert_int_equal(ok, legacy != 2);
            assert_int_equal(decompress_in_trailed_sum(in, &crc, &size), legacy != 2);
            if (legacy != 2) {
                assert_int_equal(crc, want_crc);
                assert_int_equal(size, DATA_LEN);
            }
            in_close(in);
            mem_out_free(&m);
        }
    }
    {
        pgd_error err = {0};
        in_stream *plain =
            decompress_in_new_trailed(COMPRESS_NONE, mem_in_new(data, 10), "obj", &err);
        assert_false(decompress_in_is_trailed(plain));
        assert_false(decompress_in_trailed_sum(plain, &crc, &size));
        in_close(plain);
    }
    free(buf);
    free(data);
}

static void test_names_suffixes_levels(void **state)
{
    compress_kind k;
    pgd_error err = {0};

    (void)state;
    assert_true(compress_parse("zstd", &k));
    assert_int_equal(k, COMPRESS_ZSTD);
    assert_false(compress_parse("gzip", &k));
    assert_int_equal(compress_from_suffix("part_0001.tar.lz4"), COMPRESS_LZ4);
    assert_int_equal(compress_from_suffix("part_0001.tar.zst"), COMPRESS_ZSTD);
    assert_int_equal(compress_from_suffix("part_0001.tar"), COMPRESS_NONE);
    assert_true(compress_level_valid(COMPRESS_ZSTD, 19, &err));
    assert_false(compress_level_valid(COMPRESS_LZ4, 13, &err));
    assert_non_null(strstr(err.msg, "--compression-level"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trips),
        cmocka_unit_test(test_empty_stream_round_trips),
        cmocka_unit_test(test_lz4_whole_pieces_after_a_flush),
        cmocka_unit_test(test_lz4_mixed_write_sizes_round_trip),
        cmocka_unit_test(test_frame_checksum_only_when_asked),
        cmocka_unit_test(test_corruption_and_truncation_are_detected),
        cmocka_unit_test(test_trailer_round_trips),
        cmocka_unit_test(test_trailer_catches_damage),
        cmocka_unit_test(test_trailer_reads_older_objects),
        cmocka_unit_test(test_trailer_wants_one_frame_without_it),
        cmocka_unit_test(test_trailed_sum),
        cmocka_unit_test(test_names_suffixes_levels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
