/*
 * extract.h - unpack a backup's partitions into a target directory, in
 * parallel, verifying every file against the manifest.
 *
 * A backup is untrusted input. Every path, from the manifest or a tar
 * header, must be relative and free of "." / ".." / empty components; a
 * link entry in a partition must be the manifest's, and is not created
 * here (restore/links.h makes the links once every file is written; the
 * tablespace links are made by restore itself); hard links are refused;
 * files are created with O_EXCL | O_NOFOLLOW, so nothing is ever written
 * through a link (restore --delta opens existing files with O_NOFOLLOW,
 * after restore/delta_dir.h removed every link and hard-linked file in
 * their place).
 */
#ifndef PGD_EXTRACT_H
#define PGD_EXTRACT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "repo/manifest.h"
#include "restore/durable.h"
#include "storage/storage.h"
#include "util/error.h"

/*
 * pg_control is written under a temporary name and renamed only once
 * everything else is on disk (extract_publish_control): a restore killed
 * midway, or cut by a power loss, leaves a directory PostgreSQL refuses to
 * start, not one it would start from a checkpoint that matches none of its
 * files.
 */
#define EXTRACT_PG_CONTROL     "global/pg_control"
#define EXTRACT_PG_CONTROL_TMP ".pgdirect-restoring"

/* A parent of a delta backup, as restore/chain.h loaded it. */
typedef struct extract_older {
    const char *backup_id;
    const manifest *m;
} extract_older;

typedef struct extract_plan {
    storage *repo;
    const char *backup_id;
    manifest *m;                 /* index built (manifest_build_index) */
    const char *target;          /* data directory, absolute, exists */
    const char *const *spc_dest; /* per m->tablespaces[i]: absolute destination, exists */
    int concurrency;
    bool progress;
    const volatile sig_atomic_t *cancel; /* optional: non-zero (a signal came) stops and fails */
    /*
     * restore --delta: files may exist already (restore/delta_dir.h has
     * removed what must not be written through). Each page is compared with
     * what is there and written only when it differs; a longer file is
     * truncated; a file that matched keeps its mtime. *unchanged (required
     * then) adds the bytes that did not have to be written.
     */
    bool delta;
    uint64_t *unchanged;
    /*
     * A delta backup: its parents, newest first, down to the full backup.
     * Its increments are assembled in one pass per backup, newest first:
     * each file is created at its final size with the newest backup's
     * pages; an older backup's partitions are read only while some file
     * still needs data, and of them only the entries of such files. An
     * older increment fills the pages not written yet, an older whole file
     * every page not written yet, and completes the file. A page below the
     * final size that no backup supplied is an error, never zeros. Every
     * entry is checked against its own backup's manifest, an increment's own
     * CRCs too. Afterwards each assembled file's entry of m says what was
     * assembled (increment false, its size and the CRC-32C of its bytes as
     * read back), for the restored backup_manifest.
     */
    const extract_older *older;
    size_t nolder;
    /*
     * restore --db-include / --db-exclude (restore/db_filter.h): per file
     * of m, or NULL. A marked file is created empty at its size (a sparse
     * file; with restore --delta an existing one is emptied first), its
     * data neither read nor written; a partition (of any backup of a
     * chain) that holds nothing else, no link, is not read at all.
     */
    const unsigned char *sparse;
    /* optional: adds the stored bytes of the partitions read from the repository */
    uint64_t *repo_bytes;
} extract_plan;

/*
 * The mode a restored file or directory gets for `mode` from the manifest:
 * at most 0750 / 0640 (PostgreSQL's modes with group access), no set-id or
 * sticky bits, always readable and writable by the owner.
 */
uint32_t extract_mode(uint32_t mode, bool is_dir);

/* Where `path` (a backup path) lands: under the target or a tablespace destination. */
bool extract_dest_path(const extract_plan *p, const char *path, char *out, size_t outlen,
                       pgd_error *err);

/* Create every directory of the manifest (parents first). */
bool extract_make_dirs(const extract_plan *p, pgd_error *err);

/* Every file and directory of the manifest, where it was restored, for the final fsync pass. */
bool extract_list_durable(const extract_plan *p, durable_list *l, pgd_error *err);

/*
 * Rename pg_control, written under a temporary name so that an unfinished
 * restore cannot be started, to its own and make that durable: the last
 * step of a restore, after extract_list_durable's files are synced.
 */
bool extract_publish_control(const extract_plan *p, pgd_error *err);

/* Unpack all partitions and check that every manifest file was restored intact. */
bool extract_partitions(const extract_plan *p, uint64_t *bytes, pgd_error *err);

#endif
