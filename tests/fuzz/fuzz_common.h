/*
 * fuzz_common.h - what every libFuzzer target of tests/fuzz/ shares: the
 * process set up as main.c sets it (jansson allocating through xmalloc,
 * warnings quiet), the fuzzer's bytes as a NUL-terminated string, and the
 * check that an error a parser returned says something.
 */
#ifndef PGD_FUZZ_COMMON_H
#define PGD_FUZZ_COMMON_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/log.h"
#include "util/xmalloc.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    json_set_alloc_funcs(xmalloc, free);
    log_set_level(LOG_ERROR);
    return 0;
}

/* data[size] with a NUL after it (the parsers of text take it so); free() it. */
static inline char *fuzz_text(const uint8_t *data, size_t size)
{
    char *s = xmalloc(size + 1);

    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* A parser that refused its input must say why: an empty message is a defect. */
static inline void fuzz_check_refusal(const pgd_error *err)
{
    if (!err->set || err->msg[0] == '\0') {
        fprintf(stderr, "parser failed without a message\n");
        abort();
    }
}

/* An invariant of the parser's answer does not hold. */
#define fuzz_assert(cond)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond);                             \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static char fuzz_tmpdir_path[64];

static void fuzz_tmpdir_remove(void)
{
    char cmd[sizeof(fuzz_tmpdir_path) + 16];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fuzz_tmpdir_path);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", fuzz_tmpdir_path);
}

/*
 * A temporary directory under /tmp named after TEMPLATE (ending in XXXXXX),
 * made once per process and removed when the fuzzer exits.
 */
static inline const char *fuzz_tmpdir(const char *template)
{
    if (fuzz_tmpdir_path[0] == '\0') {
        snprintf(fuzz_tmpdir_path, sizeof(fuzz_tmpdir_path), "%s", template);
        fuzz_assert(mkdtemp(fuzz_tmpdir_path) != NULL);
        fuzz_assert(atexit(fuzz_tmpdir_remove) == 0);
    }
    return fuzz_tmpdir_path;
}

#endif
