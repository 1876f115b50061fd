/*
 * fail_sync.h - for tests linked with -Wl,--wrap=sync_file_range and
 * -Wl,--wrap=fsync: a disk that fails to write back, on demand, and a
 * record of the directories fsynced.
 *
 * - fail_writeback_errno: sync_file_range fails with it (0: works). With
 *   fail_writeback_waits_only, only calls that wait (the ones that report
 *   a writeback error) fail; otherwise every call does (EINVAL: a file
 *   system without sync_file_range).
 * - fail_dir_fsync: fsync of a directory fails with EIO.
 * - fail_file_fsync: fsync of any other file fails with EIO.
 * - synced_dirs: the directories fsynced since the last reset, in order.
 */
#ifndef PGD_TEST_FAIL_SYNC_H
#define PGD_TEST_FAIL_SYNC_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SYNCED_DIRS_MAX 32

static int fail_writeback_errno;
static bool fail_writeback_waits_only;
static bool fail_dir_fsync;
static bool fail_file_fsync;
static char synced_dirs[SYNCED_DIRS_MAX][PATH_MAX];
static int synced_dirs_n;

int __real_sync_file_range(int fd, off_t offset, off_t nbytes, unsigned int flags);
int __wrap_sync_file_range(int fd, off_t offset, off_t nbytes, unsigned int flags);
int __real_fsync(int fd);
int __wrap_fsync(int fd);

int __wrap_sync_file_range(int fd, off_t offset, off_t nbytes, unsigned int flags)
{
    bool waits = (flags & (SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WAIT_AFTER)) != 0;

    if (fail_writeback_errno != 0 && (waits || !fail_writeback_waits_only)) {
        errno = fail_writeback_errno;
        return -1;
    }
    return __real_sync_file_range(fd, offset, nbytes, flags);
}

int __wrap_fsync(int fd)
{
    struct stat st;

    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        char link[64];
        ssize_t n;

        if (fail_dir_fsync) {
            errno = EIO;
            return -1;
        }
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        if (synced_dirs_n < SYNCED_DIRS_MAX &&
            (n = readlink(link, synced_dirs[synced_dirs_n], PATH_MAX - 1)) > 0)
            synced_dirs[synced_dirs_n++][n] = '\0';
    } else if (fail_file_fsync) {
        errno = EIO;
        return -1;
    }
    return __real_fsync(fd);
}

/* Was `dir` fsynced since synced_dirs_n was last set to 0? */
static inline bool dir_was_synced(const char *dir)
{
    for (int i = 0; i < synced_dirs_n; i++)
        if (strcmp(synced_dirs[i], dir) == 0)
            return true;
    return false;
}

#endif
