/*
 * pg_manifest.h - PostgreSQL's own backup_manifest format, in the version
 * the backed-up server writes itself, so that pg_verifybackup of that
 * server's release can check a restored data directory independently of
 * pgdirect.
 *
 * Version 1 (PostgreSQL 13-16) opens with
 *   { "PostgreSQL-Backup-Manifest-Version": 1,
 * version 2 (PostgreSQL 17 and later) with
 *   { "PostgreSQL-Backup-Manifest-Version": 2,
 *   "System-Identifier": 7412345678901234567,
 * (an unquoted integer; pg_verifybackup 17+ compares it with the one in the
 * restored global/pg_control, and pg_verifybackup 13-16 reject version 2).
 * Then "Files": per file Path, Size, Last-Modified ("YYYY-MM-DD HH:MM:SS
 * GMT"), Checksum-Algorithm CRC32C and Checksum, the CRC's four bytes in
 * memory (little-endian) order as hex; then WAL-Ranges and
 * Manifest-Checksum, the SHA-256 of everything before that last line.
 * (PostgreSQL's src/backend/backup/backup_manifest.c writes it, and
 * src/common/parse_manifest.c reads it.)
 */
#ifndef PGD_PG_MANIFEST_H
#define PGD_PG_MANIFEST_H

#include <stdbool.h>
#include <stdint.h>

#include "repo/backup_info.h"
#include "repo/manifest.h"
#include "util/error.h"

/* The manifest version a server of `pg_version_num` (170002) writes: 1 or 2. */
int pg_manifest_version(int pg_version_num);

/*
 * The backup_manifest of backup `bi` (its server version, system
 * identifier, timeline and LSNs) with the files of `m`. backup_label is
 * added as a file (it is not in m->files), with the backup's stop time as
 * its mtime. *out malloc'd.
 */
bool pg_manifest_build(const manifest *m, const backup_info *bi, char **out, pgd_error *err);

#endif
