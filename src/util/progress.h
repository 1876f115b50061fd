/*
 * progress.h - one progress line on a terminal: bytes done / total, MB/s,
 * ETA; and human-readable sizes for summaries and listings.
 */
#ifndef PGD_PROGRESS_H
#define PGD_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* "1.5 GiB", "734 MiB", "12 KiB", "15 B" */
void format_bytes(uint64_t bytes, char *out, size_t outlen);
/* "1h02m", "3m07s", "12.4s" */
void format_duration(double seconds, char *out, size_t outlen);

#endif
