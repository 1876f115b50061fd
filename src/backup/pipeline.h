/*
 * pipeline.h - read files with direct I/O and stream them into compressed
 * tar partitions.
 *
 *   file queue (largest first) -> N workers, each: O_DIRECT read into its
 *   aligned buffer -> CRC-32C -> tar -> compressor -> storage object
 *
 * Each worker owns one open partition at a time and closes it once it holds
 * about partition_size bytes, so N reads are in flight and N partitions
 * are written in parallel. Each byte is copied once in user space: read()
 * places it in the aligned buffer, the compressor reads it from there.
 *
 * Files that change under us: a file that vanished is skipped (INFO line);
 * one that grew is read up to its size at open time; one that shrank is
 * recorded at its new size (the tar entry is zero-padded to the size its
 * header promised, the manifest holds the real size). WAL replay from the
 * backup's start LSN repairs all three.
 */
#ifndef PGD_PIPELINE_H
#define PGD_PIPELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compress/compress.h"
#include "io/dio_reader.h"
#include "storage/storage.h"
#include "util/error.h"

typedef struct pipeline_file {
    /* in */
    const char *path;   /* name in the backup */
    const char *source; /* where to read it */
    bool is_dir;
    uint64_t size; /* at walk time */
    uint32_t mode;
    int64_t mtime;
    /* out */
    bool done;     /* stored (false: vanished) */
    uint64_t stored_size;
    uint32_t crc;
    uint32_t partition;
} pipeline_file;

typedef struct pipeline_config {
    storage *repo;
    const char *backup_id;
    compress_kind compression;
    int compression_level;
    size_t read_size; /* bytes per read, multiple of DIO_ALIGN */
    int concurrency;
    uint64_t partition_size;
    bool direct_io;
    bool progress;
} pipeline_config;

typedef struct pipeline_partition {
    uint32_t number;
    char name[64];
    uint64_t size; /* stored (compressed) bytes */
    uint32_t crc;
} pipeline_partition;

typedef struct pipeline_result {
    pipeline_partition *partitions; /* sorted by number; malloc'd */
    size_t npartitions;
    uint64_t bytes_read;
    uint64_t bytes_stored;
    unsigned read_modes; /* bit (1 << read_mode) for each mode used */
} pipeline_result;

/* Files are processed in the order given; callers sort largest first. */
bool pipeline_run(const pipeline_config *cfg, pipeline_file *files, size_t nfiles,
                  pipeline_result *result, pgd_error *err);
void pipeline_result_free(pipeline_result *result);

#endif
