/*
 * pgd_pagecache.c - test helper: put a file into the page cache, drop it,
 * or print how much of it is cached. The integration tests use it to set
 * up and check the page-cache promise.
 *
 *   pgd-pagecache percent FILE   prints e.g. "100.00"
 *   pgd-pagecache evict FILE     POSIX_FADV_DONTNEED (after fdatasync)
 *   pgd-pagecache load FILE      reads the file through the cache
 *   pgd-pagecache total FILE...  sums over files: "CACHED_PAGES TOTAL_PAGES PERCENT"
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cache/residency.h"

int main(int argc, char **argv)
{
    pgd_error err = {0};
    int fd;

    if (argc >= 3 && strcmp(argv[1], "total") == 0) {
        uint64_t cached = 0, pages = 0;
        for (int i = 2; i < argc; i++) {
            residency r;
            if (!residency_of_file(argv[i], &r, &err)) {
                fprintf(stderr, "pgd-pagecache: %s\n", err.msg);
                return 1;
            }
            cached += r.cached;
            pages += r.pages;
        }
        printf("%llu %llu %.2f\n", (unsigned long long)cached, (unsigned long long)pages,
               pages ? 100.0 * (double)cached / (double)pages : 100.0);
        return 0;
    }
    if (argc != 3) {
        fprintf(stderr, "usage: pgd-pagecache percent|evict|load FILE | total FILE...\n");
        return 2;
    }
    if (strcmp(argv[1], "percent") == 0) {
        residency r;
        if (!residency_of_file(argv[2], &r, &err)) {
            fprintf(stderr, "pgd-pagecache: %s\n", err.msg);
            return 1;
        }
        printf("%.2f\n", residency_percent(&r));
        return 0;
    }
    fd = open(argv[2], O_RDONLY);
    if (fd < 0) {
        fprintf(stderr, "pgd-pagecache: could not open \"%s\": %s\n", argv[2], strerror(errno));
        return 1;
    }
    if (strcmp(argv[1], "evict") == 0) {
        fdatasync(fd);
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    } else if (strcmp(argv[1], "load") == 0) {
        char buf[1 << 16];
        while (read(fd, buf, sizeof(buf)) > 0)
            ;
    } else {
        fprintf(stderr, "pgd-pagecache: unknown action \"%s\"\n", argv[1]);
        close(fd);
        return 2;
    }
    close(fd);
    return 0;
}
