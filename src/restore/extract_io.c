/*
 * extract_io.c - a restored file's bytes on disk: written through, written
 * at an offset, or (restore --delta) read first and compared page by page,
 * so only the pages that differ are written.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "pg/relfile.h"
#include "restore/extract_internal.h"

bool extract_write_all(int fd, const char *buf, size_t len, const char *dest, pgd_error *err)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return err_errno(err, errno, "could not write file \"%s\"", dest);
        buf += n;
        len -= (size_t)n;
    }
    return true;
}

static bool extract_io_pwrite_all(int fd, const char *buf, size_t len, uint64_t off,
                                  const char *dest, pgd_error *err)
{
    while (len > 0) {
        ssize_t n = pwrite(fd, buf, len, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return err_errno(err, errno, "could not write file \"%s\"", dest);
        buf += n;
        off += (uint64_t)n;
        len -= (size_t)n;
    }
    return true;
}

/* Up to len bytes of the file at off into buf; fewer at its end. */
static bool extract_io_pread_full(int fd, char *buf, size_t len, uint64_t off, size_t *got,
                                  const char *dest, pgd_error *err)
{
    *got = 0;
    while (*got < len) {
        ssize_t n = pread(fd, buf + *got, len - *got, (off_t)(off + *got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return err_errno(err, errno, "could not read file \"%s\"", dest);
        if (n == 0)
            break;
        *got += (size_t)n;
    }
    return true;
}

/*
 * restore --delta: buf[0..n), the backup's bytes at `off`, compared page
 * by page with what the file holds there; runs of differing pages written.
 */
bool extract_delta_write(const extract_plan *p, char *cmp, int fd, const char *dest,
                         const char *buf, size_t n, uint64_t off, bool *changed, pgd_error *err)
{
    size_t got, run = 0, run_len = 0;
    uint64_t same = 0;

    if (!extract_io_pread_full(fd, cmp, n, off, &got, dest, err))
        return false;
    for (size_t at = 0; at < n; at += PG_PAGE_SIZE) {
        size_t len = n - at < PG_PAGE_SIZE ? n - at : PG_PAGE_SIZE;
        if (at + len <= got && memcmp(buf + at, cmp + at, len) == 0) {
            same += len;
            if (run_len > 0 && !extract_io_pwrite_all(fd, buf + run, run_len, off + run, dest, err))
                return false;
            run_len = 0;
            continue;
        }
        if (run_len == 0)
            run = at;
        run_len += len;
    }
    if (run_len > 0 && !extract_io_pwrite_all(fd, buf + run, run_len, off + run, dest, err))
        return false;
    if (same < n)
        *changed = true;
    __atomic_add_fetch(p->unchanged, same, __ATOMIC_RELAXED);
    return true;
}

/* A page of an assembled file: written, or with restore --delta only when it differs. */
bool extract_put(const extract_plan *p, char *cmp, int fd, const char *dest, const char *buf,
                 size_t n, uint64_t off, pgd_error *err)
{
    bool changed = false;

    if (p->delta)
        return extract_delta_write(p, cmp, fd, dest, buf, n, off, &changed, err);
    return extract_io_pwrite_all(fd, buf, n, off, dest, err);
}
