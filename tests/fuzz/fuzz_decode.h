/*
 * fuzz_decode.h - the body of the targets that decode compressed objects
 * (fuzz_lz4.c, fuzz_zstd.c, fuzz_trailer.c): the fuzzer's bytes as an
 * object of the repository, read to its end through the decoder the
 * target opens, in pieces of a size the input chooses.
 *
 * With FUZZ_DECODE_OUT=FILE set, the verdict ("ok" or "refused") is
 * written to FILE and the decoded bytes to FILE.data: frame_diff.py
 * compares them with what the lz4 and zstd tools make of the same frames.
 */
#ifndef PGD_FUZZ_DECODE_H
#define PGD_FUZZ_DECODE_H

#include "fuzz_common.h"

#include "io/stream.h"

/* Decoding stops (not an error) after this much output: a small frame may expand a lot. */
#define FUZZ_DECODE_MAX_OUTPUT (64u << 20)

typedef in_stream *(*fuzz_decode_open_fn)(in_stream *src, pgd_error *err);

static inline void fuzz_decode_run(const uint8_t *data, size_t size, fuzz_decode_open_fn open_fn)
{
    const char *out_path = getenv("FUZZ_DECODE_OUT");
    FILE *out = NULL;
    pgd_error err = {0};
    in_stream *src = mem_in_new(data, size);
    in_stream *in;
    unsigned char buf[4096];
    size_t piece = size > 0 ? (size_t)data[size - 1] % sizeof(buf) + 1 : sizeof(buf);
    uint64_t total = 0;
    size_t n;
    bool ok = true;

    fuzz_assert(src != NULL);
    in = open_fn(src, &err);
    if (in == NULL) {
        fuzz_check_refusal(&err);
        ok = false;
    }
    if (out_path != NULL) {
        char *data_path = xasprintf("%s.data", out_path);

        out = fopen(data_path, "w");
        free(data_path);
    }
    while (ok && total < FUZZ_DECODE_MAX_OUTPUT) {
        ok = in_read(in, buf, piece, &n, &err);
        if (!ok) {
            fuzz_check_refusal(&err);
            break;
        }
        if (n == 0)
            break;
        fuzz_assert(n <= piece);
        total += n;
        if (out != NULL)
            fwrite(buf, 1, n, out);
    }
    if (out != NULL) {
        FILE *verdict = fopen(out_path, "w");

        fclose(out);
        if (verdict != NULL) {
            fprintf(verdict, "%s\n", ok ? "ok" : "refused");
            fclose(verdict);
        }
    }
    if (in != NULL)
        in_close(in);
}

#endif
