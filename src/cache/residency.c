/*
 * residency.c - page-cache residency through cachestat(2) or mincore(2).
 */
#define _GNU_SOURCE
#include "cache/residency.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef __NR_cachestat
#define __NR_cachestat 451 /* same number on every architecture */
#endif

struct cachestat_range {
    uint64_t off;
    uint64_t len; /* 0: to the end of the file */
};

struct cachestat {
    uint64_t nr_cache;
    uint64_t nr_dirty;
    uint64_t nr_writeback;
    uint64_t nr_evicted;
    uint64_t nr_recently_evicted;
};

static bool by_cachestat(int fd, residency *r)
{
    struct cachestat_range range = {0, 0};
    struct cachestat cs;

    memset(&cs, 0, sizeof(cs));
    if (syscall(__NR_cachestat, fd, &range, &cs, 0) != 0)
        return false;
    r->cached = cs.nr_cache;
    r->evicted = cs.nr_evicted;
    r->from_cachestat = true;
    return true;
}

/* Per-page residency of the first `size` bytes of fd into vec (one byte per OS page). */
static bool residency_mincore(int fd, uint64_t size, unsigned char *vec, const char *path,
                              pgd_error *err)
{
    void *map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);

    if (map == MAP_FAILED)
        return err_errno(err, errno, "could not map file \"%s\"", path);
    if (mincore(map, size, vec) != 0) {
        int e = errno;
        munmap(map, size);
        return err_errno(err, e, "mincore failed on \"%s\"", path);
    }
    munmap(map, size);
    return true;
}

static bool by_mincore(int fd, uint64_t size, residency *r, const char *path, pgd_error *err)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uint64_t npages = pages_for(size, page);
    unsigned char *vec;

    if (size == 0)
        return true;
    if ((vec = malloc(npages)) == NULL)
        return err_set(err, "out of memory");
    if (!residency_mincore(fd, size, vec, path, err)) {
        free(vec);
        return false;
    }
    for (uint64_t i = 0; i < npages; i++)
        r->cached += vec[i] & 1;
    free(vec);
    return true;
}

bool residency_of_file(const char *path, residency *out, pgd_error *err)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    bool ok;

    memset(out, 0, sizeof(*out));
    if (fd < 0)
        return err_errno(err, errno, "could not open file \"%s\"", path);
    if (fstat(fd, &st) != 0) {
        close(fd);
        return err_errno(err, errno, "could not stat file \"%s\"", path);
    }
    out->pages = pages_for((uint64_t)st.st_size, page);
    ok = by_cachestat(fd, out) || by_mincore(fd, (uint64_t)st.st_size, out, path, err);
    close(fd);
    return ok;
}

double residency_percent(const residency *r)
{
    return r->pages == 0 ? 100.0 : 100.0 * (double)r->cached / (double)r->pages;
}

bool residency_pages_of_file(int dirfd, const char *name, const char *path, residency_pages *out,
                             bool *missing, pgd_error *err)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    residency counts = {0};
    struct stat st;
    bool ok = true;
    int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);

    memset(out, 0, sizeof(*out));
    *missing = false;
    if (fd < 0) {
        if (errno == ENOENT) {
            *missing = true;
            return false;
        }
        return err_errno(err, errno, "could not open file \"%s\"", path);
    }
    if (fstat(fd, &st) != 0) {
        close(fd);
        return err_errno(err, errno, "could not stat file \"%s\"", path);
    }
    out->size = (uint64_t)st.st_size;
    out->npages = pages_for(out->size, page);
    if (out->npages == 0) {
        close(fd);
        return true;
    }
    if ((out->vec = calloc(out->npages, 1)) == NULL) {
        close(fd);
        return err_set(err, "out of memory");
    }
    if (by_cachestat(fd, &counts)) {
        out->evicted = counts.evicted;
        out->from_cachestat = true;
    }
    /* cachestat's count answers the common cases, none or all of the file, without a mapping */
    if (out->from_cachestat && counts.cached == 0)
        ;
    else if (out->from_cachestat && counts.cached >= out->npages)
        memset(out->vec, 1, out->npages);
    else
        ok = residency_mincore(fd, out->size, out->vec, path, err);
    close(fd);
    if (!ok) {
        free(out->vec);
        out->vec = NULL;
    }
    return ok;
}
