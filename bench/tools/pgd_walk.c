/*
 * pgd_walk.c - the data-directory walk of a backup, alone: datadir_walk over
 * PGDATA, timed, with the count of files and directories it keeps.
 * bench/many_files.sh builds it against the current src/pg/datadir.c and an
 * older one, so the walk's cost is measured apart from reading the files.
 *
 *   pgd_walk PGDATA [PG_VERSION_NUM]      prints: seconds entries files bytes
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "pg/datadir.h"

#define PGD_WALK_DEFAULT_VERSION 150000

int main(int argc, char **argv)
{
    struct timespec t0, t1;
    pgd_error err = {0};
    datadir dd;
    size_t files = 0;
    unsigned long long bytes = 0;

    if (argc < 2) {
        fprintf(stderr, "usage: pgd_walk PGDATA [PG_VERSION_NUM]\n");
        return 2;
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (!datadir_walk(&dd, argv[1], argc > 2 ? atoi(argv[2]) : PGD_WALK_DEFAULT_VERSION, &err)) {
        fprintf(stderr, "pgd_walk: %s\n", err.msg);
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    for (size_t i = 0; i < dd.n; i++)
        if (!dd.entries[i].is_dir) {
            files++;
            bytes += dd.entries[i].size;
        }
    printf("%.3f %zu %zu %llu\n", (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9,
           dd.n, files, bytes);
    datadir_free(&dd);
    return 0;
}
