/*
 * backup.c - `pgdirect backup`: a full, non-exclusive backup of a running
 * cluster, read with direct I/O, into the repository.
 *
 * Order matters for what a crash leaves behind: the id's claim first (no
 * other run writes under it from then on), partitions, then
 * backup_label/tablespace_map, manifest.json and PostgreSQL's
 * backup_manifest, then (after the WAL the backup needs has reached the
 * archive) the sentinel. Without the sentinel the backup does not exist for
 * list or restore. A run that fails removes everything it wrote under its
 * id; one that is killed leaves garbage that list never shows.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backup/backup_id.h"
#include "backup/io_plan.h"
#include "backup/pipeline.h"
#include "io/politeness.h"
#include "cmd/cmd.h"
#include "cmd/common.h"
#include "pg/datadir.h"
#include "pg/session.h"
#include "repo/backup_info.h"
#include "repo/layout.h"
#include "repo/manifest.h"
#include "repo/pg_manifest.h"
#include "repo/wal_archive.h"
#include "util/log.h"
#include "util/progress.h"

#define BLOCK_COUNT_MAX    16384
#define CONCURRENCY_MAX    256
#define PARTITION_SIZE_MIN (1024 * 1024ULL)
#define PARTITION_SIZE_MAX (1024ULL * 1024 * 1024 * 1024)
#define MAX_MEMORY_MIN     (8 * 1024 * 1024ULL)
#define RSS_MARGIN         (8 * 1024 * 1024ULL) /* allocator slack, libpq buffers, the manifest */
/*
 * Temporary objects under backups/ that nobody has written to for a day are
 * left by killed runs. A live writer touches its temporary object at least
 * every compressed block (seconds, or minutes at the slowest --max-rate); a
 * day is far beyond any stall of a run still alive, and a daily schedule
 * still clears a killed run's garbage by the run after next.
 */
#define STALE_TEMP_AGE_S (24 * 60 * 60)

/*
 * The signal (SIGINT, SIGTERM, SIGHUP) that interrupted the backup, 0 while
 * none did. The run then stops at the next stage, removes what it wrote and
 * dies of that signal; a second one ends it at once (SA_RESETHAND).
 */
static volatile sig_atomic_t backup_signal;

static const command_help backup_help = {
    CMD_BACKUP, "usage: pgdirect backup [OPTIONS]",
    "Take a full backup of the running cluster at --pgdata (or $PGDATA) into the repository,\n"
    "reading data files with direct I/O so the backup leaves the page cache as it was."};

typedef struct backup_settings {
    const char *pgdata;
    char pgdata_real[PATH_MAX];
    const char *conninfo;
    const char *label;
    unsigned block_count; /* IO_PLAN_AUTO or fixed */
    unsigned concurrency; /* IO_PLAN_AUTO or fixed */
    int engine;           /* -1: auto */
    uint64_t partition_size;
    uint64_t max_rate, max_memory;
    unsigned cpu_weight;
    bool io_idle;
    compress_kind compression;
    int compression_level;
    read_mode mode;
    bool fast_checkpoint, archive_check, progress;
    int archive_timeout;
} backup_settings;

/* "auto" -> IO_PLAN_AUTO, else an integer in [1, max]. */
static bool auto_or_int(const pgd_options *opts, opt_id id, long max, unsigned *out, pgd_error *err)
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

static bool read_settings(const pgd_options *opts, backup_settings *s, pgd_error *err)
{
    long timeout, weight;
    int checkpoint, engine, mode, io_class;
    struct stat st;

    memset(s, 0, sizeof(*s));
    if (!auto_or_int(opts, OPT_BLOCK_COUNT, BLOCK_COUNT_MAX, &s->block_count, err) ||
        !auto_or_int(opts, OPT_CONCURRENCY, CONCURRENCY_MAX, &s->concurrency, err) ||
        !opt_size(opts, OPT_PARTITION_SIZE, PARTITION_SIZE_MIN, PARTITION_SIZE_MAX,
                  &s->partition_size, err) ||
        !command_compression(opts, &s->compression, &s->compression_level, err) ||
        !opt_enum(opts, OPT_DIRECT_IO, "on|off|cache-neutral|true|false|yes|no", &mode, err) ||
        !opt_enum(opts, OPT_IO_ENGINE, "auto|io_uring|threads", &engine, err) ||
        !opt_size(opts, OPT_MAX_RATE, 0, UINT64_MAX, &s->max_rate, err) ||
        !opt_int(opts, OPT_CPU_WEIGHT, 0, 10000, &weight, err) ||
        !opt_enum(opts, OPT_IO_CLASS, "best-effort|idle", &io_class, err) ||
        !opt_enum(opts, OPT_CHECKPOINT, "spread|fast", &checkpoint, err) ||
        !opt_bool(opts, OPT_ARCHIVE_CHECK, &s->archive_check, err) ||
        !opt_int(opts, OPT_ARCHIVE_TIMEOUT, 1, 86400, &timeout, err) ||
        !command_progress(opts, &s->progress, err))
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
    s->io_idle = io_class == 1;
    s->fast_checkpoint = checkpoint == 1;
    s->archive_timeout = (int)timeout;
    s->conninfo = opt_str(opts, OPT_DBNAME);
    s->label = opt_str(opts, OPT_LABEL);
    s->pgdata = opt_str(opts, OPT_PGDATA);
    if (s->pgdata == NULL)
        s->pgdata = getenv("PGDATA");
    if (s->pgdata == NULL || s->pgdata[0] == '\0')
        return err_set(err, "no data directory given: use --pgdata or set PGDATA");
    if (stat(s->pgdata, &st) != 0)
        return err_errno(err, errno, "data directory \"%s\" is not accessible", s->pgdata);
    if (!S_ISDIR(st.st_mode))
        return err_set(err, "data directory \"%s\" is not a directory", s->pgdata);
    if (realpath(s->pgdata, s->pgdata_real) == NULL)
        return err_errno(err, errno, "could not resolve data directory \"%s\"", s->pgdata);
    return true;
}

static bool check_server(const pg_session *pg, const backup_settings *s, pgd_error *err)
{
    char server_real[PATH_MAX];

    if (realpath(pg->data_directory, server_real) == NULL)
        snprintf(server_real, sizeof(server_real), "%s", pg->data_directory);
    if (strcmp(server_real, s->pgdata_real) != 0)
        return err_set(err,
                       "data directory \"%s\" is not the one of the server (its "
                       "data_directory is \"%s\")",
                       s->pgdata, pg->data_directory);
    if (s->archive_check && strcmp(pg->archive_mode, "off") == 0)
        return err_set(err, "archive_mode is off on the server: the WAL this backup needs would "
                            "not be archived (set archive_command = 'pgdirect wal-push %%p', or "
                            "--archive-check=off)");
    if (s->archive_check && pg->in_recovery && strcmp(pg->archive_mode, "always") != 0)
        return err_set(err, "backing up a standby needs archive_mode = always there (or "
                            "--archive-check=off)");
    return true;
}

static int file_size_desc(const void *a, const void *b)
{
    const pipeline_file *fa = a, *fb = b;

    if (fa->is_dir != fb->is_dir)
        return fa->is_dir ? 1 : -1;
    if (fa->size != fb->size)
        return fa->size < fb->size ? 1 : -1;
    return strcmp(fa->path, fb->path);
}

static pipeline_file *make_queue(const datadir *dd, const io_plan *plan, pgd_error *err)
{
    pipeline_file *files = calloc(dd->n ? dd->n : 1, sizeof(*files));

    if (files == NULL) {
        err_set(err, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < dd->n; i++) {
        files[i].path = dd->entries[i].path;
        files[i].source = dd->entries[i].source;
        files[i].is_dir = dd->entries[i].is_dir;
        files[i].link = dd->entries[i].link;
        files[i].size = dd->entries[i].size;
        files[i].mode = dd->entries[i].mode;
        files[i].mtime = dd->entries[i].mtime;
        files[i].read_size = io_plan_read_size(plan, dd->entries[i].path);
    }
    qsort(files, dd->n, sizeof(*files), file_size_desc);
    return files;
}

static bool build_manifest(manifest *m, const char *id, const backup_settings *s, const datadir *dd,
                           const pg_tablespace *spcs, size_t nspcs, const pipeline_file *files,
                           size_t nfiles, const pipeline_result *res, pgd_error *err)
{
    m->id = strdup(id);
    m->compression = s->compression;
    if (m->id == NULL)
        return err_set(err, "out of memory");
    for (size_t i = 0; i < res->npartitions; i++)
        if (!manifest_add_partition(m, res->partitions[i].name, res->partitions[i].size,
                                    res->partitions[i].crc, err))
            return false;
    for (size_t i = 0; i < dd->ntablespaces; i++) {
        const char *name = "";
        for (size_t k = 0; k < nspcs; k++)
            if (spcs[k].oid == dd->tablespaces[i].oid)
                name = spcs[k].name;
        if (!manifest_add_tablespace(m, dd->tablespaces[i].oid, name, dd->tablespaces[i].location,
                                     err))
            return false;
    }
    for (size_t i = 0; i < nfiles; i++) {
        const pipeline_file *f = &files[i];
        manifest_file mf = {.path = (char *)f->path,
                            .is_dir = f->is_dir,
                            .size = f->stored_size,
                            .mode = f->mode,
                            .mtime = f->mtime,
                            .crc = f->crc,
                            .partition = f->partition};
        if (!f->done)
            continue;
        /* partition numbers in the manifest index its partitions array (1-based) */
        for (size_t k = 0; k < res->npartitions; k++)
            if (res->partitions[k].number == f->partition)
                mf.partition = (uint32_t)k + 1;
        if (f->link != NULL) {
            manifest_link ml = {.path = (char *)f->path,
                                .target = (char *)f->link,
                                .mode = f->mode,
                                .mtime = f->mtime,
                                .partition = mf.partition};
            if (!manifest_add_link(m, &ml, err))
                return false;
        } else if (!manifest_add_file(m, &mf, err)) {
            return false;
        }
    }
    return true;
}

/* Under our claimed id nothing exists yet: replacing an object would mean someone else wrote it. */
static bool put_text(storage *repo, const char *id, const char *name, const char *text,
                     pgd_error *err)
{
    char path[LAYOUT_PATH_MAX];

    layout_backup_object(id, name, path, sizeof(path));
    return storage_put(repo, path, text, strlen(text), STORAGE_WRITE_NO_REPLACE, err);
}

static void on_signal(int sig)
{
    backup_signal = sig;
    pg_session_cancel_request(); /* a checkpoint or stop call in progress ends now */
}

static void catch_signals(void)
{
    static const int signals[] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_RESETHAND};

    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++)
        sigaction(signals[i], &sa, NULL);
}

static const char *signal_name(int sig)
{
    return sig == SIGINT    ? "SIGINT"
           : sig == SIGTERM ? "SIGTERM"
           : sig == SIGHUP  ? "SIGHUP"
                            : "a signal";
}

/* True once a signal asked us to stop; the failure it caused is reported as the signal. */
static bool interrupted(void)
{
    return backup_signal != 0;
}

/* Garbage of killed runs: a failure to remove it is worth a warning, not a failed backup. */
static void remove_stale_temp(storage *repo)
{
    pgd_error err = {0};

    if (!storage_remove_stale_temp(repo, BACKUPS_DIR, STALE_TEMP_AGE_S, &err))
        log_warn("could not remove temporary objects left by killed backups: %s", err.msg);
}

/* A failed backup leaves nothing: everything under its id goes, or a warning says what stays. */
static void discard_backup(storage *repo, const char *id)
{
    pgd_error err = {0};

    if (backup_id_discard(repo, id, &err))
        log_info("removed what backup %s had written to the repository", id);
    else
        log_warn("%s", err.msg);
}

static const char *read_mode_summary(unsigned modes, read_mode asked)
{
    for (int m = READ_MODE_DIRECT; m <= READ_MODE_CACHE_NEUTRAL; m++)
        if (modes == (1u << m))
            return read_mode_name((read_mode)m);
    if (modes == 0)
        return read_mode_name(asked);
    return "mixed (cache-neutral where O_DIRECT was refused)";
}

static long peak_rss_kib(void)
{
    struct rusage ru;

    return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : 0;
}

static uint64_t rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long size = 0, resident = 0;

    if (f != NULL) {
        if (fscanf(f, "%lu %lu", &size, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* The read plan for this data directory and its tablespaces, within --max-memory. */
static bool make_plan(const backup_settings *s, const datadir *dd, uint64_t stream_memory,
                      io_plan *plan, pgd_error *err)
{
    uint32_t *oids = calloc(dd->ntablespaces + 1, sizeof(*oids));
    const char **locations = calloc(dd->ntablespaces + 1, sizeof(*locations));
    uint64_t used = rss_bytes() + RSS_MARGIN;
    io_plan_request req = {.sysfs_root = "/sys",
                           .pgdata = s->pgdata_real,
                           .spc_oids = oids,
                           .spc_locations = locations,
                           .nspcs = dd->ntablespaces,
                           .block_count = s->block_count,
                           .concurrency = s->concurrency,
                           .engine = s->engine,
                           .compression = s->compression,
                           .compression_level = s->compression_level,
                           .stream_memory = stream_memory,
                           .cpus = (unsigned)sysconf(_SC_NPROCESSORS_ONLN)};
    bool ok;

    if (oids == NULL || locations == NULL) {
        free(oids);
        free(locations);
        return err_set(err, "out of memory");
    }
    for (size_t i = 0; i < dd->ntablespaces; i++) {
        oids[i] = dd->tablespaces[i].oid;
        locations[i] = dd->tablespaces[i].location;
    }
    /* the cap covers the whole process: what it holds already leaves less for buffers */
    if (used >= s->max_memory) {
        free(oids);
        free(locations);
        return err_set(err,
                       "--max-memory %llu MiB is too small: the process already uses %llu "
                       "MiB before allocating any buffer",
                       (unsigned long long)(s->max_memory >> 20), (unsigned long long)(used >> 20));
    }
    req.max_memory = s->max_memory - used;
    ok = io_plan_make(&req, plan, err);
    free(oids);
    free(locations);
    return ok;
}

/* --io-class and --cpu-weight: warnings, not failures, when the system will not allow them. */
static void be_polite(const backup_settings *s, cpu_cgroup *cg)
{
    pgd_error perr = {0};

    if (s->io_idle && !politeness_io_class(true, &perr))
        log_warn("%s: reading at the normal I/O priority", perr.msg);
    else if (s->io_idle)
        log_info("reading in the idle I/O class");
    err_clear(&perr);
    if (s->cpu_weight > 0 && !politeness_cpu_weight(s->cpu_weight, cg, &perr))
        log_warn("%s: running at the normal CPU weight", perr.msg);
    else if (s->cpu_weight > 0)
        log_info("running in cgroup \"%s\" with CPU weight %u", cg->dir, s->cpu_weight);
}

static bool run_backup(const backup_settings *s, storage *repo, pgd_error *err)
{
    pg_session pg;
    datadir dd = {0};
    pipeline_file *files = NULL;
    pipeline_result res = {0};
    pg_tablespace *spcs = NULL;
    size_t nspcs = 0;
    manifest m;
    backup_info bi;
    char *labelfile = NULL, *spcmap = NULL, *json = NULL, path[LAYOUT_PATH_MAX];
    char id[BACKUP_ID_LEN + 1] = "", start_lsn[PG_LSN_TEXT], stop_lsn[PG_LSN_TEXT];
    uint64_t lsn;
    double t0, t_read = 0;
    io_plan plan = {0};
    cpu_cgroup cpu_cg = {0};
    bool ok = false, claimed = false;

    manifest_init(&m);
    memset(&bi, 0, sizeof(bi));
    if (!storage_check_writable(repo, err))
        return false;
    remove_stale_temp(repo);
    if (!pg_session_open(&pg, s->conninfo, err))
        return false;
    if (!pg_session_cancel_arm(&pg, err)) {
        pg_session_close(&pg);
        return false;
    }
    t0 = clock_seconds();
    bi.start_time = time(NULL);
    if (!check_server(&pg, s, err) ||
        !(claimed = backup_id_claim(repo, (time_t)bi.start_time, id, err)))
        goto done;

    log_info("backup %s of \"%s\" (PostgreSQL %s) to \"%s\": %s checkpoint", id, s->pgdata,
             pg.version, repo->uri, s->fast_checkpoint ? "fast" : "spread");
    if (!pg_session_backup_start(&pg, s->label, s->fast_checkpoint, start_lsn, sizeof(start_lsn),
                                 err) ||
        interrupted())
        goto done;
    if (!pg_session_tablespaces(&pg, &spcs, &nspcs, err) ||
        !datadir_walk(&dd, s->pgdata_real, pg.version_num, err) ||
        !make_plan(s, &dd, repo->stream_memory, &plan, err) ||
        (files = make_queue(&dd, &plan, err)) == NULL)
        goto done;
    log_info("backup started at WAL location %s; reading %s: %s I/O, %zu KiB reads, %u in "
             "flight (%d x %d), %s engine (%s), %llu MiB of buffers",
             start_lsn, s->pgdata, read_mode_name(s->mode), plan.places[0].read_size / 1024,
             plan.concurrency, plan.workers, plan.depth, io_engine_name(plan.engine),
             plan.engine_why, (unsigned long long)(plan.memory >> 20));
    for (size_t i = 1; i < plan.nplaces; i++)
        log_info("tablespace %u at \"%s\" (%s): %zu KiB reads", plan.places[i].oid,
                 plan.places[i].location, plan.places[i].dev.stack,
                 plan.places[i].read_size / 1024);
    if (plan.memory_note[0] != '\0')
        log_info("--max-memory %llu MiB: %s", (unsigned long long)(s->max_memory >> 20),
                 plan.memory_note);
    be_polite(s, &cpu_cg);

    pipeline_config cfg = {.repo = repo,
                           .backup_id = id,
                           .compression = s->compression,
                           .compression_level = s->compression_level,
                           .read_size = plan.places[0].read_size,
                           .workers = plan.workers,
                           .depth = plan.depth,
                           .engine = plan.engine,
                           .partition_size = s->partition_size,
                           .mode = s->mode,
                           .max_rate = s->max_rate,
                           .progress = s->progress,
                           .interrupted = &backup_signal};
    t_read = clock_seconds();
    if (!pipeline_run(&cfg, files, dd.n, &res, err))
        goto done;
    t_read = clock_seconds() - t_read;

    /* with --archive-check we wait for the WAL in the repository ourselves, with a deadline */
    if (!pg_session_backup_stop(&pg, !s->archive_check, stop_lsn, sizeof(stop_lsn), &labelfile,
                                &spcmap, err) ||
        interrupted())
        goto done;
    bi.stop_time = time(NULL);

    /* what the backup needs: WAL from its start segment to its stop segment */
    snprintf(bi.id, sizeof(bi.id), "%s", id);
    snprintf(bi.type, sizeof(bi.type), "full");
    snprintf(bi.label, sizeof(bi.label), "%s", s->label);
    snprintf(bi.start_lsn, sizeof(bi.start_lsn), "%s", start_lsn);
    snprintf(bi.stop_lsn, sizeof(bi.stop_lsn), "%s", stop_lsn);
    if (!pg_label_timeline(labelfile, &bi.timeline)) {
        err_set(err, "backup_label returned by the server has no START TIMELINE line");
        goto done;
    }
    if (!pg_parse_lsn(start_lsn, &lsn) || pg.wal_segment_size == 0) {
        err_set(err, "the server returned an invalid start WAL location \"%s\"", start_lsn);
        goto done;
    }
    pg_wal_file_name(bi.timeline, lsn, pg.wal_segment_size, false, bi.start_wal);
    if (!pg_parse_lsn(stop_lsn, &lsn)) {
        err_set(err, "the server returned an invalid stop WAL location \"%s\"", stop_lsn);
        goto done;
    }
    pg_wal_file_name(bi.timeline, lsn, pg.wal_segment_size, true, bi.stop_wal);
    snprintf(bi.system_identifier, sizeof(bi.system_identifier), "%s", pg.system_identifier);
    bi.pg_version_num = pg.version_num;
    snprintf(bi.tool_version, sizeof(bi.tool_version), "%s", PGDIRECT_VERSION);
    snprintf(bi.compression, sizeof(bi.compression), "%s", compress_name(s->compression));
    snprintf(bi.read_mode, sizeof(bi.read_mode), "%s", read_mode_summary(res.read_modes, s->mode));
    bi.size = res.bytes_read;
    bi.compressed_size = res.bytes_stored;

    m.backup_label = labelfile;
    m.tablespace_map = spcmap;
    labelfile = spcmap = NULL;
    if (!build_manifest(&m, id, s, &dd, spcs, nspcs, files, dd.n, &res, err))
        goto done;
    bi.files = m.nfiles;
    if (!put_text(repo, id, "backup_label", m.backup_label, err) ||
        (m.tablespace_map[0] != '\0' &&
         !put_text(repo, id, "tablespace_map", m.tablespace_map, err)) ||
        !manifest_to_json(&m, &json, err) || !put_text(repo, id, MANIFEST_NAME, json, err))
        goto done;
    free(json);
    json = NULL;
    if (!pg_manifest_build(&m, bi.stop_time, bi.timeline, start_lsn, stop_lsn, &json, err) ||
        !put_text(repo, id, PG_MANIFEST_NAME, json, err))
        goto done;
    free(json);
    json = NULL;

    if (s->archive_check) {
        log_info("waiting for WAL %s..%s to reach the repository", bi.start_wal, bi.stop_wal);
        if (!wal_archive_wait(repo, bi.start_wal, s->archive_timeout, err) ||
            !wal_archive_wait(repo, bi.stop_wal, s->archive_timeout, err))
            goto done;
    }
    /* the last moment a signal can still stop the backup from existing */
    if (interrupted() || !backup_info_to_json(&bi, &json, err))
        goto done;
    layout_sentinel_path(id, path, sizeof(path));
    if (!storage_put(repo, path, json, strlen(json), STORAGE_WRITE_NO_REPLACE, err))
        goto done;

    {
        double secs = clock_seconds() - t0;
        char size_s[32], stored_s[32], time_s[32];
        format_bytes(bi.size, size_s, sizeof(size_s));
        format_bytes(bi.compressed_size, stored_s, sizeof(stored_s));
        format_duration(secs, time_s, sizeof(time_s));
        log_info("backup %s complete: %s read, %s stored (%s), %llu files, %s, %.1f MB/s "
                 "(files read at %.1f MB/s), read mode %s, peak RSS %ld MiB",
                 id, size_s, stored_s, bi.compression, (unsigned long long)bi.files, time_s,
                 secs > 0 ? (double)bi.size / secs / 1e6 : 0.0,
                 t_read > 0 ? (double)bi.size / t_read / 1e6 : 0.0, bi.read_mode,
                 peak_rss_kib() / 1024);
    }
    ok = true;
done:
    if (!ok && interrupted()) {
        err_clear(err);
        err_set(err, "interrupted by %s", signal_name(backup_signal));
    }
    if (!ok && id[0] != '\0')
        err_prefix(err, "backup %s failed", id);
    free(json);
    free(labelfile);
    free(spcmap);
    free(files);
    free(spcs);
    pipeline_result_free(&res);
    politeness_cpu_release(&cpu_cg);
    io_plan_free(&plan);
    datadir_free(&dd);
    manifest_free(&m);
    pg_session_cancel_disarm();
    pg_session_close(&pg);
    if (!ok && claimed)
        discard_backup(repo, id);
    return ok;
}

int cmd_backup(int argc, char **argv)
{
    pgd_options opts;
    pgd_error err = {0};
    backup_settings s;
    storage *repo = NULL;
    int rc;

    if (!command_start(&opts, &backup_help, 0, argc, argv, &rc))
        return rc;
    if (!read_settings(&opts, &s, &err) || (repo = command_open_repo(&opts, &err)) == NULL) {
        rc = command_fail(&err);
    } else {
        catch_signals();
        rc = run_backup(&s, repo, &err) ? EXIT_OK : command_fail(&err);
    }
    storage_free(repo);
    options_free(&opts);
    if (rc != EXIT_OK && interrupted()) /* the caller learns how we ended */
        raise(backup_signal);
    return rc;
}
