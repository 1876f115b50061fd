/*
 * rate_limit.c - token bucket (see rate_limit.h).
 */
#include "io/rate_limit.h"

#include <string.h>
#include <time.h>

#include "util/progress.h"

void rate_limit_init(rate_limit *rl, uint64_t bytes_per_second, uint64_t burst)
{
    memset(rl, 0, sizeof(*rl));
    rl->rate = (double)bytes_per_second;
    rl->unlimited = bytes_per_second == 0;
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
    double wait, now;

    if (rl->unlimited) /* set at init, never written after: no lock needed */
        return;
    pthread_mutex_lock(&rl->lock);
    now = clock_seconds();
    rl->tokens += (now - rl->last) * rl->rate;
    if (rl->tokens > rl->burst)
        rl->tokens = rl->burst;
    rl->last = now;
    /* take the bytes now (the balance may go negative); sleep off the debt */
    rl->tokens -= (double)bytes;
    wait = rl->tokens < 0 ? -rl->tokens / rl->rate : 0;
    pthread_mutex_unlock(&rl->lock);
    clock_sleep(wait);
}
