/*
 * checksum_scan.c - every page's data checksum in a stopped cluster (checksum_scan.h).
 */
#define _GNU_SOURCE
#include "pg/checksum_scan.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pg/page_checksum.h"
#include "pg/relfile.h"
#include "util/big_buffer.h"
#include "util/text.h"

#define CHECKSUM_SCAN_READ  (128 * PG_PAGE_SIZE) /* 1 MiB per read */
#define CHECKSUM_SCAN_DEPTH 4                    /* pg_tblspc/<oid>/<version>/<db>/<file> */

typedef struct checksum_scan {
    const char *datadir;
    unsigned char *buf;
    checksum_scan_result *res;
    cluster_problems *p;
} checksum_scan;

static bool checksum_scan_file(checksum_scan *cs, const char *rel, const relfile *rf,
                               pgd_error *err)
{
    char path[PATH_MAX];
    uint64_t offset = 0;
    bool direct = true;
    int fd;

    if (!str_format(path, sizeof(path), "%s/%s", cs->datadir, rel))
        return err_set(err, "path too long: \"%s/%s\"", cs->datadir, rel);
    fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
    if (fd < 0 && errno == EINVAL) {
        direct = false;
        fd = open(path, O_RDONLY | O_CLOEXEC);
    }
    if (fd < 0)
        return err_errno(err, errno, "could not open file \"%s\"", path);
    for (;;) {
        ssize_t n = pread(fd, cs->buf, CHECKSUM_SCAN_READ, (off_t)offset);
        if (n < 0) {
            int e = errno;
            close(fd);
            return err_errno(err, e, "could not read file \"%s\"", path);
        }
        for (ssize_t at = 0; at + PG_PAGE_SIZE <= n; at += PG_PAGE_SIZE) {
            const unsigned char *page = cs->buf + at;
            uint32_t blkno = page_checksum_block(rf->segment, offset + (uint64_t)at);
            uint16_t upper;
            memcpy(&upper, page + PG_PAGE_UPPER_OFF, sizeof(upper));
            /* PageIsNew: never initialised, no checksum (as PostgreSQL and pg_checksums skip) */
            if (upper == 0 || page_checksum_is_zero(page))
                continue;
            cs->res->pages++;
            if (page_checksum_compute(page, blkno) != page_checksum_stored(page)) {
                cs->res->bad++;
                cluster_problems_add(cs->p,
                                     "page checksum of block %u of file \"%s\" does not match: "
                                     "stored %04x, computed %04x",
                                     blkno, rel, page_checksum_stored(page),
                                     page_checksum_compute(page, blkno));
            }
        }
        if (n < CHECKSUM_SCAN_READ)
            break;
        offset += (uint64_t)n;
    }
    if (!direct)
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
    cs->res->files++;
    return true;
}

static bool checksum_scan_dir(checksum_scan *cs, const char *rel, int depth, pgd_error *err)
{
    char path[PATH_MAX], child[PATH_MAX];
    struct dirent *de;
    DIR *d;
    bool ok = true;

    if (!str_format(path, sizeof(path), "%s/%s", cs->datadir, rel))
        return err_set(err, "path too long: \"%s/%s\"", cs->datadir, rel);
    if ((d = opendir(path)) == NULL)
        return errno == ENOENT ? true
                               : err_errno(err, errno, "could not open directory \"%s\"", path);
    while (ok && (de = readdir(d)) != NULL) {
        struct stat st;
        relfile rf;
        if (de->d_name[0] == '.' || !str_format(child, sizeof(child), "%s/%s", rel, de->d_name))
            continue;
        if (relfile_parse(child, &rf)) {
            ok = checksum_scan_file(cs, child, &rf, err);
            continue;
        }
        /* pg_tblspc's entries are links to the tablespaces: followed */
        if (depth > 0 && stat(path, &st) == 0 &&
            str_format(path, sizeof(path), "%s/%s", cs->datadir, child) && stat(path, &st) == 0 &&
            S_ISDIR(st.st_mode))
            ok = checksum_scan_dir(cs, child, depth - 1, err);
        str_format(path, sizeof(path), "%s/%s", cs->datadir, rel);
    }
    closedir(d);
    return ok;
}

bool checksum_scan_run(const char *datadir, checksum_scan_result *res, cluster_problems *p,
                       pgd_error *err)
{
    static const char *const tops[] = {"global", "base", "pg_tblspc"};
    checksum_scan cs = {.datadir = datadir, .res = res, .p = p};
    bool ok = true;

    memset(res, 0, sizeof(*res));
    cs.buf = big_buffer_alloc(CHECKSUM_SCAN_READ); /* aligned for O_DIRECT */
    for (size_t i = 0; ok && i < sizeof(tops) / sizeof(tops[0]); i++)
        ok = checksum_scan_dir(&cs, tops[i],
                               strcmp(tops[i], "global") == 0 ? 0 : CHECKSUM_SCAN_DEPTH, err);
    free(cs.buf);
    return ok;
}
