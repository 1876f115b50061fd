/*
 * xmalloc.c - see xmalloc.h.
 */
#define _GNU_SOURCE
#include "util/xmalloc.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/log.h"

static int xmalloc_exit_status = 1;

void xmalloc_set_exit_status(int status)
{
    xmalloc_exit_status = status;
}

/*
 * log_error formats on the stack (stderr is unbuffered) and so needs no
 * memory; _exit rather than exit because other threads may still be using
 * what exit handlers (OpenSSL's, libcurl's) would tear down.
 */
void xmalloc_fail(size_t size)
{
    log_error("out of memory (could not allocate %zu bytes)", size);
    fflush(stderr);
    _exit(xmalloc_exit_status);
}

void *xmalloc(size_t size)
{
    void *p = malloc(size > 0 ? size : 1);

    if (p == NULL)
        xmalloc_fail(size);
    return p;
}

void *xcalloc(size_t n, size_t size)
{
    size_t total;
    void *p;

    if (__builtin_mul_overflow(n, size, &total))
        xmalloc_fail(SIZE_MAX);
    p = calloc(total > 0 ? n : 1, total > 0 ? size : 1);
    if (p == NULL)
        xmalloc_fail(total);
    return p;
}

/* realloc(p, 0) may free p and return NULL: a size of 0 keeps one byte instead. */
void *xrealloc(void *p, size_t size)
{
    void *grown = realloc(p, size > 0 ? size : 1);

    if (grown == NULL)
        xmalloc_fail(size);
    return grown;
}

char *xstrdup(const char *s)
{
    size_t len = strlen(s) + 1;

    return memcpy(xmalloc(len), s, len);
}

char *xstrndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *copy = xmalloc(len + 1);

    memcpy(copy, s, len);
    copy[len] = '\0';
    return copy;
}

char *xvasprintf(const char *fmt, va_list ap)
{
    va_list again;
    char *text;
    int n;

    va_copy(again, ap);
    n = vsnprintf(NULL, 0, fmt, again);
    va_end(again);
    if (n < 0) {
        /* only a wide-character conversion can fail, and the project has none */
        log_error("could not format text \"%s\"", fmt);
        fflush(stderr);
        _exit(xmalloc_exit_status);
    }
    text = xmalloc((size_t)n + 1);
    vsnprintf(text, (size_t)n + 1, fmt, ap);
    return text;
}

char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    char *text;

    va_start(ap, fmt);
    text = xvasprintf(fmt, ap);
    va_end(ap);
    return text;
}
