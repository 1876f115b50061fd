/*
 * manifest.h - manifest.json: what a backup holds and how to check it.
 *
 * Format (JSON object, "format": 1 for a full backup, 2 for a delta, so
 * that a reader that knows only 1 cannot take an increment for a whole file):
 *   id, compression       the backup and the codec of its partitions
 *   type                  "full" or "delta" (absent before deltas: "full")
 *   parent                a delta's parent backup id
 *   gone[]                a delta's: paths of the parent's manifest that
 *                         are not in this one (informational: files[] lists
 *                         every file of the cluster at this backup)
 *   partitions[]          name, size (stored bytes), crc32c of the stored bytes
 *   tablespaces[]         oid, name, location (the pg_tblspc link target)
 *   databases[]           oid, name, template (datistemplate) of every
 *                         database when the backup started, from
 *                         pg_database: what restore --db-include and
 *                         --db-exclude resolve names with (absent in
 *                         manifests written before they were recorded)
 *   files[]               path (relative to PGDATA, tablespace files under
 *                         pg_tblspc/<oid>/), type "file"|"dir"|"link", mode,
 *                         mtime; for files: size, crc32c (hex), partition
 *                         (1-based); checksum_errors and bad_blocks[] (the
 *                         first MANIFEST_BAD_BLOCKS_MAX absolute block
 *                         numbers) for a relation file with pages that
 *                         failed their data checksum; for links: target (as readlink gives
 *                         it) and partition (where its tar entry is)
 *                         In a delta, a relation file may be stored as an
 *                         increment (repo/increment.h): "increment":
 *                         {"file_size": N, "blocks": K}; size and crc32c
 *                         are then those of the increment's bytes, its tar
 *                         entry is <dir>/INCREMENTAL.<name>
 *   backup_label, tablespace_map   text returned by pg_backup_stop
 *
 * Files are stored in partition order; a file that vanished during the
 * backup is not listed. Links are symbolic links of the data directory
 * other than the tablespace links (pg/datadir.h); manifests written before
 * links were recorded simply have none. In memory they are kept apart from
 * files and directories (links[]): they have no data to check, restore
 * creates them last, and PostgreSQL's backup_manifest lists none.
 */
#ifndef PGD_MANIFEST_H
#define PGD_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compress/compress.h"
#include "storage/storage.h"
#include "util/error.h"

#define MANIFEST_FORMAT         1
#define MANIFEST_FORMAT_DELTA   2
#define MANIFEST_BAD_BLOCKS_MAX 8

typedef struct manifest_file {
    char *path;
    bool is_dir;
    uint64_t size;
    uint32_t mode;
    int64_t mtime;
    uint32_t crc;
    uint32_t partition;
    uint32_t pages_bad;                           /* pages that failed their data checksum */
    uint32_t bad_blocks[MANIFEST_BAD_BLOCKS_MAX]; /* the first min(pages_bad, MAX) of them */
    bool increment;                               /* stored as an increment (delta backups only) */
    uint64_t file_size;  /* the file's size at this backup; == size for whole files */
    uint32_t inc_blocks; /* pages in the increment */
} manifest_file;

typedef struct manifest_link {
    char *path;
    char *target;
    uint32_t mode;
    int64_t mtime;
    uint32_t partition;
} manifest_link;

typedef struct manifest_partition {
    char *name;
    uint64_t size;
    uint32_t crc;
} manifest_partition;

typedef struct manifest_tablespace {
    uint32_t oid;
    char *name;
    char *location;
} manifest_tablespace;

typedef struct manifest_database {
    uint32_t oid;
    char *name;
    bool is_template; /* datistemplate */
} manifest_database;

typedef struct manifest {
    char *id;
    compress_kind compression;
    manifest_file *files;
    size_t nfiles, cap_files;
    manifest_link *links;
    size_t nlinks, cap_links;
    manifest_partition *partitions;
    size_t npartitions;
    manifest_tablespace *tablespaces;
    size_t ntablespaces;
    manifest_database *databases;
    size_t ndatabases;
    bool has_databases; /* databases[] was recorded (even if empty) */
    char *backup_label;
    char *tablespace_map;
    bool delta;   /* a delta backup: parent is set, files may be increments */
    char *parent; /* NULL for a full */
    char **gone;  /* paths of the parent's manifest absent from this one */
    size_t ngone, cap_gone;
} manifest;

void manifest_init(manifest *m);
void manifest_free(manifest *m);

/* Each copies what it is given; a failed allocation ends the process (util/xmalloc.h). */
void manifest_add_file(manifest *m, const manifest_file *f);
void manifest_add_link(manifest *m, const manifest_link *l);
void manifest_add_partition(manifest *m, const char *name, uint64_t size, uint32_t crc);
void manifest_add_gone(manifest *m, const char *path);
void manifest_add_tablespace(manifest *m, uint32_t oid, const char *name, const char *location);
/* Also sets has_databases. */
void manifest_add_database(manifest *m, uint32_t oid, const char *name, bool is_template);

/* Serialise; *json is malloc'd. */
bool manifest_to_json(const manifest *m, char **json, pgd_error *err);
/* Parse and validate types; `what` names the object in errors. */
bool manifest_from_json(manifest *m, const char *json, const char *what, pgd_error *err);

/*
 * manifest.json of backup `id`, read from the repository and parsed (a
 * restore checks more: repo/backup_read.h). A false return with err of
 * kind PGD_ERR_DAMAGED is a verdict: the manifest is missing, empty, holds
 * a NUL byte or does not parse. Of another kind, the object could not be
 * read at all (permission, the repository): that says nothing of the
 * backup.
 */
bool manifest_load(storage *repo, const char *id, manifest *m, pgd_error *err);

/* Sort files and links by path, for manifest_find and manifest_find_link. */
void manifest_build_index(manifest *m);

/* A relative path with no empty, "." or ".." component. */
bool manifest_path_is_safe(const char *path);

/* A partition name as the backup writes it (part_NNNN.tar + the codec's suffix). */
bool manifest_partition_name_is_valid(const char *name, compress_kind kind);
/* Index of the file or directory at `path` (binary search); -1 if absent. */
long manifest_find(const manifest *m, const char *path);
/* Index of the link at `path` (binary search); -1 if absent. */
long manifest_find_link(const manifest *m, const char *path);

#endif
