/*
 * text.h - text in memory: bounded formatting that reports truncation
 * instead of silently cutting (and keeps -Wformat-truncation quiet where a
 * cut is handled), and a growable buffer for documents built piece by
 * piece (manifests).
 */
#ifndef PGD_TEXT_H
#define PGD_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* snprintf into out; false when the result did not fit (out holds the cut text). */
bool str_format(char *out, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/*
 * A growable, NUL-terminated text (its memory from util/xmalloc.h). Appends
 * after a failed format (vsnprintf's error) or one a caller refused do
 * nothing and leave `failed` set, so a document is built without checking
 * each step and checked once at the end (text_buf_take).
 */
typedef struct text_buf {
    char *data; /* NULL until the first append */
    size_t len, cap;
    bool failed;
} text_buf;

void text_buf_append(text_buf *b, const char *s);
void text_buf_printf(text_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The text (malloc'd, "" when nothing was appended), or NULL when `failed` was set. */
char *text_buf_take(text_buf *b);
void text_buf_free(text_buf *b);

#endif
