/*
 * progress.c - the progress line.
 */
#include "util/progress.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "util/log.h"
#include "util/units.h"

#define MB 1e6

double clock_seconds(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void clock_sleep(double seconds)
{
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};

    if (seconds > 0)
        nanosleep(&ts, NULL);
}

void progress_start(progress_meter *m, bool enabled, uint64_t total)
{
    m->enabled = enabled;
    m->terminal = isatty(STDERR_FILENO);
    m->total = total;
    m->start = clock_seconds();
    m->last_print = 0;
}

void progress_update(progress_meter *m, uint64_t done)
{
    double now = clock_seconds(), elapsed = now - m->start, rate;
    char done_s[32], total_s[32], eta_s[32], line[160];

    if (!m->enabled ||
        now - m->last_print < (m->terminal ? PROGRESS_INTERVAL_S : PROGRESS_LOG_INTERVAL_S))
        return;
    m->last_print = now;
    rate = elapsed > 0 ? (double)done / elapsed : 0;
    units_format_bytes(done, done_s, sizeof(done_s));
    units_format_bytes(m->total, total_s, sizeof(total_s));
    if (rate > 0 && m->total > done)
        units_format_duration((double)(m->total - done) / rate, eta_s, sizeof(eta_s));
    else
        snprintf(eta_s, sizeof(eta_s), "-");
    snprintf(line, sizeof(line), "%s / %s (%.0f%%)  %.1f MB/s  ETA %s", done_s, total_s,
             m->total ? 100.0 * (double)done / (double)m->total : 100.0, rate / MB, eta_s);
    log_progress_line(line, m->terminal);
}

void progress_finish(progress_meter *m)
{
    if (m->enabled)
        log_progress_end();
}
