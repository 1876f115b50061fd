/*
 * pgd_dio_read.c - the yardstick for a backup's read: every file a backup of
 * PGDATA reads (the same walk, src/pg/datadir.c), read once with O_DIRECT in
 * 1 MiB aligned reads and thrown away, by THREADS threads taking files from
 * one queue, largest first (as the backup does). No checksum, no
 * compression, no output: what the disk and the kernel cost.
 *
 * BUFFERS: "small" (default) reads into 4 KiB pages, "huge" into a buffer on
 * 2 MiB pages as the backup's readers do (src/util/big_buffer.c). In a VM the
 * kernel pins every page of an O_DIRECT read, and per page that is costly:
 * the two read at different speeds.
 *
 *   pgd_dio_read PGDATA [THREADS [small|huge]]      prints: seconds files bytes
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pg/datadir.h"
#include "util/big_buffer.h"

#define DIO_READ_SIZE  (1024 * 1024)
#define DIO_ALIGN      4096
#define DIO_PG_VERSION 150000

typedef struct dio_job {
    bool huge;
    datadir_entry **files;
    size_t n;
    atomic_size_t next;
    atomic_ullong bytes;
    atomic_int failed;
} dio_job;

static int dio_size_desc(const void *a, const void *b)
{
    const datadir_entry *x = *(datadir_entry *const *)a, *y = *(datadir_entry *const *)b;

    return x->size < y->size ? 1 : x->size > y->size ? -1 : 0;
}

static void *dio_worker(void *arg)
{
    dio_job *job = arg;
    void *buf;

    if (job->huge ? (buf = big_buffer_alloc(DIO_READ_SIZE * 2)) == NULL
                  : posix_memalign(&buf, DIO_ALIGN, DIO_READ_SIZE) != 0) {
        job->failed = 1;
        return NULL;
    }
    for (size_t i; (i = atomic_fetch_add(&job->next, 1)) < job->n;) {
        int fd = open(job->files[i]->source, O_RDONLY | O_DIRECT | O_CLOEXEC);
        ssize_t got;

        if (fd < 0) {
            if (errno != ENOENT) {
                fprintf(stderr, "pgd_dio_read: could not open file \"%s\": %s\n",
                        job->files[i]->source, strerror(errno));
                job->failed = 1;
            }
            continue;
        }
        for (off_t off = 0; (got = pread(fd, buf, DIO_READ_SIZE, off)) > 0; off += got)
            atomic_fetch_add(&job->bytes, (unsigned long long)got);
        if (got < 0) {
            fprintf(stderr, "pgd_dio_read: could not read file \"%s\": %s\n", job->files[i]->source,
                    strerror(errno));
            job->failed = 1;
        }
        close(fd);
    }
    free(buf);
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = argc > 2 ? atoi(argv[2]) : 2;
    struct timespec t0, t1;
    pgd_error err = {0};
    dio_job job = {0};
    pthread_t *tids;
    datadir dd;

    job.huge = argc > 3 && strcmp(argv[3], "huge") == 0;
    if (argc < 2 || threads < 1 || (argc > 3 && !job.huge && strcmp(argv[3], "small") != 0)) {
        fprintf(stderr, "usage: pgd_dio_read PGDATA [THREADS [small|huge]]\n");
        return 2;
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (!datadir_walk(&dd, argv[1], DIO_PG_VERSION, &err)) {
        fprintf(stderr, "pgd_dio_read: %s\n", err.msg);
        return 1;
    }
    job.files = malloc(dd.n * sizeof(*job.files));
    tids = malloc((size_t)threads * sizeof(*tids));
    if (job.files == NULL || tids == NULL)
        return 1;
    for (size_t i = 0; i < dd.n; i++)
        if (!dd.entries[i].is_dir)
            job.files[job.n++] = &dd.entries[i];
    qsort(job.files, job.n, sizeof(*job.files), dio_size_desc);
    for (int t = 0; t < threads; t++)
        pthread_create(&tids[t], NULL, dio_worker, &job);
    for (int t = 0; t < threads; t++)
        pthread_join(tids[t], NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("%.3f %zu %llu\n", (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9,
           job.n, (unsigned long long)job.bytes);
    free(job.files);
    free(tids);
    datadir_free(&dd);
    return job.failed ? 1 : 0;
}
