/*
 * record.h - what a backup records about itself in the repository, and in
 * which order.
 *
 * Under its claimed id (backup_id.h) a backup writes its partitions
 * (pipeline.h), then backup_label and tablespace_map (from
 * pg_backup_stop), manifest.json (repo/manifest.h) and PostgreSQL's
 * backup_manifest (repo/pg_manifest.h), and last, once the WAL it needs
 * has reached the archive, the sentinel (repo/backup_info.h). Without the
 * sentinel the backup does not exist for list or restore, so a crash at
 * any point leaves only garbage. Every object is created with
 * STORAGE_WRITE_NO_REPLACE: under our id nothing exists yet, and replacing
 * an object would mean that another run wrote it.
 */
#ifndef PGD_RECORD_H
#define PGD_RECORD_H

#include <stdbool.h>

#include "backup/pipeline.h"
#include "pg/datadir.h"
#include "pg/session.h"
#include "repo/backup_info.h"
#include "repo/manifest.h"
#include "storage/storage.h"
#include "util/error.h"

typedef struct backup_record {
    backup_info info; /* the sentinel's fields */
    /* the files, partitions and tablespaces; m.backup_label and m.tablespace_map take
     * pg_backup_stop's answer (malloc'd, freed with the record) */
    manifest m;
} backup_record;

/* What the run learned, from which the record is built. */
typedef struct record_facts {
    const char *id, *label, *tool_version;
    compress_kind compression;
    read_mode mode; /* asked for; the sentinel tells what was used */
    int64_t start_time, stop_time;
    pg_lsn start_lsn, stop_lsn;
    const pg_session *pg;
    const datadir *dd; /* the walk: its tablespaces' locations */
    const pg_tablespace *spcs;
    size_t nspcs;
    const pg_database *dbs; /* pg_database when the backup started: restore --db-include */
    size_t ndbs;
    const pipeline_file *files; /* what the pipeline stored */
    size_t nfiles;
    const pipeline_result *res;
    const char *page_checksums; /* "verified", "off", "not verified" (backup_info.h) */
    bool checksum_errors_fail;  /* --checksum-errors fail: bad pages mark the backup */
    bool from_standby;          /* read from a hot standby */
    uint64_t stop_next_xid;     /* the next xid when the backup ended; 0: unknown */
    /* a delta: its parent's sentinel and manifest (NULL for a full) */
    const backup_info *parent;
    const manifest *parent_manifest;
    const char *delta_method; /* a delta: backup/delta_summary.h's DELTA_METHOD_* */
    const char *annotations;  /* --annotation: repo/annotation.h's text, "" or NULL for none */
} record_facts;

void record_init(backup_record *r);
void record_free(backup_record *r);

/* Fill the sentinel's fields and the manifest (its backup_label must be set). */
bool record_build(backup_record *r, const record_facts *facts, pgd_error *err);

/* backup_label, tablespace_map (when there is one), manifest.json, backup_manifest. */
bool record_write(storage *repo, const backup_record *r, pgd_error *err);

/* The sentinel: from now on the backup exists. */
bool record_publish(storage *repo, const backup_record *r, pgd_error *err);

#endif
