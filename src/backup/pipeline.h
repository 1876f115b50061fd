/*
 * pipeline.h - read files with direct I/O and stream them into compressed
 * tar partitions.
 *
 *   file queue (largest first) -> W reader threads (util/work_pool.h), each:
 *   `depth` O_DIRECT reads in flight through its I/O engine (threads or
 *   io_uring), consumed in file order -> file filters (file_filter.h: size
 *   and CRC-32C, then the tar entry) -> compressor -> storage object
 *
 * Each thread owns one open partition at a time and closes it once it holds
 * about partition_size bytes, or before a file of another group (a
 * database's own, pipeline_file.group) than the files it holds, so W
 * partitions are written in parallel and
 * W x depth reads are in flight. A thread keeps its depth reads in flight
 * across files: once every read of its current file is submitted, it takes
 * the next file from the pool and reads ahead in it while the files before
 * are consumed, in order (many small files, and the end of a large one,
 * leave no slot idle).
 * Each byte is copied once in user space: the read places it in an aligned
 * buffer, the filters look at it there, the compressor reads it from there.
 * Reads are whole pages (pipeline_read_size), so the filters see each page
 * of a relation file in one piece.
 *
 * Read modes: O_DIRECT; plain buffered (--direct-io=off, the control);
 * cache-neutral buffered reads (where O_DIRECT is refused, or asked for),
 * which note the pages of each range that were cached before reading it
 * and afterwards drop only the others (io/page_residency.h).
 *
 * A file with a SPARSE plan (a delta from WAL summaries) is read only at
 * its plan's runs, each run one read (split at the read size); the filters
 * see those pages, at their offsets. A run past the file's end at open is
 * left out; a read cut short by a file that shrank after open is padded
 * with zeros to the pages asked for (WAL replay of the truncation repairs
 * them, as it does a whole file's padding).
 *
 * Files that change under us: a file that vanished is skipped (INFO line);
 * one that grew is read up to its size at open time; one that shrank is
 * recorded at its new size (the tar entry is zero-padded to the size its
 * header promised, the manifest holds the real size). WAL replay from the
 * backup's start LSN repairs all three.
 */
#ifndef PGD_PIPELINE_H
#define PGD_PIPELINE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backup/file_filter.h"
#include "compress/compress.h"
#include "io/dio_reader.h"
#include "io/cpu_room.h"
#include "io/deadline.h"
#include "io/io_engine.h"
#include "io/rate_limit.h"
#include "pg/relfile.h"
#include "storage/storage.h"
#include "util/error.h"

typedef struct pipeline_file {
    /* in */
    const char *path;   /* name in the backup */
    const char *source; /* where to read it */
    bool is_dir;
    const char *link; /* a symbolic link: its target (stored as a tar link entry) */
    size_t read_size; /* bytes per read for this file (its device's); 0: the default */
    uint64_t size;    /* at walk time */
    uint32_t mode;
    int64_t mtime;
    /* a delta's sparse read (backup/block_plan.h): only these blocks are read; NULL: all */
    const struct block_plan *plan;
    /*
     * Its partition group (backup/file_queue.h): files of two groups never share a partition,
     * so a restore that leaves a database out skips its partitions unread; 0: the shared group
     */
    uint32_t group;
    /*
     * backup --resume (backup/resume.h): stored already, in a partition copied from an
     * interrupted backup; done, result and partition are set, and the file is not read
     */
    bool reused;
    /* out */
    bool done; /* stored (false: vanished) */
    file_filter_result result;
    uint32_t partition;
    /* what the file was when it was opened (fstat), and when: resume's proof it did not change */
    int64_t mtime_ns;
    uint64_t ino, dev;
    int64_t opened_at; /* Unix seconds */
} pipeline_file;

typedef struct pipeline_partition pipeline_partition;

typedef struct pipeline_config {
    storage *repo;
    const char *backup_id;
    compress_kind compression;
    int compression_level;
    size_t read_size; /* default bytes per read */
    int workers;      /* partitions written in parallel */
    int depth;        /* reads in flight per worker */
    io_engine_kind engine;
    uint64_t partition_size;
    read_mode mode;    /* READ_MODE_DIRECT, _BUFFERED or _CACHE_NEUTRAL */
    uint64_t max_rate; /* bytes/s, 0: unlimited */
    bool cpu_idle;     /* the reading threads in the idle CPU class (io/politeness.h) */
    /*
     * `reserve` more reading threads at normal priority wait to be released by either
     * controller (0 and both NULL without them):
     *   - --cpu-class auto (io/cpu_room.h, cpu_idle true with it): room->normal of them from
     *     the start (room decided: as many as the other processes left vCPUs idle), each
     *     moving to the idle class when it finds itself waiting for the CPU;
     *   - a deadline (io/deadline.h): as many as the reading needs to end in time.
     */
    cpu_room_start *room;
    deadline_control *deadline;
    unsigned reserve;
    bool progress;
    const volatile sig_atomic_t *interrupted; /* non-zero: stop (a signal arrived); may be NULL */
    /* filters in front of size/CRC-32C and the tar entry, first one first (page checks, delta) */
    const file_filter_maker *filters;
    size_t nfilters;
    /* partitions 1..first_partition exist already (backup --resume): numbers start after them */
    uint32_t first_partition;
    /*
     * Optional: called once each partition is stored, with the files and entries it holds, in
     * its order (backup/resume.h records them); a failure fails the backup.
     */
    bool (*partition_stored)(void *arg, const pipeline_partition *p, pipeline_file *const *files,
                             size_t n, pgd_error *err);
    void *partition_arg;
} pipeline_config;

struct pipeline_partition {
    uint32_t number;
    char name[64];
    uint64_t size; /* stored (compressed) bytes */
    uint32_t crc;
};

typedef struct pipeline_result {
    pipeline_partition *partitions; /* sorted by number; malloc'd */
    size_t npartitions;
    uint64_t bytes_read;
    uint64_t bytes_stored;
    unsigned read_modes;  /* bit (1 << read_mode) for each mode used */
    int files_in_flight;  /* most files one thread had reads in flight for at once */
    unsigned idle_failed; /* reading threads the system kept out of the idle CPU class */
    /* --cpu-class auto: threads that moved to the idle class, and the readers' share of the time
     * they waited for a CPU, least and most over the windows judged at normal priority */
    unsigned moved_idle, windows;
    double wait_min, wait_max;
    /*
     * The backup's cache effect as the kernel counts it (cachestat(2), cache/residency.h): pages
     * of the files read that reclaim evicted from the page cache while the backup had them open,
     * by anyone's pressure (its own reads with direct I/O take no cache); evicted_measured false
     * when the kernel could not say (no cachestat) for some file.
     */
    uint64_t pages_evicted;
    bool evicted_measured;
} pipeline_result;

/* The bytes the pipeline will read of these files (a sparse plan's pages only). */
uint64_t pipeline_bytes_to_read(const pipeline_file *files, size_t n);

/* The bytes actually read at a time for a read size: whole pages, at least one. */
static inline size_t pipeline_read_size(size_t read_size)
{
    size_t pages = read_size / PG_PAGE_SIZE;

    return (pages > 0 ? pages : 1) * PG_PAGE_SIZE;
}

/*
 * Files are processed in the order given; callers sort largest first
 * (backup/file_queue.h). On failure the partitions already written stay in
 * the repository: the caller owns the backup id and removes everything
 * under it (backup_id_discard).
 */
bool pipeline_run(const pipeline_config *cfg, pipeline_file *files, size_t nfiles,
                  pipeline_result *result, pgd_error *err);
void pipeline_result_free(pipeline_result *result);

#endif
