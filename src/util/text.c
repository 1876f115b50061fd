/*
 * text.c - bounded string formatting and the growable text buffer.
 */
#include "util/text.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/xmalloc.h"

#define TEXT_BUF_MIN 256

bool str_format(char *out, size_t len, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(out, len, fmt, ap);
    va_end(ap);
    return n >= 0 && (size_t)n < len;
}

/* Room for `more` bytes and the NUL; false when an earlier format failed. */
static bool text_buf_reserve(text_buf *b, size_t more)
{
    size_t cap;

    if (b->failed)
        return false;
    if (b->len + more + 1 <= b->cap)
        return true;
    cap = (b->len + more + 1) * 2;
    if (cap < TEXT_BUF_MIN)
        cap = TEXT_BUF_MIN;
    b->data = xrealloc(b->data, cap);
    b->cap = cap;
    return true;
}

void text_buf_append(text_buf *b, const char *s)
{
    size_t n = strlen(s);

    if (!text_buf_reserve(b, n))
        return;
    memcpy(b->data + b->len, s, n + 1);
    b->len += n;
}

void text_buf_printf(text_buf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = true;
        return;
    }
    if (!text_buf_reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

char *text_buf_take(text_buf *b)
{
    char *text;

    if (b->data == NULL && text_buf_reserve(b, 0))
        b->data[0] = '\0';
    text = b->failed ? NULL : b->data;
    if (text == NULL)
        free(b->data);
    memset(b, 0, sizeof(*b));
    return text;
}

void text_buf_free(text_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof(*b));
}
