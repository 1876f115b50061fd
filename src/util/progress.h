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

#define PROGRESS_INTERVAL_S     0.5 /* seconds between redraws on a terminal */
#define PROGRESS_LOG_INTERVAL_S 10  /* between lines elsewhere (a log file keeps them all) */

typedef struct progress_meter {
    bool enabled;
    bool terminal; /* stderr is a terminal: one line redrawn in place */
    uint64_t total;
    double start;
    double last_print;
} progress_meter;

double clock_seconds(void);       /* monotonic */
void clock_sleep(double seconds); /* nothing when seconds <= 0; a signal may cut it short */

void progress_start(progress_meter *m, bool enabled, uint64_t total);
void progress_update(progress_meter *m, uint64_t done);
void progress_finish(progress_meter *m);

#endif
