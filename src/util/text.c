/*
 * text.c - bounded string formatting.
 */
#include "util/text.h"

#include <stdarg.h>
#include <stdio.h>

bool str_format(char *out, size_t len, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(out, len, fmt, ap);
    va_end(ap);
    return n >= 0 && (size_t)n < len;
}
