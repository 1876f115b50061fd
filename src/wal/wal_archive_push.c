/*
 * wal_archive_push.c - push a WAL file to the repository (archive_command):
 * checked to be what its name says, stored once, and never beside a
 * different file under the same name whatever the compression of either,
 * even when two pushes race (see wal_archive_push_store_once).
 */
#define _GNU_SOURCE
#include "wal/wal_archive.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pg/wal_segment.h"
#include "repo/layout.h"
#include "wal/wal_archive_internal.h"
#include "util/big_buffer.h"
#include "util/crc32c.h"
#include "util/log.h"
#include "util/xmalloc.h"

/*
 * Two pushes of different files under one name that each see the other
 * both stand down (see wal_archive_push); they try again after a random
 * pause, so that one of them goes first. Pauses grow from
 * WAL_PUSH_PAUSE_MS up to WAL_PUSH_PAUSE_MS << WAL_PUSH_ATTEMPTS.
 */
#define WAL_PUSH_ATTEMPTS 6
#define WAL_PUSH_PAUSE_MS 20

/* A WAL file's bytes: mapped (archive_command's own push) or read into memory (the pusher). */
typedef struct wal_local_file {
    const char *data;
    size_t len;
    void *map;   /* the mapping, or NULL */
    char *owned; /* what was read, or NULL */
} wal_local_file;

/* What a SIGBUS (an I/O error under the mapping) prints before the process exits 1. */
static char wal_archive_push_sigbus_msg[PATH_MAX + 128];
static size_t wal_archive_push_sigbus_len;

static void wal_archive_push_sigbus(int sig)
{
    ssize_t n = write(STDERR_FILENO, wal_archive_push_sigbus_msg, wal_archive_push_sigbus_len);

    (void)sig;
    (void)n;
    _exit(1);
}

static bool wal_archive_push_read_all(int fd, const char *path, wal_local_file *f, pgd_error *err)
{
    size_t done = 0;

    f->owned = big_buffer_alloc(f->len + 1);
    while (done < f->len) {
        ssize_t n = read(fd, f->owned + done, f->len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int e = n < 0 ? errno : EIO;
            free(f->owned);
            f->owned = NULL;
            return err_errno(err, e, "could not read WAL file \"%s\"", path);
        }
        done += (size_t)n;
    }
    f->data = f->owned;
    return true;
}

/*
 * The WAL file's bytes. archive_command's own push maps it (`map`): reading a 16 MiB segment
 * into fresh memory made the kernel zero that memory first, then copied the page cache into it
 * (the zeroing alone was a fifth of an encrypted push's CPU samples, perf). That holds only
 * because PostgreSQL does not change a file while its archive_command runs: a mapping is no
 * snapshot. The pusher of --archive-async pushes pg_wal's files on its own schedule, while
 * PostgreSQL may recycle them once another repository has them: it reads them (`map` false),
 * so that what is checked is what is stored. An I/O error under the mapping raises SIGBUS,
 * which is told in one line naming the file (exit 1, PostgreSQL tries again). A file system
 * that cannot map a file is read.
 */
static bool wal_archive_push_open_local(const char *path, bool map, wal_local_file *f,
                                        pgd_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* (a FIFO must not block) */
    struct stat st;
    bool ok = true;

    memset(f, 0, sizeof(*f));
    if (fd < 0)
        return err_errno(err, errno, "could not open WAL file \"%s\"", path);
    if (fstat(fd, &st) != 0)
        ok = err_errno(err, errno, "could not stat WAL file \"%s\"", path);
    else if (!S_ISREG(st.st_mode))
        ok = err_set(err, "WAL file \"%s\" is not a regular file", path);
    if (!ok) {
        close(fd);
        return false;
    }
    f->len = (size_t)st.st_size;
    f->data = "";
    if (f->len > 0 && map) {
        struct sigaction sa = {.sa_handler = wal_archive_push_sigbus};
        int n =
            snprintf(wal_archive_push_sigbus_msg, sizeof(wal_archive_push_sigbus_msg),
                     "pgdirect: error: could not read WAL file \"%s\": I/O error (SIGBUS)\n", path);
        wal_archive_push_sigbus_len = n < 0 ? 0
                                      : (size_t)n < sizeof(wal_archive_push_sigbus_msg)
                                          ? (size_t)n
                                          : sizeof(wal_archive_push_sigbus_msg) - 1;
        sigemptyset(&sa.sa_mask);
        (void)sigaction(SIGBUS, &sa, NULL);
        f->map = mmap(NULL, f->len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
        if (f->map == MAP_FAILED)
            f->map = NULL;
        else
            f->data = f->map;
    }
    if (f->len > 0 && f->map == NULL)
        ok = wal_archive_push_read_all(fd, path, f, err);
    close(fd);
    return ok;
}

static void wal_archive_push_close_local(wal_local_file *f)
{
    if (f->map != NULL)
        munmap(f->map, f->len);
    free(f->owned);
    memset(f, 0, sizeof(*f));
}

/*
 * Does the object of `name` with compression `kind` hold exactly `data`?
 * *missing when there is no such object (any more).
 */
static bool wal_archive_push_equals(storage *repo, const char *name, compress_kind kind,
                                    const char *data, size_t len, bool *equal, bool *missing,
                                    pgd_error *err)
{
    char path[LAYOUT_PATH_MAX];
    char *buf = xmalloc(WAL_IO_CHUNK);
    in_stream *in;
    size_t pos = 0;
    bool ok = true;

    *equal = false;
    layout_wal_path(name, kind, path, sizeof(path));
    in = storage_read_open(repo, path, missing, err);
    if (in != NULL)
        in = decompress_in_new_trailed(kind, in, path, err);
    if (in == NULL) {
        free(buf);
        return *missing;
    }
    *equal = true;
    for (;;) {
        size_t n;
        if (!in_read(in, buf, WAL_IO_CHUNK, &n, err)) {
            ok = false;
            break;
        }
        if (n == 0)
            break;
        if (pos + n > len || memcmp(buf, data + pos, n) != 0) {
            *equal = false;
            break;
        }
        pos += n;
    }
    if (ok && *equal && pos != len)
        *equal = false;
    in_close(in);
    free(buf);
    return ok;
}

/*
 * A push that finds its file stored makes those objects of `name` durable
 * before it says so (`same`: bit i for wal_archive_kinds[i]): the push that
 * stored one may have been stopped (or failed to fsync the directory) after
 * the object became visible. Where visible objects are durable (S3) there
 * is nothing to do.
 */
static bool wal_archive_push_sync_held(storage *repo, const char *name, unsigned same,
                                       pgd_error *err)
{
    for (size_t i = 0; i < wal_archive_nkinds && storage_needs_sync(repo); i++) {
        char path[LAYOUT_PATH_MAX];

        layout_wal_path(name, wal_archive_kinds[i], path, sizeof(path));
        if ((same & (1u << i)) && !storage_sync(repo, path, err))
            return false;
    }
    return true;
}

typedef enum {
    WAL_HELD_NOTHING, /* no object of this name */
    WAL_HELD_SAME,    /* objects of this name, all with this content */
    WAL_HELD_OTHER,   /* an object of this name with other content */
} wal_held;

/*
 * Compare `data` with every stored object of `name` except the one with
 * compression `skip` (pass NULL to compare all). *other_kind names an
 * object that differs; *same has bit i set for each wal_archive_kinds[i]
 * stored with this content.
 */
static bool wal_archive_push_held(storage *repo, const char *name, const compress_kind *skip,
                                  const char *data, size_t len, wal_held *held,
                                  compress_kind *other_kind, unsigned *same, pgd_error *err)
{
    *held = WAL_HELD_NOTHING;
    *same = 0;
    for (size_t i = 0; i < wal_archive_nkinds; i++) {
        char path[LAYOUT_PATH_MAX];
        bool exists, equal, missing;

        if (skip != NULL && *skip == wal_archive_kinds[i])
            continue;
        layout_wal_path(name, wal_archive_kinds[i], path, sizeof(path));
        if (!storage_exists(repo, path, &exists, err))
            return false;
        if (!exists)
            continue;
        if (!wal_archive_push_equals(repo, name, wal_archive_kinds[i], data, len, &equal, &missing,
                                     err))
            return false;
        if (missing) /* removed since we looked: by a push that stood down */
            continue;
        if (!equal) {
            *held = WAL_HELD_OTHER;
            *other_kind = wal_archive_kinds[i];
            return true;
        }
        *held = WAL_HELD_SAME;
        *same |= 1u << i;
    }
    return true;
}

/*
 * Store `data` as the object of `name` with compression `kind`, unless such
 * an object exists: then *taken is set and there is no error. Other
 * failures keep their cause (no space, permission, the bucket).
 */
static bool wal_archive_push_store(storage *repo, const char *name, compress_kind kind, int level,
                                   const char *data, size_t len, bool *taken, pgd_error *err)
{
    char path[LAYOUT_PATH_MAX];
    out_stream *out;

    *taken = false;
    layout_wal_path(name, kind, path, sizeof(path));
    out = storage_write_open(repo, path, STORAGE_WRITE_NO_REPLACE, err);
    if (out != NULL)
        out = compress_out_new_trailed(kind, level, out, path, err);
    if (out == NULL)
        return false;
    if (!out_write(out, data, len, err)) {
        out_abort(out);
        return false;
    }
    if (out_close(out, err))
        return true;
    /*
     * NO_REPLACE: closing fails with "exists" when the object stood already.
     * Anything else is the cause, even when the object is there now: a
     * rename whose directory could not be fsynced leaves an object that is
     * not durable, and finding it again must not acknowledge it.
     */
    if (err_is(err, PGD_ERR_EXISTS)) {
        err_clear(err);
        *taken = true;
    }
    return false;
}

/* A pause of random length that grows with the attempt (see WAL_PUSH_ATTEMPTS). */
static void wal_archive_push_pause(unsigned attempt)
{
    struct timespec now;
    unsigned seed;

    clock_gettime(CLOCK_MONOTONIC, &now);
    seed = (unsigned)now.tv_nsec ^ ((unsigned)getpid() << 16);
    usleep((useconds_t)(rand_r(&seed) % (WAL_PUSH_PAUSE_MS << attempt) + 1) * 1000);
}

/*
 * The check after storing failed (err): remove what we stored, so that a
 * failed push leaves nothing behind, and say so if that fails too.
 */
static bool wal_archive_push_take_back(storage *repo, const char *name, const char *path,
                                       pgd_error *err)
{
    char cause[PGD_ERROR_MAX];
    pgd_error undo = {0};
    bool transient = err_is(err, PGD_ERR_TRANSIENT), removed = storage_remove(repo, path, &undo);

    snprintf(cause, sizeof(cause), "%s", err->msg);
    err_clear(err);
    err_set(err, "could not check the other compressions of WAL file \"%s\": %s%s%s", name, cause,
            removed ? "" : "; could not remove what was stored either: ", removed ? "" : undo.msg);
    if (transient)
        err_mark(err, PGD_ERR_TRANSIENT);
    return false;
}

/* The error of a push that found another file archived under its name (as `kind`). */
static bool wal_archive_push_differs(storage *repo, const char *name, compress_kind kind,
                                     pgd_error *err)
{
    return err_set(err,
                   "WAL file \"%s\" is already archived in repository \"%s\" with different "
                   "content (as \"%s%s\")",
                   name, repo->uri, name, compress_suffix(kind));
}

/* The place of `kind` in wal_archive_kinds (wal_archive_find's order). */
static size_t wal_archive_push_rank(compress_kind kind)
{
    size_t i = 0;

    while (i < wal_archive_nkinds && wal_archive_kinds[i] != kind)
        i++;
    return i;
}

/*
 * Store `data` under `name`, or find it stored already.
 *
 * NO_REPLACE makes one object per suffix exclusive, but a file can stand
 * under three suffixes. So after storing its object, a push looks at the
 * other suffixes, and on finding a different file there it removes its own
 * and does not succeed. Why two different files are never both
 * acknowledged: say pushes A and B both succeed. A succeeded, so its look
 * R_A, which came after its store S_A, did not see B's object: S_B came
 * after R_A (B removes its object only when it fails). Likewise S_A came
 * after R_B. Then S_A < R_A < S_B < R_B < S_A, which cannot be.
 *
 * The first attempt looks before storing only under its own suffix, by
 * reading that object: the look after storing finds whatever else a look
 * before would have found, and a push of a new file (nearly every push)
 * asks one request there where it asked four. The look under its own
 * suffix stays although NO_REPLACE covers it, for a store that does not
 * honour If-None-Match: there, a different file pushed under an archived
 * name (two clusters restored from one backup, both promoted to the same
 * timeline) would replace the archived one. A re-push of a file archived
 * under another suffix pays its upload, then finds the file.
 *
 * Both may see each other and both stand down; the loop then starts again
 * after a random pause, and the look before storing (from the second
 * attempt on) lets the slower one find the winner's file and fail with
 * "different content". A push that finds an identical file under any
 * suffix has nothing to do. One that finds it only after storing its own
 * (the same file pushed with another compression) keeps one of the two:
 * the one earlier in wal_archive_kinds' order, never taken back on that
 * ground, so two such pushes cannot both take theirs back.
 *
 * A push that fails takes its object back, so that only acknowledged files
 * stand. A third push of A's file (a standby archiving too) may have found
 * A's object and succeeded before A takes it back; A's cluster then pushes
 * the file again, which stores it again or, if B's file stands, keeps
 * failing loudly: never silently.
 */
static bool wal_archive_push_store_once(storage *repo, const char *name, compress_kind kind,
                                        int level, const char *data, size_t len,
                                        wal_push_result *result, pgd_error *err)
{
    char path[LAYOUT_PATH_MAX];

    layout_wal_path(name, kind, path, sizeof(path));
    for (unsigned attempt = 1;; attempt++) {
        wal_held held;
        compress_kind other;
        unsigned same;
        bool taken;

        if (attempt == 1) {
            bool equal, missing;

            if (!wal_archive_push_equals(repo, name, kind, data, len, &equal, &missing, err))
                return false;
            if (!missing && equal) {
                *result = WAL_PUSH_IDENTICAL;
                return wal_archive_push_sync_held(repo, name, 1u << wal_archive_push_rank(kind),
                                                  err);
            }
            if (!missing)
                return wal_archive_push_differs(repo, name, kind, err);
        } else {
            if (!wal_archive_push_held(repo, name, NULL, data, len, &held, &other, &same, err))
                return false;
            if (held == WAL_HELD_SAME) {
                *result = WAL_PUSH_IDENTICAL;
                return wal_archive_push_sync_held(repo, name, same, err);
            }
            if (held == WAL_HELD_OTHER)
                return wal_archive_push_differs(repo, name, other, err);
        }
        if (!wal_archive_push_store(repo, name, kind, level, data, len, &taken, err)) {
            if (!taken)
                return false;
            if (attempt == WAL_PUSH_ATTEMPTS)
                return err_set(err, "could not archive WAL file \"%s\": \"%s\" keeps changing",
                               name, path);
            continue; /* this suffix is stored already: compare with it */
        }
        if (!wal_archive_push_held(repo, name, &kind, data, len, &held, &other, &same, err))
            return wal_archive_push_take_back(repo, name, path, err);
        if (held == WAL_HELD_NOTHING) {
            *result = WAL_PUSH_STORED;
            return true;
        }
        if (held == WAL_HELD_SAME) {
            pgd_error undo = {0};

            /* ours goes only if an identical one stands earlier in the order */
            if ((same & ((1u << wal_archive_push_rank(kind)) - 1)) == 0) {
                *result = WAL_PUSH_STORED;
                return true;
            }
            if (!storage_remove(repo, path, &undo))
                log_warn("WAL file \"%s\" is archived twice with the same content: %s", name,
                         undo.msg);
            *result = WAL_PUSH_IDENTICAL;
            return wal_archive_push_sync_held(repo, name, same, err);
        }
        if (!storage_remove(repo, path, err)) {
            err_prefix(err,
                       "WAL file \"%s\" was archived concurrently with different content (as "
                       "\"%s%s\"), and ours could not be taken back",
                       name, name, compress_suffix(other));
            return false;
        }
        if (attempt == WAL_PUSH_ATTEMPTS)
            return err_set(err,
                           "WAL file \"%s\" is being archived concurrently with different "
                           "content (as \"%s%s\") in repository \"%s\"",
                           name, name, compress_suffix(other), repo->uri);
        wal_archive_push_pause(attempt);
    }
}

static bool wal_archive_push_file(storage *repo, const char *local_path, bool map,
                                  compress_kind kind, int level, wal_push_result *result,
                                  wal_file_sum *sum, pgd_error *err)
{
    char pathcopy[PATH_MAX], name[NAME_MAX + 1];
    wal_local_file f;
    bool ok;

    snprintf(pathcopy, sizeof(pathcopy), "%s", local_path);
    snprintf(name, sizeof(name), "%s", basename(pathcopy));
    if (wal_name_kind(name) == WAL_FILE_UNKNOWN)
        return err_set(err,
                       "\"%s\" is not a WAL file name (expected a segment, .partial, "
                       ".history or .backup file)",
                       name);
    if (!wal_archive_push_open_local(local_path, map, &f, err))
        return false;
    ok = wal_segment_check_buffer(name, f.data, f.len, err);
    if (!ok)
        err_prefix(err, "refusing to archive \"%s\"", local_path);
    else
        ok = wal_archive_push_store_once(repo, name, kind, level, f.data, f.len, result, err);
    if (ok && sum != NULL) {
        sum->size = f.len;
        sum->crc = crc32c(f.data, f.len);
    }
    wal_archive_push_close_local(&f);
    return ok;
}

bool wal_archive_push(storage *repo, const char *local_path, compress_kind kind, int level,
                      wal_push_result *result, pgd_error *err)
{
    return wal_archive_push_file(repo, local_path, true, kind, level, result, NULL, err);
}

bool wal_archive_push_sum(storage *repo, const char *local_path, compress_kind kind, int level,
                          wal_push_result *result, wal_file_sum *sum, pgd_error *err)
{
    return wal_archive_push_file(repo, local_path, false, kind, level, result, sum, err);
}

bool wal_archive_sweep_due(const char *name)
{
    uint32_t tli, log, seg;

    if (wal_name_kind(name) != WAL_FILE_SEGMENT || !wal_name_parts(name, &tli, &log, &seg))
        return true;
    /* the name's last part: the segment within its "log" (pg/wal_name.h) */
    return seg % WAL_SWEEP_EVERY == 0;
}

bool wal_archive_remove_stale_temp(storage *repo, const char *name, pgd_error *err)
{
    char dir[LAYOUT_PATH_MAX];

    if (wal_name_kind(name) == WAL_FILE_UNKNOWN)
        return true; /* no directory of ours to look at */
    layout_wal_dir(name, dir, sizeof(dir));
    return storage_remove_stale_temp(repo, dir, WAL_STALE_TEMP_AGE_S, err);
}
