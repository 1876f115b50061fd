/*
 * restore.c - `pgdirect restore ID|LATEST --target-dir DIR`: unpack a
 * backup (verified), then set up recovery: backup_label, backup_manifest,
 * recovery.signal, restore_command and the recovery target.
 *
 * The command parses its options, runs the steps below in order and
 * reports; the modules do the work:
 *
 *   plan     which backup (repo/backup_info.h); its manifest, checked
 *            (repo/backup_read.h, restore/links.h); a delta's chain
 *            (restore/chain.h); with --delta, whether the existing target
 *            may be reused (restore/delta_dir.h); the restore_command
 *            (cmd/restore_command.h); where each tablespace goes
 *            (restore/tablespaces.h). Everything that can be checked is
 *            checked before anything is written.
 *   prepare  the target and tablespace directories (restore/target_dir.h);
 *            with --delta, pg_control moved aside and what the backup does
 *            not have removed (restore/delta_dir.h)
 *   write    directories, tablespace links, the partitions' files
 *            (restore/extract.h), the backup's links, backup_label,
 *            backup_manifest and the recovery settings
 *            (restore/recovery_conf.h); one fsync pass over all of it
 *            (restore/durable.h), and last pg_control under its own name.
 *
 * "Complete" is printed only once every file and directory written is on
 * disk. A restore that fails, or is interrupted by a signal, removes what
 * it wrote: a half-restored directory without backup_label would
 * otherwise start as if it had crashed, from a checkpoint that does not
 * match its files.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/common.h"
#include "cmd/restore_command.h"
#include "repo/backup_info.h"
#include "repo/manifest.h"
#include "repo/layout.h"
#include "repo/pg_manifest.h"
#include "repo/backup_read.h"
#include "restore/chain.h"
#include "restore/db_filter.h"
#include "restore/delta_dir.h"
#include "restore/durable.h"
#include "restore/extract.h"
#include "restore/links.h"
#include "restore/recovery_conf.h"
#include "restore/recovery_target.h"
#include "restore/tablespaces.h"
#include "restore/target_dir.h"
#include "restore/timeline.h"
#include "util/digest.h"
#include "util/interrupt.h"
#include "util/log.h"
#include "util/progress.h"
#include "util/units.h"
#include "util/xmalloc.h"

#define CONCURRENCY_MAX 256
#define CONCURRENCY_MIN 2 /* partitions are decompressed in parallel: one per vCPU, at least 2 */
/* fsync waits on the disk, not the CPU: more in flight than extraction threads */
#define FSYNC_THREADS_MIN 8
#define TARGET_WHY_MAX    256
/* recovery_target_timeline = 'current' is understood from PostgreSQL 12 (before, the default) */
#define RESTORE_PG_TIMELINE_CURRENT 120000

static const command_help restore_help = {
    CMD_RESTORE, "usage: pgdirect restore ID|LATEST --target-dir DIR [OPTIONS]",
    "Restore a backup into an empty directory and configure recovery from the WAL archive,\n"
    "optionally to a target (--target-time, --target-lsn, --target-name, --target-xid).\n"
    "\n"
    "--delta restores into an existing, stopped data directory of the same system (a former\n"
    "primary, a broken standby): every page is compared with what is there and written only\n"
    "when it differs, files and directories the backup does not have are removed, and the\n"
    "bytes that did not have to be written are reported. A running server (postmaster.pid\n"
    "naming a live process) or a directory of another system is refused. Until it completes,\n"
    "the directory has no global/pg_control and cannot be started; run it again after a\n"
    "failure. A tablespace the directory has a pg_tblspc/<oid> link for is restored where\n"
    "that link points (unless --tablespace-map sends it elsewhere), not to the location in\n"
    "the backup; any other tablespace directory must be absent or empty.\n"
    "\n"
    "--target-time takes an ISO 8601 date and time WITH a zone (\"2026-11-29 21:00:00+00\",\n"
    "\"2026-11-29T22:00:00 Europe/Berlin\"): without one the server would read it in its own\n"
    "TimeZone setting, which need not be yours. --target-lsn is X/X in hex, --target-xid a\n"
    "transaction id (xid8 too), --target-name a restore point name; --target-action needs one.\n"
    "\n"
    "Recovery follows the newest timeline whose history file the repository holds, as\n"
    "PostgreSQL does by default (--target-timeline latest), or --target-timeline current (the\n"
    "backup's own) or N. Before writing anything, restore checks that the timeline's history\n"
    "passes through the backup: one that left the backup's timeline before the backup's end (a\n"
    "standby promoted by mistake, a test restore that archived into this repository) would\n"
    "leave a server that refuses to start.\n"
    "\n"
    "The restored cluster does not archive: archive_mode = off is written to its\n"
    "postgresql.auto.conf, so that a test restore started and promoted never archives a new\n"
    "timeline into the production repository. A restore that becomes the new primary (a\n"
    "failover) passes --archive-mode preserve to keep the backup's archive settings.\n"
    "\n"
    "restore_command carries every repository option this restore used, resolved to flags,\n"
    "but never S3 credentials: the restored server needs AWS_ACCESS_KEY_ID and\n"
    "AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN) in its own environment.\n"
    "\n"
    "--db-include NAME restores only the named user databases (--db-exclude NAME: all but\n"
    "those), by the names the backup recorded: the relation files of every other user\n"
    "database are created empty (sparse files of their size, their data neither read from\n"
    "the repository nor written), so recovery replays cleanly; drop those databases once it\n"
    "has ended. Template and system databases (template0, template1, postgres) are always\n"
    "restored whole.\n"
    "\n"
    "Symbolic links of the backed-up data directory are restored as links; one that points\n"
    "outside the target directory only with --allow-external-links."};

typedef struct restore_settings {
    const char *id;
    const char *target;
    const char *target_key, *target_value; /* recovery_target_* */
    const char *target_action;
    timeline_choice timeline;     /* --target-timeline */
    bool standby;                 /* standby.signal: a new replica */
    const char *primary_conninfo; /* with standby, or NULL */
    int concurrency;
    bool progress;
    bool allow_external_links;
    bool delta;                  /* reuse an existing data directory: write only what differs */
    bool archive_off;            /* --archive-mode off: the restored cluster does not archive */
    bool json;                   /* one JSON object on standard output at the end */
    char *const *tablespace_map; /* OLD=NEW values */
    size_t ntablespace_map;
    char *const *db_include, *const *db_exclude; /* database names */
    size_t ndb_include, ndb_exclude;
} restore_settings;

static bool restore_check_target(opt_id opt, const char *value, pgd_error *err)
{
    char why[TARGET_WHY_MAX];
    bool ok;

    switch (opt) {
    case OPT_TARGET_TIME:
        ok = recovery_target_check_time(value, why, sizeof(why));
        break;
    case OPT_TARGET_LSN:
        ok = recovery_target_check_lsn(value, why, sizeof(why));
        break;
    case OPT_TARGET_XID:
        ok = recovery_target_check_xid(value, why, sizeof(why));
        break;
    default:
        ok = recovery_target_check_name(value, why, sizeof(why));
        break;
    }
    return ok ||
           err_set(err, "invalid value \"%s\" for option \"--%s\": %s", value, opt_name(opt), why);
}

/* At most one of --target-time, --target-lsn, --target-name, --target-xid; --target-action. */
static bool restore_read_target(const pgd_options *opts, restore_settings *s, pgd_error *err)
{
    static const struct {
        opt_id opt;
        const char *key;
    } targets[] = {{OPT_TARGET_TIME, "recovery_target_time"},
                   {OPT_TARGET_LSN, "recovery_target_lsn"},
                   {OPT_TARGET_NAME, "recovery_target_name"},
                   {OPT_TARGET_XID, "recovery_target_xid"}};
    int action;

    for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
        if (opt_str(opts, targets[i].opt) == NULL)
            continue;
        if (s->target_key != NULL)
            return err_set(err, "give at most one of --target-time, --target-lsn, --target-name, "
                                "--target-xid");
        if (!restore_check_target(targets[i].opt, opt_str(opts, targets[i].opt), err))
            return false;
        s->target_key = targets[i].key;
        s->target_value = opt_str(opts, targets[i].opt);
    }
    if (opt_str(opts, OPT_TARGET_TIMELINE) != NULL) {
        char why[TARGET_WHY_MAX];
        const char *value = opt_str(opts, OPT_TARGET_TIMELINE);
        if (!timeline_parse(value, &s->timeline, why, sizeof(why)))
            return err_set(err, "invalid value \"%s\" for option \"--target-timeline\": %s", value,
                           why);
    }
    if (opt_str(opts, OPT_TARGET_ACTION) == NULL)
        return true;
    if (!opt_enum(opts, OPT_TARGET_ACTION, "promote|pause|shutdown", &action, err))
        return false;
    if (s->target_key == NULL)
        return err_set(err, "option \"--target-action\" needs a recovery target "
                            "(--target-time, --target-lsn, --target-name or --target-xid)");
    s->target_action = opt_str(opts, OPT_TARGET_ACTION);
    return true;
}

static bool restore_read_settings(const pgd_options *opts, restore_settings *s, pgd_error *err)
{
    long concurrency;
    int archive_mode;

    memset(s, 0, sizeof(*s));
    if (opts->nargs != 1)
        return err_set(err, opts->nargs == 0 ? "restore needs a backup id or LATEST (see --help)"
                                             : "restore takes one backup id (see --help)");
    s->id = opts->args[0];
    s->target = opt_str(opts, OPT_TARGET_DIR);
    if (s->target == NULL || s->target[0] == '\0')
        return err_set(err, "option \"--target-dir\" is required");
    if (!restore_read_target(opts, s, err))
        return false;
    if (strcmp(opt_str(opts, OPT_CONCURRENCY), "auto") == 0) {
        concurrency = sysconf(_SC_NPROCESSORS_ONLN);
        if (concurrency < CONCURRENCY_MIN)
            concurrency = CONCURRENCY_MIN;
    } else if (!opt_int(opts, OPT_CONCURRENCY, 1, CONCURRENCY_MAX, &concurrency, err)) {
        return false;
    }
    s->concurrency = (int)concurrency;
    s->tablespace_map = opts->v[OPT_TABLESPACE_MAP].values;
    s->ntablespace_map = opts->v[OPT_TABLESPACE_MAP].nvalues;
    s->db_include = opts->v[OPT_DB_INCLUDE].values;
    s->ndb_include = opts->v[OPT_DB_INCLUDE].nvalues;
    s->db_exclude = opts->v[OPT_DB_EXCLUDE].values;
    s->ndb_exclude = opts->v[OPT_DB_EXCLUDE].nvalues;
    if (!opt_bool(opts, OPT_STANDBY, &s->standby, err))
        return false;
    s->primary_conninfo = opt_str(opts, OPT_PRIMARY_CONNINFO);
    if (s->primary_conninfo != NULL && !s->standby)
        return err_set(err, "option \"--primary-conninfo\" needs --standby");
    /* a standby replays for as long as it runs: a target would end it */
    if (s->standby && s->target_key != NULL)
        return err_set(err, "option \"--standby\" cannot be combined with a recovery target "
                            "(--target-time, --target-lsn, --target-name, --target-xid)");
    if (!opt_enum(opts, OPT_ARCHIVE_MODE, "off|preserve", &archive_mode, err))
        return false;
    s->archive_off = archive_mode == 0;
    return command_progress(opts, &s->progress, err) && opt_bool(opts, OPT_JSON, &s->json, err) &&
           opt_bool(opts, OPT_ALLOW_EXTERNAL_LINKS, &s->allow_external_links, err) &&
           opt_bool(opts, OPT_DELTA, &s->delta, err);
}

/* One restore: what is decided before writing, then what is written. */
typedef struct restore_run {
    const restore_settings *s;
    storage *repo;
    backup_info bi;
    manifest m;
    chain chain;            /* a delta's parents, newest first; empty for a full backup */
    extract_older *older;   /* the same, as extract reads them */
    const char **dest;      /* per tablespace: where it goes (--tablespace-map applied) */
    tablespaces_from *from; /* per tablespace: why it goes there */
    char (*own)[PATH_MAX];  /* --delta: per tablespace, the existing directory's link */
    target_dir *dirs;       /* [0] the target directory, [1 + i] tablespace i */
    size_t ndirs;           /* allocated (and to clean up on failure) */
    durable_list *sync;     /* everything written, for the final fsync pass */
    char *restore_command;  /* as PostgreSQL will run it */
    char timeline[16];      /* recovery_target_timeline to write, or "": the server's default */
    uint64_t bytes;
    uint64_t unchanged;  /* --delta: bytes that matched and were not written */
    db_filter dbs;       /* --db-include, --db-exclude: the databases left out */
    uint64_t repo_bytes; /* stored bytes read from the repository */
    double t0;
    json_t *result; /* --json: what the restore did, once it completed */
    bool give_away; /* run as root: every file goes to the target's owner (target_dir_owner) */
    uid_t owner_uid;
    gid_t owner_gid;
} restore_run;

/* --db-include, --db-exclude: what was read and written, and what the user must do next. */
static void restore_log_excluded(const restore_run *r)
{
    char names[1024], repo_s[32], written_s[32], sparse_s[32];

    db_filter_names(&r->dbs, names, sizeof(names));
    units_format_bytes(r->repo_bytes, repo_s, sizeof(repo_s));
    units_format_bytes(r->bytes, written_s, sizeof(written_s));
    units_format_bytes(r->dbs.sparse_bytes, sparse_s, sizeof(sparse_s));
    log_info("read %llu bytes (%s) from the repository and wrote %llu bytes (%s) of file data; "
             "the %zu relation files (%s) of the databases left out were created empty, their "
             "data neither read nor written",
             (unsigned long long)r->repo_bytes, repo_s, (unsigned long long)r->bytes, written_s,
             r->dbs.nsparse, sparse_s);
    /* their catalogs are empty too: PostgreSQL PANICs on a session that opens one */
    log_warn("database%s %s %s restored without data (empty sparse files): once recovery has "
             "ended, DROP DATABASE %s from another database; a connection to %s makes the whole "
             "server PANIC and restart",
             r->dbs.nexcluded > 1 ? "s" : "", names, r->dbs.nexcluded > 1 ? "were" : "was",
             r->dbs.nexcluded > 1 ? "each of them" : "it", r->dbs.nexcluded > 1 ? "one" : "it");
}

static void restore_log_complete(const restore_run *r, double sync_secs)
{
    double secs = clock_seconds() - r->t0;
    char size_s[32], time_s[32], sync_s[32];
    const char *key = r->s->target_key;

    units_format_bytes(r->bytes, size_s, sizeof(size_s));
    if (r->s->delta) {
        char same_s[32];
        units_format_bytes(r->unchanged, same_s, sizeof(same_s));
        log_info("%llu bytes of %llu (%s of %s) did not have to be written",
                 (unsigned long long)r->unchanged, (unsigned long long)r->bytes, same_s, size_s);
    }
    units_format_duration(secs, time_s, sizeof(time_s));
    units_format_duration(sync_secs, sync_s, sizeof(sync_s));
    if (r->dbs.nexcluded > 0)
        restore_log_excluded(r);
    if (r->s->standby)
        log_info("restore of backup %s complete: %s in %s (%.1f MB/s, %s of it waiting for the "
                 "disk in the final fsync pass); start the server to run it as a standby%s",
                 r->bi.id, size_s, time_s, secs > 0 ? (double)r->bytes / secs / 1e6 : 0.0, sync_s,
                 r->s->primary_conninfo ? " streaming from --primary-conninfo" : "");
    else
        log_info("restore of backup %s complete: %s in %s (%.1f MB/s, %s of it waiting for the "
                 "disk in the final fsync pass); start the server to recover%s%s%s",
                 r->bi.id, size_s, time_s, secs > 0 ? (double)r->bytes / secs / 1e6 : 0.0, sync_s,
                 key ? " to " : "", key ? key : "", key ? "" : " to the end of the archive");
}

/* --json: what was restored, where, and the recovery it set up. */
static json_t *restore_result_json(const restore_run *r, double sync_secs)
{
    const restore_settings *s = r->s;
    json_t *chain = json_array(), *o;

    for (size_t i = 0; chain != NULL && i < r->chain.n; i++)
        json_array_append_new(chain, json_string(r->chain.parents[i].bi.id));
    o = json_pack("{s:s, s:s, s:s, s:I, s:I, s:f, s:f, s:o*, s:b, s:b, s:s, s:{s:s?, s:s?, "
                  "s:s?, s:s?}}",
                  "backup", r->bi.id, "type", r->bi.type[0] ? r->bi.type : "full", "target_dir",
                  r->dirs[0].real, "files", (json_int_t)r->bi.files, "bytes", (json_int_t)r->bytes,
                  "seconds", clock_seconds() - r->t0, "fsync_seconds", sync_secs, "chain", chain,
                  "delta", s->delta, "standby", s->standby, "archive_mode",
                  s->archive_off ? "off" : "preserve", "recovery", "target", s->target_key, "value",
                  s->target_value, "action", s->target_action, "timeline",
                  r->timeline[0] ? r->timeline : NULL);
    if (o != NULL && s->delta &&
        json_object_set_new(o, "unchanged_bytes", json_integer((json_int_t)r->unchanged)) != 0) {
        json_decref(o);
        o = NULL;
    }
    if (o != NULL &&
        json_object_set_new(o, "repository_bytes", json_integer((json_int_t)r->repo_bytes)) != 0) {
        json_decref(o);
        o = NULL;
    }
    if (o != NULL && r->dbs.nexcluded > 0) {
        json_t *names = json_array();
        for (size_t i = 0; names != NULL && i < r->dbs.nexcluded; i++)
            json_array_append_new(names, json_string(r->dbs.excluded[i]->name));
        if (json_object_set_new(o, "excluded_databases", names) != 0 ||
            json_object_set_new(o, "sparse_files", json_integer((json_int_t)r->dbs.nsparse)) != 0) {
            json_decref(o);
            o = NULL;
        }
    }
    return o;
}

/*
 * The timeline recovery will follow passes through the backup (restore/timeline.h),
 * and what recovery_target_timeline to write for it.
 */
static bool restore_timeline(restore_run *r, pgd_error *err)
{
    const timeline_choice *c = &r->s->timeline;
    timeline_path p;

    if (!timeline_resolve(r->repo, &r->bi, c, &p, err))
        return false;
    timeline_log_path(&p, &r->bi, c);
    timeline_path_free(&p);
    if (c->goal == TIMELINE_LATEST)
        snprintf(r->timeline, sizeof(r->timeline), "latest");
    else if (c->goal == TIMELINE_CURRENT && r->bi.pg_version_num >= RESTORE_PG_TIMELINE_CURRENT)
        snprintf(r->timeline, sizeof(r->timeline), "current");
    else if (c->goal == TIMELINE_NUMBER)
        snprintf(r->timeline, sizeof(r->timeline), "%u", c->number);
    return true;
}

#define RESTORE_FATAL_BEFORE_END RECOVERY_TARGET_FATAL_BEFORE_END

/*
 * The backup to restore: the id, or LATEST. With a recovery target, one that ends before it
 * (restore/recovery_target.h): LATEST takes the newest that does and says which; an id that
 * ends after a time or LSN target is refused (a server that stops with FATAL otherwise); for a
 * transaction that began before the end, which may still commit after it, a warning.
 */
static bool restore_resolve_backup(restore_run *r, pgd_error *err)
{
    const restore_settings *s = r->s;
    char end[64];

    if (!backup_info_resolve(r->repo, s->id, &r->bi, err))
        return false;
    if (s->target_key == NULL ||
        recovery_target_versus_backup(&r->bi, s->target_key, s->target_value, end, sizeof(end)) !=
            RECOVERY_TARGET_BEFORE_END)
        return true;
    if (strcmp(s->id, "LATEST") == 0)
        return recovery_target_older_backup(r->repo, s->target_key, s->target_value, end, &r->bi,
                                            err);
    if (strcmp(s->target_key, "recovery_target_xid") == 0) {
        log_warn("transaction %s began before backup %s ended (at %s): recovery reaches it only if "
                 "it committed after that; else %s",
                 s->target_value, r->bi.id, end, RESTORE_FATAL_BEFORE_END);
        return true;
    }
    return err_set(err,
                   "backup %s ended at %s, after the recovery target %s = '%s': %s; restore an "
                   "older backup, or LATEST, which takes the newest that ended before the target",
                   r->bi.id, end, s->target_key, s->target_value, RESTORE_FATAL_BEFORE_END);
}

/*
 * Run as root, the restored files go to the user who owns the target (or its nearest existing
 * parent), the one who will run the server; a target root owns is refused (restore/target_dir.h).
 */
static bool restore_plan_owner(restore_run *r, pgd_error *err)
{
    if (geteuid() != 0)
        return true;
    if (!target_dir_owner(r->s->target, &r->owner_uid, &r->owner_gid, err))
        return false;
    if (r->owner_uid == 0)
        return err_set(err,
                       "restore run as root into \"%s\", which root owns, would leave a data "
                       "directory owned by root, and PostgreSQL refuses to start on one: run "
                       "restore as the OS user that will run the server (runuser -u postgres -- "
                       "pgdirect restore ...), or give \"%s\" (or its parent) to that user first",
                       r->s->target, r->s->target);
    r->give_away = true;
    return true;
}

/*
 * --db-include, --db-exclude: the databases left out, resolved by the names the backup
 * recorded; a name it does not have, or a backup that recorded none, is the caller's mistake.
 */
static bool restore_plan_databases(restore_run *r, pgd_error *err)
{
    const restore_settings *s = r->s;
    char names[1024];

    if (!db_filter_plan(&r->dbs, &r->m, r->bi.id, s->db_include, s->ndb_include, s->db_exclude,
                        s->ndb_exclude, err)) {
        err_mark(err, PGD_ERR_USAGE);
        return false;
    }
    if (s->ndb_include + s->ndb_exclude == 0)
        return true;
    if (r->dbs.nexcluded == 0) {
        log_info("no user database of backup %s is left out: it is restored whole", r->bi.id);
        return true;
    }
    db_filter_names(&r->dbs, names, sizeof(names));
    log_info("leaving out database%s %s: %zu relation files restored as empty sparse files; "
             "template and system databases are restored whole",
             r->dbs.nexcluded > 1 ? "s" : "", names, r->dbs.nsparse);
    return true;
}

/* Everything that can be decided or refused before the first write. */
static bool restore_plan(restore_run *r, const pgd_options *opts, pgd_error *err)
{
    const restore_settings *s = r->s;

    if (!restore_plan_owner(r, err))
        return false;

    if (!restore_resolve_backup(r, err) || !restore_timeline(r, err) ||
        (s->delta && !delta_dir_check(s->target, r->bi.system_identifier, err)) ||
        !backup_read_manifest(r->repo, r->bi.id, &r->m, err) ||
        !links_check(&r->m, r->bi.id, s->allow_external_links, err) ||
        !chain_load(r->repo, &r->bi, &r->m, s->allow_external_links, &r->chain, err) ||
        !restore_plan_databases(r, err) ||
        !restore_command_build(opts, r->repo, &r->restore_command, err))
        return false;
    /* a delta's restore writes backup_manifest (SHA-256) at the end: fail now, not then */
    if (r->chain.n > 0 && !digest_load(err))
        return false;
    if (r->chain.n > 0) {
        r->older = xcalloc(r->chain.n, sizeof(*r->older));
        for (size_t i = 0; i < r->chain.n; i++)
            r->older[i] = (extract_older){.backup_id = r->chain.parents[i].bi.id,
                                          .m = &r->chain.parents[i].m};
    }
    r->dest = xcalloc(r->m.ntablespaces + 1, sizeof(*r->dest));
    r->dirs = xcalloc(r->m.ntablespaces + 1, sizeof(*r->dirs));
    r->from = xcalloc(r->m.ntablespaces + 1, sizeof(*r->from));
    r->own = xcalloc(r->m.ntablespaces + 1, sizeof(*r->own));
    r->ndirs = r->m.ntablespaces + 1;
    /* --delta: a tablespace goes where the directory's own link points, not where the backup's
       location is (another cluster's, maybe running); any other destination must be free */
    return tablespaces_map(&r->m, s->tablespace_map, s->ntablespace_map, r->dest, r->from, err) &&
           (!s->delta || tablespaces_delta(s->target, &r->m, r->dest, r->from, r->own, err)) &&
           tablespaces_check(s->target, &r->m, r->dest, r->from, err);
}

/* The first writes: the directories, each destination logged before (restore_plan). */
static bool restore_prepare(restore_run *r, pgd_error *err)
{
    bool (*prepare)(target_dir *, const char *, const char *, pgd_error *) =
        r->s->delta ? target_dir_prepare_existing : target_dir_prepare;
    bool ok = prepare(&r->dirs[0], r->s->target, "target directory", err);
    /* --delta reuses only the directory's own tablespaces (restore_plan); others must be empty */
    for (size_t i = 1; ok && i < r->ndirs; i++)
        ok = (tablespaces_reuse(r->from[i - 1]) ? prepare : target_dir_prepare)(
            &r->dirs[i], r->dest[i - 1], "tablespace directory", err);
    if (!ok)
        return false;
    log_info("restoring backup %s (%llu files, %zu partitions) to \"%s\"", r->bi.id,
             (unsigned long long)r->bi.files, r->m.npartitions, r->dirs[0].real);
    if (r->chain.n > 0)
        log_info("backup %s is a delta: its chain of %zu older backups down to full backup %s "
                 "is assembled in one pass",
                 r->bi.id, r->chain.n, r->chain.parents[r->chain.n - 1].bi.id);
    if (r->s->archive_off)
        log_info("the restored cluster will not archive WAL (archive_mode = off in "
                 "postgresql.auto.conf), so that it never adds a timeline to this repository; "
                 "--archive-mode preserve keeps the backup's setting (a failover)");
    if (restore_command_repo_is_s3(r->repo))
        log_info("restore_command carries no S3 credentials: the server needs "
                 "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in its own environment");
    if (restore_command_repo_is_azure(r->repo))
        log_info("restore_command carries no Azure credentials: the server needs "
                 "AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN, or "
                 "AZURE_STORAGE_CONNECTION_STRING, in its own environment");
    return true;
}

/* What the final fsync pass covers besides the files restore itself writes. */
static bool restore_list_durable(const restore_run *r, const extract_plan *plan, pgd_error *err)
{
    for (size_t i = 0; i < r->ndirs; i++)
        target_dir_add_durable(&r->dirs[i], r->sync);
    return tablespaces_add_durable(plan->target, &r->m, r->sync, err) &&
           extract_list_durable(plan, r->sync, err);
}

/*
 * backup_manifest, for pg_verifybackup: a full backup's own; for a delta,
 * built from what was assembled (extract rewrote each assembled file's
 * entry), as pg_combinebackup does.
 */
static bool restore_pg_manifest(const restore_run *r, const char *target, pgd_error *err)
{
    char path[LAYOUT_PATH_MAX];
    char *text;
    size_t len;
    bool missing, ok;

    layout_backup_object(r->bi.id, PG_MANIFEST_NAME, path, sizeof(path));
    if (r->chain.n > 0) {
        if (!pg_manifest_build(&r->m, &r->bi, &text, err))
            return false;
    } else if (!storage_get(r->repo, path, &text, &len, &missing, err)) {
        return missing
                   ? err_set(err, "\"%s\" is missing from repository \"%s\"", path, r->repo->uri)
                   : false;
    }
    ok = durable_write_file(target, PG_MANIFEST_NAME, text, O_EXCL, r->sync, err);
    free(text);
    return ok;
}

/* Run as root: everything written goes to the target's owner, before the fsync pass. */
static bool restore_give_away(const restore_run *r, pgd_error *err)
{
    for (size_t i = 0; r->give_away && i < r->ndirs; i++)
        if (!target_dir_chown(r->dirs[i].real, r->owner_uid, r->owner_gid, err))
            return false;
    if (r->give_away)
        log_info("restored files given to user %u (group %u), who owns \"%s\" or the directory it "
                 "was made in",
                 (unsigned)r->owner_uid, (unsigned)r->owner_gid, r->s->target);
    return true;
}

/* Unpack into the prepared directories, write the recovery setup, make it all durable. */
static bool restore_write(restore_run *r, const char **spc_dest, pgd_error *err)
{
    const restore_settings *s = r->s;
    const char *target = r->dirs[0].real;
    extract_plan plan = {.repo = r->repo,
                         .backup_id = r->bi.id,
                         .m = &r->m,
                         .target = target,
                         .spc_dest = spc_dest,
                         .concurrency = s->concurrency,
                         .progress = s->progress,
                         .cancel = interrupt_flag(),
                         .delta = s->delta,
                         .unchanged = &r->unchanged,
                         .older = r->older,
                         .nolder = r->chain.n,
                         .sparse = r->dbs.sparse,
                         .repo_bytes = &r->repo_bytes};
    recovery_conf_request recovery = {.target = target,
                                      .pg_version_num = r->bi.pg_version_num,
                                      .backup_id = r->bi.id,
                                      .restore_command = r->restore_command,
                                      .target_key = s->target_key,
                                      .target_value = s->target_value,
                                      .target_action = s->target_action,
                                      .target_timeline = r->timeline[0] ? r->timeline : NULL,
                                      .standby = s->standby,
                                      .primary_conninfo = s->primary_conninfo,
                                      .archive_off = s->archive_off};
    double t_sync;
    size_t removed = 0;
    bool ok = true;

    for (size_t i = 1; i < r->ndirs; i++)
        spc_dest[i - 1] = r->dirs[i].real;
    if (s->delta) {
        ok = delta_dir_retire_control(&plan, err) &&
             delta_dir_remove_extra(&plan, r->dirs, &removed, err);
        if (ok && removed > 0)
            log_info("removed %zu files and directories the backup does not have", removed);
    }
    ok = ok && extract_make_dirs(&plan, err) && tablespaces_link(target, &r->m, r->dirs, err) &&
         extract_partitions(&plan, &r->bytes, err) && links_create(&plan, err) &&
         durable_write_file(target, "backup_label", r->m.backup_label, O_EXCL, r->sync, err) &&
         restore_pg_manifest(r, target, err) && recovery_conf_write(&recovery, r->sync, err) &&
         restore_give_away(r, err) && restore_list_durable(r, &plan, err);
    t_sync = clock_seconds();
    ok = ok &&
         durable_list_sync(r->sync,
                           s->concurrency > FSYNC_THREADS_MIN ? s->concurrency : FSYNC_THREADS_MIN,
                           err) &&
         extract_publish_control(&plan, err);
    if (ok) {
        restore_log_complete(r, clock_seconds() - t_sync);
        if (s->json)
            r->result = restore_result_json(r, clock_seconds() - t_sync);
    }
    return ok;
}

/* After a failed --delta: pg_control was moved aside (restore/delta_dir.h), so say how to go on. */
static bool restore_control_retired(const target_dir *d)
{
    char path[PATH_MAX];

    return d->real[0] != '\0' &&
           (size_t)snprintf(path, sizeof(path), "%s/" EXTRACT_PG_CONTROL, d->real) < sizeof(path) &&
           access(path, F_OK) != 0;
}

static bool cmd_restore_run(const restore_settings *s, const pgd_options *opts, storage *repo,
                            json_t **result, pgd_error *err)
{
    restore_run r = {.s = s, .repo = repo, .sync = durable_list_new(), .t0 = clock_seconds()};
    const char **spc_dest = NULL;
    bool ok, caught;

    manifest_init(&r.m);
    ok = restore_plan(&r, opts, err);
    /* from the first write on, a signal must not leave a half-written directory behind */
    caught = ok;
    if (caught)
        interrupt_catch(NULL);
    if (ok)
        spc_dest = xcalloc(r.ndirs, sizeof(*spc_dest));
    ok = ok && restore_prepare(&r, err) && restore_write(&r, spc_dest, err);
    if (!ok) {
        for (size_t i = 0; i < r.ndirs; i++)
            target_dir_cleanup(&r.dirs[i]);
        if (s->delta && r.ndirs > 0 && r.dirs[0].reused && restore_control_retired(&r.dirs[0]))
            log_warn("the target directory \"%s\" is partly restored and has no "
                     "global/pg_control: run restore --delta again",
                     r.dirs[0].path);
        err_prefix(err, "restore of backup %s failed", r.bi.id[0] ? r.bi.id : s->id);
    }
    for (size_t i = 0; i < r.ndirs; i++)
        target_dir_release(&r.dirs[i]);
    if (caught)
        interrupt_release();
    free(spc_dest);
    free(r.restore_command);
    durable_list_free(r.sync);
    free(r.dest);
    free(r.dirs);
    free(r.from);
    free(r.own);
    free(r.older);
    chain_free(&r.chain);
    db_filter_free(&r.dbs);
    manifest_free(&r.m);
    *result = r.result;
    return ok;
}

int cmd_restore(int argc, char **argv)
{
    pgd_options opts;
    pgd_error err = {0};
    restore_settings s;
    storage *repo = NULL;
    json_t *result = NULL;
    bool json = false;
    int rc;

    if (!command_start(&opts, &restore_help, 1, argc, argv, &rc))
        return rc;
    if (!opt_bool(&opts, OPT_JSON, &json, &err))
        err_clear(&err); /* restore_read_settings reports it */
    if (!restore_read_settings(&opts, &s, &err)) {
        /* a usage error, like a bad option: nothing was touched */
        err_mark(&err, PGD_ERR_USAGE);
        rc = command_fail(CMD_RESTORE, &err);
    } else if ((repo = command_open_repo(&opts, &err)) == NULL) {
        rc = command_fail(CMD_RESTORE, &err);
    } else {
        rc = cmd_restore_run(&s, &opts, repo, &result, &err) ? EXIT_OK
                                                             : command_fail(CMD_RESTORE, &err);
    }
    if (json)
        rc = command_print_json(result, rc, &err);
    storage_free(repo);
    options_free(&opts);
    /* what it wrote is removed (cmd_restore_run): now the caller learns how it ended, 128 + N */
    if (rc != EXIT_OK && interrupt_signal() != 0)
        raise(interrupt_signal());
    return rc;
}
