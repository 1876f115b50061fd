/*
 * fuzz_wal_segment.c - WAL segments and .partial files (pg/wal_segment.c):
 * page headers, record lengths, CRCs and links, as wal-push checks a file
 * before storing it and wal-fetch before handing one to a recovering
 * server. The checker is fed in pieces, as the streams feed it.
 *
 * The first byte of the input chooses: bit 0, a .partial file; bit 1,
 * the file's name taken from its first page header (timeline, page
 * address, segment size) so the name check passes and the fuzzer gets to
 * the records, else "000000010000000000000001"; bits 2 to 7, the piece
 * size. The rest is the file.
 */
#include "fuzz_common.h"

#include "pg/wal_name.h"
#include "pg/wal_segment.h"

static uint64_t fuzz_wal_segment_le(const uint8_t *p, int bytes)
{
    uint64_t v = 0;

    for (int i = bytes - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pgd_error err = {0};
    char name[WAL_FILE_NAME_LEN + sizeof(".partial")] = "000000010000000000000001";
    const uint8_t *file;
    size_t len, piece, off = 0;
    wal_segment_check *c;
    bool ok = true;

    if (size < 1)
        return 0;
    file = data + 1;
    len = size - 1;
    if ((data[0] & 2) && len >= WAL_PAGE_LONG_HEADER) {
        uint64_t seg_size = fuzz_wal_segment_le(file + WAL_PAGE_SEG_SIZE_OFF, 4);
        uint32_t tli = (uint32_t)fuzz_wal_segment_le(file + 4, 4);

        if (wal_name_seg_size_valid(seg_size) && tli != 0)
            wal_name_of_lsn(tli, fuzz_wal_segment_le(file + 8, 8), seg_size, false, name);
    }
    if (data[0] & 1)
        strcat(name, ".partial");
    piece = (size_t)(data[0] >> 2) * 131 + 1;
    c = wal_segment_check_new(name, &err);
    fuzz_assert(c != NULL);
    while (ok && off < len) {
        size_t n = len - off < piece ? len - off : piece;

        ok = wal_segment_check_update(c, file + off, n, &err);
        off += n;
    }
    if (ok)
        ok = wal_segment_check_finish(c, &err);
    if (!ok)
        fuzz_check_refusal(&err);
    wal_segment_check_free(c);
    /* the same verdict on the whole file at once */
    pgd_error err2 = {0};
    fuzz_assert(wal_segment_check_buffer(name, file, len, &err2) == ok);
    return 0;
}
