/*
 * backup_options.c - the options of `pgdirect backup` (see
 * backup_options.h): each read with its bounds, the combinations that make
 * no sense refused, "auto" left for the read plan to decide.
 */
#define _GNU_SOURCE
#include "cmd/backup_options.h"

#include <stdlib.h>
#include <string.h>

#include "backup/delta_parent.h"
#include "backup/delta_summary.h"
#include "backup/io_plan.h"
#include "cmd/common.h"
#include "io/io_engine.h"

#define PARTITION_SIZE_MIN  (1024 * 1024ULL)
#define PARTITION_SIZE_MAX  (1024ULL * 1024 * 1024 * 1024)
#define MAX_MEMORY_MIN      (8 * 1024 * 1024ULL)
#define CPU_WEIGHT_MAX      10000
#define NICE_MAX            19 /* the highest nice value there is */
#define ARCHIVE_TIMEOUT_MAX (24 * 60 * 60)
#define DEADLINE_MAX_S      (7LL * 24 * 60 * 60) /* a week: longer is a typo */

/* "auto" -> IO_PLAN_AUTO, else an integer in [1, max]. */
static bool backup_options_auto_or_int(const pgd_options *opts, opt_id id, long max, unsigned *out,
                                       pgd_error *err)
{
    long v;

    if (strcmp(opt_str(opts, id), "auto") == 0) {
        *out = IO_PLAN_AUTO;
        return true;
    }
    if (!opt_int(opts, id, 1, max, &v, err)) {
        err_clear(err);
        return err_set(err,
                       "invalid value \"%s\" for option \"--%s\"%s: expected auto or an "
                       "integer from 1 to %ld",
                       opt_str(opts, id), opt_name(id), opt_source_note(opts, id), max);
    }
    *out = (unsigned)v;
    return true;
}

bool backup_read_settings(const pgd_options *opts, backup_settings *s, pgd_error *err)
{
    long timeout, weight, nice_increment, max_steps, summary_wait;
    int checkpoint, engine, mode, io_class, cpu_class, checksum_errors;
    bool no_verify;

    memset(s, 0, sizeof(*s));
    if (!backup_options_auto_or_int(opts, OPT_BLOCK_COUNT, IO_PLAN_BLOCK_COUNT_MAX, &s->block_count,
                                    err) ||
        !backup_options_auto_or_int(opts, OPT_CONCURRENCY, IO_PLAN_CONCURRENCY_MAX, &s->concurrency,
                                    err) ||
        !opt_size(opts, OPT_PARTITION_SIZE, PARTITION_SIZE_MIN, PARTITION_SIZE_MAX,
                  &s->partition_size, err) ||
        !command_compression(opts, &s->compression, &s->compression_level, err) ||
        !opt_enum(opts, OPT_DIRECT_IO, "on|off|cache-neutral|true|false|yes|no", &mode, err) ||
        !opt_enum(opts, OPT_IO_ENGINE, "auto|io_uring|threads", &engine, err) ||
        !opt_int(opts, OPT_CPU_WEIGHT, 0, CPU_WEIGHT_MAX, &weight, err) ||
        !opt_int(opts, OPT_NICE, 0, NICE_MAX, &nice_increment, err) ||
        !opt_enum(opts, OPT_IO_CLASS, "best-effort|idle", &io_class, err) ||
        !opt_enum(opts, OPT_CPU_CLASS, "normal|idle|auto", &cpu_class, err) ||
        !opt_enum(opts, OPT_CHECKPOINT, "spread|fast", &checkpoint, err) ||
        !opt_bool(opts, OPT_ARCHIVE_CHECK, &s->archive_check, err) ||
        !opt_int(opts, OPT_ARCHIVE_TIMEOUT, 1, ARCHIVE_TIMEOUT_MAX, &timeout, err) ||
        !opt_enum(opts, OPT_CHECKSUM_ERRORS, "warn|fail", &checksum_errors, err) ||
        !opt_bool(opts, OPT_NO_VERIFY_CHECKSUMS, &no_verify, err) ||
        !opt_bool(opts, OPT_STANDBY_ONLY, &s->standby_only, err) ||
        !opt_bool(opts, OPT_CONCURRENT, &s->concurrent, err) ||
        !opt_bool(opts, OPT_RESUME, &s->resume, err) ||
        !opt_bool(opts, OPT_DELTA, &s->delta, err) ||
        !opt_int(opts, OPT_DELTA_MAX_STEPS, 0, DELTA_MAX_STEPS_MAX, &max_steps, err) ||
        !opt_int(opts, OPT_DELTA_SUMMARY_WAIT, 0, DELTA_SUMMARY_WAIT_MAX_S, &summary_wait, err) ||
        !command_progress(opts, &s->progress, err))
        return false;
    /* auto was the CPU pacer, replaced by --cpu-class idle (io/rate_limit.h): said, not guessed */
    if (strcmp(opt_str(opts, OPT_MAX_RATE), "auto") == 0)
        return err_set(err,
                       "invalid value \"auto\" for option \"--max-rate\"%s: the pacing it named "
                       "is gone; the reading threads yield the CPU to the database by default now "
                       "(--cpu-class idle), and --max-rate is a fixed cap in bytes per second "
                       "(0, the default: none)",
                       opt_source_note(opts, OPT_MAX_RATE));
    if (!opt_size(opts, OPT_MAX_RATE, 0, UINT64_MAX, &s->max_rate, err))
        return false;
    if (s->resume && s->delta)
        return err_set(err, "--resume resumes a full backup: it cannot be combined with --delta");
    if (opt_str(opts, OPT_DEADLINE) != NULL &&
        !opt_duration(opts, OPT_DEADLINE, 1, DEADLINE_MAX_S, &s->deadline_s, err))
        return false;
    if (strcmp(opt_str(opts, OPT_MAX_MEMORY), "auto") == 0)
        s->max_memory = io_plan_default_memory();
    else if (!opt_size(opts, OPT_MAX_MEMORY, MAX_MEMORY_MIN, UINT64_MAX, &s->max_memory, err))
        return false;
    s->mode = mode == 2                               ? READ_MODE_CACHE_NEUTRAL
              : (mode == 0 || mode == 3 || mode == 5) ? READ_MODE_DIRECT
                                                      : READ_MODE_BUFFERED;
    s->engine = engine == 0 ? -1 : engine == 1 ? IO_ENGINE_URING : IO_ENGINE_THREADS;
    s->cpu_weight = (unsigned)weight;
    s->nice_increment = (int)nice_increment;
    s->io_idle = io_class == 1;
    s->cpu_idle = cpu_class != 0;
    s->cpu_auto = cpu_class == 2;
    s->fast_checkpoint = checkpoint == 1;
    s->archive_timeout = (int)timeout;
    s->verify_checksums = !no_verify;
    s->checksum_errors_fail = checksum_errors == 1;
    /* on the command line without --delta they would be ignored: a full the caller did not ask for
     */
    static const opt_id delta_only[] = {OPT_DELTA_FROM, OPT_DELTA_MAX_STEPS,
                                        OPT_DELTA_SUMMARY_WAIT};
    for (size_t i = 0; !s->delta && i < sizeof(delta_only) / sizeof(delta_only[0]); i++)
        if (opts->v[delta_only[i]].source == SRC_CLI)
            return err_set(err, "option \"--%s\" needs --delta", opt_name(delta_only[i]));
    s->delta_max_steps = (uint32_t)max_steps;
    s->delta_summary_wait_s = (int)summary_wait;
    s->delta_from = opt_str(opts, OPT_DELTA_FROM);
    s->conninfo = opt_str(opts, OPT_DBNAME);
    s->label = opt_str(opts, OPT_LABEL);
    s->annotations[0] = '\0';
    for (size_t i = 0; i < opts->v[OPT_ANNOTATION].nvalues; i++) {
        char key[ANNOTATION_KEY_MAX + 1];
        const char *value;
        bool changed;
        if (!annotation_parse(opts->v[OPT_ANNOTATION].values[i], key, &value, err) ||
            !annotation_set(s->annotations, key, value, &changed, err))
            return false;
    }
    s->pgdata = opt_str(opts, OPT_PGDATA) != NULL ? opt_str(opts, OPT_PGDATA) : getenv("PGDATA");
    return true;
}
