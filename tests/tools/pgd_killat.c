/*
 * pgd_killat.c - LD_PRELOAD shim for the integration tests: the process
 * kills itself (SIGKILL, as a power cut or the OOM killer would stop it) at
 * one point of writing the file whose name ends with $PGD_KILLAT_PATH:
 *
 *   PGD_KILLAT=mid-write      after writing half of the first write to it
 *   PGD_KILLAT=before-sync    before its fdatasync (written, not durable)
 *   PGD_KILLAT=before-rename  before it is renamed into place
 *   PGD_KILLAT=after-rename   right after the rename, before the directory's fsync
 *
 *   LD_PRELOAD=pgd-killat.so PGD_KILLAT=before-rename PGD_KILLAT_PATH=keyring.pgdirect \
 *       pgdirect key rotate ...
 *
 * (With an ASan-built pgdirect, also ASAN_OPTIONS=verify_asan_link_order=0.)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool killat_is(const char *point)
{
    const char *at = getenv("PGD_KILLAT");

    return at != NULL && strcmp(at, point) == 0;
}

/* Does `path` (a temporary "<name>.tmp.<pid>.<n>" or the name itself) write the watched file? */
static bool killat_path_matches(const char *path)
{
    const char *want = getenv("PGD_KILLAT_PATH");
    const char *base = strrchr(path, '/');
    size_t wlen;

    if (want == NULL || want[0] == '\0')
        return false;
    base = base == NULL ? path : base + 1;
    wlen = strlen(want);
    return strncmp(base, want, wlen) == 0 && (base[wlen] == '\0' || base[wlen] == '.');
}

static bool killat_fd_matches(int fd)
{
    char link[64], path[PATH_MAX];
    ssize_t n;

    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    n = readlink(link, path, sizeof(path) - 1);
    if (n < 0)
        return false;
    path[n] = '\0';
    return killat_path_matches(path);
}

static void killat_die(void)
{
    kill(getpid(), SIGKILL);
    pause();
}

ssize_t write(int fd, const void *buf, size_t len)
{
    ssize_t (*real)(int, const void *, size_t) =
        (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");

    if (len > 1 && killat_is("mid-write") && killat_fd_matches(fd)) {
        real(fd, buf, len / 2);
        killat_die();
    }
    return real(fd, buf, len);
}

int fdatasync(int fd)
{
    int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");

    if (killat_is("before-sync") && killat_fd_matches(fd))
        killat_die();
    return real(fd);
}

int rename(const char *from, const char *to)
{
    int (*real)(const char *, const char *) =
        (int (*)(const char *, const char *))dlsym(RTLD_NEXT, "rename");
    int rc;

    if (killat_is("before-rename") && killat_path_matches(to))
        killat_die();
    rc = real(from, to);
    if (killat_is("after-rename") && killat_path_matches(to))
        killat_die();
    return rc;
}
