/*
 * fuzz_zstd.c - zstd frames (compress/zstd.c, zstd_in_new), as restore and
 * wal-fetch decode them from a repository: backup partitions (frames
 * without the codec's checksum) and archived WAL. The differential check
 * frame_diff.py runs this target's corpus through the zstd tool too.
 */
#include "fuzz_decode.h"

#include "compress/compress.h"

static in_stream *fuzz_zstd_open(in_stream *src, pgd_error *err)
{
    return zstd_in_new(src, "object \"fuzz.zst\"", err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_decode_run(data, size, fuzz_zstd_open);
    return 0;
}
