/*
 * rate_limit.h - a token bucket on bytes read, shared by all readers: each read waits until its
 * bytes are available (--max-rate BYTES; 0: unlimited).
 *
 * A cap in bytes is for a disk or a link that must be shared at a known rate. Being polite to
 * the database's queries is done with the CPU and I/O classes instead (io/politeness.h): the
 * rate pacer this file had (--max-rate auto, the default until measured, bench/polite.sh)
 * protected the queries' p99 only by reading at 16 MiB/s, 16x pgBackRest's time on a busy host.
 */
#ifndef PGD_RATE_LIMIT_H
#define PGD_RATE_LIMIT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct rate_limit {
    double rate; /* bytes per second; 0: unlimited */
    double tokens, burst;
    double last; /* monotonic seconds */
    pthread_mutex_t lock;
    bool unlimited; /* a rate of 0: acquire returns at once */
} rate_limit;

/* A fixed rate (0: unlimited); `burst` bytes may be read at once. */
void rate_limit_init(rate_limit *rl, uint64_t bytes_per_second, uint64_t burst);
void rate_limit_destroy(rate_limit *rl);
/* Block until `bytes` may be read. */
void rate_limit_acquire(rate_limit *rl, uint64_t bytes);

#endif
