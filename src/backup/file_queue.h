/*
 * file_queue.h - the order in which a backup reads its files: largest
 * first, so the long reads start while every thread is busy and the small
 * files fill the gaps at the end; entries without data (directories,
 * links) last. Each file gets the read size of the device it lives on.
 *
 * Partition groups: a user database's relation files (base/<oid>/ and
 * pg_tblspc/<spc>/<version>/<oid>/, pg/relfile.h) that add up to at least
 * partition_size / FILE_QUEUE_GROUP_FRACTION form a group of their own
 * (pipeline_file.group = the database's oid), which the pipeline never
 * mixes with other files in a partition: restore --db-include/--db-exclude
 * then skips those partitions of the databases it leaves out without
 * reading them. Everything else (global/, the system and template
 * databases of initdb, every database's PG_VERSION and pg_filenode.map,
 * directories and links, and the relation files of smaller databases)
 * shares group 0. The queue holds the groups one after the other, the
 * largest first, each largest file first.
 */
#ifndef PGD_FILE_QUEUE_H
#define PGD_FILE_QUEUE_H

#include "backup/io_plan.h"
#include "backup/pipeline.h"
#include "pg/datadir.h"

/*
 * A database smaller than a quarter of a partition shares partitions with the rest: each
 * group's last partition is partly filled (one per reading thread, W), so with groups of at
 * least a quarter of a partition a backup has at most about (1 + 4 W) times the partitions
 * of an ungrouped one, however many small databases the cluster has.
 */
#define FILE_QUEUE_GROUP_FRACTION 4

/*
 * One pipeline_file per walk entry (dd->n of them, pointing into dd), sorted and grouped for
 * partitions of partition_size bytes; malloc'd, never NULL (a failed allocation ends the
 * process, util/xmalloc.h).
 */
pipeline_file *file_queue_build(const datadir *dd, const io_plan *plan, uint64_t partition_size);

#endif
