/*
 * pgd_failsync.c - LD_PRELOAD shim for the integration tests: fsync and
 * fdatasync fail with EIO for the file whose path ends with
 * $PGD_FAILSYNC_PATH, and work as usual for every other file. It stands in
 * for a disk that reports a write error, which a test cannot cause for
 * real.
 *
 *   LD_PRELOAD=pgd-failsync.so PGD_FAILSYNC_PATH=base/1/1259 pgdirect restore ...
 *
 * (With an ASan-built pgdirect, also ASAN_OPTIONS=verify_asan_link_order=0.)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool failsync_matches(int fd)
{
    const char *want = getenv("PGD_FAILSYNC_PATH");
    char link[64], path[PATH_MAX];
    ssize_t n;
    size_t wlen;

    if (want == NULL || want[0] == '\0')
        return false;
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    n = readlink(link, path, sizeof(path) - 1);
    if (n < 0)
        return false;
    path[n] = '\0';
    wlen = strlen(want);
    return (size_t)n >= wlen && strcmp(path + n - wlen, want) == 0 &&
           ((size_t)n == wlen || path[n - wlen - 1] == '/');
}

/* The real `name` (fsync or fdatasync), unless fd is the file to fail. */
static int failsync_call(const char *name, int fd)
{
    int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, name);

    if (failsync_matches(fd)) {
        errno = EIO;
        return -1;
    }
    return real(fd);
}

int fsync(int fd)
{
    return failsync_call("fsync", fd);
}

int fdatasync(int fd)
{
    return failsync_call("fdatasync", fd);
}
