/*
 * page_residency.c - mincore(2) residency of a mapped file and
 * POSIX_FADV_DONTNEED of what a read brought in (see page_residency.h).
 */
#define _GNU_SOURCE
#include "io/page_residency.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util/xmalloc.h"

size_t page_residency_page_size(void)
{
    static size_t page;

    if (page == 0)
        page = (size_t)sysconf(_SC_PAGESIZE);
    return page;
}

size_t page_residency_vector_len(size_t len)
{
    size_t page = page_residency_page_size();

    return (len + page - 1) / page;
}

bool page_residency_open(page_residency *r, int fd, uint64_t len, const char *path, pgd_error *err)
{
    r->fd = fd;
    r->map = NULL;
    r->len = (size_t)len;
    if (len == 0)
        return true;
    posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
    r->map = mmap(NULL, r->len, PROT_READ, MAP_SHARED, fd, 0);
    if (r->map == MAP_FAILED) {
        r->map = NULL;
        return err_errno(err, errno, "could not map file \"%s\" to check its residency", path);
    }
    return true;
}

/* mincore(2) of [offset, offset + len) clipped to the mapping; pages past it stay as vec has them.
 */
static bool page_residency_mincore(const page_residency *r, uint64_t offset, size_t len,
                                   unsigned char *vec)
{
    size_t span = offset >= r->len ? 0 : offset + len > r->len ? r->len - (size_t)offset : len;

    return span == 0 || mincore((char *)r->map + offset, span, vec) == 0;
}

void page_residency_note(const page_residency *r, uint64_t offset, size_t len, unsigned char *vec)
{
    memset(vec, 1, page_residency_vector_len(len));
    /* a failure leaves every page "cached": the worst it does is keep a page the read brought in */
    if (!page_residency_mincore(r, offset, len, vec))
        memset(vec, 1, page_residency_vector_len(len));
}

bool page_residency_of_file(int fd, uint64_t len, const char *path, unsigned char **vec,
                            pgd_error *err)
{
    page_residency r;
    int e;

    *vec = NULL;
    if (len == 0)
        return true;
    if (!page_residency_open(&r, fd, len, path, err))
        return false;
    *vec = xmalloc(page_residency_vector_len(r.len));
    if (!page_residency_mincore(&r, 0, r.len, *vec)) {
        e = errno;
        free(*vec);
        *vec = NULL;
        page_residency_close(&r);
        return err_errno(err, e, "could not check the page-cache residency of file \"%s\"", path);
    }
    page_residency_close(&r);
    return true;
}

void page_residency_drop_new(const page_residency *r, uint64_t offset, size_t len,
                             const unsigned char *before)
{
    size_t page = page_residency_page_size(), pages = page_residency_vector_len(len), run = 0;

    /* one fadvise per run of pages that were not cached */
    for (size_t i = 0; i <= pages; i++) {
        if (i < pages && !(before[i] & 1)) {
            run++;
            continue;
        }
        if (run > 0)
            posix_fadvise(r->fd, (off_t)(offset + (i - run) * page), (off_t)(run * page),
                          POSIX_FADV_DONTNEED);
        run = 0;
    }
}

void page_residency_close(page_residency *r)
{
    if (r->map != NULL)
        munmap(r->map, r->len);
    r->map = NULL;
}
