/*
 * partition_read.h - one partition of a stored backup read and checked the
 * way restore and verify both need it.
 *
 * The partition (backups/<id>/<name>, repo/layout.h) is opened by the name
 * the manifest gives it, read through the CRC-32C filter that checks its
 * stored size and CRC against the manifest (io/stream.h) and through its
 * codec (compress/compress.h), and its tar entries (repo/tar.h) are checked
 * against the manifest: a file must be the manifest's, in this partition,
 * stored whole or as an increment as the manifest says (a delta's increment
 * is stored as <dir>/INCREMENTAL.<name>, repo/increment.h), its header must
 * declare exactly the manifest's size; a directory and a link must be the
 * manifest's; a hard link or any other type is refused. What a caller does
 * with an entry (restore writes it, verify only checks it) is its callback;
 * a file's bytes go through partition_read_file_data, which compares their
 * CRC-32C with the manifest's. The partition is then read to its end, so
 * that its size and CRC-32C are checked even past the end-of-archive
 * marker. Every message names the partition and the backup, and is the same
 * whichever command read it.
 */
#ifndef PGD_PARTITION_READ_H
#define PGD_PARTITION_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "repo/manifest.h"
#include "repo/tar.h"
#include "storage/storage.h"
#include "util/error.h"
#include "util/work_pool.h"

typedef struct partition_read partition_read;

/* A file entry of the partition, checked against the manifest. */
typedef struct partition_read_file {
    const tar_entry *e;
    const char *path; /* the manifest's path: e->path, or the file an increment is of */
    size_t idx;       /* its entry in the manifest: m->files[idx] */
    const manifest_file *f;
} partition_read_file;

typedef struct partition_read_ops {
    /*
     * Only file entries are looked at, the others passed over unchecked
     * (restore reading an older backup of a chain: the newest one decides
     * the directories and links).
     */
    bool files_only;
    /*
     * A directory entry must be a directory of the manifest, not only one
     * of its paths (verify; restore creates the manifest's directories and
     * only asks that the path be listed).
     */
    bool strict_dirs;
    /*
     * Optional: the path a file, directory or link entry stands for, checked
     * before the manifest is looked at (restore: a hostile name is refused
     * as such, whatever the manifest says).
     */
    bool (*check_path)(void *arg, const char *path, pgd_error *err);
    /* A file entry that passed the checks; its data is read with partition_read_file_data or
     * skipped. */
    bool (*file)(void *arg, partition_read *pr, const partition_read_file *pf, pgd_error *err);
    /* Optional: a link entry that is the manifest's m->links[idx]. */
    void (*link_seen)(void *arg, size_t idx);
} partition_read_ops;

/* Where partition_read_file_data hands a file's bytes. */
typedef struct partition_read_sink {
    /* The bytes at `off` of the entry, in order. */
    bool (*data)(void *arg, const char *buf, size_t n, uint64_t off, pgd_error *err);
    /* Optional: after the last byte, before the CRC-32C is compared (an increment's own checks). */
    bool (*check)(void *arg, pgd_error *err);
    void *arg;
} partition_read_sink;

struct partition_read {
    /* set by the caller */
    storage *repo;
    const char *backup_id;
    const manifest *m; /* index built (manifest_build_index) */
    size_t part_idx;   /* m->partitions[part_idx] */
    work_pool *pool;   /* optional: stops the reading when it stops; counts the bytes read */
    char *buf;         /* buflen bytes: a file's data is handed over from here */
    size_t buflen;
    const partition_read_ops *ops;
    void *arg;
    /* set by partition_read_run */
    const char *part_name;
    bool open_failed; /* the partition is there but could not be opened: says nothing about it */
    tar_reader tr;
    const partition_read_file *cur;
};

/*
 * Read and check the partition, each entry through pr->ops. False when it
 * is missing or damaged (err of kind PGD_ERR_DAMAGED, but a store that did
 * not answer: PGD_ERR_TRANSIENT), or a callback failed (err says why), when the
 * object could not be opened (pr->open_failed, err says why), or when the
 * pool stopped (err may be left unset: the pool holds the first error).
 */
bool partition_read_run(partition_read *pr, pgd_error *err);

/*
 * From a file callback: the current file's data, to its manifest size, to
 * sink; then its CRC-32C compared with the manifest's.
 */
bool partition_read_file_data(partition_read *pr, const partition_read_sink *sink, pgd_error *err);

#endif
