/*
 * progress.h - one progress line on a terminal: bytes done / total, MB/s,
 * ETA.
 */
#ifndef PGD_PROGRESS_H
#define PGD_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/units.h"

#define PROGRESS_INTERVAL_S 0.5 /* seconds between redraws */

typedef struct progress_meter {
    bool enabled;
    uint64_t total;
    double start;
    double last_print;
} progress_meter;

double clock_seconds(void); /* monotonic */

void progress_start(progress_meter *m, bool enabled, uint64_t total);
void progress_update(progress_meter *m, uint64_t done);
void progress_finish(progress_meter *m);

/*
 * The names these had before util/units.h: kept only for the call sites in
 * files other branches are changing now (src/cmd/cache.c). Use units_*.
 */
static inline void format_bytes(uint64_t bytes, char *out, size_t outlen)
{
    units_format_bytes(bytes, out, outlen);
}

static inline void format_duration(double seconds, char *out, size_t outlen)
{
    units_format_duration(seconds, out, outlen);
}

#endif
