/*
 * file_queue.c - the walk's entries in the order the pipeline reads them.
 */
#include "backup/file_queue.h"

#include <stdlib.h>
#include <string.h>

#include "util/xmalloc.h"

static int file_queue_cmp(const void *a, const void *b)
{
    const pipeline_file *fa = a, *fb = b;
    bool data_a = !fa->is_dir && fa->link == NULL, data_b = !fb->is_dir && fb->link == NULL;

    if (data_a != data_b)
        return data_a ? -1 : 1;
    if (fa->size != fb->size)
        return fa->size < fb->size ? 1 : -1;
    return strcmp(fa->path, fb->path);
}

pipeline_file *file_queue_build(const datadir *dd, const io_plan *plan)
{
    pipeline_file *files = xcalloc(dd->n ? dd->n : 1, sizeof(*files));

    for (size_t i = 0; i < dd->n; i++) {
        const datadir_entry *e = &dd->entries[i];
        files[i] = (pipeline_file){.path = e->path,
                                   .source = e->source,
                                   .is_dir = e->is_dir,
                                   .link = e->link,
                                   .size = e->size,
                                   .mode = e->mode,
                                   .mtime = e->mtime,
                                   .read_size = io_plan_read_size(plan, e->path)};
    }
    qsort(files, dd->n, sizeof(*files), file_queue_cmp);
    return files;
}
