/*
 * backup.c - `pgdirect backup`: a full, non-exclusive backup of a running
 * cluster, read with direct I/O, into the repository.
 *
 * The command parses its options (cmd/backup_options.h), runs the steps
 * below in order and reports; the modules do the work:
 *
 *   begin   the repository is writable (stale temporary objects swept,
 *           backup/backup_id.h); the server is the one of --pgdata and
 *           archives WAL (backup/source.h); a delta's parent is chosen
 *           (backup/delta_parent.h); the id is claimed, before anything is
 *           written under it (a delta's claim names its parent, which
 *           delete then keeps); pg_backup_start
 *   copy    the walk (pg/datadir.h), the read plan within --max-memory
 *           (backup/io_plan.h), the queue (backup/file_queue.h), the
 *           partitions (backup/pipeline.h)
 *   finish  a standby still one, on one timeline (backup/source.h);
 *           pg_backup_stop; labels, manifest.json and backup_manifest;
 *           the WAL the backup needs reaches the repository; a delta's
 *           parent is checked to be still there; the sentinel
 *           (backup/record.h: why in this order)
 *
 * A run that fails removes everything it wrote under its id; one that is
 * killed leaves garbage that list never shows. SIGINT, SIGTERM or SIGHUP
 * stop the run at its next step (util/interrupt.h); it then removes what
 * it wrote and dies of that signal.
 */
#define _GNU_SOURCE
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "backup/archive_probe.h"
#include "backup/backup_id.h"
#include "backup/delta_parent.h"
#include "backup/delta_summary.h"
#include "backup/filter_delta.h"
#include "backup/file_queue.h"
#include "backup/filter_page_checksum.h"
#include "backup/io_plan.h"
#include "backup/pipeline.h"
#include "backup/record.h"
#include "backup/resume.h"
#include "backup/source.h"
#include "cmd/backup_options.h"
#include "cmd/cmd.h"
#include "cmd/common.h"
#include "io/cpu_room.h"
#include "io/politeness.h"
#include "repo/repo_contents.h"
#include "storage/tee.h"
#include "wal/wal_archive.h"
#include "restore/timeline.h"
#include "util/digest.h"
#include "util/interrupt.h"
#include "util/text.h"
#include "util/log.h"
#include "util/progress.h"
#include "util/units.h"
#include "util/xmalloc.h"

#define SYSFS_ROOT "/sys"
/* the least a reader thread may hold of a delta's changed pages of one file */
#define DELTA_BUFFER_MIN (1024 * 1024ULL)

static const command_help backup_help = {
    CMD_BACKUP, "usage: pgdirect backup [OPTIONS]",
    "Take a full backup of the running cluster at --pgdata (or $PGDATA) into the repository,\n"
    "reading data files with direct I/O so the backup leaves the page cache as it was.\n"
    "With --delta, store only the pages changed since a parent backup (id ending D); the\n"
    "chain is capped by --delta-max-steps (default 6), after which a full is taken. On\n"
    "PostgreSQL 17+ with summarize_wal = on, only the changed blocks are read."};

/* One run: everything it holds from its first step to its last. */
typedef struct backup_run {
    const backup_settings *s;
    storage *repo;
    pg_session pg;
    bool claimed;
    char id[BACKUP_ID_LEN + 1];
    pg_lsn start_lsn;
    int64_t start_time;
    pg_tablespace *spcs;
    size_t nspcs;
    pg_database *dbs;
    size_t ndbs;
    datadir dd;
    io_plan plan;
    pipeline_file *files;
    pipeline_result res;
    resume_plan resume;         /* --resume: the interrupted backup's partitions reused */
    resume_writer records;      /* a full backup records each partition it stores */
    pipeline_partition *reused; /* resume's partitions, as copied into this backup */
    backup_record rec;
    filter_page_checksum_config page_check;
    delta_parent parent; /* parent.found: this run is a delta */
    filter_delta_config delta;
    delta_summary summary; /* the delta's method and sparse read plans */
    file_filter_maker filters[2];
    size_t nfilters;
    const char *page_checksums; /* what the sentinel says: "verified", "off", "not verified" */
    uint64_t pages_reread;      /* pages that failed as first read and were read again */
    cpu_cgroup cpu_cg;
    deadline_control deadline; /* --deadline's controller (io/deadline.h) */
    cpu_room_start room;       /* --cpu-class auto: the CPU the others leave (io/cpu_room.h) */
    unsigned reserve;          /* reading threads at normal priority that wait to be released */
    double t0, read_secs;
} backup_run;

static void backup_on_signal(void)
{
    pg_session_cancel_request(); /* a checkpoint or stop call in progress ends now */
}

/* True once a signal asked us to stop; the failure it caused is reported as the signal. */
static bool backup_interrupted(void)
{
    return interrupt_signal() != 0;
}

/* What the idle CPU class is, in the politeness line of the log. */
#define BACKUP_IDLE_CLASS                                                                          \
    "reading threads in the idle CPU class (SCHED_IDLE: they run on CPU time the database "        \
    "leaves idle, and a waking query preempts them)"

/*
 * Reserve reading threads at normal priority, for --cpu-class auto and --deadline: one per vCPU
 * (at least as many as the plan reads with), so that with all of them released the backup holds
 * a normal-priority thread on every vCPU: under queries that want them all, one normal thread
 * had no more than its fair share among theirs (measured: no faster than --cpu-class normal).
 * Their buffers come out of the other half of the memory, `budget` as much as the plan had;
 * fewer when it holds fewer, never fewer than the plan's.
 */
static unsigned backup_reserve(const backup_run *r, uint64_t budget)
{
    unsigned cpus = (unsigned)sysconf(_SC_NPROCESSORS_ONLN), workers = (unsigned)r->plan.workers;
    unsigned want = cpus > workers ? cpus : workers;
    uint64_t per = r->plan.memory / (workers > 0 ? workers : 1), fit;

    if (per == 0)
        return want;
    fit = budget / per;
    return fit >= want ? want : fit > workers ? (unsigned)fit : workers;
}

/*
 * --cpu-class auto: the CPU times as the backup begins, against which the room is measured
 * before the reading. PGDIRECT_TEST_CPU_LEFT replaces the measurement (tests of what follows
 * it, which cannot count on an idle host).
 */
static void backup_room_begin(backup_run *r)
{
    const char *forced = getenv("PGDIRECT_TEST_CPU_LEFT");

    cpu_room_start_init(&r->room, forced != NULL && *forced != '\0' ? strtod(forced, NULL) : -1,
                        (unsigned)sysconf(_SC_NPROCESSORS_ONLN));
}

/*
 * How many reserve threads read at normal priority from the start: the room the others left
 * since the backup began, over at least CPU_ROOM_START_S (waited for when the checkpoint and
 * the plan were quicker; not measured with the reading under way: see io/cpu_room.h).
 */
static void backup_room_decide(backup_run *r)
{
    clock_sleep(r->room.since + CPU_ROOM_START_S - clock_seconds());
    (void)cpu_room_start_step(&r->room, clock_seconds(), r->reserve);
}

/*
 * The plan's idle-class reading threads that the room's normal ones replace: as many streams as
 * the plan reads with, or the room's when there are more. A stream in the idle class beside
 * them would only add reads in the queries' way.
 */
static unsigned backup_room_replaces(const backup_run *r)
{
    unsigned normal = r->s->cpu_auto ? r->room.normal : 0, workers = (unsigned)r->plan.workers;

    return normal < workers ? normal : workers;
}

static void backup_describe_room(const backup_run *r, char *out, size_t outlen)
{
    const cpu_room_start *room = &r->room;
    unsigned workers = (unsigned)r->plan.workers - backup_room_replaces(r);

    if (!room->known)
        str_format(out, outlen,
                   BACKUP_IDLE_CLASS ", the CPU times in \"/proc/stat\" being unreadable");
    else if (room->normal == 0)
        str_format(out, outlen,
                   BACKUP_IDLE_CLASS ", the other processes having left %.1f of %u vCPUs idle "
                                     "in the backup's first %.1f s",
                   room->left, room->cpus, room->decided_at - room->since);
    else
        str_format(out, outlen,
                   "%u reading thread%s at normal priority and %u in the idle CPU class "
                   "(SCHED_IDLE), the other processes having left %.1f of %u vCPUs idle in the "
                   "backup's first %.1f s (each at normal priority moves to the idle class when "
                   "it finds itself waiting for a CPU)",
                   room->normal, room->normal == 1 ? "" : "s", workers, room->left, room->cpus,
                   room->decided_at - room->since);
}

/*
 * --cpu-class, --io-class, --cpu-weight and --nice: warnings, not failures, when the system will
 * not allow them. The idle classes are the default (io/politeness.h says what was measured);
 * the reading threads enter the idle CPU class themselves as they start (backup/pipeline.c).
 */
static void backup_be_polite(const backup_run *r, cpu_cgroup *cg)
{
    const backup_settings *s = r->s;
    pgd_error perr = {0};
    char cpu[400] = "";

    if (s->io_idle && !politeness_io_class(true, &perr))
        log_warn("%s: reading at the normal I/O priority", perr.msg);
    err_clear(&perr);
    if (s->cpu_auto)
        backup_describe_room(r, cpu, sizeof(cpu));
    else if (s->cpu_idle)
        str_format(cpu, sizeof(cpu), "%s", BACKUP_IDLE_CLASS);
    if (s->cpu_idle || s->io_idle)
        log_info("politeness: %s%s%s (no privilege needed); %s", cpu,
                 s->cpu_idle && s->io_idle ? ", " : "",
                 s->io_idle ? "reads in the idle I/O class" : "",
                 s->cpu_idle ? "--cpu-class normal to compete for the CPU instead"
                             : "--io-class best-effort to compete for the disk instead");
    if (s->cpu_weight > 0 && !politeness_cpu_weight(s->cpu_weight, cg, &perr))
        log_warn("%s: running at the normal CPU weight", perr.msg);
    else if (s->cpu_weight > 0)
        log_info("running in cgroup \"%s\" with CPU weight %u", cg->dir, s->cpu_weight);
    err_clear(&perr);
    if (s->nice_increment > 0 && !politeness_nice(s->nice_increment, &perr))
        log_warn("%s: running at the normal nice value", perr.msg);
    else if (s->nice_increment > 0)
        log_info("running with the nice value raised by %d", s->nice_increment);
}

static void backup_log_plan(const backup_run *r)
{
    const io_plan *plan = &r->plan;
    char queues[320];

    log_info(
        "backup started at WAL location " LSN_FORMAT "; reading %s: %s I/O, %zu KiB reads, %u in "
        "flight (%d x %d), %s engine (%s), %llu MiB of buffers",
        LSN_ARGS(r->start_lsn), r->s->pgdata, read_mode_name(r->s->mode),
        plan->places[0].read_size / 1024, plan->concurrency, plan->workers, plan->depth,
        io_engine_name(plan->engine), plan->engine_why, (unsigned long long)(plan->memory >> 20));
    for (size_t i = 1; i < plan->nplaces; i++)
        log_info("tablespace %u at \"%s\" (%s): %zu KiB reads", plan->places[i].oid,
                 plan->places[i].location, plan->places[i].dev.stack,
                 plan->places[i].read_size / 1024);
    if (plan->memory_note[0] != '\0')
        log_info("--max-memory %llu MiB: %s", (unsigned long long)(r->s->max_memory >> 20),
                 plan->memory_note);
    if (tune_queue_note(&plan->places[0].dev, (unsigned)sysconf(_SC_NPROCESSORS_ONLN), queues,
                        sizeof(queues)))
        log_info("the data directory's disk %s has %s", plan->places[0].dev.disk, queues);
}

/* --deadline: what it took to make it, or that it could not. */
static void backup_log_deadline(const backup_run *r)
{
    const deadline_control *c = &r->deadline;
    unsigned room = r->s->cpu_auto ? r->room.normal : 0;
    char took[32], limit[32], from[64] = "from the start";

    if (r->s->deadline_s <= 0)
        return;
    if (c->nreleases > 0)
        str_format(from, sizeof(from), "from %.0f s on", c->releases[c->nreleases - 1].at);
    units_format_duration(clock_seconds() - r->t0, took, sizeof(took));
    units_format_duration((double)r->s->deadline_s, limit, sizeof(limit));
    if (c->late && clock_seconds() > c->target)
        log_warn("--deadline %s could not be met: even with every reading thread at normal "
                 "priority (%u more) the reading was behind; it went on at full speed",
                 limit, c->reserve);
    else if (c->late)
        log_info("--deadline %s: read in time, in %s, with every reading thread at normal "
                 "priority (%u more) %s",
                 limit, took, c->reserve, from);
    else if (c->nreleases == 0 && room == 0)
        log_info("--deadline %s: read on idle CPU time alone, in %s", limit, took);
    else if (c->nreleases == 0)
        log_info("--deadline %s: read in time, in %s, with the %u reading thread%s at normal "
                 "priority that the room on the CPUs allowed, and no more",
                 limit, took, room, room == 1 ? "" : "s");
    else
        log_info("--deadline %s: %u of %u more reading threads at normal priority were needed "
                 "(%u from the start, for the room on the CPUs; the first more after %.0f s, "
                 "at %.0f %% read)",
                 limit, c->released, c->reserve, room, c->releases[0].at,
                 100 * c->releases[0].progress);
}

static void backup_log_complete(const backup_run *r)
{
    const backup_info *bi = &r->rec.info;
    double secs = clock_seconds() - r->t0;
    char size_s[32], stored_s[32], time_s[32];

    units_format_duration(secs, time_s, sizeof(time_s));
    if (r->s->deadline_s > 0 && secs > (double)r->s->deadline_s) {
        /* in the deadline's own units: "took 6 s, past --deadline 6 s" did not say by how much */
        char limit[32], over[32];

        units_format_duration((double)r->s->deadline_s, limit, sizeof(limit));
        units_format_duration(secs - (double)r->s->deadline_s, over, sizeof(over));
        log_warn("backup %s took %s, past --deadline %s by %s", bi->id, time_s, limit, over);
    }
    struct rusage ru;
    long peak_kib = getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : 0;

    units_format_bytes(bi->size, size_s, sizeof(size_s));
    units_format_bytes(bi->compressed_size, stored_s, sizeof(stored_s));
    char pages_s[128];

    if (strcmp(bi->page_checksums, "verified") == 0)
        snprintf(pages_s, sizeof(pages_s),
                 "%llu pages verified, %llu bad in %llu files (%llu read again)",
                 (unsigned long long)bi->pages_checked, (unsigned long long)bi->checksum_errors,
                 (unsigned long long)bi->checksum_error_files, (unsigned long long)r->pages_reread);
    else
        snprintf(pages_s, sizeof(pages_s), "%s", bi->page_checksums);
    if (bi->parent[0] != '\0')
        log_info("backup %s is a delta of %s (depth %u, %s): %s read, %s stored", bi->id,
                 bi->parent, bi->depth, bi->delta_method, size_s, stored_s);
    log_info("backup %s complete: %s read, %s stored (%s), %llu files, %s, %.1f MB/s "
             "(files read at %.1f MB/s), read mode %s, peak RSS %ld MiB, page checksums: %s",
             bi->id, size_s, stored_s, bi->compression, (unsigned long long)bi->files, time_s,
             secs > 0 ? (double)bi->size / secs / 1e6 : 0.0,
             r->read_secs > 0 ? (double)bi->size / r->read_secs / 1e6 : 0.0, bi->read_mode,
             peak_kib / 1024, pages_s);
}

/*
 * Whether pages are verified, and the filter that does it: only when the
 * cluster writes checksums (a cluster without them has nothing to check:
 * one INFO line) and --no-verify-checksums is not given.
 */
static void backup_plan_page_checks(backup_run *r)
{
    if (!r->s->verify_checksums) {
        r->page_checksums = "not verified";
        log_info("page checksums not verified (--no-verify-checksums)");
        return;
    }
    if (!r->pg.data_checksums) {
        r->page_checksums = "off";
        log_info("the cluster has no data checksums (data_checksums = off): pages not verified");
        return;
    }
    r->page_check.start_lsn = r->start_lsn;
    /* a failed page is read again from the device whatever --direct-io says: a fresh copy */
    r->page_check.reread = READ_MODE_DIRECT;
    r->filters[0] = (file_filter_maker){filter_page_checksum_make, &r->page_check};
    r->nfilters = 1;
    r->page_checksums = "verified";
}

/* A warning per file with pages that failed their checksum: its path and block numbers. */
static void backup_log_bad_pages(backup_run *r)
{
    for (size_t i = 0; i < r->dd.n; i++) {
        const pipeline_file *f = &r->files[i];
        char blocks[FILE_FILTER_BAD_BLOCKS_MAX * 12 + 32];
        size_t len = 0;

        if (f->done)
            r->pages_reread += f->result.pages_reread;
        if (!f->done || f->result.pages_bad == 0)
            continue;
        for (uint32_t b = 0; b < f->result.pages_bad && b < FILE_FILTER_BAD_BLOCKS_MAX; b++)
            len += (size_t)snprintf(blocks + len, sizeof(blocks) - len, "%s%u", b ? ", " : "",
                                    f->result.bad_blocks[b]);
        if (f->result.pages_bad > FILE_FILTER_BAD_BLOCKS_MAX)
            snprintf(blocks + len, sizeof(blocks) - len, " and %u more",
                     f->result.pages_bad - FILE_FILTER_BAD_BLOCKS_MAX);
        log_warn("page checksum verification failed for %u %s of file \"%s\": block%s %s",
                 f->result.pages_bad, f->result.pages_bad == 1 ? "page" : "pages", f->path,
                 f->result.pages_bad == 1 ? "" : "s", blocks);
    }
}

/*
 * Several repositories (storage/tee.h): a delta is written to every one, so each must hold
 * the same parent, chosen in it alone. When they disagree, this run is a full in all of them
 * (one read of the data directory still): the parent's `why` says which repository lacks it.
 * A repository whose chain cannot be read leaves the run (the run ends with exit 1 naming
 * it), as one whose write fails does: the others still get their delta.
 */
static bool backup_parent_everywhere(backup_run *r, const delta_parent_request *req, pgd_error *err)
{
    for (size_t i = 0; r->parent.found && i < tee_storage_count(r->repo); i++) {
        storage *one = tee_storage_child(r->repo, i);
        delta_parent p = {0};
        const pgd_error *dropped_why;
        pgd_error e = {0};
        bool same;

        if (tee_storage_count(r->repo) == 1)
            break;
        /* one that failed (reading the chains above) has left the run, as it would writing */
        if (tee_storage_dropped(r->repo, i, &dropped_why))
            continue;
        manifest_init(&p.m);
        if (!delta_parent_choose(one, req, &p, &e)) {
            delta_parent_free(&p);
            if (!tee_storage_drop(r->repo, i, &e, err))
                return false;
            continue;
        }
        same = p.found && strcmp(p.info.id, r->parent.info.id) == 0;
        if (!same) {
            char why[sizeof(r->parent.why)];
            int len;
            if (p.found)
                snprintf(why, sizeof(why),
                         "the repositories disagree on the parent: repository \"%s\" would "
                         "take backup %s, another backup %s (a full for all of them)",
                         one->uri, p.info.id, r->parent.info.id);
            else if ((len = snprintf(why, sizeof(why),
                                     "repository \"%s\" has no parent for it: a full for all "
                                     "of them (",
                                     one->uri)) > 0 &&
                     (size_t)len < sizeof(why))
                snprintf(why + len, sizeof(why) - (size_t)len, "%.*s)",
                         (int)(sizeof(why) - (size_t)len - 2), p.why);
            delta_parent_free(&r->parent);
            memset(&r->parent, 0, sizeof(r->parent));
            manifest_init(&r->parent.m);
            memcpy(r->parent.why, why, sizeof(why));
        }
        delta_parent_free(&p);
    }
    return true;
}

/* --delta: the parent, or the one warning line that says why this run is a full. */
static bool backup_choose_parent(backup_run *r, pgd_error *err)
{
    delta_parent_request req = {.from = r->s->delta_from,
                                .max_steps = r->s->delta_max_steps,
                                .system_identifier = r->pg.system_identifier,
                                .pg_version_num = r->pg.version_num,
                                .pgdata = r->s->pgdata_real};

    if (!pg_session_timeline(&r->pg, &req.timeline, err) ||
        !delta_parent_choose(r->repo, &req, &r->parent, err) ||
        !backup_parent_everywhere(r, &req, err))
        return false;
    if (!r->parent.found)
        log_warn("taking a full backup instead of a delta: %s", r->parent.why);
    else
        log_info("delta on top of backup %s (depth %u): pages with an LSN at or after " LSN_FORMAT,
                 r->parent.info.id, r->parent.info.depth + 1, LSN_ARGS(r->parent.info.start_lsn));
    return true;
}

/*
 * A delta's filter, after the page checks. The changed pages of each file
 * are held until its end: a delta gives half of --max-memory to the read
 * plan and half to these, split between the reader threads, the reserve's
 * too (DELTA_BUFFER_MIN at least).
 */
static bool backup_plan_delta(backup_run *r, pgd_error *err)
{
    uint64_t readers = (uint64_t)r->plan.workers + r->reserve;
    uint64_t per = r->s->max_memory / 2 / (readers > 0 ? readers : 1);
    delta_summary_request req = {.pg = &r->pg,
                                 .parent = &r->parent,
                                 .start_lsn = r->start_lsn,
                                 .wait_ms = r->s->delta_summary_wait_s * 1000};

    if (!r->parent.found)
        return true;
    r->delta = (filter_delta_config){.threshold_lsn = r->parent.info.start_lsn,
                                     .parent = &r->parent.m,
                                     .max_buffer = per > DELTA_BUFFER_MIN ? per : DELTA_BUFFER_MIN,
                                     .reread = READ_MODE_DIRECT};
    r->filters[r->nfilters++] = (file_filter_maker){filter_delta_make, &r->delta};
    req.max_buffer = r->delta.max_buffer;
    return delta_summary_plan(&req, r->files, r->dd.n, &r->summary, err);
}

/*
 * Two backups of one cluster into one repository at once read it twice and double the load on
 * it: the later one gives way (pgBackRest refuses the second too). Looked for before our claim
 * (mine NULL: nothing written when refused) and again after it exists, against earlier ids
 * only (mine): of two runs that start together, the later always sees the earlier's claim. A claim
 * that may be a killed run's (another host, within --garbage-age) counts as running; the message
 * says how to remove it.
 */
static bool backup_refuse_twin(backup_run *r, const char *mine, pgd_error *err)
{
    repo_contents c;
    bool ok;

    memset(&c, 0, sizeof(c));
    ok = repo_contents_scan_dirs(r->repo, RETENTION_GARBAGE_AGE_DEFAULT_S, &c, err);
    for (size_t i = 0; ok && i < c.ndirs; i++) {
        const repo_dir *d = &c.dirs[i];
        if (d->sentinel || d->state != RETENTION_CLAIM_RUNNING ||
            (mine != NULL && strcmp(d->id, mine) >= 0) ||
            strcmp(d->system_identifier, r->pg.system_identifier) != 0)
            continue;
        ok = err_set(err,
                     "backup %s of this cluster (system %s) is running into repository \"%s\" "
                     "(%s): a second one would read the cluster twice at once; --concurrent allows "
                     "it",
                     d->id, d->system_identifier, r->repo->uri, d->why);
    }
    repo_contents_free(&c);
    return ok;
}

/*
 * A timeline in the repository that the server was never on (restore/timeline.h): the backup
 * goes on, but a default restore of it would refuse; say so before the long part.
 */
static void backup_warn_stray_timeline(backup_run *r)
{
    char warning[PGD_ERROR_MAX];
    pgd_error werr = {0};
    uint32_t tli;

    if (pg_session_timeline(&r->pg, &tli, &werr) &&
        timeline_find_stray(r->repo, tli, NULL, warning, sizeof(warning), &werr) &&
        warning[0] != '\0')
        log_warn("%s", warning);
    else if (werr.set)
        log_warn("could not look for timelines the server was never on: %s", werr.msg);
}

/*
 * With --archive-check, archive_command must store WAL in this repository, proved before the
 * cluster is read (backup/archive_probe.h): the last file archived is in the repository, or a
 * switched segment arrives. A standby cannot switch WAL: its wait comes at the end, as before.
 */
static bool backup_probe_archive(backup_run *r, pgd_error *err)
{
    archive_probe_request req = {
        .pg = &r->pg, .repo = r->repo, .timeout_s = r->s->archive_timeout, .accept_latest = true};
    char detail[PGD_ERROR_MAX];

    if (!r->s->archive_check || r->pg.in_recovery)
        return true;
    if (archive_probe_run(&req, detail, sizeof(detail)) != ARCHIVE_PROBE_FAILED) {
        log_debug("archive_command stores WAL here: %s", detail);
        return true;
    }
    return err_set(err, "%s (checked before reading the cluster; --archive-check off skips it)",
                   detail);
}

/*
 * pg_backup_start waits for a checkpoint (a restartpoint on a standby) before it answers, and a
 * spread one takes up to checkpoint_timeout x checkpoint_completion_target: a person waiting
 * is told what for, for how long at most, and how to hurry. Returns whether to hurry: --checkpoint
 * fast, or a --deadline that a spread checkpoint would eat half of.
 */
static bool backup_log_checkpoint_wait(backup_run *r)
{
    double timeout_s, target;
    pgd_error cerr = {0};

    if (r->s->fast_checkpoint && !r->pg.in_recovery)
        return true;
    if (!pg_session_checkpoint_settings(&r->pg, &timeout_s, &target, &cerr)) {
        log_warn("%s", cerr.msg);
        return r->s->fast_checkpoint;
    }
    /* a spread checkpoint that may take half the window leaves too little of it */
    if (r->s->deadline_s > 0 && !r->pg.in_recovery && !r->s->fast_checkpoint &&
        timeout_s * target > (double)r->s->deadline_s / 2) {
        log_info("a fast checkpoint: a spread one may take up to %.0f s (checkpoint_timeout %.0f s "
                 "x checkpoint_completion_target %.2g), more than half of --deadline",
                 timeout_s * target, timeout_s, target);
        return true;
    }
    if (r->pg.in_recovery)
        log_info("waiting for a restartpoint on the standby: it follows the primary's next "
                 "checkpoint, at most checkpoint_timeout (%.0f s here) away when the primary is "
                 "set alike",
                 timeout_s);
    else
        log_info("waiting for the spread checkpoint: up to %.0f s (checkpoint_timeout %.0f s x "
                 "checkpoint_completion_target %.2g); --checkpoint fast to hurry",
                 timeout_s * target, timeout_s, target);
    return r->s->fast_checkpoint;
}

/* The repository, the server, the id (claimed before anything is written), pg_backup_start. */
static bool backup_begin(backup_run *r, pgd_error *err)
{
    const backup_settings *s = r->s;
    backup_id_parent parent = {.id = r->parent.info.id};

    /* backup_manifest's SHA-256 at the end: a libcrypto that cannot load fails now, not then */
    if (!storage_check_writable(r->repo, err) || !digest_load(err))
        return false;
    backup_id_sweep_stale(r->repo);
    if (!pg_session_open(&r->pg, s->conninfo, err) || !pg_session_cancel_arm(&r->pg, err))
        return false;
    r->t0 = clock_seconds();
    r->start_time = time(NULL);
    if (s->cpu_auto)
        backup_room_begin(r);
    if (!source_check(&r->pg, s->pgdata, s->pgdata_real, s->archive_check, err) ||
        !pg_session_backup_privileges(&r->pg, err) || !backup_probe_archive(r, err))
        return false;
    /* before the id is claimed: a refused run writes nothing */
    if (s->standby_only && !r->pg.in_recovery)
        return err_set(err, "the server is a primary (pg_is_in_recovery() is false): "
                            "--standby-only backs up only a hot standby");
    backup_warn_stray_timeline(r);
    if (s->delta && !backup_choose_parent(r, err))
        return false;
    if (!s->concurrent && !backup_refuse_twin(r, NULL, err))
        return false;
    /* a delta's claim names its parent: delete keeps it while this run goes */
    parent.start_lsn = r->parent.info.start_lsn;
    if (!(r->claimed =
              backup_id_claim_kind(r->repo, (time_t)r->start_time, r->parent.found ? &parent : NULL,
                                   r->pg.system_identifier, r->id, err)))
        return false;
    log_set_backup_id(r->id);
    if (!s->concurrent && !backup_refuse_twin(r, r->id, err))
        return false;
    /* a delete that listed the repository before our claim existed may have taken it */
    if (r->parent.found && !delta_parent_still_there(r->repo, &r->parent, err))
        return false;
    log_info("backup %s of \"%s\" (PostgreSQL %s%s) to \"%s\": %s checkpoint", r->id, s->pgdata,
             r->pg.version, r->pg.in_recovery ? ", a standby" : "", r->repo->uri,
             r->pg.in_recovery    ? "restartpoint"
             : s->fast_checkpoint ? "fast"
                                  : "spread");
    return pg_session_backup_start(&r->pg, s->label, backup_log_checkpoint_wait(r), &r->start_lsn,
                                   err) &&
           !backup_interrupted();
}

/*
 * --resume: the partitions of an interrupted full backup that can be proven to hold what the
 * data directory holds are copied in as partitions 1..N (backup/resume.h); their files are not
 * read. r->res gets them after the pipeline ran (backup_resume_merge).
 */
static bool backup_resume(backup_run *r, uint32_t *first_partition, pgd_error *err)
{
    resume_plan *p = &r->resume;
    char bytes[32];

    if (!resume_plan_make(r->repo, r->pg.system_identifier, r->s->compression, r->files, r->dd.n, p,
                          err))
        return false;
    if (p->from[0] == '\0') {
        log_info("--resume: no interrupted full backup of this cluster in repository \"%s\": a "
                 "full backup from the start",
                 r->repo->uri);
        return true;
    }
    r->reused = xcalloc(p->nparts + 1, sizeof(*r->reused));
    if (!resume_copy(r->repo, p, r->id, r->s->compression, r->files, r->reused, err))
        return false;
    units_format_bytes(p->bytes, bytes, sizeof(bytes));
    log_info("--resume: %zu of %zu partitions of interrupted backup %s reused (%zu files, %s, "
             "read back and checked); the rest is read now; %s stays garbage (delete --garbage)",
             p->nparts, p->nparts + p->refused, p->from, p->files, bytes, p->from);
    *first_partition = (uint32_t)p->nparts;
    return true;
}

/* The reused partitions first in r->res, and their bytes among those stored. */
static bool backup_resume_merge(backup_run *r, pgd_error *err)
{
    size_t k = r->resume.nparts, n = r->res.npartitions;
    pipeline_partition *all;

    (void)err;
    if (k == 0)
        return true;
    all = xcalloc(k + n, sizeof(*all));
    memcpy(all, r->reused, k * sizeof(*all));
    memcpy(all + k, r->res.partitions, n * sizeof(*all));
    for (size_t i = 0; i < k; i++)
        r->res.bytes_stored += all[i].size;
    free(r->res.partitions);
    r->res.partitions = all;
    r->res.npartitions = k + n;
    return true;
}

/* The walk, the read plan, the partitions. */
static bool backup_copy(backup_run *r, pgd_error *err)
{
    const backup_settings *s = r->s;
    io_plan_request req = {.sysfs_root = SYSFS_ROOT,
                           .pgdata = s->pgdata_real,
                           .block_count = s->block_count,
                           .concurrency = s->concurrency,
                           .engine = s->engine,
                           .compression = s->compression,
                           .compression_level = s->compression_level,
                           .stream_memory = r->repo->stream_memory,
                           .cpus = (unsigned)sysconf(_SC_NPROCESSORS_ONLN)};
    pipeline_config cfg = {.repo = r->repo,
                           .backup_id = r->id,
                           .compression = s->compression,
                           .compression_level = s->compression_level,
                           .partition_size = s->partition_size,
                           .mode = s->mode,
                           .max_rate = s->max_rate,
                           .cpu_idle = s->cpu_idle,
                           .progress = s->progress,
                           .interrupted = interrupt_flag()};
    double t_read;

    /* a delta's changed pages take half the memory; the reserve threads half the rest */
    uint64_t memory = (r->parent.found ? s->max_memory / 2 : s->max_memory) /
                      (s->deadline_s > 0 || s->cpu_auto ? 2 : 1);

    if (!pg_session_tablespaces(&r->pg, &r->spcs, &r->nspcs, err) ||
        !pg_session_databases(&r->pg, &r->dbs, &r->ndbs, err) ||
        !datadir_walk(&r->dd, s->pgdata_real, r->pg.version_num, err) ||
        !io_plan_for_datadir(&req, &r->dd, memory, &r->plan, err))
        return false;
    r->files = file_queue_build(&r->dd, &r->plan, s->partition_size);
    if (s->deadline_s > 0 || s->cpu_auto)
        r->reserve = cfg.reserve = backup_reserve(r, memory);
    backup_plan_page_checks(r);
    if (!backup_plan_delta(r, err))
        return false;
    backup_log_plan(r);
    if (s->cpu_auto)
        backup_room_decide(r);
    backup_be_polite(r, &r->cpu_cg);
    cfg.room = s->cpu_auto ? &r->room : NULL;
    cfg.filters = r->filters;
    cfg.nfilters = r->nfilters;
    cfg.read_size = r->plan.places[0].read_size;
    cfg.workers = r->plan.workers - (int)backup_room_replaces(r);
    cfg.depth = r->plan.depth;
    cfg.engine = r->plan.engine;
    t_read = clock_seconds();
    if (s->deadline_s > 0) {
        deadline_init(&r->deadline, r->t0, (double)s->deadline_s, t_read,
                      pipeline_bytes_to_read(r->files, r->dd.n), cfg.reserve);
        r->deadline.released = cfg.room != NULL ? r->room.normal : 0; /* the room's, working */
        cfg.deadline = &r->deadline;
        log_info("--deadline: %u more reading threads at normal priority wait, to join if the "
                 "reading would end after %.0f s from the backup's start (one at a time, all at "
                 "once when it is far behind)",
                 cfg.reserve - r->deadline.released, r->deadline.target - r->t0);
    }
    if (!r->parent.found) {
        r->records = (resume_writer){.repo = r->repo, .backup_id = r->id};
        cfg.partition_stored = resume_record_partition;
        cfg.partition_arg = &r->records;
    }
    if (s->resume && !backup_resume(r, &cfg.first_partition, err))
        return false;
    if (!pipeline_run(&cfg, r->files, r->dd.n, &r->res, err) || !backup_resume_merge(r, err))
        return false;
    if (r->res.windows > 0)
        log_info("politeness: the reading threads at normal priority waited for a CPU %.0f-%.0f %% "
                 "of the time they wanted one (%u windows of %.0f s; over %.0f %%, a thread moves "
                 "to the idle class)",
                 100 * r->res.wait_min, 100 * r->res.wait_max, r->res.windows, CPU_ROOM_WINDOW_S,
                 100 * CPU_ROOM_WAIT);
    if (r->res.idle_failed > 0)
        log_warn("%u reading threads could not enter the idle CPU class: they competed with the "
                 "database for the CPU",
                 r->res.idle_failed);
    r->read_secs = clock_seconds() - t_read;
    log_debug("reads were in flight in up to %d file%s at once in one reader thread",
              r->res.files_in_flight, r->res.files_in_flight == 1 ? "" : "s");
    backup_log_deadline(r);
    backup_log_bad_pages(r);
    return true;
}

/*
 * The archived start segment is this cluster's: a repository shared with
 * another cluster by mistake (its archive_command pointing here, ours
 * elsewhere) holds segments of the same names, which would make an
 * unrestorable backup look complete.
 */
static bool backup_wal_same_system(backup_run *r, const char *seg, pgd_error *err)
{
    char sysid[PG_SYSID_TEXT_MAX];

    if (!wal_archive_system_id(r->repo, seg, sysid, sizeof(sysid), err))
        return false;
    if (strcmp(sysid, r->pg.system_identifier) != 0)
        return err_set(err,
                       "WAL file \"%s\" in repository \"%s\" is of another system (system "
                       "identifier %s, not this cluster's %s): is archive_command writing to "
                       "another repository?",
                       seg, r->repo->uri, sysid, r->pg.system_identifier);
    return true;
}

/*
 * The next xid at the end, which restore --target-xid compares with (backup_info.h); a server
 * that does not say costs only that, with a warning.
 */
static void backup_next_xid(backup_run *r, uint64_t *xid)
{
    pgd_error xerr = {0};

    *xid = 0;
    if (!pg_session_next_xid(&r->pg, xid, &xerr))
        log_warn("could not record the next transaction id at the backup's end (restore "
                 "--target-xid will not know which side of it a transaction is): %s",
                 xerr.msg);
}

/* pg_backup_stop, the labels and manifests, the WAL in the repository, the sentinel. */
static bool backup_finish(backup_run *r, pgd_error *err)
{
    const backup_settings *s = r->s;
    const backup_info *bi = &r->rec.info;
    record_facts facts = {.id = r->id,
                          .label = s->label,
                          .annotations = s->annotations,
                          .tool_version = PGDIRECT_VERSION,
                          .compression = s->compression,
                          .mode = s->mode,
                          .start_time = r->start_time,
                          .start_lsn = r->start_lsn,
                          .pg = &r->pg,
                          .dd = &r->dd,
                          .spcs = r->spcs,
                          .nspcs = r->nspcs,
                          .dbs = r->dbs,
                          .ndbs = r->ndbs,
                          .files = r->files,
                          .nfiles = r->dd.n,
                          .res = &r->res,
                          .page_checksums = r->page_checksums,
                          .checksum_errors_fail = s->checksum_errors_fail,
                          .from_standby = r->pg.in_recovery,
                          .parent = r->parent.found ? &r->parent.info : NULL,
                          .parent_manifest = r->parent.found ? &r->parent.m : NULL,
                          .delta_method = r->summary.method};

    /* with --archive-check we wait for the WAL in the repository ourselves, with a deadline */
    if (!source_standby_still(&r->pg, err) ||
        !pg_session_backup_stop(&r->pg, !s->archive_check, &facts.stop_lsn, &r->rec.m.backup_label,
                                &r->rec.m.tablespace_map, err) ||
        !source_standby_timeline(&r->pg, r->rec.m.backup_label, err) || backup_interrupted())
        return false;
    facts.stop_time = time(NULL);
    backup_next_xid(r, &facts.stop_next_xid);
    if (!record_build(&r->rec, &facts, err) || !record_write(r->repo, &r->rec, err))
        return false;
    if (s->archive_check) {
        if (r->pg.in_recovery)
            log_info("waiting up to %d s for WAL %s..%s to reach the repository: a standby's "
                     "WAL is archived by its primary (or by itself with archive_mode = always), "
                     "and %s only once the primary has switched to the next WAL file",
                     s->archive_timeout, bi->start_wal, bi->stop_wal, bi->stop_wal);
        else
            log_info("waiting for WAL %s..%s to reach the repository", bi->start_wal, bi->stop_wal);
        if (!wal_archive_wait(r->repo, bi->start_wal, s->archive_timeout, err) ||
            !wal_archive_wait(r->repo, bi->stop_wal, s->archive_timeout, err) ||
            !backup_wal_same_system(r, bi->start_wal, err))
            return false;
    }
    /*
     * the last moment a signal can still stop the backup from existing; a delta whose parent
     * went meanwhile is not restorable: it fails, and what it wrote goes
     */
    return !backup_interrupted() &&
           (!r->parent.found || delta_parent_still_there(r->repo, &r->parent, err)) &&
           record_publish(r->repo, &r->rec, err);
}

static void backup_run_free(backup_run *r)
{
    free(r->files);
    free(r->spcs);
    free(r->dbs);
    pipeline_result_free(&r->res);
    resume_plan_free(&r->resume);
    free(r->reused);
    politeness_cpu_release(&r->cpu_cg);
    io_plan_free(&r->plan);
    datadir_free(&r->dd);
    record_free(&r->rec);
    delta_summary_free(&r->summary);
    delta_parent_free(&r->parent);
    pg_session_cancel_disarm();
    pg_session_close(&r->pg);
}

/* --json: the sentinel's fields, and what the run itself measured. */
static json_t *backup_result_json(const backup_run *r)
{
    struct rusage ru;
    long peak_kib = getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : 0;
    pgd_error jerr = {0};
    json_t *o = NULL;
    char *text;

    if (!backup_info_to_json(&r->rec.info, &text, &jerr))
        return NULL;
    o = json_loads(text, 0, NULL);
    free(text);
    if (o != NULL && (json_object_set_new(o, "seconds", json_real(clock_seconds() - r->t0)) != 0 ||
                      json_object_set_new(o, "read_seconds", json_real(r->read_secs)) != 0 ||
                      json_object_set_new(o, "pages_read_again",
                                          json_integer((json_int_t)r->pages_reread)) != 0 ||
                      json_object_set_new(o, "peak_rss_bytes",
                                          json_integer((json_int_t)peak_kib * 1024)) != 0)) {
        json_decref(o);
        o = NULL;
    }
    return o;
}

/*
 * Several repositories: one that failed during the run left it (storage/tee.h) and has no
 * backup; what it had written of it goes, as a failed run's does. err names each such one
 * (kind PGD_ERR_FAILED: exit 1); the others hold the complete backup.
 */
static void backup_report_dropped(backup_run *r, pgd_error *err)
{
    for (size_t i = 0; i < tee_storage_count(r->repo); i++) {
        storage *one = tee_storage_child(r->repo, i);
        const pgd_error *why;
        pgd_error derr = {0};

        if (!tee_storage_dropped(r->repo, i, &why))
            continue;
        if (!backup_id_discard(one, r->id, &derr))
            log_warn("%s", derr.msg);
        if (!err->set)
            err_set(err, "backup %s completed, but not in repository \"%s\", which failed: %s",
                    r->id, one->uri, why->msg);
        else
            log_error("backup %s is not in repository \"%s\" either, which failed: %s", r->id,
                      one->uri, why->msg);
    }
}

/* Did a repository leave the run? */
static bool backup_dropped_any(storage *repo)
{
    const pgd_error *why;

    for (size_t i = 0; i < tee_storage_count(repo); i++)
        if (tee_storage_dropped(repo, i, &why))
            return true;
    return false;
}

/*
 * The backup; true when it completed, and *result (--json) its object.
 * One that completed but whose pages failed their checksum under
 * --checksum-errors fail is a result, not a failure: it stays in the
 * repository, marked. It returns true too, with err saying so, of kind
 * PGD_ERR_DAMAGED (its exit status, and the "error" of --json).
 */
static bool cmd_backup_run(const backup_settings *s, storage *repo, json_t **result, pgd_error *err)
{
    backup_run r = {.s = s, .repo = repo};
    bool ok;

    record_init(&r.rec);
    manifest_init(&r.parent.m);
    ok = backup_begin(&r, err) && backup_copy(&r, err) && backup_finish(&r, err);
    if (ok)
        backup_log_complete(&r);
    if (ok)
        backup_report_dropped(&r, err);
    if (ok && result != NULL)
        *result = backup_result_json(&r);
    if (ok && r.rec.info.checksum_failed) {
        err_set(err,
                "backup %s completed, but %llu pages in %llu files failed their data checksum "
                "(--checksum-errors fail): it is marked, and restore LATEST passes it over",
                r.id, (unsigned long long)r.rec.info.checksum_errors,
                (unsigned long long)r.rec.info.checksum_error_files);
        err_mark(err, PGD_ERR_DAMAGED);
    }
    backup_run_free(&r);
    if (ok)
        return true;
    /* a backup that failed is no backup, whatever it read: never the status of a marked one */
    if (err_is(err, PGD_ERR_DAMAGED))
        err_mark(err, PGD_ERR_FAILED);
    if (backup_interrupted()) {
        err_clear(err);
        err_set(err, "interrupted by %s", interrupt_signal_name(interrupt_signal()));
    }
    if (r.id[0] != '\0')
        err_prefix(err, "backup %s failed", r.id);
    if (r.claimed) { /* a failed backup leaves nothing, or a warning says what stays */
        pgd_error derr = {0};
        if (backup_id_discard(repo, r.id, &derr))
            log_info("removed what backup %s had written to the repository", r.id);
        else
            log_warn("%s", derr.msg);
        /* a repository that left the run is not the tee's any more: its leftovers too */
        for (size_t i = 0; i < tee_storage_count(repo); i++) {
            const pgd_error *why;
            pgd_error ierr = {0};
            if (tee_storage_dropped(repo, i, &why) &&
                !backup_id_discard(tee_storage_child(repo, i), r.id, &ierr))
                log_warn("%s", ierr.msg);
        }
    }
    return false;
}

int cmd_backup(int argc, char **argv)
{
    pgd_options opts;
    pgd_error err = {0};
    backup_settings s;
    storage *repo = NULL;
    bool json = false;
    json_t *result = NULL;
    int rc;

    if (!command_start(&opts, &backup_help, 0, argc, argv, &rc))
        return rc;
    if (!backup_read_settings(&opts, &s, &err) || !opt_bool(&opts, OPT_JSON, &json, &err)) {
        /* a usage error, like a bad option: nothing was touched */
        err_mark(&err, PGD_ERR_USAGE);
        rc = command_fail(CMD_BACKUP, &err);
    } else if (!source_resolve_pgdata(s.pgdata, s.pgdata_real, sizeof(s.pgdata_real), &err) ||
               (repo = command_open_repo(&opts, &err)) == NULL) {
        rc = command_fail(CMD_BACKUP, &err);
    } else {
        interrupt_catch(backup_on_signal);
        /* a backup that completed marked is reported as what it is (cmd_backup_run) */
        rc = !cmd_backup_run(&s, repo, json ? &result : NULL, &err) ||
                     err_is(&err, PGD_ERR_DAMAGED) || backup_dropped_any(repo)
                 ? command_fail(CMD_BACKUP, &err)
                 : EXIT_OK;
    }
    if (json)
        rc = command_print_json(result, rc, &err);
    command_write_metrics(&opts, repo, NULL);
    storage_free(repo);
    options_free(&opts);
    if (rc != EXIT_OK && backup_interrupted()) /* the caller learns how we ended */
        raise(interrupt_signal());
    return rc;
}
