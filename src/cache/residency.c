/*
 * residency.c - page-cache residency through cachestat(2) or mincore(2)
 * (the mapping and mincore are io/page_residency's, shared with the backup).
 */
#define _GNU_SOURCE
#include "cache/residency.h"

#include "io/page_residency.h"
#include "util/xmalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
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

static bool residency_by_cachestat(int fd, residency *r)
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

static bool residency_by_mincore(int fd, uint64_t size, residency *r, const char *path,
                                 pgd_error *err)
{
    unsigned char *vec;

    if (!page_residency_of_file(fd, size, path, &vec, err))
        return false;
    for (size_t i = 0; vec != NULL && i < page_residency_vector_len((size_t)size); i++)
        r->cached += vec[i] & 1;
    free(vec);
    return true;
}

bool residency_of_file(const char *path, residency *out, pgd_error *err)
{
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
    out->pages = pages_for((uint64_t)st.st_size, page_residency_page_size());
    ok = residency_by_cachestat(fd, out) ||
         residency_by_mincore(fd, (uint64_t)st.st_size, out, path, err);
    close(fd);
    return ok;
}

bool residency_evicted_of_fd(int fd, uint64_t *evicted)
{
    residency r = {0};

    if (!residency_by_cachestat(fd, &r))
        return false;
    *evicted = r.evicted;
    return true;
}

double residency_percent(const residency *r)
{
    return r->pages == 0 ? 100.0 : 100.0 * (double)r->cached / (double)r->pages;
}

bool residency_pages_of_file(int dirfd, const char *name, const char *path, residency_pages *out,
                             bool *missing, pgd_error *err)
{
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
    out->npages = pages_for(out->size, page_residency_page_size());
    if (out->npages == 0) {
        close(fd);
        return true;
    }
    if (residency_by_cachestat(fd, &counts)) {
        out->evicted = counts.evicted;
        out->from_cachestat = true;
    }
    /* cachestat's count answers the common cases, none or all of the file, without a mapping */
    if (out->from_cachestat && (counts.cached == 0 || counts.cached >= out->npages)) {
        out->vec = xmalloc(out->npages);
        memset(out->vec, counts.cached == 0 ? 0 : 1, out->npages);
    } else {
        ok = page_residency_of_file(fd, out->size, path, &out->vec, err);
    }
    close(fd);
    if (!ok) {
        free(out->vec);
        out->vec = NULL;
    }
    return ok;
}
