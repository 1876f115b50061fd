/*
 * rate_limit.h - a token bucket on bytes read (--max-rate), shared by all
 * readers: each read waits until its bytes are available.
 */
#ifndef PGD_RATE_LIMIT_H
#define PGD_RATE_LIMIT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct rate_limit {
    uint64_t rate; /* bytes per second; 0: unlimited */
    double tokens, burst;
    double last; /* monotonic seconds */
    pthread_mutex_t lock;
} rate_limit;

void rate_limit_init(rate_limit *rl, uint64_t bytes_per_second, uint64_t burst);
void rate_limit_destroy(rate_limit *rl);
/* Block until `bytes` may be read. */
void rate_limit_acquire(rate_limit *rl, uint64_t bytes);

#endif
