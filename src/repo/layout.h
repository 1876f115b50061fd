/*
 * layout.h - where things live in a repository (local and S3 identical):
 *
 *   backups/<id>/claim.json            written first, create-exclusive: the id is taken
 *                                      (a delta's names its parent: backup/backup_id.h)
 *   backups/<id>/manifest.json         what the backup holds (repo/manifest.h)
 *   backups/<id>/part_0001.tar.lz4     pax tar partitions
 *   backups/<id>/backup_label          from pg_backup_stop, uncompressed
 *   backups/<id>/tablespace_map        idem, only when there are tablespaces
 *   backups/<id>/backup_manifest       PostgreSQL's format (repo/pg_manifest.h)
 *   backups/<id>/verify.json           the last verify's verdict (repo/verify_record.h)
 *   backups/<id>.done.json             sentinel, written last (repo/backup_info.h)
 *   wal/<timeline>/<segment><suffix>   archived WAL, .history and .backup files
 *   lock/delete.<generation>.json      delete's lease (repo/repo_lock.h)
 *   metrics/wal_push.json              wal-push --metrics-file: its last push (repo/wal_pushed.h)
 *   check/                             check's probe objects, removed as it goes
 *
 * <id> is the UTC start time plus F (full) or D (delta): 20261129T215959F. It sorts by
 * time and never depends on WAL names. A run owns an id once it has created
 * backups/<id>/claim.json (create-exclusive, src/backup/backup_id.c); when
 * that second is taken it uses the next one, so an id may be a few seconds
 * later than the start it names.
 */
#ifndef PGD_LAYOUT_H
#define PGD_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "compress/compress.h"
#include "pg/wal_name.h"

#define BACKUP_ID_LEN    16 /* 20261129T215959F */
#define BACKUPS_DIR      "backups"
#define WAL_DIR          "wal"
#define SENTINEL_SUFFIX  ".done.json"
#define MANIFEST_NAME    "manifest.json"
#define CLAIM_NAME       "claim.json"      /* the run that owns the id; first object written */
#define PG_MANIFEST_NAME "backup_manifest" /* PostgreSQL's format, for pg_verifybackup */
#define LAYOUT_PATH_MAX  1024

void layout_backup_id(time_t start, char out[BACKUP_ID_LEN + 1]);
bool layout_is_backup_id(const char *s);

void layout_sentinel_path(const char *id, char *out, size_t outlen);
/* backups/<id>: the directory that holds every object of the backup but its sentinel. */
void layout_backup_dir(const char *id, char *out, size_t outlen);
void layout_manifest_path(const char *id, char *out, size_t outlen);
void layout_backup_object(const char *id, const char *name, char *out, size_t outlen);
void layout_partition_name(unsigned number, compress_kind kind, char *out, size_t outlen);

/* wal/<timeline>/ directory of a WAL file name (its first 8 hex digits). */
void layout_wal_dir(const char *wal_name, char *out, size_t outlen);
void layout_wal_path(const char *wal_name, compress_kind kind, char *out, size_t outlen);

#endif
