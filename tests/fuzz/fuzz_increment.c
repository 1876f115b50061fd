/*
 * fuzz_increment.c - the increment format (repo/increment.c), decoded by
 * restore and verify from a delta backup's tar entries.
 *
 * The first byte of the input chooses: bit 0, whether the target writes
 * the right header and pages CRC-32C into the rest before decoding (so the
 * fuzzer gets past the checksums to the logic behind them); bit 1, whether
 * the reader checks the increment against what a manifest says of it (the
 * values of the header themselves, as a consistent manifest would); bits 2
 * to 7, the size of the pieces it is fed in.
 */
#include "fuzz_common.h"

#include "repo/increment.h"
#include "util/crc32c.h"

static uint32_t fuzz_increment_le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t fuzz_increment_le64(const unsigned char *p)
{
    return (uint64_t)fuzz_increment_le32(p) | (uint64_t)fuzz_increment_le32(p + 4) << 32;
}

static void fuzz_increment_put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* Write the two CRCs where the header's block count puts them, when they fit. */
static void fuzz_increment_fix_crcs(unsigned char *buf, size_t len)
{
    uint64_t hdr, blocks;

    if (len < INCREMENT_FIXED_SIZE)
        return;
    blocks = fuzz_increment_le32(buf + 12);
    hdr = increment_header_size((uint32_t)blocks);
    if (hdr > len)
        return;
    fuzz_increment_put32(buf + hdr - INCREMENT_CRC_SIZE, crc32c(buf, hdr - INCREMENT_CRC_SIZE));
    if (len >= hdr + INCREMENT_CRC_SIZE)
        increment_encode_trailer(buf + len - INCREMENT_CRC_SIZE,
                                 crc32c(buf + hdr, len - hdr - INCREMENT_CRC_SIZE));
}

static bool fuzz_increment_page(void *arg, uint32_t block, const unsigned char *page,
                                pgd_error *err)
{
    uint32_t *last = arg;

    (void)page;
    (void)err;
    /* pages come in strictly ascending block order */
    fuzz_assert(*last == UINT32_MAX || block > *last);
    *last = block;
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pgd_error err = {0};
    increment_reader r;
    unsigned char *buf;
    size_t len, piece, off = 0;
    uint32_t last = UINT32_MAX;
    bool check, ok = true;

    if (size < 1)
        return 0;
    len = size - 1;
    buf = xmalloc(len + 1);
    memcpy(buf, data + 1, len);
    if (data[0] & 1)
        fuzz_increment_fix_crcs(buf, len);
    check = (data[0] & 2) != 0 && len >= INCREMENT_FIXED_SIZE;
    piece = (size_t)(data[0] >> 2) * 97 + 1;
    increment_reader_init(&r, "increment \"fuzz\"", check,
                          check ? increment_size(fuzz_increment_le32(buf + 12)) : 0,
                          check ? fuzz_increment_le64(buf + 16) : 0,
                          check ? fuzz_increment_le32(buf + 12) : 0);
    while (ok && off < len) {
        size_t n = len - off < piece ? len - off : piece;

        ok = increment_reader_feed(&r, buf + off, n, fuzz_increment_page, &last, &err);
        off += n;
    }
    if (ok)
        ok = increment_reader_finish(&r, &err);
    if (!ok)
        fuzz_check_refusal(&err);
    increment_reader_free(&r);
    free(buf);
    return 0;
}
