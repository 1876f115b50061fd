/*
 * target_dir.c - directories a restore writes into: prepared when absent
 * or empty, put back as they were after a failure (see target_dir.h).
 */
#define _GNU_SOURCE
#include "restore/target_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/text.h"

#define TARGET_DIR_MODE       0700 /* PostgreSQL's data directory without group access */
#define TARGET_DIR_MODE_GROUP 0750 /* ... and with it (initdb -g) */
#define TARGET_DIR_NFTW_FDS   32

static bool target_dir_is_empty(const char *path, const char *what, bool *empty, pgd_error *err)
{
    DIR *d = opendir(path);
    struct dirent *de;

    if (d == NULL)
        return err_errno(err, errno, "could not open %s \"%s\"", what, path);
    *empty = true;
    errno = 0;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) {
            *empty = false;
            break;
        }
    }
    if (errno != 0) {
        int e = errno;
        closedir(d);
        return err_errno(err, e, "could not read %s \"%s\"", what, path);
    }
    closedir(d);
    return true;
}

/* Cut the last component: "a/b" -> "a", "/a" -> "/", "a" -> ".". False when nothing is left. */
static bool target_dir_parent(char *p)
{
    char *slash = strrchr(p, '/');

    if (strcmp(p, "/") == 0 || strcmp(p, ".") == 0)
        return false;
    if (slash == NULL) {
        strcpy(p, ".");
        return true;
    }
    while (slash > p && slash[-1] == '/')
        slash--;
    if (slash == p)
        slash[1] = '\0';
    else
        *slash = '\0';
    return true;
}

/* Remove the directories we created, deepest first. */
static void target_dir_remove_created(const target_dir *d)
{
    char p[PATH_MAX];

    if (!d->created)
        return;
    snprintf(p, sizeof(p), "%s", d->path);
    do {
        rmdir(p);
    } while (target_dir_parent(p) && strlen(p) >= d->created_from);
}

/* mkdir -p, remembering the topmost directory we made. */
static bool target_dir_make(target_dir *d, const char *what, pgd_error *err)
{
    char prefix[PATH_MAX];
    size_t len = strlen(d->path);
    struct stat st;

    for (size_t i = 1; i <= len; i++) {
        if (i < len && (d->path[i] != '/' || d->path[i - 1] == '/'))
            continue;
        memcpy(prefix, d->path, i);
        prefix[i] = '\0';
        if (mkdir(prefix, TARGET_DIR_MODE) == 0) {
            if (!d->created) {
                d->created = true;
                d->created_from = i;
            }
            continue;
        }
        if (errno == EEXIST && i < len && stat(prefix, &st) == 0 && S_ISDIR(st.st_mode))
            continue;
        err_errno(err, errno, "could not create %s \"%s\"", what, i < len ? prefix : d->path);
        target_dir_remove_created(d);
        d->created = false;
        return false;
    }
    return true;
}

/* flock the directory: held until target_dir_release, or the process ends. */
static bool target_dir_lock(target_dir *d, const char *what, pgd_error *err)
{
    d->lock_fd = open(d->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d->lock_fd < 0)
        return err_errno(err, errno, "could not open %s \"%s\"", what, d->path);
    if (flock(d->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        close(d->lock_fd);
        if (e == EWOULDBLOCK)
            return err_set(err, "%s \"%s\" is in use by another restore", what, d->path);
        return err_errno(err, e, "could not lock %s \"%s\"", what, d->path);
    }
    d->locked = true;
    return true;
}

void target_dir_release(target_dir *d)
{
    if (d->locked)
        close(d->lock_fd);
    d->locked = false;
}

static bool target_dir_take(target_dir *d, const char *path, const char *what, bool existing,
                            pgd_error *err);

bool target_dir_prepare(target_dir *d, const char *path, const char *what, pgd_error *err)
{
    return target_dir_take(d, path, what, false, err);
}

bool target_dir_prepare_existing(target_dir *d, const char *path, const char *what, pgd_error *err)
{
    return target_dir_take(d, path, what, true, err);
}

static bool target_dir_take(target_dir *d, const char *path, const char *what, bool existing,
                            pgd_error *err)
{
    struct stat st;
    size_t len;
    bool empty = false;

    memset(d, 0, sizeof(*d));
    if (!str_format(d->path, sizeof(d->path), "%s", path) || path[0] == '\0')
        return err_set(err, "invalid %s \"%s\"", what, path);
    len = strlen(d->path);
    while (len > 1 && d->path[len - 1] == '/')
        d->path[--len] = '\0';
    if (stat(d->path, &st) == 0) {
        if (!S_ISDIR(st.st_mode))
            return err_set(err, "%s \"%s\" exists and is not a directory", what, d->path);
        /* locked first: another restore may be filling it right now */
        if (!target_dir_lock(d, what, err))
            return false;
        if (!target_dir_is_empty(d->path, what, &empty, err) ||
            (!empty && !existing &&
             !err_set(err,
                      "%s \"%s\" is not empty (--delta restores into an existing data "
                      "directory)",
                      what, d->path))) {
            target_dir_release(d);
            return false;
        }
        d->reused = !empty;
        if (realpath(d->path, d->real) == NULL) {
            err_errno(err, errno, "could not resolve %s \"%s\"", what, d->path);
            target_dir_release(d);
            return false;
        }
        d->mode = st.st_mode & 07777;
        if (d->mode != TARGET_DIR_MODE && d->mode != TARGET_DIR_MODE_GROUP) {
            if (chmod(d->real, TARGET_DIR_MODE) != 0) {
                int e = errno;
                d->real[0] = '\0';
                target_dir_release(d);
                return err_errno(err, e, "could not set mode of %s \"%s\"", what, d->path);
            }
            d->mode_changed = true;
        }
        return true;
    }
    if (errno != ENOENT)
        return err_errno(err, errno, "could not stat %s \"%s\"", what, d->path);
    if (lstat(d->path, &st) == 0)
        return err_set(err, "%s \"%s\" is a symbolic link to nothing", what, d->path);
    if (!target_dir_make(d, what, err))
        return false;
    if (!target_dir_lock(d, what, err))
        return false; /* another restore took the directory we just made: it is theirs now */
    if (realpath(d->path, d->real) == NULL) {
        err_errno(err, errno, "could not resolve %s \"%s\"", what, d->path);
        target_dir_release(d);
        target_dir_remove_created(d);
        d->real[0] = '\0';
        return false;
    }
    return true;
}

static int target_dir_remove_entry(const char *path, const struct stat *st, int flag,
                                   struct FTW *ftw)
{
    (void)st;
    (void)flag;
    if (ftw->level > 0) /* the directory itself stays */
        remove(path);
    return 0;
}

void target_dir_cleanup(const target_dir *d)
{
    /* what was in it is the user's: a failed --delta leaves it as it is (see target_dir.h) */
    if (d->real[0] == '\0' || d->reused)
        return;
    /* inside the real directory: a symlink given as the target stays a symlink */
    nftw(d->real, target_dir_remove_entry, TARGET_DIR_NFTW_FDS, FTW_DEPTH | FTW_PHYS);
    if (d->created)
        target_dir_remove_created(d);
    else if (d->mode_changed)
        chmod(d->real, d->mode);
}

void target_dir_add_durable(const target_dir *d, durable_list *l)
{
    char p[PATH_MAX];

    durable_list_add(l, d->real, true);
    if (!d->created)
        return;
    /* each directory we made holds the name of the next; the parent of the topmost, its name */
    snprintf(p, sizeof(p), "%s", d->path);
    while (target_dir_parent(p)) {
        durable_list_add(l, p, true);
        if (strlen(p) < d->created_from)
            break;
    }
}

bool target_dir_resolve(const char *path, char *out, size_t outlen, pgd_error *err)
{
    char abs[PATH_MAX], head[PATH_MAX], cwd[PATH_MAX];
    const char *rest;
    size_t n;

    if (path[0] != '/') {
        if (getcwd(cwd, sizeof(cwd)) == NULL)
            return err_errno(err, errno, "could not get the current directory");
        if (!str_format(abs, sizeof(abs), "%s/%s", cwd, path))
            return err_set(err, "path too long: \"%s/%s\"", cwd, path);
    } else if (!str_format(abs, sizeof(abs), "%s", path)) {
        return err_set(err, "path too long: \"%s\"", path);
    }
    /* the longest prefix that exists, resolved; what does not exist cannot be a link */
    snprintf(head, sizeof(head), "%s", abs);
    while (realpath(head, out) == NULL) {
        if (errno != ENOENT && errno != ENOTDIR)
            return err_errno(err, errno, "could not resolve \"%s\"", head);
        if (!target_dir_parent(head))
            return err_errno(err, errno, "could not resolve \"%s\"", abs);
    }
    rest = abs + strlen(head);
    while (*rest != '\0') {
        size_t len;
        rest += strspn(rest, "/");
        len = strcspn(rest, "/");
        if (len == 0 || (len == 1 && rest[0] == '.')) {
            rest += len;
            continue;
        }
        if (len == 2 && rest[0] == '.' && rest[1] == '.') {
            target_dir_parent(out);
        } else {
            n = strlen(out);
            if (!str_format(out + n, outlen - n, "%s%.*s", strcmp(out, "/") == 0 ? "" : "/",
                            (int)len, rest))
                return err_set(err, "path too long: \"%s\"", abs);
        }
        rest += len;
    }
    return true;
}

bool target_dir_is_within(const char *path, const char *dir)
{
    size_t n = strlen(dir);

    if (strcmp(dir, "/") == 0)
        return true;
    return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

bool target_dir_owner(const char *path, uid_t *uid, gid_t *gid, pgd_error *err)
{
    char probe[PATH_MAX];
    struct stat st;

    if (!str_format(probe, sizeof(probe), "%s", path))
        return err_set(err, "path too long: \"%s\"", path);
    for (;;) {
        if (stat(probe, &st) == 0)
            break;
        if (errno != ENOENT || strcmp(probe, "/") == 0 || strrchr(probe, '/') == NULL)
            return err_errno(err, errno, "could not look at \"%s\"", probe);
        *strrchr(probe, '/') = '\0';
        if (probe[0] == '\0')
            snprintf(probe, sizeof(probe), "/");
    }
    *uid = st.st_uid;
    *gid = st.st_gid;
    return true;
}

/* nftw's callback takes no argument: a restore gives its files away once, at its end */
static uid_t target_dir_chown_uid;
static gid_t target_dir_chown_gid;

static int target_dir_chown_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)flag;
    (void)ftw;
    if (st->st_uid == target_dir_chown_uid && st->st_gid == target_dir_chown_gid)
        return 0;
    return lchown(path, target_dir_chown_uid, target_dir_chown_gid) == 0 ? 0 : errno;
}

bool target_dir_chown(const char *dir, uid_t uid, gid_t gid, pgd_error *err)
{
    int rc;

    target_dir_chown_uid = uid;
    target_dir_chown_gid = gid;
    rc = nftw(dir, target_dir_chown_one, TARGET_DIR_NFTW_FDS, FTW_PHYS);
    if (rc != 0)
        return err_errno(err, rc > 0 ? rc : errno,
                         "could not give the files under \"%s\" to user %u (group %u)", dir,
                         (unsigned)uid, (unsigned)gid);
    return true;
}
