/*
 * file_queue.h - the order in which a backup reads its files: largest
 * first, so the long reads start while every thread is busy and the small
 * files fill the gaps at the end; entries without data (directories,
 * links) last. Each file gets the read size of the device it lives on.
 */
#ifndef PGD_FILE_QUEUE_H
#define PGD_FILE_QUEUE_H

#include "backup/io_plan.h"
#include "backup/pipeline.h"
#include "pg/datadir.h"

/*
 * One pipeline_file per walk entry (dd->n of them, pointing into dd), sorted; malloc'd, never
 * NULL (a failed allocation ends the process, util/xmalloc.h).
 */
pipeline_file *file_queue_build(const datadir *dd, const io_plan *plan);

#endif
