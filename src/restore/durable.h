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
 * is already on its way (and out of the page cache: durable_write_behind). Any failed fsync fails
 * the restore, naming the file: after a failed fsync the kernel may have dropped the dirty pages,
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

/*
 * A restore leaves the page cache as it found it (a drill, or a replica seeded on a busy host,
 * would otherwise push the hot data of the cluster beside it out of memory): what it wrote is
 * dropped from the cache once it is on disk, as backup's own writes to a local repository are
 * (storage/fs.c). durable_write_behind waits for [0, done), whose writeback started earlier, and
 * drops it, then starts [done, upto) (upto 0: to the end); durable_drop_written waits for all
 * of the file and drops it. The final fsync pass drops what it synced. Hints only: a failure
 * of writeback is reported by the final fsync.
 */
void durable_write_behind(int fd, off_t done, off_t upto);
void durable_drop_written(int fd);

#endif
