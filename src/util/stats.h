/*
 * stats.h - percentiles, medians and spread for the benchmark reports.
 */
#ifndef PGD_STATS_H
#define PGD_STATS_H

#include <stddef.h>

/*
 * The p-th percentile (0..100) of values[0..n), by linear interpolation
 * between the closest ranks (numpy's default). Sorts values in place.
 * Returns 0 for n == 0.
 */
double stats_percentile(double *values, size_t n, double p);

#endif
