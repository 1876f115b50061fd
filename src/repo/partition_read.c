/*
 * partition_read.c - a backup's partition opened, its entries checked
 * against the manifest and handed to the caller, then drained (see
 * partition_read.h).
 */
#define _GNU_SOURCE
#include "repo/partition_read.h"

#include <limits.h>
#include <string.h>

#include "compress/compress.h"
#include "repo/increment.h"
#include "repo/layout.h"
#include "util/crc32c.h"

/*
 * A file's tar entry declares exactly the size its manifest entry records.
 * A header that declares more is damage as much as one that declares less:
 * the manifest no longer says what the partition holds, and reading only
 * the manifest's bytes would pass over the rest unseen. Checked before any
 * of the entry's data is read.
 */
/*
 * What was read of the partition is wrong (its bytes, its tar, what the manifest says of it): a
 * verdict on the repository's data, PGD_ERR_DAMAGED, so that a drill can tell it from a restore
 * that could not run; a store that did not answer stays PGD_ERR_TRANSIENT. Returns false.
 */
static bool partition_read_damaged(pgd_error *err)
{
    if (!err_is(err, PGD_ERR_TRANSIENT))
        err_mark(err, PGD_ERR_DAMAGED);
    return false;
}

static bool partition_read_size_matches(const partition_read *pr, const tar_entry *e,
                                        const manifest_file *f, pgd_error *err)
{
    if (e->size == f->size)
        return true;
    err_set(err,
            "tar header of file \"%s\" in partition \"%s\" of backup \"%s\" declares "
            "%llu bytes; the manifest says %llu",
            e->path, pr->part_name, pr->backup_id, (unsigned long long)e->size,
            (unsigned long long)f->size);
    return partition_read_damaged(err);
}

/* A file entry: the manifest's, in this partition, whole or an increment as listed, its size. */
static bool partition_read_file_entry(partition_read *pr, const tar_entry *e, pgd_error *err)
{
    const manifest *m = pr->m;
    char real[PATH_MAX];
    /* a delta's increment is stored as dir/INCREMENTAL.name; the manifest has the real path */
    bool increment = m->delta && increment_file_path(e->path, real, sizeof(real));
    partition_read_file pf = {.e = e, .path = increment ? real : e->path};
    long idx;
    bool ok;

    if (pr->ops->check_path != NULL && !pr->ops->check_path(pr->arg, pf.path, err))
        return false;
    idx = manifest_find(m, pf.path);
    if (idx < 0 || m->files[idx].is_dir || m->files[idx].partition != pr->part_idx + 1 ||
        m->files[idx].increment != increment) {
        err_set(err, "file \"%s\" in partition \"%s\" of backup \"%s\" is not in the manifest",
                e->path, pr->part_name, pr->backup_id);
        return partition_read_damaged(err);
    }
    pf.idx = (size_t)idx;
    pf.f = &m->files[idx];
    if (!partition_read_size_matches(pr, e, pf.f, err))
        return false;
    pr->cur = &pf;
    ok = pr->ops->file(pr->arg, pr, &pf, err);
    pr->cur = NULL;
    return ok;
}

/* A link entry: the manifest's, in this partition, to the same target. */
static bool partition_read_link_entry(partition_read *pr, const tar_entry *e, pgd_error *err)
{
    const manifest *m = pr->m;
    long idx;

    if (pr->ops->check_path != NULL && !pr->ops->check_path(pr->arg, e->path, err))
        return false;
    idx = manifest_find_link(m, e->path);
    if (idx < 0 || m->links[idx].partition != pr->part_idx + 1 || e->linkpath == NULL ||
        strcmp(e->linkpath, m->links[idx].target) != 0) {
        err_set(err,
                "refusing link \"%s\" -> \"%s\" in partition \"%s\" of backup \"%s\": the "
                "manifest does not list it",
                e->path, e->linkpath ? e->linkpath : "", pr->part_name, pr->backup_id);
        return partition_read_damaged(err);
    }
    if (pr->ops->link_seen != NULL)
        pr->ops->link_seen(pr->arg, (size_t)idx);
    return true;
}

static bool partition_read_entry(partition_read *pr, const tar_entry *e, pgd_error *err)
{
    long idx;

    if (pr->ops->files_only && e->type != TAR_FILE)
        return true;
    switch (e->type) {
    case TAR_FILE:
        return partition_read_file_entry(pr, e, err);
    case TAR_DIR:
        if (pr->ops->check_path != NULL && !pr->ops->check_path(pr->arg, e->path, err))
            return false;
        idx = manifest_find(pr->m, e->path);
        if (idx < 0 || (pr->ops->strict_dirs && !pr->m->files[idx].is_dir))
            return err_set(err,
                           "directory \"%s\" in partition \"%s\" of backup \"%s\" is not in the "
                           "manifest",
                           e->path, pr->part_name, pr->backup_id);
        return true;
    case TAR_SYMLINK:
        return partition_read_link_entry(pr, e, err);
    case TAR_HARDLINK:
        return err_set(err,
                       "refusing hard link \"%s\" -> \"%s\" in partition \"%s\" of backup "
                       "\"%s\": pgdirect never writes one",
                       e->path, e->linkpath ? e->linkpath : "", pr->part_name, pr->backup_id);
    default:
        return err_set(err,
                       "refusing entry \"%s\" of type '%c' in partition \"%s\" of backup \"%s\"",
                       e->path, e->type, pr->part_name, pr->backup_id);
    }
}

bool partition_read_file_data(partition_read *pr, const partition_read_sink *sink, pgd_error *err)
{
    const partition_read_file *pf = pr->cur;
    uint32_t crc = CRC32C_INIT;
    uint64_t off = 0;

    while (off < pf->f->size) {
        uint64_t left = pf->f->size - off;
        size_t n = 0;
        if (pr->pool != NULL && work_pool_stopping(pr->pool))
            return false;
        if (!tar_reader_data(&pr->tr, pr->buf, left < pr->buflen ? (size_t)left : pr->buflen, &n,
                             err))
            return partition_read_damaged(err);
        if (n == 0) {
            err_set(err, "file \"%s\" in partition \"%s\" of backup \"%s\" ends early", pf->e->path,
                    pr->part_name, pr->backup_id);
            return partition_read_damaged(err);
        }
        crc = crc32c_update(crc, pr->buf, n);
        if (!sink->data(sink->arg, pr->buf, n, off, err))
            return false;
        off += n;
        if (pr->pool != NULL)
            work_pool_advance(pr->pool, n);
    }
    if (sink->check != NULL && !sink->check(sink->arg, err))
        return false;
    if (crc32c_final(crc) != pf->f->crc) {
        err_set(err,
                "checksum mismatch for file \"%s\" in backup \"%s\" (partition \"%s\"): %08x, "
                "the manifest says %08x",
                pf->e->path, pr->backup_id, pr->part_name, crc32c_final(crc), pf->f->crc);
        return partition_read_damaged(err);
    }
    return true;
}

bool partition_read_run(partition_read *pr, pgd_error *err)
{
    const manifest_partition *part = &pr->m->partitions[pr->part_idx];
    char path[LAYOUT_PATH_MAX];
    in_stream *in;
    bool missing = false, end = false, ok = true;

    pr->part_name = part->name;
    pr->open_failed = false;
    pr->cur = NULL;
    layout_backup_object(pr->backup_id, part->name, path, sizeof(path));
    in = storage_read_open(pr->repo, path, &missing, err);
    if (in == NULL) {
        if (!missing) {
            pr->open_failed = true;
            return false;
        }
        err_set(err, "partition \"%s\" of backup \"%s\" is missing from repository \"%s\"",
                part->name, pr->backup_id, pr->repo->uri);
        return partition_read_damaged(err);
    }
    in = crc_in_new(in, path, part->size, part->crc);
    in = decompress_in_new(compress_from_suffix(part->name), in, path, err);
    if (in == NULL)
        return false;
    tar_reader_init(&pr->tr, in, path);
    while (ok && !end) {
        tar_entry e;
        if ((pr->pool != NULL && work_pool_stopping(pr->pool)) ||
            !tar_reader_next(&pr->tr, &e, &end, err)) {
            ok = pr->pool != NULL && work_pool_stopping(pr->pool) ? false
                                                                  : partition_read_damaged(err);
            break;
        }
        if (!end)
            ok = partition_read_entry(pr, &e, err);
        tar_entry_free(&e);
    }
    /* drain to the end so the partition's size and CRC-32C are checked */
    while (ok) {
        size_t n = 0;
        if (!in_read(in, pr->buf, pr->buflen, &n, err))
            ok = partition_read_damaged(err);
        if (n == 0)
            break;
    }
    in_close(in);
    return ok;
}
