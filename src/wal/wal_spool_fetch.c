/*
 * wal_spool_fetch.c - the prefetch side of the spool (fetch-<key>/ in
 * wal_spool.h): the request wal-fetch leaves for the background fetcher,
 * and the prefetched segments: published under their size and CRC,
 * verified and moved into place when PostgreSQL asks for one, pruned when
 * no request wants them any more.
 */
#define _GNU_SOURCE
#include "wal/wal_spool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pg/wal_segment.h"
#include "wal/wal_spool_internal.h"
#include "util/crc32c.h"
#include "util/xmalloc.h"

#define WAL_SPOOL_REQUEST  "request"
#define WAL_SPOOL_PART_EXT ".part"
#define WAL_SPOOL_IO_CHUNK (1024 * 1024)
/* WAL_FILE_NAME_LEN as the width of a scanf conversion */
#define WAL_SPOOL_STR(x)  #x
#define WAL_SPOOL_XSTR(x) WAL_SPOOL_STR(x)

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
    if (sscanf(text, "%" WAL_SPOOL_XSTR(WAL_FILE_NAME_LEN) "s %" SCNu32 " %" SCNu64 " %u\n%n",
               req->name, &req->seg_size, &req->sysid, &req->count, &used) != 4 ||
        (size_t)used != strlen(text) || !wal_name_seg_size_valid(req->seg_size) ||
        wal_name_kind(req->name) != WAL_FILE_SEGMENT || req->count > WAL_PREFETCH_MAX)
        return err_set(err, "spool file \"%s\" is malformed", path);
    return true;
}

bool wal_spool_request_wants(const wal_fetch_request *req, const char *name)
{
    uint32_t rtli, tli;
    uint64_t rseg, seg;

    if (!wal_name_parse(req->name, req->seg_size, &rtli, &rseg) ||
        !wal_name_parse(name, req->seg_size, &tli, &seg))
        return false;
    return tli == rtli && seg > rseg && seg - rseg <= req->count;
}

void wal_spool_part_path(const char *dir, const char *name, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s/%s" WAL_SPOOL_PART_EXT, dir, name);
}

static void wal_spool_fetch_path(const char *dir, const char *name, const wal_file_sum *sum,
                                 char *out, size_t outlen)
{
    snprintf(out, outlen, "%s/%s.%" PRIu64 ".%08" PRIx32, dir, name, sum->size, sum->crc);
}

bool wal_spool_entry_publish(const char *dir, const char *name, const char *part,
                             const wal_file_sum *sum, pgd_error *err)
{
    char path[WAL_SPOOL_PATH_MAX + WAL_NAME_MAX + 32];

    wal_spool_fetch_path(dir, name, sum, path, sizeof(path));
    if (rename(part, path) != 0)
        return err_errno(err, errno, "could not rename \"%s\" to \"%s\"", part, path);
    return true;
}

/*
 * Parse a spool file name: a published entry "<wal>.<size>.<crc>" (*sum
 * filled) or a part "<wal>.part...". Anything else is not ours.
 */
typedef enum {
    WAL_SPOOL_FILE_OTHER,
    WAL_SPOOL_FILE_ENTRY,
    WAL_SPOOL_FILE_PART
} wal_spool_entry_type;

static wal_spool_entry_type
wal_spool_fetch_parse(const char *file, char name[WAL_FILE_NAME_LEN + 1], wal_file_sum *sum)
{
    uint64_t size;
    uint32_t crc;
    int used = 0;

    if (strlen(file) <= WAL_FILE_NAME_LEN || file[WAL_FILE_NAME_LEN] != '.')
        return WAL_SPOOL_FILE_OTHER;
    memcpy(name, file, WAL_FILE_NAME_LEN);
    name[WAL_FILE_NAME_LEN] = '\0';
    if (wal_name_kind(name) != WAL_FILE_SEGMENT)
        return WAL_SPOOL_FILE_OTHER;
    if (strncmp(file + WAL_FILE_NAME_LEN, WAL_SPOOL_PART_EXT, strlen(WAL_SPOOL_PART_EXT)) == 0)
        return WAL_SPOOL_FILE_PART;
    if (sscanf(file + WAL_FILE_NAME_LEN, ".%" SCNu64 ".%8" SCNx32 "%n", &size, &crc, &used) != 2 ||
        (size_t)used != strlen(file + WAL_FILE_NAME_LEN))
        return WAL_SPOOL_FILE_OTHER;
    sum->size = size;
    sum->crc = crc;
    return WAL_SPOOL_FILE_ENTRY;
}

/* Calls cb for every entry or part in dir. */
typedef bool (*wal_spool_entry_cb)(void *arg, const char *file, const char *name,
                                   wal_spool_entry_type type, const wal_file_sum *sum,
                                   pgd_error *err);

static bool wal_spool_fetch_walk(const char *dir, wal_spool_entry_cb cb, void *arg, pgd_error *err)
{
    struct dirent *de;
    DIR *d = opendir(dir);
    bool ok = true;

    if (d == NULL)
        return err_errno(err, errno, "could not open spool directory \"%s\"", dir);
    while (ok && (errno = 0, de = readdir(d)) != NULL) {
        char name[WAL_FILE_NAME_LEN + 1];
        wal_file_sum sum = {0};
        wal_spool_entry_type type = wal_spool_fetch_parse(de->d_name, name, &sum);

        if (type != WAL_SPOOL_FILE_OTHER)
            ok = cb(arg, de->d_name, name, type, &sum, err);
    }
    if (ok && errno != 0)
        ok = err_errno(err, errno, "could not read spool directory \"%s\"", dir);
    closedir(d);
    return ok;
}

typedef struct wal_spool_entry_find {
    const char *name;
    bool ready, partial;
    char file[WAL_NAME_MAX + 64];
    wal_file_sum sum;
} wal_spool_entry_find;

static bool wal_spool_fetch_find_one(void *arg, const char *file, const char *name,
                                     wal_spool_entry_type type, const wal_file_sum *sum,
                                     pgd_error *err)
{
    wal_spool_entry_find *f = arg;

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
    wal_spool_entry_find f = {.name = name};

    if (!wal_spool_fetch_walk(dir, wal_spool_fetch_find_one, &f, err))
        return false;
    *ready = f.ready;
    *partial = f.partial;
    return true;
}

/* Read the open file `fd` through, comparing with sum; false with why set on a mismatch. */
static bool wal_spool_fetch_verify(int fd, const char *path, const wal_file_sum *sum, bool *match,
                                   char *why, size_t whylen, pgd_error *err)
{
    unsigned char *buf = xmalloc(WAL_SPOOL_IO_CHUNK);
    uint32_t crc = CRC32C_INIT;
    uint64_t size = 0;

    *match = false;
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
static bool wal_spool_fetch_copy(int fd, const char *path, const char *dest, pgd_error *err)
{
    char tmp[PATH_MAX + 32];
    unsigned char *buf = xmalloc(WAL_SPOOL_IO_CHUNK);
    int out = -1;
    bool ok = false;

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
    if (fsync(out) != 0) {
        err_errno(err, errno, "could not fsync file \"%s\"", tmp);
        goto done; /* closed there */
    }
    if (close(out) != 0) {
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
static bool wal_spool_fetch_system(int fd, uint64_t expect, uint64_t *sysid)
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
    wal_spool_entry_find f = {.name = name};
    char path[WAL_SPOOL_PATH_MAX + WAL_NAME_MAX + 64];
    bool match;
    int fd;

    *result = WAL_ENTRY_MISSING;
    why[0] = '\0';
    if (!wal_spool_fetch_walk(dir, wal_spool_fetch_find_one, &f, err))
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
    if (!wal_spool_fetch_system(fd, expect_sysid, &sysid)) {
        close(fd);
        snprintf(why, whylen, "of database system %" PRIu64 ", this one is %" PRIu64, sysid,
                 expect_sysid);
        *result = WAL_ENTRY_STALE;
        if (unlink(path) != 0 && errno != ENOENT)
            return err_errno(err, errno, "could not remove spool file \"%s\"", path);
        return true;
    }
    if (!wal_spool_fetch_verify(fd, path, &f.sum, &match, why, whylen, err)) {
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
        if (!wal_spool_fetch_copy(fd, path, dest, err)) {
            close(fd);
            return false;
        }
        unlink(path);
    }
    close(fd);
    *result = WAL_ENTRY_SERVED;
    return true;
}

typedef struct wal_spool_entry_pruning {
    const char *dir;
    const wal_fetch_request *req;
    bool parts;
} wal_spool_entry_pruning;

static bool wal_spool_fetch_prune_one(void *arg, const char *file, const char *name,
                                      wal_spool_entry_type type, const wal_file_sum *sum,
                                      pgd_error *err)
{
    wal_spool_entry_pruning *p = arg;
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
    wal_spool_entry_pruning p = {dir, req, parts};

    return wal_spool_fetch_walk(dir, wal_spool_fetch_prune_one, &p, err);
}
