/*
 * helpers.h - small fixtures shared by the unit tests: a growable in-memory
 * out_stream and a private temporary directory.
 */
#ifndef PGD_TEST_HELPERS_H
#define PGD_TEST_HELPERS_H

#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "io/stream.h"
#include "storage/storage.h"

typedef struct mem_out {
    out_stream base;
    char *data;
    size_t len, cap;
    bool closed, aborted;
} mem_out;

static bool mem_out_write(out_stream *s, const void *buf, size_t len, pgd_error *err)
{
    mem_out *m = (mem_out *)s;

    (void)err;
    if (m->len + len > m->cap) {
        m->cap = (m->len + len) * 2 + 64;
        m->data = realloc(m->data, m->cap);
    }
    memcpy(m->data + m->len, buf, len);
    m->len += len;
    return true;
}

/* Closing does not free: the test reads the data afterwards, then calls mem_out_free. */
static bool mem_out_close(out_stream *s, pgd_error *err)
{
    (void)err;
    ((mem_out *)s)->closed = true;
    return true;
}

static void mem_out_abort(out_stream *s)
{
    ((mem_out *)s)->aborted = true;
}

static const out_stream_ops mem_out_ops = {mem_out_write, mem_out_close, mem_out_abort};

static inline void mem_out_init(mem_out *m)
{
    memset(m, 0, sizeof(*m));
    m->base.ops = &mem_out_ops;
}

static inline void mem_out_free(mem_out *m)
{
    free(m->data);
    m->data = NULL;
}

/* mkdtemp under /tmp (ext4 here: O_DIRECT works); removed by rm_rf. */
static inline char *test_tmpdir(void)
{
    char *dir = strdup("/tmp/pgd-unit-XXXXXX");
    if (dir == NULL || mkdtemp(dir) == NULL)
        abort(); /* (not assert_non_null: gcc -O1 and up must see that dir is not NULL) */
    return dir;
}

static inline void rm_rf(char *dir)
{
    char cmd[4200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(dir);
}

static inline void write_test_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    if (len > 0)
        assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

/* Deterministic, poorly compressible bytes. */
static inline void fill_pattern(unsigned char *buf, size_t len, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        buf[i] = (unsigned char)x;
    }
}

/* A local repository at DIR/repo (created on first write). */
static inline storage *repo_in(const char *dir)
{
    char path[4200];
    pgd_error err = {0};
    storage *s;

    snprintf(path, sizeof(path), "%s/repo", dir);
    s = storage_open(path, NULL, &err);
    assert_non_null(s);
    return s;
}

/*
 * child_exits_zero: runs fn(arg) in a child process whose stderr is discarded, and says
 * whether the child exited 0. Tests of what ASan stops (a bad read fails in the child)
 * pair it with the same call done right, which must exit 0.
 */
static inline bool child_exits_zero(void (*fn)(size_t), size_t arg)
{
    int status, devnull;
    pid_t pid = fork();

    assert_true(pid >= 0);
    if (pid == 0) {
        devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0)
            dup2(devnull, STDERR_FILENO);
        fn(arg);
        _exit(0);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

#endif
