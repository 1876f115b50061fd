/*
 * filter_tar.h - the end of the file filter chain: each file becomes a tar
 * entry in the partition its reader thread is writing (repo/tar.h).
 *
 * The header announces the size given to begin; the data follows, padded
 * to the tar block inside the chunk when it has room (one write, not two).
 * A file that delivers fewer bytes than announced (it shrank while it was
 * read) is completed with zeros, so the partition stays a valid archive;
 * the manifest records the entry as it is, zeros included (filter_crc.h),
 * since a restore refuses an entry whose size is not the manifest's. More
 * bytes than announced is a bug in a filter above and fails the backup.
 */
#ifndef PGD_FILTER_TAR_H
#define PGD_FILTER_TAR_H

#include "backup/file_filter.h"
#include "io/stream.h"
#include "repo/tar.h"

file_filter *filter_tar_new(void);

/* Write into `out` from now on (a new partition), adding what is written to *written. */
void filter_tar_attach(file_filter *f, out_stream *out, uint64_t *written);

/* An entry without data (a directory, a symbolic link), between two files. */
bool filter_tar_entry(file_filter *f, const tar_entry *e, pgd_error *err);

#endif
