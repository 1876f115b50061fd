/*
 * rate_limit.c - token bucket, with the pacer of --max-rate auto.
 */
#include "io/rate_limit.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/log.h"
#include "util/progress.h"

static void rate_limit_set_rate(rate_limit *rl, double rate, double now)
{
    if (rl->rate == 0 && rate > 0) { /* start with a full bucket, not the unlimited past */
        rl->last = now;
        rl->tokens = rl->min_burst;
    }
    rl->rate = rate;
    rl->burst = rate / 10 > rl->min_burst ? rate / 10 : rl->min_burst;
    if (rl->tokens > rl->burst)
        rl->tokens = rl->burst;
}

void rate_limit_init(rate_limit *rl, uint64_t bytes_per_second, uint64_t burst)
{
    memset(rl, 0, sizeof(*rl));
    rl->rate = (double)bytes_per_second;
    rl->unlimited = bytes_per_second == 0; /* until made paced */
    rl->burst = rl->min_burst = (double)burst;
    rl->tokens = (double)burst;
    rl->last = clock_seconds();
    pthread_mutex_init(&rl->lock, NULL);
}

bool rate_limit_init_paced(rate_limit *rl, uint64_t max_read, pgd_error *err)
{
    rate_limit_init(rl, 0, max_read);
    if (!cpu_sample_read(&rl->sample, err))
        return false;
    rl->ticks_per_s = (double)sysconf(_SC_CLK_TCK);
    if (rl->ticks_per_s <= 0)
        return err_set(err, "the kernel's clock tick rate is unknown");
    rl->paced = true;
    rl->unlimited = false;
    rl->report.paced = true;
    rl->started = rl->sample.at;
    return true;
}

void rate_limit_destroy(rate_limit *rl)
{
    pthread_mutex_destroy(&rl->lock);
}

double rate_pace_next(double rate, const cpu_interval *iv, double achieved, double *ceiling)
{
    double next, cap;

    /* quiet unless the ticks say others were busy beyond what a tick either way explains */
    if (iv->others_cpus - iv->others_margin < RATE_PACE_QUIET_CPUS) {
        if (rate == 0 && achieved > *ceiling)
            *ceiling = achieved;
        return 0;
    }
    if (iv->idle_share < RATE_PACE_IDLE_LOW)
        next = rate == 0 ? RATE_PACE_FLOOR : rate / 2;
    else if (rate == 0) /* busy others with CPU time to spare: nothing to give way for yet */
        return 0;
    else if (iv->idle_share > RATE_PACE_IDLE_HIGH)
        next = rate * 1.25;
    else
        next = rate;
    /* growing past what it can read would only take longer to come down */
    cap = *ceiling > 2 * achieved ? *ceiling : 2 * achieved;
    if (next > cap && cap > 0)
        next = cap;
    return next < RATE_PACE_FLOOR ? RATE_PACE_FLOOR : next;
}

/*
 * Under the lock: the reads since the last look came at the limit, i.e. it
 * held them back. Reads come whole: within one read of the limit counts.
 */
static bool rate_limit_binding(const rate_limit *rl, double seconds)
{
    return rl->rate > 0 && seconds > 0 &&
           (double)rl->bytes + rl->min_burst >= RATE_PACE_BINDING * rl->rate * seconds;
}

/* Under the lock: look at the machine, set the next rate. */
static void rate_limit_pace(rate_limit *rl)
{
    cpu_sample now;
    cpu_interval iv;
    pgd_error err = {0};
    double next, achieved;

    if (!cpu_sample_read(&now, &err)) { /* readable at the start: full speed from here, said */
        rl->report.slowed_s += rl->rate > 0 ? clock_seconds() - rl->sample.at : 0;
        rl->report.seconds = clock_seconds() - rl->started;
        snprintf(rl->report.lost, sizeof(rl->report.lost), "%.200s", err.msg);
        rl->paced = false;
        rate_limit_set_rate(rl, 0, clock_seconds());
        return;
    }
    iv = cpu_interval_between(&rl->sample, &now, rl->ticks_per_s);
    if (iv.seconds <= 0)
        return;
    achieved = (double)rl->bytes / iv.seconds;
    next = rate_pace_next(rl->rate, &iv, achieved, &rl->ceiling);
    log_debug("pace: %.2f s, others %.2f CPUs (+/- %.2f), idle %.0f %%, read %.0f MB/s, limit %.0f "
              "-> %.0f MB/s",
              iv.seconds, iv.others_cpus, iv.others_margin, iv.idle_share * 100, achieved / 1e6,
              rl->rate / 1e6, next / 1e6);
    /* slowed: the limit held the reads back (they came at its rate), not merely set above them */
    if (rate_limit_binding(rl, iv.seconds))
        rl->report.slowed_s += iv.seconds;
    if (iv.others_cpus > rl->report.others)
        rl->report.others = iv.others_cpus;
    if (next > 0 && (rl->report.lowest == 0 || next < rl->report.lowest))
        rl->report.lowest = next;
    rl->report.seconds = now.at - rl->started;
    rate_limit_set_rate(rl, next, now.at);
    rl->sample = now;
    rl->bytes = 0;
}

void rate_limit_acquire(rate_limit *rl, uint64_t bytes)
{
    double wait = 0;

    if (rl->unlimited) /* set at init, never written after: no lock needed */
        return;
    pthread_mutex_lock(&rl->lock);
    {
        double now = clock_seconds();
        if (rl->paced && now - rl->sample.at >= (rl->sample.at > rl->started ? RATE_PACE_INTERVAL_S
                                                                             : RATE_PACE_FIRST_S))
            rate_limit_pace(rl);
        rl->bytes += bytes;
        if (rl->rate > 0) {
            rl->tokens += (now - rl->last) * rl->rate;
            if (rl->tokens > rl->burst)
                rl->tokens = rl->burst;
            rl->last = now;
            /* take the bytes now (the balance may go negative); sleep off the debt */
            rl->tokens -= (double)bytes;
            wait = rl->tokens < 0 ? -rl->tokens / rl->rate : 0;
        }
    }
    pthread_mutex_unlock(&rl->lock);
    if (wait > 0) {
        struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

rate_pace_report rate_limit_report(rate_limit *rl)
{
    rate_pace_report r;

    pthread_mutex_lock(&rl->lock);
    r = rl->report;
    if (rl->paced) { /* the tail since the last look */
        double now = clock_seconds();
        if (rate_limit_binding(rl, now - rl->sample.at))
            r.slowed_s += now - rl->sample.at;
        r.seconds = now - rl->started;
    }
    pthread_mutex_unlock(&rl->lock);
    return r;
}
