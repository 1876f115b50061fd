/*
 * wal_spool.c - the spool of asynchronous archiving and prefetching: its
 * directories, the lock of its background process, the FIFO that wakes
 * that process, the settings it runs with, and how its small text files
 * are written and read (layout in wal_spool.h; the push records, segment
 * names and prefetched files are in the other wal_spool_*.c files).
 *
 * Where the spool lives by default: <parent of the data directory>/
 * pgdirect-spool. That directory is writable by the cluster's owner in the
 * usual layouts (/var/lib/postgresql/15/main, /var/lib/pgsql/15/data) with
 * no setup as root, which /var/spool/pgdirect would need; it is on the
 * data directory's file system in those layouts, so a record fsynced there
 * is as durable as pg_wal and survives a reboot (unlike /tmp or /run); and
 * it is outside the data directory, so a backup never copies records into
 * another cluster. Where the parent is not writable, --spool-path says
 * where instead.
 */
#define _GNU_SOURCE
#include "wal/wal_spool.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wal/wal_spool_internal.h"
#include "util/sync_dir.h"

#define WAL_SPOOL_LOCK     "lock"
#define WAL_SPOOL_SETTINGS "settings"
#define WAL_SPOOL_WAKE     "wake"
#define WAL_SPOOL_DIR_MODE 0700 /* records say what the cluster archived: its owner's only */

#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME  0x100000001b3ull

bool wal_spool_default_root(const char *datadir, char *out, size_t outlen, pgd_error *err)
{
    char copy[WAL_SPOOL_PATH_MAX];

    snprintf(copy, sizeof(copy), "%s", datadir);
    if ((size_t)snprintf(out, outlen, "%s/%s", dirname(copy), WAL_SPOOL_DEFAULT_NAME) >= outlen)
        return err_set(err, "spool path too long for data directory \"%s\"", datadir);
    return true;
}

uint64_t wal_spool_key(const char *datadir, const char *repo_id)
{
    uint64_t h = FNV_OFFSET;

    for (const char *p = datadir; *p != '\0'; p++)
        h = (h ^ (unsigned char)*p) * FNV_PRIME;
    h = (h ^ '\n') * FNV_PRIME;
    for (const char *p = repo_id; *p != '\0'; p++)
        h = (h ^ (unsigned char)*p) * FNV_PRIME;
    return h;
}

/* mkdir -p `path`. */
static bool wal_spool_mkdirs(const char *path, pgd_error *err)
{
    char buf[WAL_SPOOL_PATH_MAX];

    if ((size_t)snprintf(buf, sizeof(buf), "%s", path) >= sizeof(buf))
        return err_set(err, "spool path too long: \"%s\"", path);
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        if (mkdir(buf, WAL_SPOOL_DIR_MODE) != 0 && errno != EEXIST)
            return err_errno(err, errno, "could not create spool directory \"%s\"", buf);
        *p = c;
        if (c == '\0')
            return true;
    }
}

bool wal_spool_write_text(const char *path, const char *text, bool durable, pgd_error *err)
{
    char tmp[WAL_SPOOL_PATH_MAX + 32];
    size_t len = strlen(text), off = 0;
    int fd;

    snprintf(tmp, sizeof(tmp), "%s" WAL_SPOOL_TMP_EXT ".%d", path, (int)getpid());
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, WAL_SPOOL_FILE_MODE);
    if (fd < 0)
        return err_errno(err, errno, "could not create spool file \"%s\"", tmp);
    while (off < len) {
        ssize_t n = write(fd, text + off, len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            err_errno(err, errno, "could not write spool file \"%s\"", tmp);
            goto fail;
        }
        off += (size_t)n;
    }
    return wal_spool_commit(fd, tmp, path, durable, err);
fail:
    close(fd);
    unlink(tmp);
    return false;
}

bool wal_spool_commit(int fd, const char *tmp, const char *path, bool durable, pgd_error *err)
{
    if (durable && fsync(fd) != 0) {
        err_errno(err, errno, "could not fsync spool file \"%s\"", tmp);
        close(fd);
        goto fail;
    }
    if (close(fd) != 0) {
        err_errno(err, errno, "could not write spool file \"%s\"", tmp);
        goto fail;
    }
    if (rename(tmp, path) != 0) {
        err_errno(err, errno, "could not rename \"%s\" to \"%s\"", tmp, path);
        goto fail;
    }
    return !durable || sync_dir_of(path, err);
fail:
    unlink(tmp);
    return false;
}

bool wal_spool_read_text(const char *path, char *buf, size_t buflen, bool *missing,
                         struct timespec *mtime, pgd_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    size_t have = 0;

    *missing = false;
    buf[0] = '\0';
    if (fd < 0) {
        if (errno == ENOENT) {
            *missing = true;
            return true;
        }
        return err_errno(err, errno, "could not open spool file \"%s\"", path);
    }
    if (mtime != NULL && fstat(fd, &st) == 0)
        *mtime = st.st_mtim;
    while (have + 1 < buflen) {
        ssize_t n = read(fd, buf + have, buflen - 1 - have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            close(fd);
            return err_errno(err, e, "could not read spool file \"%s\"", path);
        }
        if (n == 0)
            break;
        have += (size_t)n;
    }
    buf[have] = '\0';
    close(fd);
    return true;
}

bool wal_spool_open(const char *root, wal_spool_role role, const char *datadir, const char *repo_id,
                    char *dir, size_t dirlen, pgd_error *err)
{
    char path[WAL_SPOOL_PATH_MAX + 16], want[WAL_SPOOL_TEXT_MAX], have[WAL_SPOOL_TEXT_MAX];
    bool missing;

    if ((size_t)snprintf(dir, dirlen, "%s/%s-%016" PRIx64, root,
                         role == WAL_SPOOL_PUSH ? "push" : "fetch",
                         wal_spool_key(datadir, repo_id)) >= dirlen)
        return err_set(err, "spool path too long: \"%s\"", root);
    if ((size_t)snprintf(want, sizeof(want), "data directory: %s\nrepository: %s\n", datadir,
                         repo_id) >= sizeof(want))
        return err_set(err, "data directory path too long for the spool: \"%s\"", datadir);
    if (!wal_spool_mkdirs(dir, err))
        return false;
    if (role == WAL_SPOOL_PUSH) {
        snprintf(path, sizeof(path), "%s/" WAL_SPOOL_OUT, dir);
        if (!wal_spool_mkdirs(path, err))
            return false;
        snprintf(path, sizeof(path), "%s/" WAL_SPOOL_QUEUE, dir);
        if (!wal_spool_mkdirs(path, err))
            return false;
    }
    snprintf(path, sizeof(path), "%s/" WAL_SPOOL_INFO, dir);
    if (!wal_spool_read_text(path, have, sizeof(have), &missing, NULL, err))
        return false;
    if (missing)
        return wal_spool_write_text(path, want, true, err);
    if (strcmp(have, want) != 0)
        return err_set(err,
                       "spool directory \"%s\" belongs to another data directory or repository "
                       "(see its info file); remove it or choose another --spool-path",
                       dir);
    return true;
}

bool wal_spool_probe(const char *dir, pgd_error *err)
{
    char path[WAL_SPOOL_PATH_MAX + 32];

    snprintf(path, sizeof(path), "%s/probe.%d", dir, (int)getpid());
    if (!wal_spool_write_text(path, "a record fits\n", false, err))
        return false;
    unlink(path);
    return true;
}

/* ---- lock ---- */

static void wal_spool_lock_path(const char *dir, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s/" WAL_SPOOL_LOCK, dir);
}

bool wal_spool_lock_take(const char *dir, int *fd, bool *busy, pgd_error *err)
{
    char path[WAL_SPOOL_PATH_MAX + 16], pid[32];
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    int len;

    *busy = false;
    *fd = -1;
    wal_spool_lock_path(dir, path, sizeof(path));
    *fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, WAL_SPOOL_FILE_MODE);
    if (*fd < 0)
        return err_errno(err, errno, "could not open lock file \"%s\"", path);
    if (fcntl(*fd, F_OFD_SETLK, &fl) != 0) {
        int e = errno;
        close(*fd);
        *fd = -1;
        if (e == EAGAIN || e == EACCES) {
            *busy = true;
            return true;
        }
        return err_errno(err, e, "could not lock file \"%s\"", path);
    }
    len = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
    errno = 0;
    if (ftruncate(*fd, 0) != 0 || pwrite(*fd, pid, (size_t)len, 0) != len) {
        int e = errno != 0 ? errno : EIO; /* a short write sets no errno */
        close(*fd);
        *fd = -1;
        return err_errno(err, e, "could not write lock file \"%s\"", path);
    }
    return true;
}

bool wal_spool_lock_held(const char *dir, bool *held, pgd_error *err)
{
    char path[WAL_SPOOL_PATH_MAX + 16];
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    int fd;

    *held = false;
    wal_spool_lock_path(dir, path, sizeof(path));
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return true;
        return err_errno(err, errno, "could not open lock file \"%s\"", path);
    }
    if (fcntl(fd, F_OFD_GETLK, &fl) != 0) {
        int e = errno;
        close(fd);
        return err_errno(err, e, "could not test lock file \"%s\"", path);
    }
    close(fd);
    *held = fl.l_type != F_UNLCK;
    return true;
}

/* ---- waking the background process ---- */

bool wal_spool_wake_open(const char *dir, int *fd, pgd_error *err)
{
    char path[WAL_SPOOL_PATH_MAX + 16];
    struct stat st;

    snprintf(path, sizeof(path), "%s/" WAL_SPOOL_WAKE, dir);
    if (lstat(path, &st) == 0 && !S_ISFIFO(st.st_mode) && unlink(path) != 0)
        return err_errno(err, errno, "could not remove \"%s\"", path);
    if (mkfifo(path, WAL_SPOOL_FILE_MODE) != 0 && errno != EEXIST)
        return err_errno(err, errno, "could not create FIFO \"%s\"", path);
    /* read-write: the FIFO never reports end-of-file when no command has it open */
    *fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (*fd < 0)
        return err_errno(err, errno, "could not open FIFO \"%s\"", path);
    return true;
}

void wal_spool_wake_wait(int fd, long ms)
{
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    char buf[64];

    if (poll(&pfd, 1, (int)ms) > 0)
        while (read(fd, buf, sizeof(buf)) > 0)
            ;
}

void wal_spool_wake(const char *dir)
{
    char path[WAL_SPOOL_PATH_MAX + 16];
    int fd;

    snprintf(path, sizeof(path), "%s/" WAL_SPOOL_WAKE, dir);
    /* O_NONBLOCK: fails at once (ENXIO) when no process has it open for reading */
    fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return;
    if (write(fd, "w", 1) < 0) {
        /* a full FIFO already says "look now" */
    }
    close(fd);
}

/* ---- settings ---- */

bool wal_spool_settings_write(const char *dir, const char *fingerprint, pgd_error *err)
{
    char path[WAL_SPOOL_PATH_MAX + 16], have[128], want[128];
    bool missing;

    snprintf(path, sizeof(path), "%s/" WAL_SPOOL_SETTINGS, dir);
    snprintf(want, sizeof(want), "%s\n", fingerprint);
    if (!wal_spool_read_text(path, have, sizeof(have), &missing, NULL, err))
        return false;
    if (!missing && strcmp(have, want) == 0)
        return true;
    return wal_spool_write_text(path, want, false, err);
}

bool wal_spool_settings_changed(const char *dir, const char *mine, bool *changed, pgd_error *err)
{
    char path[WAL_SPOOL_PATH_MAX + 16], have[128];
    bool missing;

    *changed = false;
    snprintf(path, sizeof(path), "%s/" WAL_SPOOL_SETTINGS, dir);
    if (!wal_spool_read_text(path, have, sizeof(have), &missing, NULL, err))
        return false;
    if (missing)
        return true;
    have[strcspn(have, "\n")] = '\0';
    *changed = strcmp(have, mine) != 0;
    return true;
}
