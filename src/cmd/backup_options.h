/*
 * backup_options.h - the options of `pgdirect backup`, read and checked
 * into one struct before anything is touched (a bad value is a usage
 * error, exit 2).
 */
#ifndef PGD_BACKUP_OPTIONS_H
#define PGD_BACKUP_OPTIONS_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "compress/compress.h"
#include "io/dio_reader.h"
#include "repo/annotation.h"
#include "util/error.h"
#include "util/options.h"

typedef struct backup_settings {
    const char *pgdata;
    char pgdata_real[PATH_MAX];
    const char *conninfo;
    const char *label;
    char annotations[ANNOTATIONS_TEXT_MAX]; /* --annotation, repo/annotation.h's text */
    unsigned block_count;                   /* IO_PLAN_AUTO or fixed */
    unsigned concurrency;                   /* IO_PLAN_AUTO or fixed */
    int engine;                             /* -1: auto */
    uint64_t partition_size;
    uint64_t max_rate, max_memory;
    bool cpu_idle;      /* --cpu-class idle or auto: the reading threads under SCHED_IDLE */
    bool cpu_auto;      /* --cpu-class auto: some at normal priority while there is room */
    int64_t deadline_s; /* --deadline; 0: none */
    unsigned cpu_weight;
    int nice_increment;
    bool io_idle;
    compress_kind compression;
    int compression_level;
    read_mode mode;
    bool fast_checkpoint, archive_check, progress;
    int archive_timeout;
    bool verify_checksums, checksum_errors_fail;
    bool standby_only; /* refuse a primary */
    bool concurrent;   /* allow a second backup of the cluster into the repository at once */
    bool resume;       /* reuse an interrupted full backup's partitions (backup/resume.h) */
    bool delta;
    const char *delta_from; /* an id or LATEST */
    uint32_t delta_max_steps;
    int delta_summary_wait_s; /* for the WAL summarizer (17+) */
} backup_settings;

/* Every option of backup into s; false (err says which option and why) on a bad value. */
bool backup_read_settings(const pgd_options *opts, backup_settings *s, pgd_error *err);

#endif
