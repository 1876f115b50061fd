/*
 * extract_internal.h - what the files of restore's extraction share: the
 * state of one extraction and of its worker threads, and the functions one
 * file calls in another. Not for use outside src/restore/extract*.c and
 * assemble.c; the interface is extract.h.
 *
 *   extract_target.c  where entries land: path checks, modes, directories,
 *                     pg_control's temporary name and its publication
 *   extract_io.c      a restored file's bytes written, or (restore --delta)
 *                     compared page by page and written where they differ
 *   extract.c         the partitions read in parallel, full files written
 *   assemble.c        a delta's files assembled from its chain
 */
#ifndef PGD_EXTRACT_INTERNAL_H
#define PGD_EXTRACT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "repo/partition_read.h"
#include "restore/extract.h"
#include "util/error.h"
#include "util/work_pool.h"

/* the unit of reading a tar entry and of writing or comparing a file's bytes */
#define EXTRACT_CHUNK (1024 * 1024)

/* A file of a delta backup being assembled from its chain (extract_plan.older). */
typedef struct extract_asm {
    unsigned char *done; /* bitmap: pages written already, by a newer backup */
    uint64_t pages;      /* below the final size */
    bool need;           /* older backups must still supply pages */
} extract_asm;

typedef struct extract_shared {
    const extract_plan *p;
    unsigned char *restored;   /* per manifest file */
    unsigned char *links_seen; /* per manifest link: its tar entry was found */
    /* the backup whose partitions are being read: p->m (layer 0), then p->older[layer - 1] */
    const manifest *lm;
    const char *lid;
    size_t layer;
    unsigned char *part_needed; /* per partition of lm (layer > 0): holds a file still needed */
    unsigned char *part_skip;   /* per partition of p->m, or NULL: holds only sparse files */
    uint64_t repo_bytes;        /* stored bytes of the partitions read (atomic) */
    extract_asm *asm_;          /* per file of p->m; NULL for a full backup */
} extract_shared;

typedef struct extract_worker {
    extract_shared *sh;
    char *buf;
    char *cmp; /* restore --delta: what the file holds where buf goes */
} extract_worker;

/* Where a file of the backup is written: pg_control under its temporary name. */
bool extract_file_dest(const extract_plan *p, const char *path, char *out, size_t outlen,
                       pgd_error *err);

/* All of buf written at the file's position; the error names dest. */
bool extract_write_all(int fd, const char *buf, size_t len, const char *dest, pgd_error *err);

/*
 * restore --delta: buf[0..n), the backup's bytes at `off`, compared page
 * by page with what the file holds there; runs of differing pages written,
 * *changed set when any was, the bytes that matched added to p->unchanged.
 */
bool extract_delta_write(const extract_plan *p, char *cmp, int fd, const char *dest,
                         const char *buf, size_t n, uint64_t off, bool *changed, pgd_error *err);

/* Bytes of an assembled file at `off`: written, or with restore --delta only where they differ. */
bool extract_put(const extract_plan *p, char *cmp, int fd, const char *dest, const char *buf,
                 size_t n, uint64_t off, pgd_error *err);

/*
 * An increment entry (pf->path is the file it is of): of the backup
 * restored, layer 0 (the file is created at its final size), or of an
 * older one (used only while the file still needs pages).
 */
bool assemble_increment(extract_worker *w, partition_read *pr, const partition_read_file *pf,
                        pgd_error *err);

/* A file entry of an older backup of the chain: used only when a file still needs it. */
bool assemble_older_file(extract_worker *w, partition_read *pr, const partition_read_file *pf,
                         pgd_error *err);

/* The older backups of the chain, newest first, read while files still need data. */
bool assemble_older_layers(const extract_plan *p, extract_shared *sh, work_pool_job *job,
                           uint64_t *bytes, pgd_error *err);

/*
 * Every page of every assembled file was supplied; then each is read back,
 * its manifest entry set to what was assembled (extract_plan.older).
 */
bool assemble_finish(const extract_plan *p, const extract_shared *sh, char *buf, pgd_error *err);

#endif
