/*
 * lsn.c - LSN text in and out (see lsn.h).
 */
#include "pg/lsn.h"

#include <stdio.h>

#define LSN_HALF_DIGITS_MAX 8 /* each half is 32 bits */

/* 1 to 8 hex digits at *s into *half; *s moved past them. */
static bool lsn_parse_half(const char **s, uint32_t *half)
{
    uint32_t v = 0;
    int n = 0;

    for (;; n++) {
        char c = (*s)[n];
        uint32_t d;

        if (c >= '0' && c <= '9')
            d = (uint32_t)(c - '0');
        else if (c >= 'A' && c <= 'F')
            d = (uint32_t)(c - 'A' + 10);
        else if (c >= 'a' && c <= 'f')
            d = (uint32_t)(c - 'a' + 10);
        else
            break;
        if (n == LSN_HALF_DIGITS_MAX)
            return false;
        v = v << 4 | d;
    }
    if (n == 0)
        return false;
    *s += n;
    *half = v;
    return true;
}

bool lsn_parse_prefix(const char **text, pg_lsn *out)
{
    const char *s;
    uint32_t hi, lo;

    if (text == NULL || *text == NULL)
        return false;
    s = *text;
    if (!lsn_parse_half(&s, &hi) || *s++ != '/' || !lsn_parse_half(&s, &lo))
        return false;
    *out = (pg_lsn)hi << 32 | lo;
    *text = s;
    return true;
}

bool lsn_parse(const char *text, pg_lsn *out)
{
    const char *s = text;
    pg_lsn v;

    if (!lsn_parse_prefix(&s, &v) || *s != '\0')
        return false;
    *out = v;
    return true;
}

const char *lsn_format(pg_lsn lsn, char out[LSN_TEXT_MAX])
{
    snprintf(out, LSN_TEXT_MAX, LSN_FORMAT, LSN_ARGS(lsn));
    return out;
}
