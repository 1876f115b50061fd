/*
 * record.c - a backup's manifest, sentinel and labels, built from what
 * the run learned and written in the order record.h explains.
 */
#include "backup/record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg/wal_history.h"
#include "pg/wal_name.h"
#include "repo/layout.h"
#include "repo/pg_manifest.h"
#include "util/xmalloc.h"

#define RECORD_TYPE_FULL  "full"
#define RECORD_TYPE_DELTA "delta"

/* "direct", or the one mode every file used, or "mixed". */
static const char *record_read_mode(unsigned modes, read_mode asked)
{
    for (int m = READ_MODE_DIRECT; m <= READ_MODE_CACHE_NEUTRAL; m++)
        if (modes == (1u << m))
            return read_mode_name((read_mode)m);
    if (modes == 0)
        return read_mode_name(asked);
    return "mixed (cache-neutral where O_DIRECT was refused)";
}

void record_init(backup_record *r)
{
    memset(&r->info, 0, sizeof(r->info));
    r->info.pages_evicted = -1;
    manifest_init(&r->m);
}

void record_free(backup_record *r)
{
    manifest_free(&r->m);
}

/* Pages verified and failed, over every file; whether that marks the backup. */
static void record_checksum_totals(backup_info *bi, const record_facts *f)
{
    snprintf(bi->page_checksums, sizeof(bi->page_checksums), "%s",
             f->page_checksums != NULL ? f->page_checksums : "");
    for (size_t i = 0; i < f->nfiles; i++) {
        if (!f->files[i].done)
            continue;
        bi->pages_checked += f->files[i].result.pages_checked;
        bi->checksum_errors += f->files[i].result.pages_bad;
        bi->checksum_error_files += f->files[i].result.pages_bad > 0;
    }
    bi->checksum_failed = f->checksum_errors_fail && bi->checksum_errors > 0;
}

/* The sentinel's fields: where the backup's WAL starts and ends, and what the run was. */
static bool record_build_info(backup_info *bi, const record_facts *f, const char *backup_label,
                              pgd_error *err)
{
    snprintf(bi->id, sizeof(bi->id), "%s", f->id);
    snprintf(bi->type, sizeof(bi->type), f->parent != NULL ? RECORD_TYPE_DELTA : RECORD_TYPE_FULL);
    if (f->parent != NULL) {
        snprintf(bi->parent, sizeof(bi->parent), "%s", f->parent->id);
        bi->parent_start_lsn = f->parent->start_lsn;
        bi->depth = f->parent->depth + 1;
        snprintf(bi->delta_method, sizeof(bi->delta_method), "%s",
                 f->delta_method != NULL ? f->delta_method : "");
    }
    snprintf(bi->label, sizeof(bi->label), "%s", f->label);
    snprintf(bi->annotations, sizeof(bi->annotations), "%s", f->annotations ? f->annotations : "");
    bi->start_time = f->start_time;
    bi->stop_time = f->stop_time;
    bi->start_lsn = f->start_lsn;
    bi->stop_lsn = f->stop_lsn;
    if (!wal_history_label_timeline(backup_label, &bi->timeline))
        return err_set(err, "backup_label returned by the server has no START TIMELINE line");
    /* what the backup needs: WAL from its start segment to its stop segment */
    wal_name_of_lsn(bi->timeline, f->start_lsn, f->pg->wal_segment_size, false, bi->start_wal);
    wal_name_of_lsn(bi->timeline, f->stop_lsn, f->pg->wal_segment_size, true, bi->stop_wal);
    snprintf(bi->system_identifier, sizeof(bi->system_identifier), "%s", f->pg->system_identifier);
    bi->pg_version_num = f->pg->version_num;
    snprintf(bi->tool_version, sizeof(bi->tool_version), "%s", f->tool_version);
    snprintf(bi->compression, sizeof(bi->compression), "%s", compress_name(f->compression));
    snprintf(bi->read_mode, sizeof(bi->read_mode), "%s",
             record_read_mode(f->res->read_modes, f->mode));
    bi->from_standby = f->from_standby;
    bi->stop_next_xid = f->stop_next_xid;
    bi->size = f->res->bytes_read;
    bi->compressed_size = f->res->bytes_stored;
    bi->pages_evicted = f->res->evicted_measured ? (int64_t)f->res->pages_evicted : -1;
    record_checksum_totals(bi, f);
    return true;
}

/* Its number in the manifest's partitions array (1-based) for a pipeline partition number. */
static uint32_t record_partition_index(const pipeline_result *res, uint32_t number)
{
    for (size_t k = 0; k < res->npartitions; k++)
        if (res->partitions[k].number == number)
            return (uint32_t)k + 1;
    return 0;
}

static void record_add_file(manifest *m, const pipeline_file *f, const pipeline_result *res)
{
    uint32_t partition = record_partition_index(res, f->partition);

    if (f->link != NULL) {
        manifest_link l = {.path = (char *)f->path,
                           .target = (char *)f->link,
                           .mode = f->mode,
                           .mtime = f->mtime,
                           .partition = partition};
        manifest_add_link(m, &l);
        return;
    }
    manifest_file mf = {.path = (char *)f->path,
                        .is_dir = f->is_dir,
                        .size = f->result.size,
                        .mode = f->mode,
                        .mtime = f->mtime,
                        .crc = f->result.crc,
                        .partition = partition,
                        .pages_bad = f->result.pages_bad,
                        .increment = f->result.increment,
                        .file_size = f->result.increment ? f->result.file_size : f->result.size,
                        .inc_blocks = f->result.inc_blocks};

    _Static_assert(MANIFEST_BAD_BLOCKS_MAX == FILE_FILTER_BAD_BLOCKS_MAX,
                   "the manifest lists the bad blocks the filter keeps");
    memcpy(mf.bad_blocks, f->result.bad_blocks, sizeof(mf.bad_blocks));
    manifest_add_file(m, &mf);
}

static int record_path_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A delta's gone[]: what the parent's manifest lists and this one does not. */
static void record_gone(manifest *m, const manifest *parent)
{
    size_t n = m->nfiles + m->nlinks, k = 0;
    char **paths = xmalloc((n ? n : 1) * sizeof(*paths));

    for (size_t i = 0; i < m->nfiles; i++)
        paths[k++] = m->files[i].path;
    for (size_t i = 0; i < m->nlinks; i++)
        paths[k++] = m->links[i].path;
    qsort(paths, n, sizeof(*paths), record_path_cmp);
    for (size_t i = 0; i < parent->nfiles + parent->nlinks; i++) {
        char *path =
            i < parent->nfiles ? parent->files[i].path : parent->links[i - parent->nfiles].path;
        if (bsearch(&path, paths, n, sizeof(*paths), record_path_cmp) == NULL)
            manifest_add_gone(m, path);
    }
    free(paths);
}

static void record_build_manifest(manifest *m, const record_facts *f)
{
    const datadir *dd = f->dd;

    m->id = xstrdup(f->id);
    m->compression = f->compression;
    m->delta = f->parent != NULL;
    if (m->delta)
        m->parent = xstrdup(f->parent->id);
    for (size_t i = 0; i < f->res->npartitions; i++)
        manifest_add_partition(m, f->res->partitions[i].name, f->res->partitions[i].size,
                               f->res->partitions[i].crc);
    for (size_t i = 0; i < dd->ntablespaces; i++) {
        const char *name = "";
        for (size_t k = 0; k < f->nspcs; k++)
            if (f->spcs[k].oid == dd->tablespaces[i].oid)
                name = f->spcs[k].name;
        manifest_add_tablespace(m, dd->tablespaces[i].oid, name, dd->tablespaces[i].location);
    }
    for (size_t i = 0; i < f->ndbs; i++)
        manifest_add_database(m, f->dbs[i].oid, f->dbs[i].name, f->dbs[i].is_template);
    /* a file that vanished during the backup is not listed */
    for (size_t i = 0; i < f->nfiles; i++)
        if (f->files[i].done)
            record_add_file(m, &f->files[i], f->res);
    if (f->parent_manifest != NULL)
        record_gone(m, f->parent_manifest);
}

bool record_build(backup_record *r, const record_facts *facts, pgd_error *err)
{
    if (r->m.backup_label == NULL)
        return err_set(err, "the server returned no backup_label");
    if (r->m.tablespace_map == NULL)
        r->m.tablespace_map = xstrdup("");
    if (!record_build_info(&r->info, facts, r->m.backup_label, err))
        return false;
    record_build_manifest(&r->m, facts);
    r->info.files = r->m.nfiles;
    return true;
}

static bool record_put(storage *repo, const char *id, const char *name, const char *text,
                       pgd_error *err)
{
    char path[LAYOUT_PATH_MAX];

    layout_backup_object(id, name, path, sizeof(path));
    return storage_put(repo, path, text, strlen(text), STORAGE_WRITE_NO_REPLACE, err);
}

bool record_write(storage *repo, const backup_record *r, pgd_error *err)
{
    const char *id = r->info.id;
    char *json = NULL;
    bool ok;

    ok = record_put(repo, id, "backup_label", r->m.backup_label, err) &&
         (r->m.tablespace_map[0] == '\0' ||
          record_put(repo, id, "tablespace_map", r->m.tablespace_map, err)) &&
         manifest_to_json(&r->m, &json, err) && record_put(repo, id, MANIFEST_NAME, json, err);
    free(json);
    json = NULL;
    ok = ok && pg_manifest_build(&r->m, &r->info, &json, err) &&
         record_put(repo, id, PG_MANIFEST_NAME, json, err);
    free(json);
    return ok;
}

bool record_publish(storage *repo, const backup_record *r, pgd_error *err)
{
    char path[LAYOUT_PATH_MAX], *json;
    bool ok;

    if (!backup_info_to_json(&r->info, &json, err))
        return false;
    layout_sentinel_path(r->info.id, path, sizeof(path));
    ok = storage_put(repo, path, json, strlen(json), STORAGE_WRITE_NO_REPLACE, err);
    free(json);
    return ok;
}
