/*
 * rate_limit.c - token bucket.
 */
#include "io/rate_limit.h"

#include <time.h>

#include "util/progress.h"

void rate_limit_init(rate_limit *rl, uint64_t bytes_per_second, uint64_t burst)
{
    rl->rate = bytes_per_second;
    rl->burst = (double)burst;
    rl->tokens = (double)burst;
    rl->last = clock_seconds();
    pthread_mutex_init(&rl->lock, NULL);
}

void rate_limit_destroy(rate_limit *rl)
{
    pthread_mutex_destroy(&rl->lock);
}

void rate_limit_acquire(rate_limit *rl, uint64_t bytes)
{
    double wait;

    if (rl->rate == 0)
        return;
    pthread_mutex_lock(&rl->lock);
    {
        double now = clock_seconds();
        rl->tokens += (now - rl->last) * (double)rl->rate;
        if (rl->tokens > rl->burst)
            rl->tokens = rl->burst;
        rl->last = now;
        /* take the bytes now (the balance may go negative); sleep off the debt */
        rl->tokens -= (double)bytes;
        wait = rl->tokens < 0 ? -rl->tokens / (double)rl->rate : 0;
    }
    pthread_mutex_unlock(&rl->lock);
    if (wait > 0) {
        struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
        nanosleep(&ts, NULL);
    }
}
