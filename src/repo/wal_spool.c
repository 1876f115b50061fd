/*
 * wal_spool.c - the spool of asynchronous archiving and prefetching: its
 * directories, lock, records and prefetched files (layout in wal_spool.h).
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
#include "repo/wal_spool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pg/wal_segment.h"
#include "util/crc32c.h"

#define WAL_SPOOL_OUT       "out"
#define WAL_SPOOL_INFO      "info"
#define WAL_SPOOL_LOCK      "lock"
#define WAL_SPOOL_REQUEST   "request"
#define WAL_SPOOL_SETTINGS  "settings"
#define WAL_SPOOL_WAKE      "wake"
#define WAL_SPOOL_OK_EXT    ".ok"
#define WAL_SPOOL_ERROR_EXT ".error"
#define WAL_SPOOL_TMP_EXT   ".tmp"
#define WAL_SPOOL_PART_EXT  ".part"
#define WAL_SPOOL_DIR_MODE  0700 /* records say what the cluster archived: its owner's only */
#define WAL_SPOOL_FILE_MODE 0600
#define WAL_SPOOL_IO_CHUNK  (1024 * 1024)
#define WAL_SPOOL_TEXT_MAX  (PGD_ERROR_MAX + 256) /* a record: a few fields or one message */

/* The long header of a segment's first page (xlog_internal.h): xlp_sysid, xlp_seg_size. */
#define WAL_PAGE_SYSID_OFF    24
#define WAL_PAGE_SEG_SIZE_OFF 32
#define WAL_PAGE_LONG_HEADER  40

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

static bool wal_spool_fsync_dir(const char *dir, pgd_error *err)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (fd < 0)
        return err_errno(err, errno, "could not open spool directory \"%s\"", dir);
    if (fsync(fd) != 0) {
        int e = errno;
        close(fd);
        return err_errno(err, e, "could not fsync spool directory \"%s\"", dir);
    }
    close(fd);
    return true;
}

/*
 * Write `text` to `path` through a temporary name; durable: fsync the file
 * before the rename and the directory after it.
 */
static bool wal_spool_write_text(const char *path, const char *text, bool durable, pgd_error *err)
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
    if (durable && fsync(fd) != 0) {
        err_errno(err, errno, "could not fsync spool file \"%s\"", tmp);
        goto fail;
    }
    if (close(fd) != 0) {
        fd = -1;
        err_errno(err, errno, "could not write spool file \"%s\"", tmp);
        goto fail;
    }
    fd = -1;
    if (rename(tmp, path) != 0) {
        err_errno(err, errno, "could not rename \"%s\" to \"%s\"", tmp, path);
        goto fail;
    }
    if (durable) {
        char dir[WAL_SPOOL_PATH_MAX];
        snprintf(dir, sizeof(dir), "%s", path);
        return wal_spool_fsync_dir(dirname(dir), err);
    }
    return true;
fail:
    if (fd >= 0)
        close(fd);
    unlink(tmp);
    return false;
}

/* Read a small text file; *missing (no error) when it does not exist. */
static bool wal_spool_read_text(const char *path, char *buf, size_t buflen, bool *missing,
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
    if (ftruncate(*fd, 0) != 0 || pwrite(*fd, pid, (size_t)len, 0) != len) {
        int e = errno;
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

/* ---- push records ---- */

static bool wal_spool_record_path(const char *dir, const char *name, wal_record_kind kind,
                                  char *out, size_t outlen, pgd_error *err)
{
    if (wal_segment_file_kind(name) == WAL_FILE_UNKNOWN)
        return err_set(err, "\"%s\" is not a WAL file name", name);
    snprintf(out, outlen, "%s/" WAL_SPOOL_OUT "/%s%s", dir, name,
             kind == WAL_RECORD_OK ? WAL_SPOOL_OK_EXT : WAL_SPOOL_ERROR_EXT);
    return true;
}

bool wal_spool_record_ok(const char *dir, const char *name, const wal_file_sum *sum, pgd_error *err)
{
    char path[WAL_SPOOL_PATH_MAX + WAL_NAME_MAX], text[128];

    if (!wal_spool_record_path(dir, name, WAL_RECORD_OK, path, sizeof(path), err))
        return false;
    snprintf(text, sizeof(text), "size %" PRIu64 "\ncrc32c %08" PRIx32 "\n", sum->size, sum->crc);
    return wal_spool_write_text(path, text, true, err);
}

bool wal_spool_record_error(const char *dir, const char *name, const char *msg, pgd_error *err)
{
    char path[WAL_SPOOL_PATH_MAX + WAL_NAME_MAX], text[WAL_SPOOL_TEXT_MAX];

    if (!wal_spool_record_path(dir, name, WAL_RECORD_ERROR, path, sizeof(path), err))
        return false;
    snprintf(text, sizeof(text), "%s\n", msg);
    return wal_spool_write_text(path, text, false, err);
}

bool wal_spool_record_remove(const char *dir, const char *name, wal_record_kind kind,
                             pgd_error *err)
{
    char path[WAL_SPOOL_PATH_MAX + WAL_NAME_MAX];

    if (!wal_spool_record_path(dir, name, kind, path, sizeof(path), err))
        return false;
    if (unlink(path) != 0 && errno != ENOENT)
        return err_errno(err, errno, "could not remove spool file \"%s\"", path);
    return true;
}

bool wal_spool_record_read(const char *dir, const char *name, wal_push_record *rec, pgd_error *err)
{
    char path[WAL_SPOOL_PATH_MAX + WAL_NAME_MAX], text[WAL_SPOOL_TEXT_MAX];
    bool missing;
    uint64_t size;
    uint32_t crc;
    int used = 0;

    memset(rec, 0, sizeof(*rec));
    if (!wal_spool_record_path(dir, name, WAL_RECORD_OK, path, sizeof(path), err) ||
        !wal_spool_read_text(path, text, sizeof(text), &missing, &rec->written, err))
        return false;
    if (!missing) {
        if (sscanf(text, "size %" SCNu64 "\ncrc32c %8" SCNx32 "\n%n", &size, &crc, &used) == 2 &&
            (size_t)used == strlen(text)) {
            rec->kind = WAL_RECORD_OK;
            rec->sum.size = size;
            rec->sum.crc = crc;
            return true;
        }
        /* torn by a crash of the file system, or not ours: push again */
        if (!wal_spool_record_remove(dir, name, WAL_RECORD_OK, err))
            return false;
    }
    if (!wal_spool_record_path(dir, name, WAL_RECORD_ERROR, path, sizeof(path), err) ||
        !wal_spool_read_text(path, text, sizeof(text), &missing, &rec->written, err))
        return false;
    if (missing)
        return true;
    text[strcspn(text, "\n")] = '\0';
    rec->kind = WAL_RECORD_ERROR;
    snprintf(rec->msg, sizeof(rec->msg), "%.*s", (int)sizeof(rec->msg) - 1,
             text[0] != '\0' ? text : "the background pusher failed without saying why");
    return true;
}

static bool wal_spool_ends_with(const char *s, const char *suffix, size_t *stem)
{
    size_t ls = strlen(s), lx = strlen(suffix);

    if (ls < lx || strcmp(s + ls - lx, suffix) != 0)
        return false;
    *stem = ls - lx;
    return true;
}

bool wal_spool_record_list(const char *dir, wal_spool_record_cb cb, void *arg, pgd_error *err)
{
    char path[WAL_SPOOL_PATH_MAX + 16];
    struct dirent *de;
    DIR *d;
    bool ok = true;

    snprintf(path, sizeof(path), "%s/" WAL_SPOOL_OUT, dir);
    d = opendir(path);
    if (d == NULL)
        return err_errno(err, errno, "could not open spool directory \"%s\"", path);
    while (ok && (errno = 0, de = readdir(d)) != NULL) {
        char name[WAL_NAME_MAX];
        wal_record_kind kind = WAL_RECORD_NONE;
        size_t stem;

        if (de->d_name[0] == '.')
            continue;
        if (wal_spool_ends_with(de->d_name, WAL_SPOOL_OK_EXT, &stem))
            kind = WAL_RECORD_OK;
        else if (wal_spool_ends_with(de->d_name, WAL_SPOOL_ERROR_EXT, &stem))
            kind = WAL_RECORD_ERROR;
        else
            stem = strlen(de->d_name);
        if (stem >= sizeof(name))
            continue;
        memcpy(name, de->d_name, stem);
        name[stem] = '\0';
        if (kind != WAL_RECORD_NONE && wal_segment_file_kind(name) == WAL_FILE_UNKNOWN)
            kind = WAL_RECORD_NONE;
        if (kind == WAL_RECORD_NONE)
            snprintf(name, sizeof(name), "%.*s", (int)(sizeof(name) - 1), de->d_name);
        ok = cb(arg, name, kind, err);
    }
    if (ok && errno != 0)
        ok = err_errno(err, errno, "could not read spool directory \"%s\"", path);
    closedir(d);
    return ok;
}

static bool wal_spool_sweep_one(void *arg, const char *name, wal_record_kind kind, pgd_error *err)
{
    char path[WAL_SPOOL_PATH_MAX + WAL_NAME_MAX + 16];

    if (kind != WAL_RECORD_NONE || strstr(name, WAL_SPOOL_TMP_EXT ".") == NULL)
        return true;
    snprintf(path, sizeof(path), "%s/" WAL_SPOOL_OUT "/%s", (const char *)arg, name);
    if (unlink(path) != 0 && errno != ENOENT)
        return err_errno(err, errno, "could not remove spool file \"%s\"", path);
    return true;
}

bool wal_spool_record_sweep(const char *dir, pgd_error *err)
{
    return wal_spool_record_list(dir, wal_spool_sweep_one, (void *)dir, err);
}

/* ---- WAL segment names ---- */

static bool wal_spool_hex32(const char *s, uint32_t *out)
{
    uint32_t v = 0;

    for (int i = 0; i < 8; i++) {
        char c = s[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (uint32_t)(c - '0');
        else if (c >= 'A' && c <= 'F')
            v |= (uint32_t)(c - 'A' + 10);
        else
            return false;
    }
    *out = v;
    return true;
}

static bool wal_spool_seg_size_valid(uint32_t seg_size)
{
    return seg_size >= WAL_SEG_SIZE_MIN && seg_size <= WAL_SEG_SIZE_MAX &&
           (seg_size & (seg_size - 1)) == 0;
}

bool wal_spool_segment_parse(const char *name, uint32_t seg_size, uint32_t *tli, uint64_t *segno)
{
    uint32_t log, seg;
    uint64_t per_log;

    if (wal_segment_file_kind(name) != WAL_FILE_SEGMENT || !wal_spool_seg_size_valid(seg_size) ||
        !wal_spool_hex32(name, tli) || !wal_spool_hex32(name + 8, &log) ||
        !wal_spool_hex32(name + 16, &seg))
        return false;
    per_log = (UINT64_C(1) << 32) / seg_size;
    if (seg >= per_log)
        return false;
    *segno = (uint64_t)log * per_log + seg;
    return true;
}

bool wal_spool_segment_after(const char *name, uint32_t seg_size, unsigned n,
                             char out[WAL_SEGMENT_NAME_LEN + 1])
{
    uint32_t tli;
    uint64_t segno, per_log;

    if (!wal_spool_segment_parse(name, seg_size, &tli, &segno))
        return false;
    per_log = (UINT64_C(1) << 32) / seg_size;
    segno += n;
    if (segno / per_log > UINT32_MAX)
        return false;
    snprintf(out, WAL_SEGMENT_NAME_LEN + 1, "%08" PRIX32 "%08" PRIX32 "%08" PRIX32, tli,
             (uint32_t)(segno / per_log), (uint32_t)(segno % per_log));
    return true;
}

bool wal_spool_segment_identity(const char *path, uint64_t *sysid, uint32_t *seg_size,
                                pgd_error *err)
{
    unsigned char page[WAL_PAGE_LONG_HEADER];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n;

    if (fd < 0)
        return err_errno(err, errno, "could not open WAL file \"%s\"", path);
    n = pread(fd, page, sizeof(page), 0);
    close(fd);
    if (n != (ssize_t)sizeof(page))
        return err_set(err, "could not read the first page header of WAL file \"%s\"", path);
    memcpy(sysid, page + WAL_PAGE_SYSID_OFF, sizeof(*sysid));
    memcpy(seg_size, page + WAL_PAGE_SEG_SIZE_OFF, sizeof(*seg_size));
    if (!wal_spool_seg_size_valid(*seg_size))
        return err_set(err, "WAL file \"%s\" has no valid segment size in its first page header",
                       path);
    return true;
}

/* ---- prefetch ---- */

bool wal_spool_request_write(const char *dir, const wal_fetch_request *req, pgd_error *err)
{
    char path[WAL_SPOOL_PATH_MAX + 16], text[128];

    snprintf(path, sizeof(path), "%s/" WAL_SPOOL_REQUEST, dir);
    snprintf(text, sizeof(text), "%s %" PRIu32 " %" PRIu64 " %u\n", req->name, req->seg_size,
             req->sysid, req->count);
    /* not durable: after a crash the next request rewrites it */
    return wal_spool_write_text(path, text, false, err);
}

bool wal_spool_request_read(const char *dir, wal_fetch_request *req, bool *missing, pgd_error *err)
{
    char path[WAL_SPOOL_PATH_MAX + 16], text[256];
    int used = 0;

    snprintf(path, sizeof(path), "%s/" WAL_SPOOL_REQUEST, dir);
    memset(req, 0, sizeof(*req));
    if (!wal_spool_read_text(path, text, sizeof(text), missing, NULL, err))
        return false;
    if (*missing)
        return true;
    if (sscanf(text, "%24s %" SCNu32 " %" SCNu64 " %u\n%n", req->name, &req->seg_size, &req->sysid,
               &req->count, &used) != 4 ||
        (size_t)used != strlen(text) || !wal_spool_seg_size_valid(req->seg_size) ||
        wal_segment_file_kind(req->name) != WAL_FILE_SEGMENT || req->count > WAL_PREFETCH_MAX)
        return err_set(err, "spool file \"%s\" is malformed", path);
    return true;
}

bool wal_spool_request_wants(const wal_fetch_request *req, const char *name)
{
    uint32_t rtli, tli;
    uint64_t rseg, seg;

    if (!wal_spool_segment_parse(req->name, req->seg_size, &rtli, &rseg) ||
        !wal_spool_segment_parse(name, req->seg_size, &tli, &seg))
        return false;
    return tli == rtli && seg > rseg && seg - rseg <= req->count;
}

void wal_spool_part_path(const char *dir, const char *name, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s/%s" WAL_SPOOL_PART_EXT, dir, name);
}

static void wal_spool_entry_path(const char *dir, const char *name, const wal_file_sum *sum,
                                 char *out, size_t outlen)
{
    snprintf(out, outlen, "%s/%s.%" PRIu64 ".%08" PRIx32, dir, name, sum->size, sum->crc);
}

bool wal_spool_entry_publish(const char *dir, const char *name, const char *part,
                             const wal_file_sum *sum, pgd_error *err)
{
    char path[WAL_SPOOL_PATH_MAX + WAL_NAME_MAX + 32];

    wal_spool_entry_path(dir, name, sum, path, sizeof(path));
    if (rename(part, path) != 0)
        return err_errno(err, errno, "could not rename \"%s\" to \"%s\"", part, path);
    return true;
}

/*
 * Parse a spool file name: a published entry "<wal>.<size>.<crc>" (*sum
 * filled) or a part "<wal>.part...". Anything else is not ours.
 */
typedef enum { WAL_SPOOL_FILE_OTHER, WAL_SPOOL_FILE_ENTRY, WAL_SPOOL_FILE_PART } wal_spool_file;

static wal_spool_file wal_spool_parse_file(const char *file, char name[WAL_SEGMENT_NAME_LEN + 1],
                                           wal_file_sum *sum)
{
    uint64_t size;
    uint32_t crc;
    int used = 0;

    if (strlen(file) <= WAL_SEGMENT_NAME_LEN || file[WAL_SEGMENT_NAME_LEN] != '.')
        return WAL_SPOOL_FILE_OTHER;
    memcpy(name, file, WAL_SEGMENT_NAME_LEN);
    name[WAL_SEGMENT_NAME_LEN] = '\0';
    if (wal_segment_file_kind(name) != WAL_FILE_SEGMENT)
        return WAL_SPOOL_FILE_OTHER;
    if (strncmp(file + WAL_SEGMENT_NAME_LEN, WAL_SPOOL_PART_EXT, strlen(WAL_SPOOL_PART_EXT)) == 0)
        return WAL_SPOOL_FILE_PART;
    if (sscanf(file + WAL_SEGMENT_NAME_LEN, ".%" SCNu64 ".%8" SCNx32 "%n", &size, &crc, &used) !=
            2 ||
        (size_t)used != strlen(file + WAL_SEGMENT_NAME_LEN))
        return WAL_SPOOL_FILE_OTHER;
    sum->size = size;
    sum->crc = crc;
    return WAL_SPOOL_FILE_ENTRY;
}

/* Calls cb for every entry or part in dir. */
typedef bool (*wal_spool_entry_cb)(void *arg, const char *file, const char *name,
                                   wal_spool_file type, const wal_file_sum *sum, pgd_error *err);

static bool wal_spool_entry_walk(const char *dir, wal_spool_entry_cb cb, void *arg, pgd_error *err)
{
    struct dirent *de;
    DIR *d = opendir(dir);
    bool ok = true;

    if (d == NULL)
        return err_errno(err, errno, "could not open spool directory \"%s\"", dir);
    while (ok && (errno = 0, de = readdir(d)) != NULL) {
        char name[WAL_SEGMENT_NAME_LEN + 1];
        wal_file_sum sum = {0};
        wal_spool_file type = wal_spool_parse_file(de->d_name, name, &sum);

        if (type != WAL_SPOOL_FILE_OTHER)
            ok = cb(arg, de->d_name, name, type, &sum, err);
    }
    if (ok && errno != 0)
        ok = err_errno(err, errno, "could not read spool directory \"%s\"", dir);
    closedir(d);
    return ok;
}

typedef struct wal_spool_find {
    const char *name;
    bool ready, partial;
    char file[WAL_NAME_MAX + 64];
    wal_file_sum sum;
} wal_spool_find;

static bool wal_spool_find_one(void *arg, const char *file, const char *name, wal_spool_file type,
                               const wal_file_sum *sum, pgd_error *err)
{
    wal_spool_find *f = arg;

    (void)err;
    if (strcmp(name, f->name) != 0)
        return true;
    if (type == WAL_SPOOL_FILE_PART) {
        f->partial = true;
    } else if (!f->ready) {
        f->ready = true;
        snprintf(f->file, sizeof(f->file), "%s", file);
        f->sum = *sum;
    }
    return true;
}

bool wal_spool_entry_state(const char *dir, const char *name, bool *ready, bool *partial,
                           pgd_error *err)
{
    wal_spool_find f = {.name = name};

    if (!wal_spool_entry_walk(dir, wal_spool_find_one, &f, err))
        return false;
    *ready = f.ready;
    *partial = f.partial;
    return true;
}

/* Read the open file `fd` through, comparing with sum; false with why set on a mismatch. */
static bool wal_spool_entry_verify(int fd, const char *path, const wal_file_sum *sum, bool *match,
                                   char *why, size_t whylen, pgd_error *err)
{
    unsigned char *buf = malloc(WAL_SPOOL_IO_CHUNK);
    uint32_t crc = CRC32C_INIT;
    uint64_t size = 0;

    *match = false;
    if (buf == NULL)
        return err_set(err, "out of memory");
    for (;;) {
        ssize_t n = read(fd, buf, WAL_SPOOL_IO_CHUNK);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            free(buf);
            return err_errno(err, e, "could not read spool file \"%s\"", path);
        }
        if (n == 0)
            break;
        crc = crc32c_update(crc, buf, (size_t)n);
        size += (uint64_t)n;
    }
    free(buf);
    crc = crc32c_final(crc);
    if (size != sum->size)
        snprintf(why, whylen, "%" PRIu64 " bytes where %" PRIu64 " were downloaded", size,
                 sum->size);
    else if (crc != sum->crc)
        snprintf(why, whylen, "CRC-32C %08" PRIx32 " where %08" PRIx32 " was downloaded", crc,
                 sum->crc);
    else
        *match = true;
    return true;
}

/* Copy the open file `fd` to dest through a temporary file (dest on another file system). */
static bool wal_spool_copy(int fd, const char *path, const char *dest, pgd_error *err)
{
    char tmp[PATH_MAX + 32];
    unsigned char *buf = malloc(WAL_SPOOL_IO_CHUNK);
    int out = -1;
    bool ok = false;

    if (buf == NULL)
        return err_set(err, "out of memory");
    snprintf(tmp, sizeof(tmp), "%s.pgdirect.tmp", dest);
    out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, WAL_SPOOL_FILE_MODE);
    if (out < 0) {
        err_errno(err, errno, "could not create file \"%s\"", tmp);
        goto done;
    }
    if (lseek(fd, 0, SEEK_SET) != 0) {
        err_errno(err, errno, "could not read spool file \"%s\"", path);
        goto done;
    }
    for (;;) {
        ssize_t n = read(fd, buf, WAL_SPOOL_IO_CHUNK), off = 0;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            err_errno(err, errno, "could not read spool file \"%s\"", path);
            goto done;
        }
        if (n == 0)
            break;
        while (off < n) {
            ssize_t w = write(out, buf + off, (size_t)(n - off));
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0) {
                err_errno(err, errno, "could not write file \"%s\"", tmp);
                goto done;
            }
            off += w;
        }
    }
    if (fsync(out) != 0 || close(out) != 0) {
        out = -1;
        err_errno(err, errno, "could not write file \"%s\"", tmp);
        goto done;
    }
    out = -1;
    if (rename(tmp, dest) != 0) {
        err_errno(err, errno, "could not rename \"%s\" to \"%s\"", tmp, dest);
        goto done;
    }
    ok = true;
done:
    if (out >= 0)
        close(out);
    if (!ok)
        unlink(tmp);
    free(buf);
    return ok;
}

uint64_t wal_spool_control_sysid(const char *datadir)
{
    char path[WAL_SPOOL_PATH_MAX + 32];
    uint64_t sysid = 0;
    int fd;

    /* ControlFileData begins with system_identifier (pg_control.h) */
    snprintf(path, sizeof(path), "%s/global/pg_control", datadir);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    if (pread(fd, &sysid, sizeof(sysid), 0) != (ssize_t)sizeof(sysid))
        sysid = 0;
    close(fd);
    return sysid;
}

/* Is the segment open at fd of database system `expect`? (*sysid: the one it is of) */
static bool wal_spool_entry_system(int fd, uint64_t expect, uint64_t *sysid)
{
    unsigned char page[WAL_PAGE_LONG_HEADER];

    *sysid = 0;
    if (pread(fd, page, sizeof(page), 0) == (ssize_t)sizeof(page))
        memcpy(sysid, page + WAL_PAGE_SYSID_OFF, sizeof(*sysid));
    return expect == 0 || *sysid == expect;
}

bool wal_spool_entry_take(const char *dir, const char *name, const char *dest,
                          uint64_t expect_sysid, wal_entry_result *result, char *why, size_t whylen,
                          pgd_error *err)
{
    uint64_t sysid;
    wal_spool_find f = {.name = name};
    char path[WAL_SPOOL_PATH_MAX + WAL_NAME_MAX + 64];
    bool match;
    int fd;

    *result = WAL_ENTRY_MISSING;
    why[0] = '\0';
    if (!wal_spool_entry_walk(dir, wal_spool_find_one, &f, err))
        return false;
    if (!f.ready)
        return true;
    snprintf(path, sizeof(path), "%s/%s", dir, f.file);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) /* pruned since we looked */
            return true;
        return err_errno(err, errno, "could not open spool file \"%s\"", path);
    }
    if (!wal_spool_entry_system(fd, expect_sysid, &sysid)) {
        close(fd);
        snprintf(why, whylen, "of database system %" PRIu64 ", this one is %" PRIu64, sysid,
                 expect_sysid);
        *result = WAL_ENTRY_STALE;
        if (unlink(path) != 0 && errno != ENOENT)
            return err_errno(err, errno, "could not remove spool file \"%s\"", path);
        return true;
    }
    if (!wal_spool_entry_verify(fd, path, &f.sum, &match, why, whylen, err)) {
        close(fd);
        return false;
    }
    if (!match) {
        close(fd);
        *result = WAL_ENTRY_CORRUPT;
        if (unlink(path) != 0 && errno != ENOENT)
            return err_errno(err, errno, "could not remove corrupt spool file \"%s\"", path);
        return true;
    }
    /* the file we verified, by its open descriptor: renamed, or copied where rename cannot */
    if (rename(path, dest) != 0) {
        if (errno != EXDEV) {
            int e = errno;
            close(fd);
            return err_errno(err, e, "could not rename \"%s\" to \"%s\"", path, dest);
        }
        if (!wal_spool_copy(fd, path, dest, err)) {
            close(fd);
            return false;
        }
        unlink(path);
    }
    close(fd);
    *result = WAL_ENTRY_SERVED;
    return true;
}

typedef struct wal_spool_pruning {
    const char *dir;
    const wal_fetch_request *req;
    bool parts;
} wal_spool_pruning;

static bool wal_spool_prune_one(void *arg, const char *file, const char *name, wal_spool_file type,
                                const wal_file_sum *sum, pgd_error *err)
{
    wal_spool_pruning *p = arg;
    char path[WAL_SPOOL_PATH_MAX + WAL_NAME_MAX + 64];

    (void)sum;
    if (type == WAL_SPOOL_FILE_PART ? !p->parts
                                    : p->req != NULL && wal_spool_request_wants(p->req, name))
        return true;
    snprintf(path, sizeof(path), "%s/%s", p->dir, file);
    if (unlink(path) != 0 && errno != ENOENT)
        return err_errno(err, errno, "could not remove spool file \"%s\"", path);
    return true;
}

bool wal_spool_entry_prune(const char *dir, const wal_fetch_request *req, bool parts,
                           pgd_error *err)
{
    wal_spool_pruning p = {dir, req, parts};

    return wal_spool_entry_walk(dir, wal_spool_prune_one, &p, err);
}
