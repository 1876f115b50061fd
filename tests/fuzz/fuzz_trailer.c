/*
 * fuzz_trailer.c - the CRC trailer of archived WAL (compress/trailer.c,
 * decompress_in_new_trailed) with the frames before it, as wal-fetch and
 * verify read them. The first byte of the input chooses the codec (even:
 * lz4, odd: zstd); the rest is the object.
 */
#include "fuzz_decode.h"

#include "compress/compress.h"

static compress_kind fuzz_trailer_kind;

static in_stream *fuzz_trailer_open(in_stream *src, pgd_error *err)
{
    return decompress_in_new_trailed(fuzz_trailer_kind, src, "WAL file \"fuzz\"", err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    fuzz_trailer_kind = (data[0] & 1) ? COMPRESS_ZSTD : COMPRESS_LZ4;
    fuzz_decode_run(data + 1, size - 1, fuzz_trailer_open);
    return 0;
}
