/*
 * file_queue.c - the walk's entries in the order the pipeline reads them,
 * and their partition groups (see file_queue.h).
 */
#include "backup/file_queue.h"

#include <stdlib.h>
#include <string.h>

#include "pg/relfile.h"
#include "util/xmalloc.h"

/* A file being sorted: with the bytes of its group, the order of the groups. */
typedef struct file_queue_item {
    pipeline_file f;
    uint64_t group_bytes;
} file_queue_item;

/* A user database's relation files: its oid and their bytes. */
typedef struct file_queue_db {
    uint32_t oid;
    uint64_t bytes;
} file_queue_db;

static bool file_queue_has_data(const pipeline_file *f)
{
    return !f->is_dir && f->link == NULL;
}

static int file_queue_db_cmp(const void *a, const void *b)
{
    const file_queue_db *da = a, *db = b;

    return (da->oid > db->oid) - (da->oid < db->oid);
}

/* The user database whose relation file f is (its oid), or 0: not one. */
static uint32_t file_queue_user_db(const pipeline_file *f)
{
    relfile rel;

    if (!file_queue_has_data(f) || !relfile_parse(f->path, &rel) ||
        rel.db_oid < PG_FIRST_NORMAL_OID)
        return 0;
    return rel.db_oid;
}

/*
 * The groups (file_queue.h): a user database's relation files of at least partition_size /
 * FILE_QUEUE_GROUP_FRACTION bytes keep their database's oid as group, every other file joins
 * group 0; each item learns its group's bytes.
 */
static void file_queue_group(file_queue_item *items, size_t n, uint64_t partition_size)
{
    uint64_t threshold = partition_size / FILE_QUEUE_GROUP_FRACTION, rest = 0;
    file_queue_db *dbs = xcalloc(n ? n : 1, sizeof(*dbs));
    size_t ndbs = 0, k = 0;

    for (size_t i = 0; i < n; i++) {
        items[i].f.group = file_queue_user_db(&items[i].f);
        if (items[i].f.group != 0)
            dbs[ndbs++] = (file_queue_db){.oid = items[i].f.group, .bytes = items[i].f.size};
    }
    qsort(dbs, ndbs, sizeof(*dbs), file_queue_db_cmp);
    for (size_t i = 0; i < ndbs; i++) { /* one entry per database, its bytes summed */
        if (k > 0 && dbs[k - 1].oid == dbs[i].oid)
            dbs[k - 1].bytes += dbs[i].bytes;
        else
            dbs[k++] = dbs[i];
    }
    for (size_t i = 0; i < n; i++) {
        file_queue_db key = {.oid = items[i].f.group}, *d = NULL;
        if (key.oid != 0)
            d = bsearch(&key, dbs, k, sizeof(*dbs), file_queue_db_cmp);
        if (d != NULL && d->bytes >= threshold) {
            items[i].group_bytes = d->bytes;
            continue;
        }
        items[i].f.group = 0;
        rest += items[i].f.size;
    }
    for (size_t i = 0; i < n; i++)
        if (items[i].f.group == 0)
            items[i].group_bytes = rest;
    free(dbs);
}

static int file_queue_cmp(const void *a, const void *b)
{
    const file_queue_item *ia = a, *ib = b;
    const pipeline_file *fa = &ia->f, *fb = &ib->f;
    bool data_a = file_queue_has_data(fa), data_b = file_queue_has_data(fb);

    if (data_a != data_b)
        return data_a ? -1 : 1;
    if (ia->group_bytes != ib->group_bytes)
        return ia->group_bytes < ib->group_bytes ? 1 : -1;
    if (fa->group != fb->group)
        return fa->group < fb->group ? -1 : 1;
    if (fa->size != fb->size)
        return fa->size < fb->size ? 1 : -1;
    return strcmp(fa->path, fb->path);
}

pipeline_file *file_queue_build(const datadir *dd, const io_plan *plan, uint64_t partition_size)
{
    pipeline_file *files = xcalloc(dd->n ? dd->n : 1, sizeof(*files));
    file_queue_item *items = xcalloc(dd->n ? dd->n : 1, sizeof(*items));

    for (size_t i = 0; i < dd->n; i++) {
        const datadir_entry *e = &dd->entries[i];
        items[i].f = (pipeline_file){.path = e->path,
                                     .source = e->source,
                                     .is_dir = e->is_dir,
                                     .link = e->link,
                                     .size = e->size,
                                     .mode = e->mode,
                                     .mtime = e->mtime,
                                     .read_size = io_plan_read_size(plan, e->path)};
    }
    file_queue_group(items, dd->n, partition_size);
    qsort(items, dd->n, sizeof(*items), file_queue_cmp);
    for (size_t i = 0; i < dd->n; i++)
        files[i] = items[i].f;
    free(items);
    return files;
}
