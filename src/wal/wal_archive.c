/*
 * wal_archive.c - find, fetch and wait for WAL files in the repository
 * (pushing them is wal_archive_push.c).
 *
 * A WAL file is stored as wal/<timeline>/<name><suffix>, the suffix naming
 * its compression (.lz4, .zst, none). The promise to PostgreSQL: a push
 * that succeeds has stored the file, and never two different files stand
 * under one name, whatever their compression; a fetch hands back exactly
 * what was pushed, or fails loudly.
 */
#define _GNU_SOURCE
#include "wal/wal_archive.h"

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pg/wal_segment.h"
#include "repo/layout.h"
#include "wal/wal_archive_internal.h"
#include "util/crc32c.h"
#include "util/xmalloc.h"

/*
 * wal_archive_wait looks again after 10 ms, then doubles the pause up to
 * 200 ms: the segment pg_backup_stop switched to is usually in the repository
 * within a wal-push's run (tens of ms), and a backup should not wait a full
 * pause longer than that; a slow archive is not looked at more than 5 times a second.
 */
#define WAL_WAIT_POLL_FIRST_US (10 * 1000)
#define WAL_WAIT_POLL_MAX_US   (200 * 1000)
/* history files are a line per timeline, backup history files a dozen lines */
#define WAL_TEXT_CHUNK 4096
#define WAL_TEXT_MAX   (1024 * 1024)

const compress_kind wal_archive_kinds[] = {COMPRESS_LZ4, COMPRESS_ZSTD, COMPRESS_NONE};
const size_t wal_archive_nkinds = sizeof(wal_archive_kinds) / sizeof(wal_archive_kinds[0]);

bool wal_archive_find(storage *repo, const char *name, bool *found, compress_kind *kind,
                      pgd_error *err)
{
    *found = false;
    for (size_t i = 0; i < wal_archive_nkinds; i++) {
        char path[LAYOUT_PATH_MAX];
        layout_wal_path(name, wal_archive_kinds[i], path, sizeof(path));
        if (!storage_exists(repo, path, found, err))
            return false;
        if (*found) {
            *kind = wal_archive_kinds[i];
            return true;
        }
    }
    return true;
}

static bool wal_archive_count(void *arg, const char *name, uint64_t size, bool is_dir,
                              pgd_error *err)
{
    (void)name;
    (void)size;
    (void)is_dir;
    (void)err;
    (*(unsigned *)arg)++;
    return true;
}

/*
 * Is the repository there? A file missing from a repository that holds
 * nothing says nothing about the archive: the directory is not mounted, or
 * --repo names the wrong place.
 */
static bool wal_archive_check_present(storage *repo, pgd_error *err)
{
    unsigned entries = 0;

    if (!storage_list(repo, WAL_DIR, wal_archive_count, &entries, err) ||
        (entries == 0 && !storage_list(repo, BACKUPS_DIR, wal_archive_count, &entries, err)))
        return false;
    if (entries == 0)
        return err_set(err,
                       "repository \"%s\" holds no WAL and no backups (not mounted, or the "
                       "wrong --repo?)",
                       repo->uri);
    return true;
}

/*
 * Write everything `in` yields to `dest` through a temporary file, fsynced,
 * then renamed; sum (may be NULL) gets the size and CRC-32C of what was
 * written: from `decoded` when that stream (decompress_in_trailed_sum) has
 * computed it over the same bytes, else computed here.
 */
static bool wal_archive_write_local(in_stream *in, const in_stream *decoded, const char *dest,
                                    wal_file_sum *sum, pgd_error *err)
{
    uint64_t size = 0, decoded_size = 0;
    uint32_t crc = CRC32C_INIT, decoded_crc = 0;
    bool own_crc = sum != NULL && !decompress_in_is_trailed(decoded);
    char tmp[PATH_MAX];
    char *buf = xmalloc(WAL_IO_CHUNK);
    int fd = -1;

    snprintf(tmp, sizeof(tmp), "%s.pgdirect.tmp", dest);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        err_errno(err, errno, "could not create file \"%s\"", tmp);
        free(buf);
        return false;
    }
    for (;;) {
        size_t n, off = 0;
        if (!in_read(in, buf, WAL_IO_CHUNK, &n, err))
            goto fail;
        if (n == 0)
            break;
        size += n;
        if (own_crc)
            crc = crc32c_update(crc, buf, n);
        while (off < n) {
            ssize_t w = write(fd, buf + off, n - off);
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0) {
                err_errno(err, errno, "could not write file \"%s\"", tmp);
                goto fail;
            }
            off += (size_t)w;
        }
    }
    /* the decoder's sum is of what it gave, which is what was written */
    if (sum != NULL && !own_crc &&
        (!decompress_in_trailed_sum(decoded, &decoded_crc, &decoded_size) ||
         decoded_size != size)) {
        err_set(err, "internal error: no CRC-32C of \"%s\" from its decoder", tmp);
        goto fail;
    }
    if (fsync(fd) != 0) {
        err_errno(err, errno, "could not fsync file \"%s\"", tmp);
        goto fail;
    }
    if (close(fd) != 0) {
        fd = -1;
        err_errno(err, errno, "could not write file \"%s\"", tmp);
        goto fail;
    }
    fd = -1;
    if (rename(tmp, dest) != 0) {
        err_errno(err, errno, "could not rename \"%s\" to \"%s\"", tmp, dest);
        goto fail;
    }
    free(buf);
    if (sum != NULL) {
        sum->size = size;
        sum->crc = own_crc ? crc32c_final(crc) : decoded_crc;
    }
    return true;
fail:
    if (fd >= 0)
        close(fd);
    unlink(tmp);
    free(buf);
    return false;
}

/*
 * Archived WAL file `name`, opened through its codec into *in; *in is NULL
 * (and the result true) when it is not in the repository. False on an
 * error. Each compression is tried by opening it, in wal_archive_find's
 * order: an open looks the object up anyway (on S3, the GET of its first
 * range), so a look of its own first would only ask twice.
 */
static bool wal_archive_open_found(storage *repo, const char *name, in_stream **in, bool *found,
                                   pgd_error *err)
{
    *in = NULL;
    *found = false;
    for (size_t i = 0; i < wal_archive_nkinds; i++) {
        char path[LAYOUT_PATH_MAX];
        bool missing;

        layout_wal_path(name, wal_archive_kinds[i], path, sizeof(path));
        if ((*in = storage_read_open(repo, path, &missing, err)) != NULL) {
            *found = true;
            return (*in = decompress_in_new_trailed(wal_archive_kinds[i], *in, path, err)) != NULL;
        }
        if (!missing)
            return false;
    }
    return true;
}

static bool wal_archive_open(storage *repo, const char *name, in_stream **in, pgd_error *err)
{
    bool found;

    return wal_archive_open_found(repo, name, in, &found, err);
}

bool wal_archive_fetch_sum(storage *repo, const char *name, const char *dest, bool *found,
                           wal_file_sum *sum, pgd_error *err)
{
    in_stream *in, *decoded;
    bool ok;

    if (wal_name_kind(name) == WAL_FILE_UNKNOWN)
        return err_set(err, "\"%s\" is not a WAL file name", name);
    if (!wal_archive_open(repo, name, &in, err))
        return false;
    if ((*found = in != NULL) == false)
        return true;
    decoded = in;
    if ((in = wal_segment_check_in_new(in, name, err)) == NULL)
        return false;
    ok = wal_archive_write_local(in, decoded, dest, sum, err);
    in_close(in);
    return ok;
}

bool wal_archive_fetch(storage *repo, const char *name, const char *dest, bool *found,
                       pgd_error *err)
{
    if (!wal_archive_fetch_sum(repo, name, dest, found, NULL, err))
        return false;
    return *found || wal_archive_check_present(repo, err);
}

bool wal_archive_read_text(storage *repo, const char *name, char **text, size_t *len, bool *found,
                           pgd_error *err)
{
    in_stream *in;
    size_t cap = 0;
    bool ok = true;

    *text = NULL;
    *len = 0;
    if (wal_name_kind(name) != WAL_FILE_HISTORY && wal_name_kind(name) != WAL_FILE_BACKUP)
        return err_set(err, "\"%s\" is not the name of a timeline or backup history file", name);
    if (!wal_archive_open_found(repo, name, &in, found, err)) {
        /* found: its codec refused how it begins */
        if (*found && !err_is(err, PGD_ERR_TRANSIENT))
            err_mark(err, PGD_ERR_DAMAGED);
        return false;
    }
    if (!*found)
        return true;
    if ((in = wal_segment_check_in_new(in, name, err)) == NULL)
        return false;
    while (ok) {
        size_t n = 0;
        if (cap - *len < WAL_TEXT_CHUNK + 1) {
            if (cap + WAL_TEXT_CHUNK + 1 > WAL_TEXT_MAX) {
                ok = err_set(err, "WAL file \"%s\" in repository \"%s\" is over %d bytes", name,
                             repo->uri, WAL_TEXT_MAX);
                break;
            }
            *text = xrealloc(*text, cap + WAL_TEXT_CHUNK + 1);
            cap += WAL_TEXT_CHUNK + 1;
        }
        ok = in_read(in, *text + *len, WAL_TEXT_CHUNK, &n, err);
        if (n == 0)
            break;
        *len += n;
    }
    in_close(in);
    if (!ok) {
        /* a read that may succeed later says nothing about the file */
        if (!err_is(err, PGD_ERR_TRANSIENT))
            err_mark(err, PGD_ERR_DAMAGED);
        free(*text);
        *text = NULL;
        *len = 0;
        return false;
    }
    (*text)[*len] = '\0';
    return true;
}

bool wal_archive_wait(storage *repo, const char *name, int timeout_s, pgd_error *err)
{
    time_t deadline = time(NULL) + timeout_s;
    useconds_t pause = WAL_WAIT_POLL_FIRST_US;
    compress_kind kind;
    bool found;

    for (;;) {
        if (!wal_archive_find(repo, name, &found, &kind, err))
            return false;
        if (found)
            return true;
        if (time(NULL) >= deadline)
            return err_set(err,
                           "WAL file \"%s\" needed by the backup was not archived to "
                           "repository \"%s\" within %d s (check archive_command and "
                           "pg_stat_archiver)",
                           name, repo->uri, timeout_s);
        usleep(pause);
        pause = pause * 2 < WAL_WAIT_POLL_MAX_US ? pause * 2 : WAL_WAIT_POLL_MAX_US;
    }
}

bool wal_archive_system_id(storage *repo, const char *name, char *out, size_t outlen,
                           pgd_error *err)
{
    unsigned char head[WAL_PAGE_SEG_SIZE_OFF];
    in_stream *in;
    size_t got = 0;
    uint64_t sysid;
    bool ok = true;

    if (!wal_archive_open(repo, name, &in, err))
        return false;
    if (in == NULL)
        return err_set(err, "WAL file \"%s\" is not in repository \"%s\"", name, repo->uri);
    while (ok && got < sizeof(head)) {
        size_t n = 0;
        ok = in_read(in, head + got, sizeof(head) - got, &n, err);
        if (n == 0)
            break;
        got += n;
    }
    in_close(in);
    if (!ok)
        return false;
    if (got < sizeof(head))
        return err_set(err, "WAL file \"%s\" in repository \"%s\" is too short to be a segment",
                       name, repo->uri);
    memcpy(&sysid, head + WAL_PAGE_SYSID_OFF, sizeof(sysid));
    snprintf(out, outlen, "%" PRIu64, sysid);
    return true;
}
