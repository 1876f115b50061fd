/*
 * page_residency.c - mincore(2) residency of a mapped file and
 * POSIX_FADV_DONTNEED of what a read brought in (see page_residency.h).
 */
#define _GNU_SOURCE
#include "io/page_residency.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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

void page_residency_note(const page_residency *r, uint64_t offset, size_t len, unsigned char *vec)
{
    size_t span = offset >= r->len ? 0 : offset + len > r->len ? r->len - (size_t)offset : len;

    memset(vec, 1, page_residency_vector_len(len));
    if (span > 0)
        mincore((char *)r->map + offset, span, vec);
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
