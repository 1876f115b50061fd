/*
 * verify.h - re-read a stored backup without restoring it: every
 * partition's size and CRC-32C, every file's size and CRC-32C against the
 * manifest, the manifest against the partitions, and the WAL from the
 * backup's start to its stop segment (needed to restore it at all) and on
 * from there (how far a point-in-time restore can go).
 *
 * It reads through the same path a restore does (repo/backup_read.h,
 * repo/partition_read.h: the partition's CRC and decompression streams,
 * its tar entries, the same messages) and writes nothing (the command
 * records the verdict: repo/verify_record.h). A damaged backup is a result, not an error: each
 * problem is recorded and the rest is still checked. Only what says
 * nothing about the backup (a repository that cannot be listed, an object
 * that is there but cannot be opened, a read that may succeed later, a
 * signal) fails the call.
 */
#ifndef PGD_VERIFY_H
#define PGD_VERIFY_H

#include <stdbool.h>

#include "util/error.h"
#include "verify/verify_result.h"

/* Check one backup into *r (verify_result_free it); false only on an operational error, with
   nothing left in *r. */
bool verify_backup(const verify_request *req, verify_result *r, pgd_error *err);

#endif
