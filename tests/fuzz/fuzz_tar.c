/*
 * fuzz_tar.c - the pax tar reader (repo/tar.c) that restore and verify run
 * over every partition of a backup, fed through a memory stream: each entry
 * is read to its end, in pieces of a size the input chooses.
 *
 * With FUZZ_TAR_LIST=FILE set, each input's verdict and entries (type in
 * hex, size, path and link escaped) are written to FILE: tar_diff.py compares them with
 * GNU tar's listing of the same archive.
 */
#include "fuzz_common.h"

#include "io/stream.h"
#include "repo/tar.h"

/* A name as GNU tar's --quoting-style=escape prints one: octal escapes for what is not printable.
 */
static void fuzz_tar_print(FILE *f, const char *name)
{
    for (const unsigned char *p = (const unsigned char *)name; *p != '\0'; p++)
        if (*p < 0x20 || *p >= 0x7f || *p == '\\')
            fprintf(f, "\\%03o", *p);
        else
            fputc(*p, f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool listed;
    const char *list_path = getenv("FUZZ_TAR_LIST");
    /* emptied by the first input of the process: the listing is this run's */
    FILE *list = list_path != NULL ? fopen(list_path, listed ? "a" : "w") : NULL;
    pgd_error err = {0};
    in_stream *in = mem_in_new(data, size);
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
            if (list != NULL) {
                fprintf(list, "%02x %llu ", (unsigned char)e.type, (unsigned long long)e.size);
                fuzz_tar_print(list, e.path);
                if (e.linkpath != NULL) {
                    fputs(" -> ", list);
                    fuzz_tar_print(list, e.linkpath);
                }
                fputc('\n', list);
            }
        }
        tar_entry_free(&e);
    }
    if (!ok)
        fuzz_check_refusal(&err);
    if (list != NULL) {
        fprintf(list, "%s%s\n", ok ? "ok" : "refused: ", ok ? "" : err.msg);
        fclose(list);
        listed = true;
    }
    in_close(in);
    return 0;
}
