/*
 * pgd_crc32c_bench.c - CRC-32C throughput of whichever src/util/crc32c.c it is
 * linked with (bench/crc32c.sh builds it against the current file and an
 * older one, so both are measured by the same loop in one run).
 *
 *   pgd_crc32c_bench [BUFFER_MIB] [SECONDS]
 *
 * Prints one line: buffer size, GB/s of crc32c() and of the software path.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/crc32c.h"

#define MIB 1048576.0

uint32_t crc32c_software(const void *data, size_t len);

static double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Bytes per second of fn over buf, run for about `seconds`; the CRCs are folded so nothing is
 * skipped. */
static double bench_rate(uint32_t (*fn)(const void *, size_t), const unsigned char *buf, size_t len,
                         double seconds, uint32_t *sink)
{
    double t0 = bench_now(), t;
    uint64_t bytes = 0;

    do {
        *sink ^= fn(buf, len);
        bytes += len;
        t = bench_now() - t0;
    } while (t < seconds);
    return (double)bytes / t;
}

int main(int argc, char **argv)
{
    double mib = argc > 1 ? atof(argv[1]) : 1.0, seconds = argc > 2 ? atof(argv[2]) : 1.0;
    size_t len = (size_t)(mib * MIB);
    unsigned char *buf = malloc(len);
    uint32_t sink = 0;
    double hw, sw;

    if (buf == NULL || len == 0) {
        fprintf(stderr, "pgd_crc32c_bench: could not allocate %zu bytes\n", len);
        return 1;
    }
    for (size_t i = 0; i < len; i++)
        buf[i] = (unsigned char)(i * 2654435761u >> 13);
    crc32c(buf, len); /* first use picks the implementation and builds tables */
    hw = bench_rate(crc32c, buf, len, seconds, &sink);
    sw = bench_rate(crc32c_software, buf, len, seconds / 4, &sink);
    printf("%g %.2f %.2f %08x\n", mib, hw / 1e9, sw / 1e9, sink);
    free(buf);
    return 0;
}
