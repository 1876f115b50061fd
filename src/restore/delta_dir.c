/*
 * delta_dir.c - restore --delta: the refusal checks, pg_control moved
 * aside, and the removal of what the backup does not have (see
 * delta_dir.h).
 */
#define _GNU_SOURCE
#include "restore/delta_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/log.h"
#include "util/sync_dir.h"
#include "util/text.h"

#define DELTA_DIR_PID_FILE     "postmaster.pid"
#define DELTA_DIR_PID_TEXT_MAX 32
#define DELTA_DIR_TABLESPACES  "pg_tblspc/"

/* Does `dir` exist with entries in it? */
static bool delta_dir_has_entries(const char *dir, bool *has, pgd_error *err)
{
    DIR *d = opendir(dir);
    struct dirent *de;

    *has = false;
    if (d == NULL) {
        if (errno == ENOENT)
            return true;
        return err_errno(err, errno, "could not open target directory \"%s\"", dir);
    }
    errno = 0;
    while (!*has && (de = readdir(d)) != NULL)
        *has = strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
    if (errno != 0) {
        int e = errno;
        closedir(d);
        return err_errno(err, e, "could not read target directory \"%s\"", dir);
    }
    closedir(d);
    return true;
}

/* A server runs in `dir` when postmaster.pid names a live process (as pg_ctl decides). */
static bool delta_dir_check_no_server(const char *dir, pgd_error *err)
{
    char path[PATH_MAX], text[DELTA_DIR_PID_TEXT_MAX] = "";
    FILE *f;
    long pid;

    if (!str_format(path, sizeof(path), "%s/" DELTA_DIR_PID_FILE, dir))
        return err_set(err, "path too long: \"%s/" DELTA_DIR_PID_FILE "\"", dir);
    f = fopen(path, "re");
    if (f == NULL) {
        if (errno == ENOENT)
            return true;
        return err_errno(err, errno, "could not open file \"%s\"", path);
    }
    if (fgets(text, sizeof(text), f) == NULL)
        text[0] = '\0';
    fclose(f);
    pid = strtol(text, NULL, 10);
    /* an empty or garbled file is what a postmaster leaves while it starts: refuse too */
    if (pid <= 0)
        return err_set(err,
                       "refusing to restore into \"%s\": it has a file \"%s\" that names no "
                       "process; a server may be starting (remove it if none is)",
                       dir, path);
    if (kill((pid_t)pid, 0) == 0 || errno == EPERM)
        return err_set(err,
                       "refusing to restore into \"%s\": a server is running in it (%s, pid %ld); "
                       "stop it first",
                       dir, DELTA_DIR_PID_FILE, pid);
    return true;
}

bool delta_dir_read_system_identifier(const char *control_path, char *out, size_t outlen,
                                      pgd_error *err)
{
    /* ControlFileData opens with the system identifier, in the machine's byte order */
    uint64_t sysid;
    ssize_t n;
    int fd = open(control_path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

    if (fd < 0)
        return err_errno(err, errno, "could not open file \"%s\"", control_path);
    n = read(fd, &sysid, sizeof(sysid));
    if (n < 0) {
        int e = errno;
        close(fd);
        return err_errno(err, e, "could not read file \"%s\"", control_path);
    }
    close(fd);
    if (n != (ssize_t)sizeof(sysid))
        return err_set(err, "could not read file \"%s\": it is truncated", control_path);
    snprintf(out, outlen, "%" PRIu64, sysid);
    return true;
}

bool delta_dir_check(const char *dir, const char *system_identifier, pgd_error *err)
{
    char control[PATH_MAX], found[32];
    struct stat st;
    bool has;

    if (!delta_dir_has_entries(dir, &has, err))
        return false;
    if (!has)
        return true;
    if (!delta_dir_check_no_server(dir, err))
        return false;
    /* pg_control, or where an interrupted --delta restore left it (delta_dir_retire_control) */
    if (!str_format(control, sizeof(control), "%s/" EXTRACT_PG_CONTROL, dir))
        return err_set(err, "path too long: \"%s/" EXTRACT_PG_CONTROL "\"", dir);
    if (lstat(control, &st) != 0 &&
        !str_format(control, sizeof(control), "%s/" EXTRACT_PG_CONTROL EXTRACT_PG_CONTROL_TMP, dir))
        return err_set(err, "path too long: \"%s\"", dir);
    if (lstat(control, &st) != 0 || !S_ISREG(st.st_mode))
        return err_set(err,
                       "refusing to restore into \"%s\": it is not empty and has no "
                       "regular file \"" EXTRACT_PG_CONTROL "\", so it is not a data directory "
                       "of this system",
                       dir);
    if (!delta_dir_read_system_identifier(control, found, sizeof(found), err))
        return false;
    if (strcmp(found, system_identifier) != 0)
        return err_set(err,
                       "refusing to restore into \"%s\": it is a data directory of another "
                       "system (system identifier %s, the backup's is %s)",
                       dir, found, system_identifier);
    return true;
}

bool delta_dir_retire_control(const extract_plan *p, pgd_error *err)
{
    char control[PATH_MAX], tmp[PATH_MAX];

    if (!extract_dest_path(p, EXTRACT_PG_CONTROL, control, sizeof(control), err))
        return false;
    if (!str_format(tmp, sizeof(tmp), "%s" EXTRACT_PG_CONTROL_TMP, control))
        return err_set(err, "path too long: \"%s" EXTRACT_PG_CONTROL_TMP "\"", control);
    if (rename(control, tmp) != 0) {
        if (errno == ENOENT)
            return true;
        return err_errno(err, errno, "could not rename file \"%s\" to \"%s\"", control, tmp);
    }
    /* durable before any other file changes: a crash must not bring the old one back */
    return sync_dir_of(control, err);
}

/* rm -r without following links. */
static bool delta_dir_remove_tree(const char *path, bool is_dir, pgd_error *err)
{
    DIR *d;
    struct dirent *de;

    if (!is_dir) {
        if (unlink(path) != 0 && errno != ENOENT)
            return err_errno(err, errno, "could not remove file \"%s\"", path);
        return true;
    }
    d = opendir(path);
    if (d == NULL)
        return err_errno(err, errno, "could not open directory \"%s\"", path);
    while ((de = readdir(d)) != NULL) {
        char child[PATH_MAX];
        struct stat st;
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (!str_format(child, sizeof(child), "%s/%s", path, de->d_name)) {
            closedir(d);
            return err_set(err, "path too long: \"%s/%s\"", path, de->d_name);
        }
        if (lstat(child, &st) != 0) {
            int e = errno;
            closedir(d);
            return err_errno(err, e, "could not stat \"%s\"", child);
        }
        if (!delta_dir_remove_tree(child, S_ISDIR(st.st_mode), err)) {
            closedir(d);
            return false;
        }
    }
    closedir(d);
    if (rmdir(path) != 0)
        return err_errno(err, errno, "could not remove directory \"%s\"", path);
    return true;
}

/* Does the link at `path` point at `target`? */
static bool delta_dir_link_is(const char *path, const char *target)
{
    char buf[PATH_MAX];
    ssize_t n = readlink(path, buf, sizeof(buf) - 1);

    if (n < 0)
        return false;
    buf[n] = '\0';
    return strcmp(buf, target) == 0;
}

typedef enum { DELTA_KEEP, DELTA_DESCEND, DELTA_REMOVE, DELTA_NOT_OURS } delta_verdict;

typedef struct delta_walk {
    const extract_plan *p;
    const target_dir *dirs;
    size_t removed;
} delta_walk;

/* What to do with the entry at backup path `bpath` (disk: `disk`, stat `st`). */
static delta_verdict delta_dir_judge(const delta_walk *w, const char *bpath, const char *disk,
                                     const struct stat *st, bool in_tablespace, bool top)
{
    const manifest *m = w->p->m;
    size_t spc = strlen(DELTA_DIR_TABLESPACES);
    long idx;

    if (!in_tablespace && strncmp(bpath, DELTA_DIR_TABLESPACES, spc) == 0 &&
        strchr(bpath + spc, '/') == NULL) {
        for (size_t i = 0; i < m->ntablespaces; i++) {
            char oid[16];
            snprintf(oid, sizeof(oid), "%u", m->tablespaces[i].oid);
            if (strcmp(bpath + spc, oid) == 0)
                return S_ISLNK(st->st_mode) && delta_dir_link_is(disk, w->dirs[i + 1].path)
                           ? DELTA_KEEP
                           : DELTA_REMOVE;
        }
    }
    if (strcmp(bpath, EXTRACT_PG_CONTROL EXTRACT_PG_CONTROL_TMP) == 0)
        bpath = EXTRACT_PG_CONTROL;
    idx = manifest_find(m, bpath);
    if (idx >= 0) {
        if (m->files[idx].is_dir)
            return S_ISDIR(st->st_mode) ? DELTA_DESCEND : DELTA_REMOVE;
        return S_ISREG(st->st_mode) && st->st_nlink == 1 ? DELTA_KEEP : DELTA_REMOVE;
    }
    idx = manifest_find_link(m, bpath);
    if (idx >= 0)
        return S_ISLNK(st->st_mode) && delta_dir_link_is(disk, m->links[idx].target) ? DELTA_KEEP
                                                                                     : DELTA_REMOVE;
    return in_tablespace && top ? DELTA_NOT_OURS : DELTA_REMOVE;
}

/* Judge every entry of directory `disk` (backup path `bpath`, "" for the data directory). */
static bool delta_dir_walk(delta_walk *w, const char *disk, const char *bpath, bool in_tablespace,
                           bool top, pgd_error *err)
{
    DIR *d = opendir(disk);
    struct dirent *de;
    bool ok = true;

    if (d == NULL)
        return err_errno(err, errno, "could not open directory \"%s\"", disk);
    while (ok && (de = readdir(d)) != NULL) {
        char child[PATH_MAX], child_b[PATH_MAX];
        struct stat st;
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (!str_format(child, sizeof(child), "%s/%s", disk, de->d_name) ||
            !str_format(child_b, sizeof(child_b), "%s%s%s", bpath, bpath[0] ? "/" : "",
                        de->d_name)) {
            ok = err_set(err, "path too long: \"%s/%s\"", disk, de->d_name);
            break;
        }
        if (lstat(child, &st) != 0) {
            ok = err_errno(err, errno, "could not stat \"%s\"", child);
            break;
        }
        switch (delta_dir_judge(w, child_b, child, &st, in_tablespace, top)) {
        case DELTA_DESCEND:
            ok = delta_dir_walk(w, child, child_b, in_tablespace, false, err);
            break;
        case DELTA_REMOVE:
            log_debug("removing \"%s\": the backup does not have it as it is", child);
            ok = delta_dir_remove_tree(child, S_ISDIR(st.st_mode), err);
            w->removed++;
            break;
        default:
            break;
        }
    }
    closedir(d);
    return ok;
}

bool delta_dir_remove_extra(const extract_plan *p, const target_dir *dirs, size_t *removed,
                            pgd_error *err)
{
    delta_walk w = {.p = p, .dirs = dirs};
    bool ok = delta_dir_walk(&w, dirs[0].real, "", false, true, err);

    for (size_t i = 0; ok && i < p->m->ntablespaces; i++) {
        char bpath[PATH_MAX];
        snprintf(bpath, sizeof(bpath), DELTA_DIR_TABLESPACES "%u", p->m->tablespaces[i].oid);
        ok = delta_dir_walk(&w, dirs[i + 1].real, bpath, true, true, err);
    }
    *removed = w.removed;
    return ok;
}
