/*
 * fuzz_tar.c - the pax tar reader (repo/tar.c) that restore and verify run
 * over every partition of a backup, fed through a memory stream: each entry
 * is read to its end, in pieces of a size the input chooses.
 *
 * With FUZZ_TAR_LIST=FILE set, each input's verdict and entries (type,
 * size, path, link) are appended to FILE: tar_diff.py compares them with
 * GNU tar's listing of the same archive.
 */
#include "fuzz_common.h"

#include "io/stream.h"
#include "repo/tar.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *list_path = getenv("FUZZ_TAR_LIST");
    FILE *list = list_path != NULL ? fopen(list_path, "a") : NULL;
    pgd_error err = {0};
    in_stream *in = mem_in_new(data, size, &err);
    tar_reader r;
    bool end = false, ok = true;
    /* the piece size varies with the input, so the reader meets every split */
    size_t piece = size > 0 ? (size_t)data[0] % 700 + 1 : 1;
    unsigned char buf[701];

    fuzz_assert(in != NULL);
    tar_reader_init(&r, in, "partition \"fuzz\"");
    while (ok) {
        tar_entry e = {0};
        uint64_t got = 0;
        size_t n;

        ok = tar_reader_next(&r, &e, &end, &err);
        if (!ok || end)
            break;
        fuzz_assert(e.path != NULL);
        do {
            ok = tar_reader_data(&r, buf, piece, &n, &err);
            got += n;
        } while (ok && n > 0);
        if (ok) {
            fuzz_assert(got == e.size || e.type == TAR_DIR || e.type == TAR_SYMLINK);
            if (list != NULL)
                fprintf(list, "%c %llu %s%s%s\n", e.type, (unsigned long long)e.size, e.path,
                        e.linkpath != NULL ? " -> " : "", e.linkpath != NULL ? e.linkpath : "");
        }
        tar_entry_free(&e);
    }
    if (!ok)
        fuzz_check_refusal(&err);
    if (list != NULL) {
        fprintf(list, "%s\n", ok ? "ok" : "refused");
        fclose(list);
    }
    in_close(in);
    return 0;
}
