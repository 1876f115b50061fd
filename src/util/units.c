/*
 * units.c - human-readable sizes and durations, both ways.
 */
#include "util/units.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UNITS_KIB    1024ULL
#define UNITS_MIB    (UNITS_KIB * 1024)
#define UNITS_GIB    (UNITS_MIB * 1024)
#define UNITS_TIB    (UNITS_GIB * 1024)
#define UNITS_MINUTE 60
#define UNITS_HOUR   3600
#define UNITS_NARROW 10 /* below this, one decimal: "1.5 GiB", not "2 GiB" */

void units_format_bytes(uint64_t bytes, char *out, size_t outlen)
{
    static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    size_t last = sizeof(names) / sizeof(names[0]) - 1, u = 0;
    double v = (double)bytes;

    while (v >= UNITS_KIB && u < last) {
        v /= UNITS_KIB;
        u++;
    }
    if (u == 0)
        snprintf(out, outlen, "%llu B", (unsigned long long)bytes);
    else
        snprintf(out, outlen, v < UNITS_NARROW ? "%.1f %s" : "%.0f %s", v, names[u]);
}

void units_format_duration(double seconds, char *out, size_t outlen)
{
    long s = (long)(seconds + 0.5);

    if (seconds < 0.095)
        snprintf(out, outlen, "%.2fs", seconds); /* not "0.0s" for a deadline missed by 0.04 s */
    else if (seconds < UNITS_MINUTE)
        snprintf(out, outlen, "%.1fs", seconds);
    else if (s < UNITS_HOUR)
        snprintf(out, outlen, "%ldm%02lds", s / UNITS_MINUTE, s % UNITS_MINUTE);
    else
        snprintf(out, outlen, "%ldh%02ldm", s / UNITS_HOUR, (s % UNITS_HOUR) / UNITS_MINUTE);
}

bool units_parse_size(const char *text, uint64_t *out)
{
    static const struct {
        const char *suffix;
        uint64_t mult;
    } units[] = {{"", 1},          {"B", 1},          {"k", UNITS_KIB},
                 {"K", UNITS_KIB}, {"KB", UNITS_KIB}, {"KiB", UNITS_KIB},
                 {"M", UNITS_MIB}, {"MB", UNITS_MIB}, {"MiB", UNITS_MIB},
                 {"G", UNITS_GIB}, {"GB", UNITS_GIB}, {"GiB", UNITS_GIB},
                 {"T", UNITS_TIB}, {"TB", UNITS_TIB}, {"TiB", UNITS_TIB}};
    char *end;
    unsigned long long v;

    if (text == NULL || !isdigit((unsigned char)text[0]))
        return false;
    errno = 0;
    v = strtoull(text, &end, 10);
    if (errno != 0)
        return false;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcmp(end, units[i].suffix) == 0) {
            if (v > UINT64_MAX / units[i].mult)
                return false;
            *out = v * units[i].mult;
            return true;
        }
    }
    return false;
}
