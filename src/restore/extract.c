/*
 * extract.c - parallel, verified extraction of backup partitions: a full
 * backup's files written as they come; a delta's increments assembled
 * from its chain, newest backup first (extract_plan.older); with restore
 * --delta, every page compared with what the file holds before it is
 * written.
 */
#define _GNU_SOURCE
#include "restore/extract.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "compress/compress.h"
#include "pg/relfile.h"
#include "repo/increment.h"
#include "repo/layout.h"
#include "repo/tar.h"
#include "restore/durable.h"
#include "util/crc32c.h"
#include "util/log.h"
#include "util/progress.h"
#include "util/work_pool.h"
#include "util/text.h"

#define EXTRACT_CHUNK  (1024 * 1024)
#define TABLESPACE_DIR "pg_tblspc/"

/* a large file's writeback starts every this many bytes, not only at its end */
#define EXTRACT_WRITEBACK_EVERY (32 * 1024 * 1024)

/*
 * The most a restored file or directory may allow: what PostgreSQL itself
 * creates with group access (initdb -g), never set-id or sticky bits. The
 * owner always keeps read and write (and search on directories).
 */
#define EXTRACT_DIR_MODE_MAX  0750
#define EXTRACT_DIR_MODE_MIN  0700
#define EXTRACT_FILE_MODE_MAX 0640
#define EXTRACT_FILE_MODE_MIN 0600

bool extract_path_is_safe(const char *path)
{
    const char *p = path;

    if (path[0] == '\0' || path[0] == '/' || strlen(path) >= PATH_MAX / 2)
        return false;
    while (*p != '\0') {
        size_t len = strcspn(p, "/");
        if (len == 0 || (len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
            return false;
        p += len;
        if (*p == '/') {
            p++;
            if (*p == '\0')
                return false; /* trailing slash: an empty last component */
        }
    }
    return true;
}

uint32_t extract_mode(uint32_t mode, bool is_dir)
{
    return is_dir ? (mode & EXTRACT_DIR_MODE_MAX) | EXTRACT_DIR_MODE_MIN
                  : (mode & EXTRACT_FILE_MODE_MAX) | EXTRACT_FILE_MODE_MIN;
}

bool extract_partition_name_is_valid(const char *name, compress_kind kind)
{
    static const char prefix[] = "part_";
    const char *digits = name + strlen(prefix);
    char expected[LAYOUT_PATH_MAX];
    unsigned long number;
    char *end;

    /* exactly what layout_partition_name writes: never a path */
    if (strncmp(name, prefix, strlen(prefix)) != 0 || *digits < '0' || *digits > '9')
        return false;
    errno = 0;
    number = strtoul(digits, &end, 10);
    if (errno != 0 || number == 0 || number > UINT32_MAX)
        return false;
    layout_partition_name((unsigned)number, kind, expected, sizeof(expected));
    return strcmp(name, expected) == 0;
}

bool extract_dest_path(const extract_plan *p, const char *path, char *out, size_t outlen,
                       pgd_error *err)
{
    const char *base = p->target, *rest = path;

    if (!extract_path_is_safe(path))
        return err_set(err,
                       "refusing path \"%s\" in backup \"%s\": it would land outside the "
                       "target directory",
                       path, p->backup_id);
    if (strncmp(path, TABLESPACE_DIR, strlen(TABLESPACE_DIR)) == 0) {
        const char *oid_s = path + strlen(TABLESPACE_DIR);
        char *end;
        unsigned long oid = strtoul(oid_s, &end, 10);
        for (size_t i = 0; end != oid_s && i < p->m->ntablespaces; i++) {
            if (p->m->tablespaces[i].oid != oid)
                continue;
            if (*end != '/')
                return err_set(err,
                               "refusing entry \"%s\" in backup \"%s\": it would replace "
                               "the tablespace link",
                               path, p->backup_id);
            base = p->spc_dest[i];
            rest = end + 1;
            break;
        }
    }
    if ((size_t)snprintf(out, outlen, "%s/%s", base, rest) >= outlen)
        return err_set(err, "path too long: \"%s/%s\"", base, rest);
    return true;
}

static bool extract_make_dir(const char *dest, uint32_t mode, pgd_error *err)
{
    struct stat st;

    if (mkdir(dest, 0700) != 0) {
        if (errno != EEXIST)
            return err_errno(err, errno, "could not create directory \"%s\"", dest);
        if (lstat(dest, &st) != 0 || !S_ISDIR(st.st_mode))
            return err_set(err, "\"%s\" exists and is not a directory", dest);
    }
    if (chmod(dest, extract_mode(mode, true)) != 0)
        return err_errno(err, errno, "could not set mode of directory \"%s\"", dest);
    return true;
}

bool extract_make_dirs(const extract_plan *p, pgd_error *err)
{
    /* the index is sorted by path, so a parent always comes before its children */
    for (size_t i = 0; i < p->m->nfiles; i++) {
        const manifest_file *f = &p->m->files[i];
        char dest[PATH_MAX];
        if (!f->is_dir)
            continue;
        if (!extract_dest_path(p, f->path, dest, sizeof(dest), err) ||
            !extract_make_dir(dest, f->mode, err))
            return false;
    }
    return true;
}

/* Where a file of the backup is written: pg_control under its temporary name. */
static bool extract_file_dest(const extract_plan *p, const char *path, char *out, size_t outlen,
                              pgd_error *err)
{
    size_t n;

    if (!extract_dest_path(p, path, out, outlen, err))
        return false;
    if (strcmp(path, EXTRACT_PG_CONTROL) != 0)
        return true;
    n = strlen(out);
    if (!str_format(out + n, outlen - n, "%s", EXTRACT_PG_CONTROL_TMP))
        return err_set(err, "path too long: \"%s%s\"", out, EXTRACT_PG_CONTROL_TMP);
    return true;
}

bool extract_publish_control(const extract_plan *p, pgd_error *err)
{
    char tmp[PATH_MAX], dest[PATH_MAX], dir[PATH_MAX];
    char *slash;
    durable_list *l;
    bool ok;

    if (manifest_find(p->m, EXTRACT_PG_CONTROL) < 0)
        return true; /* nothing to publish; PostgreSQL will not start without it anyway */
    if (!extract_file_dest(p, EXTRACT_PG_CONTROL, tmp, sizeof(tmp), err) ||
        !extract_dest_path(p, EXTRACT_PG_CONTROL, dest, sizeof(dest), err))
        return false;
    snprintf(dir, sizeof(dir), "%s", dest);
    slash = strrchr(dir, '/');
    *slash = '\0';
    if (rename(tmp, dest) != 0)
        return err_errno(err, errno, "could not rename file \"%s\" to \"%s\"", tmp, dest);
    /* the rename is durable once the directory is; the file was fsynced already */
    l = durable_list_new();
    if (l == NULL)
        return err_set(err, "out of memory");
    ok = durable_list_add(l, dest, false, err) && durable_list_add(l, dir, true, err) &&
         durable_list_sync(l, 1, err);
    durable_list_free(l);
    return ok;
}

bool extract_list_durable(const extract_plan *p, durable_list *l, pgd_error *err)
{
    for (size_t i = 0; i < p->m->nfiles; i++) {
        char dest[PATH_MAX];
        if (!extract_file_dest(p, p->m->files[i].path, dest, sizeof(dest), err) ||
            !durable_list_add(l, dest, p->m->files[i].is_dir, err))
            return false;
    }
    return true;
}

/* A file of a delta backup being assembled from its chain (extract_plan.older). */
typedef struct extract_asm {
    unsigned char *done; /* bitmap: pages written already, by a newer backup */
    uint64_t pages;      /* below the final size */
    bool need;           /* older backups must still supply pages */
} extract_asm;

typedef struct extract_shared {
    const extract_plan *p;
    unsigned char *restored;   /* per manifest file */
    unsigned char *links_seen; /* per manifest link: its tar entry was found */
    /* the backup whose partitions are being read: p->m (layer 0), then p->older[layer - 1] */
    const manifest *lm;
    const char *lid;
    size_t layer;
    unsigned char *part_needed; /* per partition of lm (layer > 0): holds a file still needed */
    extract_asm *asm_;          /* per file of p->m; NULL for a full backup */
} extract_shared;

typedef struct extract_worker {
    extract_shared *sh;
    char *buf;
    char *cmp; /* restore --delta: what the file holds where buf goes */
} extract_worker;

static bool extract_write_all(int fd, const char *buf, size_t len, const char *dest, pgd_error *err)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return err_errno(err, errno, "could not write file \"%s\"", dest);
        buf += n;
        len -= (size_t)n;
    }
    return true;
}

static bool extract_pwrite_all(int fd, const char *buf, size_t len, uint64_t off, const char *dest,
                               pgd_error *err)
{
    while (len > 0) {
        ssize_t n = pwrite(fd, buf, len, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return err_errno(err, errno, "could not write file \"%s\"", dest);
        buf += n;
        off += (uint64_t)n;
        len -= (size_t)n;
    }
    return true;
}

/* Up to len bytes of the file at off into buf; fewer at its end. */
static bool extract_pread_full(int fd, char *buf, size_t len, uint64_t off, size_t *got,
                               const char *dest, pgd_error *err)
{
    *got = 0;
    while (*got < len) {
        ssize_t n = pread(fd, buf + *got, len - *got, (off_t)(off + *got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return err_errno(err, errno, "could not read file \"%s\"", dest);
        if (n == 0)
            break;
        *got += (size_t)n;
    }
    return true;
}

/*
 * restore --delta: buf[0..n), the backup's bytes at `off`, compared page
 * by page with what the file holds there; runs of differing pages written.
 */
static bool extract_delta_write(const extract_plan *p, char *cmp, int fd, const char *dest,
                                const char *buf, size_t n, uint64_t off, bool *changed,
                                pgd_error *err)
{
    size_t got, run = 0, run_len = 0;
    uint64_t same = 0;

    if (!extract_pread_full(fd, cmp, n, off, &got, dest, err))
        return false;
    for (size_t at = 0; at < n; at += PG_PAGE_SIZE) {
        size_t len = n - at < PG_PAGE_SIZE ? n - at : PG_PAGE_SIZE;
        if (at + len <= got && memcmp(buf + at, cmp + at, len) == 0) {
            same += len;
            if (run_len > 0 && !extract_pwrite_all(fd, buf + run, run_len, off + run, dest, err))
                return false;
            run_len = 0;
            continue;
        }
        if (run_len == 0)
            run = at;
        run_len += len;
    }
    if (run_len > 0 && !extract_pwrite_all(fd, buf + run, run_len, off + run, dest, err))
        return false;
    if (same < n)
        *changed = true;
    __atomic_add_fetch(p->unchanged, same, __ATOMIC_RELAXED);
    return true;
}

/* A page of an assembled file: written, or with restore --delta only when it differs. */
static bool extract_put(const extract_plan *p, char *cmp, int fd, const char *dest, const char *buf,
                        size_t n, uint64_t off, pgd_error *err)
{
    bool changed = false;

    if (p->delta)
        return extract_delta_write(p, cmp, fd, dest, buf, n, off, &changed, err);
    return extract_pwrite_all(fd, buf, n, off, dest, err);
}

/*
 * The data of a file's tar entry into the file, checked against the
 * manifest's CRC-32C: a new file written through, or (restore --delta) an
 * existing one compared first; *changed when anything was written.
 */
static bool extract_file_data(extract_worker *w, work_pool *pool, tar_reader *tr, int fd,
                              const char *dest, const tar_entry *e, const manifest_file *f,
                              const char *part_name, bool *changed, pgd_error *err)
{
    const extract_plan *p = w->sh->p;
    uint32_t crc = CRC32C_INIT;
    uint64_t left = f->size, written = 0, flushed = 0;

    /* a file that shrank during the backup is zero-padded in the tar: keep the manifest size */
    while (left > 0) {
        size_t n;
        if (work_pool_stopping(pool))
            return false;
        if (!tar_reader_data(tr, w->buf, left < EXTRACT_CHUNK ? (size_t)left : EXTRACT_CHUNK, &n,
                             err))
            return false;
        if (n == 0)
            return err_set(err, "file \"%s\" in backup \"%s\" ends early", e->path, p->backup_id);
        crc = crc32c_update(crc, w->buf, n);
        if (p->delta ? !extract_delta_write(p, w->cmp, fd, dest, w->buf, n, written, changed, err)
                     : !extract_write_all(fd, w->buf, n, dest, err))
            return false;
        left -= n;
        written += n;
        if (written - flushed >= EXTRACT_WRITEBACK_EVERY) {
            durable_start_writeback(fd, (off_t)flushed, (off_t)(written - flushed));
            flushed = written;
        }
        work_pool_advance(pool, n);
    }
    if (crc32c_final(crc) != f->crc)
        return err_set(err,
                       "checksum mismatch for file \"%s\" in backup \"%s\" (partition \"%s\"): "
                       "%08x, the manifest says %08x",
                       e->path, p->backup_id, part_name, crc32c_final(crc), f->crc);
    /* the final fsync pass (restore/durable.h) finds it written already */
    durable_start_writeback(fd, (off_t)flushed, 0);
    return true;
}

static bool extract_file(extract_worker *w, work_pool *pool, tar_reader *tr, const tar_entry *e,
                         size_t part_idx, const char *part_name, pgd_error *err)
{
    const extract_plan *p = w->sh->p;
    long idx = manifest_find(p->m, e->path);
    const manifest_file *f;
    char dest[PATH_MAX];
    struct timespec times[2];
    struct stat st;
    bool changed;
    int fd;

    /* the path first: a hostile name is refused as such, whatever the manifest says */
    if (!extract_file_dest(p, e->path, dest, sizeof(dest), err))
        return false;
    if (idx < 0 || p->m->files[idx].is_dir || p->m->files[idx].partition != part_idx + 1 ||
        p->m->files[idx].increment)
        return err_set(err,
                       "file \"%s\" in partition \"%s\" of backup \"%s\" is not in "
                       "the manifest",
                       e->path, part_name, p->backup_id);
    f = &p->m->files[idx];
    if (e->size < f->size)
        return err_set(err,
                       "file \"%s\" in backup \"%s\" is truncated: %llu bytes, the "
                       "manifest says %llu",
                       e->path, p->backup_id, (unsigned long long)e->size,
                       (unsigned long long)f->size);
    /* read and write with --delta: every page is compared first */
    fd = open(dest, (p->delta ? O_RDWR : O_WRONLY) | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
              0600);
    changed = fd >= 0;
    if (fd < 0 && errno == EEXIST && p->delta)
        fd = open(dest, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return err_errno(err, errno, "could not create file \"%s\"", dest);
    if (fstat(fd, &st) != 0) {
        err_errno(err, errno, "could not stat file \"%s\"", dest);
        goto fail;
    }
    if (!S_ISREG(st.st_mode)) {
        err_set(err, "could not write file \"%s\": it is not a regular file", dest);
        goto fail;
    }
    if (!extract_file_data(w, pool, tr, fd, dest, e, f, part_name, &changed, err))
        goto fail;
    if ((uint64_t)st.st_size > f->size) {
        if (ftruncate(fd, (off_t)f->size) != 0) {
            err_errno(err, errno, "could not truncate file \"%s\"", dest);
            goto fail;
        }
        changed = true;
    }
    times[0].tv_sec = times[1].tv_sec = (time_t)f->mtime;
    times[0].tv_nsec = times[1].tv_nsec = 0;
    /* a file that already matched is left as it is, its mtime too */
    if (((st.st_mode & 07777) != extract_mode(f->mode, false) &&
         fchmod(fd, extract_mode(f->mode, false)) != 0) ||
        (changed && futimens(fd, times) != 0)) {
        err_errno(err, errno, "could not set mode or time of \"%s\"", dest);
        goto fail;
    }
    if (close(fd) != 0) {
        err_errno(err, errno, "could not close file \"%s\"", dest);
        if (!p->delta)
            unlink(dest);
        return false;
    }
    w->sh->restored[idx] = 1;
    return true;
fail:
    close(fd);
    /* an existing file's old bytes are gone already; delta_dir.h's retired pg_control guards it */
    if (!p->delta)
        unlink(dest);
    return false;
}

static void extract_bit_set(unsigned char *bits, uint64_t i)
{
    bits[i / 8] |= (unsigned char)(1u << (i % 8));
}

static bool extract_bit_get(const unsigned char *bits, uint64_t i)
{
    return (bits[i / 8] >> (i % 8)) & 1u;
}

/* The entry of the backup being read for `path`, as it must be stored (whole or increment). */
static bool extract_layer_file(const extract_shared *sh, const char *path, const char *tar_path,
                               bool increment, size_t part_idx, const char *part_name,
                               const manifest_file **out, pgd_error *err)
{
    long idx = manifest_find(sh->lm, path);

    if (idx < 0 || sh->lm->files[idx].is_dir || sh->lm->files[idx].partition != part_idx + 1 ||
        sh->lm->files[idx].increment != increment)
        return err_set(err,
                       "file \"%s\" in partition \"%s\" of backup \"%s\" is not in the manifest",
                       tar_path, part_name, sh->lid);
    *out = &sh->lm->files[idx];
    return true;
}

typedef struct extract_page_sink {
    const extract_plan *p;
    char *cmp; /* restore --delta: compare before writing */
    int fd;
    const char *dest;
    extract_asm *a;
    uint64_t final_size;
} extract_page_sink;

/* An increment's page: written where no newer backup wrote one, and below the final size. */
static bool extract_increment_page(void *arg, uint32_t block, const unsigned char *page,
                                   pgd_error *err)
{
    extract_page_sink *k = arg;
    uint64_t off = (uint64_t)block * INCREMENT_PAGE_SIZE;
    size_t len;

    if (block >= k->a->pages || extract_bit_get(k->a->done, block))
        return true;
    len = k->final_size - off < INCREMENT_PAGE_SIZE ? (size_t)(k->final_size - off)
                                                    : INCREMENT_PAGE_SIZE;
    if (!extract_put(k->p, k->cmp, k->fd, k->dest, (const char *)page, len, off, err))
        return false;
    extract_bit_set(k->a->done, block);
    return true;
}

/*
 * An increment entry: of the backup restored (the file is created at its
 * final size) or of an older one (only while the file still needs pages).
 */
static bool extract_increment(extract_worker *w, work_pool *pool, tar_reader *tr,
                              const tar_entry *e, const char *path, size_t part_idx,
                              const char *part_name, pgd_error *err)
{
    extract_shared *sh = w->sh;
    const extract_plan *p = sh->p;
    const manifest_file *lf;
    long nidx;
    char dest[PATH_MAX];
    extract_page_sink sink = {.p = p, .cmp = w->cmp, .fd = -1, .dest = dest};
    increment_reader ir;
    uint32_t crc = CRC32C_INIT;
    uint64_t left;
    bool ok;

    if (!extract_file_dest(p, path, dest, sizeof(dest), err) ||
        !extract_layer_file(sh, path, e->path, true, part_idx, part_name, &lf, err))
        return false;
    nidx = manifest_find(p->m, path);
    if (sh->layer > 0 && (nidx < 0 || p->m->files[nidx].is_dir || !sh->asm_[nidx].need))
        return true; /* no newer backup needs it: its data is skipped */
    if (e->size < lf->size)
        return err_set(err,
                       "file \"%s\" in backup \"%s\" is truncated: %llu bytes, the manifest says "
                       "%llu",
                       e->path, sh->lid, (unsigned long long)e->size, (unsigned long long)lf->size);
    sink.a = &sh->asm_[nidx];
    sink.final_size = p->m->files[nidx].file_size;
    if (sh->layer == 0) {
        sink.a->pages = increment_file_pages(sink.final_size);
        sink.a->done = calloc(sink.a->pages / 8 + 1, 1);
        if (sink.a->done == NULL)
            return err_set(err, "out of memory");
        sink.a->need = true;
        /* restore --delta: an existing file (restore/delta_dir.h kept only a plain one) is reused
         */
        sink.fd = open(dest,
                       p->delta ? O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC
                                : O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                       0600);
        if (sink.fd < 0)
            return err_errno(err, errno, "could not create file \"%s\"", dest);
        if (ftruncate(sink.fd, (off_t)sink.final_size) != 0) {
            err_errno(err, errno, "could not extend file \"%s\"", dest);
            close(sink.fd);
            return false;
        }
    } else {
        sink.fd = open(dest, (p->delta ? O_RDWR : O_WRONLY) | O_NOFOLLOW | O_CLOEXEC);
        if (sink.fd < 0)
            return err_errno(err, errno, "could not open file \"%s\"", dest);
    }
    ok = increment_reader_init(&ir, e->path, true, lf->size, lf->file_size, lf->inc_blocks, err);
    for (left = lf->size; ok && left > 0;) {
        size_t n = 0;
        ok = !work_pool_stopping(pool) &&
             tar_reader_data(tr, w->buf, left < EXTRACT_CHUNK ? (size_t)left : EXTRACT_CHUNK, &n,
                             err);
        if (ok && n == 0)
            ok = err_set(err, "file \"%s\" in backup \"%s\" ends early", e->path, sh->lid);
        if (!ok)
            break;
        crc = crc32c_update(crc, w->buf, n);
        ok = increment_reader_feed(&ir, w->buf, n, extract_increment_page, &sink, err);
        left -= n;
        work_pool_advance(pool, n);
    }
    ok = ok && increment_reader_finish(&ir, err);
    increment_reader_free(&ir);
    if (!ok && err->msg[0] != '\0' && strstr(err->msg, sh->lid) == NULL)
        err_prefix(err, "backup \"%s\" (partition \"%s\")", sh->lid, part_name);
    if (ok && crc32c_final(crc) != lf->crc)
        ok = err_set(err,
                     "checksum mismatch for file \"%s\" in backup \"%s\" (partition \"%s\"): "
                     "%08x, the manifest says %08x",
                     e->path, sh->lid, part_name, crc32c_final(crc), lf->crc);
    if (close(sink.fd) != 0 && ok)
        ok = err_errno(err, errno, "could not close file \"%s\"", dest);
    if (ok && sh->layer == 0)
        sh->restored[nidx] = 1;
    return ok;
}

/* An older backup's whole copy of a file still being assembled: it fills what is missing. */
static bool extract_older_whole(extract_worker *w, work_pool *pool, tar_reader *tr,
                                const tar_entry *e, size_t part_idx, const char *part_name,
                                pgd_error *err)
{
    extract_shared *sh = w->sh;
    const extract_plan *p = sh->p;
    const manifest_file *lf;
    long nidx = manifest_find(p->m, e->path);
    extract_asm *a;
    char dest[PATH_MAX];
    uint32_t crc = CRC32C_INIT;
    uint64_t off = 0, final_size, own_pages;
    int fd;
    bool ok = true;

    if (!extract_file_dest(p, e->path, dest, sizeof(dest), err) ||
        !extract_layer_file(sh, e->path, e->path, false, part_idx, part_name, &lf, err))
        return false;
    if (nidx < 0 || p->m->files[nidx].is_dir || sh->asm_[nidx].done == NULL || !sh->asm_[nidx].need)
        return true;
    if (e->size < lf->size)
        return err_set(err,
                       "file \"%s\" in backup \"%s\" is truncated: %llu bytes, the manifest says "
                       "%llu",
                       e->path, sh->lid, (unsigned long long)e->size, (unsigned long long)lf->size);
    a = &sh->asm_[nidx];
    final_size = p->m->files[nidx].file_size;
    fd = open(dest, (p->delta ? O_RDWR : O_WRONLY) | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return err_errno(err, errno, "could not open file \"%s\"", dest);
    /* the bitmap is only updated at the end: a page may straddle two chunks */
    while (ok && off < lf->size) {
        size_t n = 0;
        uint64_t at;
        ok = !work_pool_stopping(pool) &&
             tar_reader_data(tr, w->buf,
                             lf->size - off < EXTRACT_CHUNK ? (size_t)(lf->size - off)
                                                            : EXTRACT_CHUNK,
                             &n, err);
        if (ok && n == 0)
            ok = err_set(err, "file \"%s\" in backup \"%s\" ends early", e->path, sh->lid);
        if (!ok)
            break;
        crc = crc32c_update(crc, w->buf, n);
        for (at = off; ok && at < off + n && at < final_size;) {
            uint64_t block = at / INCREMENT_PAGE_SIZE;
            uint64_t end = (block + 1) * INCREMENT_PAGE_SIZE;
            if (end > off + n)
                end = off + n;
            if (end > final_size)
                end = final_size;
            if (!extract_bit_get(a->done, block))
                ok = extract_put(p, w->cmp, fd, dest, w->buf + (at - off), (size_t)(end - at), at,
                                 err);
            at = end;
        }
        off += n;
        work_pool_advance(pool, n);
    }
    if (ok && crc32c_final(crc) != lf->crc)
        ok = err_set(err,
                     "checksum mismatch for file \"%s\" in backup \"%s\" (partition \"%s\"): "
                     "%08x, the manifest says %08x",
                     e->path, sh->lid, part_name, crc32c_final(crc), lf->crc);
    if (close(fd) != 0 && ok)
        ok = err_errno(err, errno, "could not close file \"%s\"", dest);
    if (!ok)
        return false;
    own_pages = increment_file_pages(lf->size);
    for (uint64_t b = 0; b < own_pages && b < a->pages; b++)
        extract_bit_set(a->done, b);
    /* the base of the file: nothing older can add to it */
    a->need = false;
    return true;
}

/* A file entry of an older backup of the chain: used only when a file still needs it. */
static bool extract_older_file(extract_worker *w, work_pool *pool, tar_reader *tr,
                               const tar_entry *e, size_t part_idx, const char *part_name,
                               pgd_error *err)
{
    char path[PATH_MAX];

    if (increment_file_path(e->path, path, sizeof(path)))
        return extract_increment(w, pool, tr, e, path, part_idx, part_name, err);
    return extract_older_whole(w, pool, tr, e, part_idx, part_name, err);
}

/* A link's tar entry must be the manifest's; links_create makes it, after every file. */
static bool extract_link_entry(extract_worker *w, const tar_entry *e, size_t part_idx,
                               const char *part_name, pgd_error *err)
{
    const extract_plan *p = w->sh->p;
    char dest[PATH_MAX];
    long idx;

    if (!extract_dest_path(p, e->path, dest, sizeof(dest), err))
        return false;
    idx = manifest_find_link(p->m, e->path);
    if (idx < 0 || p->m->links[idx].partition != part_idx + 1 || e->linkpath == NULL ||
        strcmp(e->linkpath, p->m->links[idx].target) != 0)
        return err_set(err,
                       "refusing link \"%s\" -> \"%s\" in partition \"%s\" of backup \"%s\": "
                       "the manifest does not list it",
                       e->path, e->linkpath ? e->linkpath : "", part_name, p->backup_id);
    w->sh->links_seen[idx] = 1;
    return true;
}

/* One entry of a partition: a file is written, a directory or link checked against the manifest. */
static bool extract_entry(extract_worker *w, work_pool *pool, tar_reader *tr, const tar_entry *e,
                          size_t part_idx, const char *part_name, pgd_error *err)
{
    const extract_plan *p = w->sh->p;
    char dest[PATH_MAX];

    char real[PATH_MAX];

    /* an older backup of a chain: only its files' data matters, the newest decides the rest */
    if (w->sh->layer > 0)
        return e->type == TAR_FILE ? extract_older_file(w, pool, tr, e, part_idx, part_name, err)
                                   : true;
    switch (e->type) {
    case TAR_FILE:
        if (p->m->delta && increment_file_path(e->path, real, sizeof(real)))
            return extract_increment(w, pool, tr, e, real, part_idx, part_name, err);
        return extract_file(w, pool, tr, e, part_idx, part_name, err);
    case TAR_DIR:
        return extract_dest_path(p, e->path, dest, sizeof(dest), err) &&
               (manifest_find(p->m, e->path) >= 0 ||
                err_set(err,
                        "directory \"%s\" in partition \"%s\" of backup \"%s\" is not in the "
                        "manifest",
                        e->path, part_name, p->backup_id));
    case TAR_SYMLINK:
        return extract_link_entry(w, e, part_idx, part_name, err);
    case TAR_HARDLINK:
        return err_set(err,
                       "refusing hard link \"%s\" -> \"%s\" in partition \"%s\" of backup "
                       "\"%s\": pgdirect never writes one",
                       e->path, e->linkpath ? e->linkpath : "", part_name, p->backup_id);
    default:
        return err_set(err,
                       "refusing entry \"%s\" of type '%c' in partition \"%s\" of backup \"%s\"",
                       e->path, e->type, part_name, p->backup_id);
    }
}

/* A task of the work pool: partition number `part_idx`, every entry, then its size and CRC. */
static bool extract_partition(work_pool *pool, void *worker, size_t part_idx, pgd_error *err)
{
    extract_worker *w = worker;
    const extract_plan *p = w->sh->p;
    const manifest_partition *part = &w->sh->lm->partitions[part_idx];
    char path[LAYOUT_PATH_MAX];
    tar_reader tr;
    in_stream *in;
    bool missing, end = false, ok = true;

    /* an older backup's partition with nothing a newer one still needs is not read at all */
    if (w->sh->layer > 0 && !w->sh->part_needed[part_idx])
        return true;
    layout_backup_object(w->sh->lid, part->name, path, sizeof(path));
    in = storage_read_open(p->repo, path, &missing, err);
    if (in == NULL)
        return missing ? err_set(err,
                                 "partition \"%s\" of backup \"%s\" is missing from "
                                 "repository \"%s\"",
                                 part->name, w->sh->lid, p->repo->uri)
                       : false;
    in = crc_in_new(in, path, part->size, part->crc, err);
    if (in != NULL)
        in = decompress_in_new(compress_from_suffix(part->name), in, path, err);
    if (in == NULL)
        return false;
    tar_reader_init(&tr, in, path);
    while (ok && !end) {
        tar_entry e;
        if (work_pool_stopping(pool) || !tar_reader_next(&tr, &e, &end, err)) {
            ok = false;
            break;
        }
        if (!end)
            ok = extract_entry(w, pool, &tr, &e, part_idx, part->name, err);
        tar_entry_free(&e);
    }
    /* drain to the end so the partition's size and CRC-32C are checked */
    while (ok) {
        size_t n = 0;
        ok = in_read(in, w->buf, EXTRACT_CHUNK, &n, err);
        if (n == 0)
            break;
    }
    in_close(in);
    return ok;
}

static uint64_t extract_manifest_bytes(const manifest *m)
{
    uint64_t total = 0;

    for (size_t i = 0; i < m->nfiles; i++)
        total += m->files[i].size;
    return total;
}

/* Every file and link of the manifest was found in its partition. */
static bool extract_check_complete(const extract_plan *p, const extract_shared *sh, pgd_error *err)
{
    for (size_t i = 0; i < p->m->nfiles; i++)
        if (!p->m->files[i].is_dir && !sh->restored[i])
            return err_set(err, "file \"%s\" of backup \"%s\" was not found in partition \"%s\"",
                           p->m->files[i].path, p->backup_id,
                           p->m->partitions[p->m->files[i].partition - 1].name);
    for (size_t i = 0; i < p->m->nlinks; i++)
        if (!sh->links_seen[i])
            return err_set(err, "link \"%s\" of backup \"%s\" was not found in partition \"%s\"",
                           p->m->links[i].path, p->backup_id,
                           p->m->partitions[p->m->links[i].partition - 1].name);
    return true;
}

/* Which partitions of the backup now read hold a file that still needs data; false if none. */
static bool extract_mark_needed(extract_shared *sh)
{
    const manifest *lm = sh->lm;
    bool any = false;

    memset(sh->part_needed, 0, lm->npartitions ? lm->npartitions : 1);
    for (size_t j = 0; j < lm->nfiles; j++) {
        long nidx;
        if (lm->files[j].is_dir || lm->files[j].partition == 0 ||
            lm->files[j].partition > lm->npartitions)
            continue;
        nidx = manifest_find(sh->p->m, lm->files[j].path);
        if (nidx >= 0 && sh->asm_[nidx].need) {
            sh->part_needed[lm->files[j].partition - 1] = 1;
            any = true;
        }
    }
    return any;
}

/* Read an assembled file back: its CRC-32C for the restored backup_manifest; its mode and time. */
static bool extract_assembled_file(const extract_plan *p, manifest_file *f, char *buf,
                                   pgd_error *err)
{
    char dest[PATH_MAX];
    struct timespec times[2] = {{.tv_sec = (time_t)f->mtime}, {.tv_sec = (time_t)f->mtime}};
    uint32_t crc = CRC32C_INIT;
    uint64_t total = 0;
    ssize_t n;
    int fd;

    if (!extract_file_dest(p, f->path, dest, sizeof(dest), err))
        return false;
    fd = open(dest, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return err_errno(err, errno, "could not open file \"%s\"", dest);
    while ((n = read(fd, buf, EXTRACT_CHUNK)) > 0) {
        crc = crc32c_update(crc, buf, (size_t)n);
        total += (uint64_t)n;
    }
    if (n < 0 || fchmod(fd, extract_mode(f->mode, false)) != 0 || futimens(fd, times) != 0) {
        int e = errno;
        close(fd);
        return err_errno(err, e, "could not read or set mode or time of \"%s\"", dest);
    }
    durable_start_writeback(fd, 0, 0);
    close(fd);
    if (total != f->file_size)
        return err_set(err, "file \"%s\" has %llu bytes after assembly, not %llu", dest,
                       (unsigned long long)total, (unsigned long long)f->file_size);
    f->size = f->file_size;
    f->crc = crc32c_final(crc);
    f->increment = false;
    f->inc_blocks = 0;
    return true;
}

/* Every page of every assembled file was supplied; then each is read back (see extract.h). */
static bool extract_assembled_finish(const extract_plan *p, const extract_shared *sh, char *buf,
                                     pgd_error *err)
{
    for (size_t i = 0; i < p->m->nfiles; i++) {
        const extract_asm *a = &sh->asm_[i];
        if (a->done == NULL)
            continue;
        for (uint64_t b = 0; b < a->pages; b++)
            if (!extract_bit_get(a->done, b))
                return err_set(err,
                               "block %llu of file \"%s\" of backup \"%s\" is in no backup of "
                               "its chain",
                               (unsigned long long)b, p->m->files[i].path, p->backup_id);
        if (!extract_assembled_file(p, &p->m->files[i], buf, err))
            return false;
    }
    return true;
}

/* The older backups of a delta's chain, newest first, while files still need data. */
static bool extract_older_layers(const extract_plan *p, extract_shared *sh, work_pool_job *job,
                                 uint64_t *bytes, pgd_error *err)
{
    for (size_t k = 0; k < p->nolder; k++) {
        uint64_t layer_bytes = 0;
        sh->lm = p->older[k].m;
        sh->lid = p->older[k].backup_id;
        sh->layer = k + 1;
        free(sh->part_needed);
        sh->part_needed = calloc(sh->lm->npartitions ? sh->lm->npartitions : 1, 1);
        if (sh->part_needed == NULL)
            return err_set(err, "out of memory");
        if (!extract_mark_needed(sh))
            break;
        log_debug("reading the pages still needed from backup %s", sh->lid);
        job->ntasks = sh->lm->npartitions;
        if (!work_pool_run(job, &layer_bytes, err))
            return false;
        *bytes += layer_bytes;
    }
    return true;
}

bool extract_partitions(const extract_plan *p, uint64_t *bytes, pgd_error *err)
{
    extract_shared sh = {.p = p, .lm = p->m, .lid = p->backup_id};
    extract_worker *workers = calloc((size_t)p->concurrency, sizeof(*workers));
    progress_meter meter;
    work_pool_job job = {.threads = (unsigned)p->concurrency,
                         .ntasks = p->m->npartitions,
                         .workers = workers,
                         .worker_size = sizeof(*workers),
                         .run = extract_partition,
                         .thread_name = "restore thread",
                         .cancel = p->cancel,
                         .progress = &meter};
    bool ok = workers != NULL;

    *bytes = 0;
    sh.restored = calloc(p->m->nfiles ? p->m->nfiles : 1, 1);
    sh.links_seen = calloc(p->m->nlinks ? p->m->nlinks : 1, 1);
    ok = ok && sh.restored != NULL && sh.links_seen != NULL;
    if (ok && p->m->delta)
        ok = (sh.asm_ = calloc(p->m->nfiles ? p->m->nfiles : 1, sizeof(*sh.asm_))) != NULL;
    for (int i = 0; ok && i < p->concurrency; i++) {
        workers[i] = (extract_worker){.sh = &sh,
                                      .buf = malloc(EXTRACT_CHUNK),
                                      .cmp = p->delta ? malloc(EXTRACT_CHUNK) : NULL};
        ok = workers[i].buf != NULL && (!p->delta || workers[i].cmp != NULL);
    }
    if (!ok)
        err_set(err, "out of memory");
    progress_start(&meter, p->progress, extract_manifest_bytes(p->m));
    ok = ok && work_pool_run(&job, bytes, err) && extract_check_complete(p, &sh, err);
    if (ok && sh.asm_ != NULL)
        ok = extract_older_layers(p, &sh, &job, bytes, err) &&
             extract_assembled_finish(p, &sh, workers[0].buf, err);
    progress_finish(&meter);
    for (int i = 0; workers != NULL && i < p->concurrency; i++) {
        free(workers[i].buf);
        free(workers[i].cmp);
    }
    free(workers);
    free(sh.restored);
    free(sh.links_seen);
    free(sh.part_needed);
    for (size_t i = 0; sh.asm_ != NULL && i < p->m->nfiles; i++)
        free(sh.asm_[i].done);
    free(sh.asm_);
    return ok;
}
