/*
 * file_filter.h - the steps a file's bytes take between the aligned read
 * buffer and its tar partition: a chain of small filters with one
 * interface.
 *
 *   read buffer -> [page checksums] -> [delta pages] -> size, CRC-32C -> tar entry -> partition
 *                  filter_page_checksum.h  filter_delta.h  filter_crc.h  filter_tar.h   stream
 *
 * The chain ends at the tar writer; from there the partition's own stream
 * filters (io/stream.h: compressor, CRC-32C of the stored bytes, storage)
 * take over, once per partition rather than per file. Adding a step is
 * adding a filter to pipeline_config.filters, not editing the copy loop.
 *
 * Each filter owns the next one and decides what it sees, as io/stream.h's
 * streams do. An inspecting filter looks at the bytes, or changes them in
 * place, and passes them on; a transforming filter passes on other bytes,
 * or none now and its own later. Nothing is copied to be passed on: the
 * chunk handed down is the read buffer itself, or the filter's own memory.
 *
 * A file goes through in three calls:
 *   begin(file)   before its first byte: name, size, mode, whether it is a
 *                 relation file and which segment (pg/relfile.h). A filter
 *                 that replaces the file's bytes (a delta filter's
 *                 increment) passes on a file of its own, with its own
 *                 name and size, when it knows them (at the latest in end).
 *   data(chunk)   the file's bytes at an offset, in order. Each chunk of a
 *                 relation file starts on a page boundary and holds whole
 *                 pages, except the file's last when its size is not a
 *                 multiple of the page: a page filter sees every page
 *                 whole, and its block number is
 *                 segment * PG_SEGMENT_PAGES + offset / PG_PAGE_SIZE.
 *   end(result)   after the last byte (fewer than announced when the file
 *                 shrank while it was read: the tar entry is completed with
 *                 zeros, and the manifest records them, filter_crc.h):
 *                 each filter fills in its part of the result, which
 *                 becomes the manifest entry, and passes on.
 * A failed call fails the file and the backup; the chain is then freed
 * and whatever it passed on is discarded with the partition.
 */
#ifndef PGD_FILE_FILTER_H
#define PGD_FILE_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

typedef struct file_filter_file {
    const char *path;   /* name in the backup */
    const char *source; /* where it is read from (a filter may read a page again) */
    uint64_t size;      /* bytes that will follow */
    uint32_t mode;
    int64_t mtime;
    bool is_relation; /* a relation data file: whole pages, segment below */
    uint32_t segment;
    /*
     * A delta's read plan (backup/block_plan.h), NULL when the file is read
     * whole: with a SPARSE one only its pages follow, at their offsets.
     */
    const struct block_plan *plan;
} file_filter_file;

typedef struct file_chunk {
    unsigned char *data;
    size_t len;
    size_t room;     /* writable bytes at data, >= len: a filter may pad or rewrite in place */
    uint64_t offset; /* of data[0] in the file */
} file_chunk;

/* Bad pages of a file whose block numbers are kept (the count is exact). */
#define FILE_FILTER_BAD_BLOCKS_MAX 8

/* What the filters found out about a file; each fills in its own fields. */
typedef struct file_filter_result {
    uint64_t size; /* bytes stored (filter_crc) */
    uint32_t crc;  /* CRC-32C of them (filter_crc) */
    /* filter_page_checksum: pages whose checksum was verified, and those that failed */
    uint32_t pages_checked;
    uint32_t pages_bad;
    uint32_t pages_reread; /* failed as first read, so read again from the device */
    uint32_t bad_blocks[FILE_FILTER_BAD_BLOCKS_MAX]; /* absolute block numbers, the first ones */
    /* filter_delta: stored as an increment of file_size bytes' file, inc_blocks pages */
    bool increment;
    uint64_t file_size;
    uint32_t inc_blocks;
} file_filter_result;

typedef struct file_filter file_filter;

typedef struct file_filter_ops {
    bool (*begin)(file_filter *f, const file_filter_file *file, pgd_error *err);
    bool (*data)(file_filter *f, file_chunk *chunk, pgd_error *err);
    bool (*end)(file_filter *f, file_filter_result *result, pgd_error *err);
    /* Free this filter and the rest of the chain. */
    void (*free)(file_filter *f);
} file_filter_ops;

struct file_filter {
    const file_filter_ops *ops;
    file_filter *next; /* owned; NULL at the end of the chain */
};

/*
 * How the pipeline makes a filter for each reader thread (threads do not
 * share filters): make(next, arg, err) returns the filter in front of
 * `next`, which it owns from then on (and frees on failure too).
 */
typedef struct file_filter_maker {
    file_filter *(*make)(file_filter *next, void *arg, pgd_error *err);
    void *arg;
} file_filter_maker;

static inline bool file_filter_begin(file_filter *f, const file_filter_file *file, pgd_error *err)
{
    return f->ops->begin(f, file, err);
}

static inline bool file_filter_data(file_filter *f, file_chunk *chunk, pgd_error *err)
{
    return f->ops->data(f, chunk, err);
}

static inline bool file_filter_end(file_filter *f, file_filter_result *result, pgd_error *err)
{
    return f->ops->end(f, result, err);
}

static inline void file_filter_free(file_filter *f)
{
    if (f != NULL)
        f->ops->free(f);
}

#endif
