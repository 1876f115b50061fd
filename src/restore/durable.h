/*
 * durable.h - make what a restore wrote survive a crash, cheaply.
 *
 * "Restore complete" must mean the files are on disk: a server started
 * after a power loss from a restore whose pages were still in the page
 * cache would recover from files that are not the backup. PostgreSQL's
 * own tools (initdb, pg_basebackup) do it in two steps, and so do we:
 * writeback of each file is started as soon as it is written
 * (sync_file_range, which does not wait), and one final pass fsyncs every
 * file and directory written, in parallel, by which time most of the data
 * is already on its way. Any failed fsync fails the restore, naming the
 * file: after a failed fsync the kernel may have dropped the dirty pages,
 * and retrying would report success for data that is gone.
 */
#ifndef PGD_DURABLE_H
#define PGD_DURABLE_H

#include <stdbool.h>
#include <sys/types.h>

#include "util/error.h"

typedef struct durable_list durable_list;

durable_list *durable_list_new(void);
void durable_list_free(durable_list *l);

/*
 * A file or directory to fsync in the final pass (a directory holds its entries' names). A failed
 * allocation ends the process (util/xmalloc.h).
 */
void durable_list_add(durable_list *l, const char *path, bool is_dir);
size_t durable_list_count(const durable_list *l);

/* fsync every entry, `threads` at a time; the first failure names its path. */
bool durable_list_sync(durable_list *l, int threads, pgd_error *err);

/*
 * Write `text` to dir/name (created 0600, never through a link; flags add
 * O_EXCL or O_TRUNC) and add it to the list: the small files a restore
 * writes itself (backup_label, the recovery settings).
 */
bool durable_write_file(const char *dir, const char *name, const char *text, int flags,
                        durable_list *l, pgd_error *err);

/* Start writing a range of a file's dirty pages to disk without waiting (len 0: to the end). */
void durable_start_writeback(int fd, off_t offset, off_t len);

#endif
