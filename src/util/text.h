/*
 * text.h - bounded string formatting that reports truncation instead of
 * silently cutting (and keeps -Wformat-truncation quiet where a cut is
 * handled).
 */
#ifndef PGD_TEXT_H
#define PGD_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* snprintf into out; false when the result did not fit (out holds the cut text). */
bool str_format(char *out, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
