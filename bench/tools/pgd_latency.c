/*
 * pgd_latency.c - latency percentiles from pgbench --log files, per time
 * window, for the benchmark report.
 *
 *   pgd-latency FROM TO FILE...   prints "COUNT P50_US P99_US" of the
 *                                 transactions that ended in [FROM, TO)
 *                                 (Unix seconds, fractions allowed)
 *
 * pgbench log lines: client_id transaction_no time_us script_no epoch_s epoch_us [lag_us].
 * With --rate, pgbench measures time_us from when the transaction was scheduled and adds the
 * schedule lag (how late it started, which the client's own pace decides): the query's own
 * latency is time_us - lag_us.
 */
#include <stdio.h>
#include <stdlib.h>

#include "util/stats.h"

int main(int argc, char **argv)
{
    double from, to, *lat = NULL;
    size_t n = 0, cap = 0;

    if (argc < 4) {
        fprintf(stderr, "usage: pgd-latency FROM TO PGBENCH_LOG...\n");
        return 2;
    }
    from = atof(argv[1]);
    to = atof(argv[2]);
    for (int i = 3; i < argc; i++) {
        FILE *f = fopen(argv[i], "r");
        char line[256];
        if (f == NULL) {
            perror(argv[i]);
            free(lat);
            return 1;
        }
        while (fgets(line, sizeof(line), f) != NULL) {
            long client, tx, script, sec, usec;
            double us, lag = 0;
            int fields = sscanf(line, "%ld %ld %lf %ld %ld %ld %lf", &client, &tx, &us, &script,
                                &sec, &usec, &lag);
            if (fields < 6)
                continue;
            if (fields == 7)
                us -= lag;
            double end = (double)sec + (double)usec / 1e6;
            if (end < from || end >= to)
                continue;
            if (n == cap) {
                cap = cap ? cap * 2 : 4096;
                double *grown = realloc(lat, cap * sizeof(double));
                if (grown == NULL) {
                    fclose(f);
                    free(lat);
                    return 1;
                }
                lat = grown;
            }
            lat[n++] = us;
        }
        fclose(f);
    }
    printf("%zu %.0f %.0f\n", n, stats_percentile(lat, n, 50), stats_percentile(lat, n, 99));
    free(lat);
    return 0;
}
