/*
 * stats.c - percentiles for latency and trial reports.
 */
#include "util/stats.h"

#include <math.h>
#include <stdlib.h>

static int stats_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

double stats_percentile(double *values, size_t n, double p)
{
    double rank, frac;
    size_t lo;

    if (n == 0)
        return 0;
    qsort(values, n, sizeof(double), stats_cmp_double);
    if (p <= 0)
        return values[0];
    if (p >= 100)
        return values[n - 1];
    rank = p / 100.0 * (double)(n - 1);
    lo = (size_t)floor(rank);
    frac = rank - (double)lo;
    if (lo + 1 >= n)
        return values[n - 1];
    return values[lo] + frac * (values[lo + 1] - values[lo]);
}
