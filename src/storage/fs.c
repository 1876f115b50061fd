/*
 * fs.c - the local-directory repository.
 *
 * Atomic objects: write "<name>.tmp.<pid>.<n>", fsync, rename into place,
 * fsync the directory. Writing must not fill the page cache either (a
 * backup that pushes hot data out to cache its own output defeats the
 * point), so newly written ranges are pushed to disk with sync_file_range()
 * and then dropped with POSIX_FADV_DONTNEED. That drops only pages of the
 * tool's own new files, never pages someone else cached.
 */
#define _GNU_SOURCE
#include "storage/storage.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/sync_dir.h"
#include "util/xmalloc.h"

/* Write-behind window: start writeback of each window, wait for and drop the previous one. */
#define FS_FLUSH_WINDOW (8u * 1024 * 1024)
#define FS_READ_CHUNK   (1024 * 1024)

typedef struct fs_storage {
    storage base;
    char *root;
    /*
     * Run as root into a repository another user owns (postgres, whose archive_command writes
     * it): every file and directory created goes to that user, so that the repository never
     * becomes half root's (objects postgres can then neither read nor remove). Decided at the
     * first write, from the root directory's owner.
     */
    bool owner_known, give_away;
    uid_t owner_uid;
    gid_t owner_gid;
} fs_storage;

static atomic_uint tmp_counter;

static bool fs_full_path(fs_storage *fs, const char *path, char *out, size_t outlen, pgd_error *err)
{
    if ((size_t)snprintf(out, outlen, "%s/%s", fs->root, path) >= outlen)
        return err_set(err, "path too long: \"%s/%s\"", fs->root, path);
    return true;
}

/* Whether what this process creates goes to the repository's owner (fs_storage.give_away). */
static void fs_decide_owner(fs_storage *fs)
{
    struct stat st;

    if (fs->owner_known)
        return;
    fs->owner_known = true;
    if (geteuid() != 0 || stat(fs->root, &st) != 0 || st.st_uid == 0)
        return;
    fs->give_away = true;
    fs->owner_uid = st.st_uid;
    fs->owner_gid = st.st_gid;
}

/* Give the new file (fd, or path when fd is -1) to the repository's owner. */
static bool fs_give(fs_storage *fs, const char *path, int fd, pgd_error *err)
{
    if ((fd >= 0 ? fchown(fd, fs->owner_uid, fs->owner_gid)
                 : lchown(path, fs->owner_uid, fs->owner_gid)) != 0)
        return err_errno(err, errno, "could not give \"%s\" to user %u, who owns repository \"%s\"",
                         path, (unsigned)fs->owner_uid, fs->root);
    return true;
}

/*
 * mkdir -p of the directory part of `full` (mode 0750). Each directory it
 * creates is made durable in its parent: the fsync of a file's own
 * directory at close does not cover the directories above it.
 */
static bool fs_make_parents(fs_storage *fs, char *full, pgd_error *err)
{
    for (char *p = full + 1; *p != '\0'; p++) {
        bool ok = true;

        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(full, 0750) == 0)
            ok = (!fs->give_away || fs_give(fs, full, -1, err)) && sync_dir_of_new(full, err);
        else if (errno != EEXIST)
            ok = err_errno(err, errno, "could not create directory \"%s\"", full);
        *p = '/';
        if (!ok)
            return false;
    }
    return true;
}

/* ---- writer ---- */

typedef struct fs_writer {
    out_stream base;
    int fd;
    unsigned flags;
    uint64_t written;
    uint64_t flush_started; /* writeback started up to here */
    uint64_t dropped;       /* written, synced and dropped up to here */
    bool no_flush_behind;   /* sync_file_range is not supported here */
    char final_path[PATH_MAX];
    char tmp_path[PATH_MAX + 32];
} fs_writer;

/*
 * sync_file_range's answer: false with the error when writing back failed.
 * Its wait reports a writeback error once per open file, and the fdatasync
 * at close would then succeed: the error must be taken here. Where the
 * call is not supported (some file systems, or not a regular file), the
 * writer stops flushing behind; its fdatasync still syncs everything.
 */
static bool fs_writer_range_synced(fs_writer *w, int rc, pgd_error *err)
{
    if (rc == 0)
        return true;
    if (errno == EINVAL || errno == ENOSYS || errno == ESPIPE || errno == EOPNOTSUPP) {
        w->no_flush_behind = true;
        return true;
    }
    return err_errno(err, errno, "could not write file \"%s\" back to disk", w->tmp_path);
}

/* Wait for and drop [dropped, flush_started); start writeback of [flush_started, written). */
static bool fs_writer_flush_behind(fs_writer *w, pgd_error *err)
{
    off_t behind = (off_t)(w->flush_started - w->dropped);
    off_t ahead = (off_t)(w->written - w->flush_started);
    int rc;

    if (behind > 0) {
        rc = sync_file_range(w->fd, (off_t)w->dropped, behind,
                             SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                                 SYNC_FILE_RANGE_WAIT_AFTER);
        if (!fs_writer_range_synced(w, rc, err))
            return false;
        if (w->no_flush_behind)
            return true;
        posix_fadvise(w->fd, (off_t)w->dropped, behind, POSIX_FADV_DONTNEED);
        w->dropped = w->flush_started;
    }
    rc = sync_file_range(w->fd, (off_t)w->flush_started, ahead, SYNC_FILE_RANGE_WRITE);
    if (!fs_writer_range_synced(w, rc, err))
        return false;
    w->flush_started = w->written;
    return true;
}

static bool fs_writer_write(out_stream *s, const void *buf, size_t len, pgd_error *err)
{
    fs_writer *w = (fs_writer *)s;
    const char *p = buf;

    while (len > 0) {
        ssize_t n = write(w->fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return err_errno(err, errno, "could not write file \"%s\"", w->tmp_path);
        }
        p += n;
        len -= (size_t)n;
        w->written += (uint64_t)n;
    }
    if (!w->no_flush_behind && w->written - w->flush_started >= FS_FLUSH_WINDOW)
        return fs_writer_flush_behind(w, err);
    return true;
}

static void fs_writer_free(fs_writer *w, bool remove_tmp)
{
    if (w->fd >= 0)
        close(w->fd);
    if (remove_tmp)
        unlink(w->tmp_path);
    free(w);
}

static bool fs_writer_close(out_stream *s, pgd_error *err)
{
    fs_writer *w = (fs_writer *)s;
    char final_path[PATH_MAX];

    if (fdatasync(w->fd) != 0) {
        err_errno(err, errno, "could not fsync file \"%s\"", w->tmp_path);
        fs_writer_free(w, true);
        return false;
    }
    posix_fadvise(w->fd, 0, 0, POSIX_FADV_DONTNEED);
    if (w->flags & STORAGE_WRITE_NO_REPLACE) {
        if (renameat2(AT_FDCWD, w->tmp_path, AT_FDCWD, w->final_path, RENAME_NOREPLACE) != 0) {
            bool exists = errno == EEXIST;

            err_errno(err, errno, "could not rename \"%s\" to \"%s\"", w->tmp_path, w->final_path);
            if (exists)
                err_mark(err, PGD_ERR_EXISTS);
            fs_writer_free(w, true);
            return false;
        }
    } else if (rename(w->tmp_path, w->final_path) != 0) {
        err_errno(err, errno, "could not rename \"%s\" to \"%s\"", w->tmp_path, w->final_path);
        fs_writer_free(w, true);
        return false;
    }
    snprintf(final_path, sizeof(final_path), "%s", w->final_path);
    fs_writer_free(w, false);
    return sync_dir_of(final_path, err);
}

static void fs_writer_abort(out_stream *s)
{
    fs_writer_free((fs_writer *)s, true);
}

static const out_stream_ops fs_writer_ops = {fs_writer_write, fs_writer_close, fs_writer_abort};

static out_stream *fs_write_open(storage *s, const char *path, unsigned flags, pgd_error *err)
{
    fs_storage *fs = (fs_storage *)s;
    fs_writer *w = xcalloc(1, sizeof(*w));

    w->base.ops = &fs_writer_ops;
    w->fd = -1;
    w->flags = flags;
    fs_decide_owner(fs);
    if (!fs_full_path(fs, path, w->final_path, sizeof(w->final_path), err) ||
        !fs_make_parents(fs, w->final_path, err)) {
        free(w);
        return NULL;
    }
    snprintf(w->tmp_path, sizeof(w->tmp_path), "%s.tmp.%ld.%u", w->final_path, (long)getpid(),
             atomic_fetch_add(&tmp_counter, 1));
    w->fd = open(w->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
    if (w->fd < 0) {
        err_errno(err, errno, "could not create file \"%s\"", w->tmp_path);
        free(w);
        return NULL;
    }
    if (fs->give_away && !fs_give(fs, w->tmp_path, w->fd, err)) {
        close(w->fd);
        unlink(w->tmp_path);
        free(w);
        return NULL;
    }
    return &w->base;
}

/* ---- reader ---- */

/*
 * Reading must not fill the page cache either (verify re-reads a whole
 * repository, restore and wal-fetch read backups and WAL once): what was
 * read is dropped every FS_FLUSH_WINDOW bytes and at close.
 */
typedef struct fs_reader {
    in_stream base;
    int fd;
    uint64_t offset, dropped;
    char path[PATH_MAX];
} fs_reader;

static bool fs_reader_read(in_stream *s, void *buf, size_t len, size_t *n, pgd_error *err)
{
    fs_reader *r = (fs_reader *)s;

    for (;;) {
        ssize_t got = read(r->fd, buf, len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return err_errno(err, errno, "could not read file \"%s\"", r->path);
        *n = (size_t)got;
        r->offset += (uint64_t)got;
        if (r->offset - r->dropped >= FS_FLUSH_WINDOW) {
            posix_fadvise(r->fd, (off_t)r->dropped, (off_t)(r->offset - r->dropped),
                          POSIX_FADV_DONTNEED);
            r->dropped = r->offset;
        }
        return true;
    }
}

static void fs_reader_close(in_stream *s)
{
    fs_reader *r = (fs_reader *)s;

    posix_fadvise(r->fd, 0, 0, POSIX_FADV_DONTNEED);
    close(r->fd);
    free(r);
}

static const in_stream_ops fs_reader_ops = {fs_reader_read, fs_reader_close};

static in_stream *fs_read_open(storage *s, const char *path, bool *missing, pgd_error *err)
{
    fs_storage *fs = (fs_storage *)s;
    fs_reader *r = xcalloc(1, sizeof(*r));

    *missing = false;
    r->base.ops = &fs_reader_ops;
    if (!fs_full_path(fs, path, r->path, sizeof(r->path), err)) {
        free(r);
        return NULL;
    }
    r->fd = open(r->path, O_RDONLY | O_CLOEXEC);
    if (r->fd < 0) {
        if (errno == ENOENT)
            *missing = true;
        else
            err_errno(err, errno, "could not open file \"%s\"", r->path);
        free(r);
        return NULL;
    }
    posix_fadvise(r->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    return &r->base;
}

static bool fs_exists(storage *s, const char *path, bool *exists, pgd_error *err)
{
    fs_storage *fs = (fs_storage *)s;
    char full[PATH_MAX];
    struct stat st;

    if (!fs_full_path(fs, path, full, sizeof(full), err))
        return false;
    if (stat(full, &st) == 0) {
        *exists = true;
        return true;
    }
    if (errno == ENOENT) {
        *exists = false;
        return true;
    }
    return err_errno(err, errno, "could not stat \"%s\"", full);
}

static bool fs_list(storage *s, const char *dir, storage_list_cb cb, void *arg, pgd_error *err)
{
    fs_storage *fs = (fs_storage *)s;
    char full[PATH_MAX];
    struct dirent *de;
    DIR *d;
    bool ok = true;

    if (!fs_full_path(fs, dir, full, sizeof(full), err))
        return false;
    d = opendir(full);
    if (d == NULL) {
        if (errno == ENOENT)
            return true;
        return err_errno(err, errno, "could not open directory \"%s\"", full);
    }
    while (ok && (errno = 0, de = readdir(d)) != NULL) {
        char child[PATH_MAX];
        struct stat st;

        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
            strstr(de->d_name, ".tmp.") != NULL)
            continue;
        if ((size_t)snprintf(child, sizeof(child), "%s/%s", full, de->d_name) >= sizeof(child))
            continue;
        if (lstat(child, &st) != 0) {
            if (errno == ENOENT)
                continue;
            ok = err_errno(err, errno, "could not stat \"%s\"", child);
            break;
        }
        ok = cb(arg, de->d_name, (uint64_t)st.st_size, S_ISDIR(st.st_mode), err);
    }
    if (ok && errno != 0)
        ok = err_errno(err, errno, "could not read directory \"%s\"", full);
    closedir(d);
    return ok;
}

static bool fs_remove(storage *s, const char *path, pgd_error *err)
{
    fs_storage *fs = (fs_storage *)s;
    char full[PATH_MAX];

    if (!fs_full_path(fs, path, full, sizeof(full), err))
        return false;
    if (unlink(full) != 0 && errno != ENOENT) {
        if (errno == EISDIR && rmdir(full) == 0)
            return true;
        return err_errno(err, errno, "could not remove \"%s\"", full);
    }
    return true;
}

/*
 * Remove temporary files under `full` (recursively) last written at or
 * before `cutoff` (seconds, as st_mtime counts them: with an age of 0, a file
 * written in the current second is stale too, as S3 uploads are). of: only
 * the temporary files of the object of that name in `full`, not recursively.
 */
static bool fs_remove_stale_under(const char *full, const char *of, time_t cutoff, pgd_error *err)
{
    struct dirent *de;
    DIR *d = opendir(full);
    bool ok = true;

    if (d == NULL) {
        if (errno == ENOENT)
            return true;
        return err_errno(err, errno, "could not open directory \"%s\"", full);
    }
    while (ok && (errno = 0, de = readdir(d)) != NULL) {
        char child[PATH_MAX];
        struct stat st;

        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        /*
         * Only a directory or a temporary file is looked at further: the
         * direct wal-push sweeps its timeline's directory after every push,
         * and one lstat per archived segment made that grow with the archive.
         */
        if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN && !storage_is_temp_name(de->d_name))
            continue;
        if (of != NULL && (strncmp(de->d_name, of, strlen(of)) != 0 ||
                           strncmp(de->d_name + strlen(of), ".tmp.", 5) != 0 ||
                           !storage_is_temp_name(de->d_name)))
            continue;
        if ((size_t)snprintf(child, sizeof(child), "%s/%s", full, de->d_name) >= sizeof(child))
            continue;
        if (lstat(child, &st) != 0) {
            if (errno != ENOENT)
                ok = err_errno(err, errno, "could not stat \"%s\"", child);
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            if (of == NULL)
                ok = fs_remove_stale_under(child, NULL, cutoff, err);
        } else if (S_ISREG(st.st_mode) && storage_is_temp_name(de->d_name) &&
                   st.st_mtime <= cutoff && unlink(child) != 0 && errno != ENOENT) {
            ok = err_errno(err, errno, "could not remove stale temporary file \"%s\"", child);
        }
    }
    if (ok && errno != 0)
        ok = err_errno(err, errno, "could not read directory \"%s\"", full);
    closedir(d);
    return ok;
}

static bool fs_remove_stale_temp(storage *s, const char *dir, int64_t older_than_s, pgd_error *err)
{
    fs_storage *fs = (fs_storage *)s;
    char full[PATH_MAX];

    if (!fs_full_path(fs, dir, full, sizeof(full), err))
        return false;
    return fs_remove_stale_under(full, NULL, time(NULL) - (time_t)older_than_s, err);
}

static bool fs_remove_stale_temp_of(storage *s, const char *path, int64_t older_than_s,
                                    pgd_error *err)
{
    fs_storage *fs = (fs_storage *)s;
    char full[PATH_MAX], dir[PATH_MAX];
    const char *slash;

    if (!fs_full_path(fs, path, full, sizeof(full), err))
        return false;
    slash = strrchr(full, '/'); /* full is "<root>/<path>" */
    snprintf(dir, sizeof(dir), "%.*s", slash == full ? 1 : (int)(slash - full), full);
    return fs_remove_stale_under(dir, slash + 1, time(NULL) - (time_t)older_than_s, err);
}

/* fsync the object and the directory that holds it. */
static bool fs_sync(storage *s, const char *path, pgd_error *err)
{
    fs_storage *fs = (fs_storage *)s;
    char full[PATH_MAX];

    return fs_full_path(fs, path, full, sizeof(full), err) && sync_file(full, err) &&
           sync_dir_of(full, err);
}

/*
 * The repository's directory: missing when it, or a directory above it,
 * does not exist; an error when it is something else, or cannot be looked
 * at (permission).
 */
static bool fs_root_exists(storage *s, bool *exists, pgd_error *err)
{
    fs_storage *fs = (fs_storage *)s;
    struct stat st;

    *exists = false;
    if (stat(fs->root, &st) != 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return true;
        return err_errno(err, errno, "could not stat repository \"%s\"", fs->root);
    }
    if (!S_ISDIR(st.st_mode))
        return err_set(err, "repository \"%s\" is not a directory", fs->root);
    *exists = true;
    return true;
}

static void fs_free(storage *s)
{
    fs_storage *fs = (fs_storage *)s;

    free(fs->root);
    free(fs->base.uri);
    free(fs);
}

static const storage_ops fs_ops = {
    .write_open = fs_write_open,
    .read_open = fs_read_open,
    .exists = fs_exists,
    .list = fs_list,
    .remove = fs_remove,
    .free = fs_free,
    .remove_stale_temp = fs_remove_stale_temp,
    .remove_stale_temp_of = fs_remove_stale_temp_of,
    .sync = fs_sync,
    .root_exists = fs_root_exists,
};

storage *storage_fs_new(const char *root)
{
    fs_storage *fs = xcalloc(1, sizeof(*fs));
    size_t len = strlen(root);

    fs->base.ops = &fs_ops;
    fs->root = xstrdup(root);
    while (len > 1 && fs->root[len - 1] == '/')
        fs->root[--len] = '\0';
    fs->base.uri = xstrdup(fs->root);
    return &fs->base;
}
