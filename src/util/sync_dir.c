/*
 * sync_dir.c - a directory fsynced (see sync_dir.h).
 */
#include "util/sync_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/*
 * open `path` with `flags` and fsync it; `what` ("file", "directory") for
 * messages. With skip_unreadable, a directory we may not read is left alone.
 */
static bool sync_dir_open_fsync(const char *path, int flags, const char *what, bool skip_unreadable,
                                pgd_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | flags);

    if (fd < 0 && skip_unreadable && errno == EACCES)
        return true;
    if (fd < 0)
        return err_errno(err, errno, "could not open %s \"%s\" to fsync it", what, path);
    if (fsync(fd) != 0) {
        int e = errno;
        close(fd);
        return err_errno(err, e, "could not fsync %s \"%s\"", what, path);
    }
    close(fd);
    return true;
}

bool sync_dir(const char *dir, pgd_error *err)
{
    return sync_dir_open_fsync(dir, O_DIRECTORY, "directory", false, err);
}

bool sync_file(const char *path, pgd_error *err)
{
    return sync_dir_open_fsync(path, 0, "file", false, err);
}

/* the directory part of `path` fsynced; see sync_dir_of and sync_dir_of_new */
static bool sync_dir_parent(const char *path, bool skip_unreadable, pgd_error *err)
{
    char dir[PATH_MAX];
    char *slash;

    if ((size_t)snprintf(dir, sizeof(dir), "%s", path) >= sizeof(dir))
        return err_set(err, "path too long: \"%s\"", path);
    slash = strrchr(dir, '/');
    if (slash == NULL)
        return true;
    *(slash == dir ? slash + 1 : slash) = '\0';
    return sync_dir_open_fsync(dir, O_DIRECTORY, "directory", skip_unreadable, err);
}

bool sync_dir_of(const char *path, pgd_error *err)
{
    return sync_dir_parent(path, false, err);
}

bool sync_dir_of_new(const char *path, pgd_error *err)
{
    return sync_dir_parent(path, true, err);
}
