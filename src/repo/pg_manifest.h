/*
 * pg_manifest.h - PostgreSQL's own backup_manifest format (version 1), so
 * that pg_verifybackup can check a restored data directory independently
 * of pgdirect.
 *
 * Per file: Path, Size, Last-Modified ("YYYY-MM-DD HH:MM:SS GMT"),
 * Checksum-Algorithm CRC32C and Checksum, the CRC's four bytes in memory
 * (little-endian) order as hex; then WAL-Ranges and Manifest-Checksum, the
 * SHA-256 of everything before that last line.
 */
#ifndef PGD_PG_MANIFEST_H
#define PGD_PG_MANIFEST_H

#include <stdbool.h>
#include <stdint.h>

#include "repo/manifest.h"
#include "util/error.h"

/* backup_label is added as a file (it is not in m->files); its mtime is label_mtime. */
bool pg_manifest_build(const manifest *m, int64_t label_mtime, uint32_t timeline,
                       const char *start_lsn, const char *stop_lsn, char **out, pgd_error *err);

#endif
