/*
 * resume.h - backup --resume: a full backup that was interrupted (killed:
 * its claim names a process that is gone) leaves complete partitions; a new
 * full backup of the same cluster, with the same compression, copies those
 * it can prove still hold what the data directory holds, and reads only the
 * rest. It finishes as an ordinary backup under its own id; the leftover
 * stays garbage (delete --garbage).
 *
 * What makes a partition provable is its record, written by every full
 * backup once the partition is stored (resume_record_partition):
 * backups/<id>/<partition>.files.json,
 *   partition, size, crc32c  the partition object (stored bytes)
 *   files[]                  each entry of its tar stream, in order: path,
 *                            type "file"|"dir"|"link", mode, mtime; for a
 *                            file size and crc32c of its bytes, and what it
 *                            was when it was opened: mtime_ns, ino, dev,
 *                            opened_at (Unix seconds), the page checks
 *                            (pages_checked, pages_bad, bad_blocks[]); for
 *                            a link its target
 *
 * A partition is reused only whole, and only when all of these hold:
 *   - its record parses, and the partition is read again from the
 *     repository: its size and CRC-32C, every tar entry the record's, every
 *     file's CRC-32C the record's (a flipped byte is found here);
 *   - every file is in the new walk, the same file (inode, device), of the
 *     same size, mode and mtime to the nanosecond, and that mtime is at
 *     least RESUME_QUIET_S before the interrupted run opened it: a file
 *     written after that read has a later mtime, and a file being written
 *     when it was read is read again (WAL replay from the new backup's
 *     start would not repair a change made before that start);
 *   - every directory and link is in the walk, a link to the same target.
 * Any other partition's files are read again, as in a fresh backup.
 */
#ifndef PGD_RESUME_H
#define PGD_RESUME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backup/pipeline.h"
#include "compress/compress.h"
#include "repo/layout.h"
#include "storage/storage.h"
#include "util/error.h"

#define RESUME_RECORD_SUFFIX ".files.json"
/* a file last written this close to its read may have been written after it, in the same tick */
#define RESUME_QUIET_S 2

/* pipeline_config.partition_arg of resume_record_partition */
typedef struct resume_writer {
    storage *repo;
    const char *backup_id;
} resume_writer;

/* pipeline_config.partition_stored of a full backup: the partition's record. */
bool resume_record_partition(void *arg, const pipeline_partition *p, pipeline_file *const *files,
                             size_t n, pgd_error *err);

typedef struct resume_part {
    char name[64]; /* in the leftover */
    uint64_t size;
    uint32_t crc;
    char *record;  /* its record's text, rewritten under the new name */
    size_t *files; /* indexes into the walk */
    size_t nfiles;
} resume_part;

typedef struct resume_plan {
    char from[BACKUP_ID_LEN + 1]; /* the interrupted backup; "" when none was found */
    resume_part *parts;
    size_t nparts;
    size_t refused; /* its partitions not reused */
    size_t files;   /* files (not entries) reused */
    uint64_t bytes; /* their bytes */
} resume_plan;

/*
 * The newest interrupted full backup of system `system_id` stored with
 * `kind`, and which of its partitions can be reused for the walk files[n]
 * (each such file and entry marked reused and done, its result set). No
 * leftover, or none reusable, is not an error (plan->nparts == 0); err is
 * set only when the repository cannot be read.
 */
bool resume_plan_make(storage *repo, const char *system_id, compress_kind kind,
                      pipeline_file *files, size_t n, resume_plan *plan, pgd_error *err);

/*
 * Copy the reused partitions (and their records) into backup `id` as
 * partitions 1..nparts, checking size and CRC-32C again on the way, and set
 * their files' partition numbers.
 */
bool resume_copy(storage *repo, const resume_plan *plan, const char *id, compress_kind kind,
                 pipeline_file *files, pipeline_partition *out, pgd_error *err);

void resume_plan_free(resume_plan *plan);

#endif
