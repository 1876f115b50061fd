/*
 * options.h - one option table for the command line, PGDIRECT_* environment
 * variables and the config file (postgresql.conf's syntax), in that order
 * of precedence.
 *
 * Every option has one name used in all three places: --block-count,
 * PGDIRECT_BLOCK_COUNT, "block-count = 256". Options may stand anywhere after
 * the command name. Values are kept as text and converted by typed getters,
 * which name the option and where its value came from when it is invalid.
 */
#ifndef PGD_OPTIONS_H
#define PGD_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"
#include "util/units.h"

typedef enum {
    CMD_BACKUP = 1 << 0,
    CMD_RESTORE = 1 << 1,
    CMD_LIST = 1 << 2,
    CMD_WAL_PUSH = 1 << 3,
    CMD_WAL_FETCH = 1 << 4,
    CMD_CACHE = 1 << 5,
    CMD_TUNE = 1 << 6,
    CMD_CHECK = 1 << 7,
    CMD_DELETE = 1 << 8,
    CMD_VERIFY = 1 << 9,
    CMD_KEY = 1 << 10,
    CMD_CAT = 1 << 11,
    CMD_DRILL = 1 << 12,
    CMD_METRICS = 1 << 13,
    CMD_ANNOTATE = 1 << 14,
} command_bit;

#define CMD_ALL                                                                                    \
    (CMD_BACKUP | CMD_RESTORE | CMD_LIST | CMD_WAL_PUSH | CMD_WAL_FETCH | CMD_CACHE | CMD_TUNE |   \
     CMD_CHECK | CMD_DELETE | CMD_VERIFY | CMD_KEY | CMD_CAT | CMD_DRILL | CMD_METRICS |           \
     CMD_ANNOTATE)

typedef enum {
    OPT_REPO,
    OPT_CONFIG,
    OPT_LOG_LEVEL,
    OPT_PGDATA,
    OPT_DBNAME,
    OPT_BLOCK_COUNT,
    OPT_CONCURRENCY,
    OPT_COMPRESSION,
    OPT_COMPRESSION_LEVEL,
    OPT_PARTITION_SIZE,
    OPT_DIRECT_IO,
    OPT_IO_ENGINE,
    OPT_MAX_RATE,
    OPT_MAX_MEMORY,
    OPT_CPU_WEIGHT,
    OPT_NICE,
    OPT_IO_CLASS,
    OPT_CPU_CLASS,
    OPT_DEADLINE,
    OPT_CHECKPOINT,
    OPT_LABEL,
    OPT_ARCHIVE_CHECK,
    OPT_ARCHIVE_TIMEOUT,
    OPT_CHECKSUM_ERRORS,
    OPT_NO_VERIFY_CHECKSUMS,
    OPT_STANDBY_ONLY,
    OPT_CONCURRENT,
    OPT_RESUME,
    OPT_DELTA_FROM,
    OPT_DELTA_MAX_STEPS,
    OPT_DELTA_SUMMARY_WAIT,
    OPT_STANDBY,
    OPT_PRIMARY_CONNINFO,
    OPT_PROGRESS,
    OPT_TARGET_DIR,
    OPT_TARGET_TIME,
    OPT_TARGET_LSN,
    OPT_TARGET_NAME,
    OPT_TARGET_XID,
    OPT_TARGET_ACTION,
    OPT_TARGET_TIMELINE,
    OPT_ARCHIVE_MODE,
    OPT_TABLESPACE_MAP,
    OPT_DB_INCLUDE,
    OPT_DB_EXCLUDE,
    OPT_ALLOW_EXTERNAL_LINKS,
    OPT_DELTA,
    OPT_JSON,
    OPT_DATABASE,
    OPT_RELATION,
    OPT_TOP,
    OPT_WATCH,
    OPT_WATCH_COUNT,
    OPT_S3_ENDPOINT,
    OPT_S3_URI_STYLE,
    OPT_S3_REGION,
    OPT_S3_STORAGE_CLASS,
    OPT_S3_SSE,
    OPT_S3_OBJECT_LOCK,
    OPT_S3_LOCK_DAYS,
    OPT_S3_PART_SIZE,
    OPT_S3_UPLOAD_CONCURRENCY,
    OPT_S3_RETRIES,
    OPT_S3_TIMEOUT,
    OPT_DOWNLOAD_CONCURRENCY,
    OPT_AZURE_ENDPOINT,
    OPT_SFTP_PRIVATE_KEY_FILE,
    OPT_SFTP_KNOWN_HOSTS,
    OPT_ENCRYPTION_KEY_FILE,
    OPT_NEW_ENCRYPTION_KEY_FILE,
    OPT_RETAIN_FULL,
    OPT_RETAIN_SINCE,
    OPT_BACKUP_ID,
    OPT_WITH_DEPENDENTS,
    OPT_GARBAGE,
    OPT_GARBAGE_AGE,
    OPT_DRY_RUN,
    OPT_STRICT,
    OPT_TIMELINE,
    OPT_ALL,
    /* asynchronous WAL archiving and prefetching (cmd/wal_async.c) */
    OPT_ARCHIVE_ASYNC,
    OPT_ARCHIVE_PUSH_CONCURRENCY,
    OPT_ARCHIVE_PUSH_QUEUE_MAX,
    OPT_SPOOL_PATH,
    OPT_PREFETCH,
    OPT_PREFETCH_CONCURRENCY,
    /* restore drills (cmd/drill.c) */
    OPT_SCRATCH_DIR,
    OPT_KEEP,
    OPT_CHECK_SQL,
    OPT_DRILL_MEMORY,
    OPT_PG_BIN,
    OPT_METRICS_FILE,
    OPT_LOG_FORMAT,
    OPT_LOG_FILE,
    OPT_ANNOTATION,
    OPT_REMOVE,
    OPT_HELP,
    OPT_COUNT
} opt_id;

typedef enum { SRC_DEFAULT, SRC_CONFIG, SRC_ENV, SRC_CLI } opt_source;

typedef struct opt_value {
    char **values; /* one unless the option is repeatable */
    size_t nvalues;
    opt_source source;
} opt_value;

typedef struct pgd_options {
    unsigned command;
    opt_value v[OPT_COUNT];
    char **args; /* positional arguments after the command */
    size_t nargs;
    char config_path[4096];
} pgd_options;

/*
 * Parse argv (after the command name) for the command `command`, then fill
 * what is unset from the environment, the config file and the defaults.
 */
bool options_parse(pgd_options *opts, unsigned command, int argc, char **argv, pgd_error *err);
void options_free(pgd_options *opts);

/* Print the options of `command` with their defaults. */
void options_print_help(unsigned command, const char *usage, const char *summary);

const char *opt_str(const pgd_options *opts, opt_id id); /* NULL when unset, no default */
bool opt_is_set(const pgd_options *opts, opt_id id);     /* given by the user, not a default */
bool opt_applies(const pgd_options *opts, opt_id id);    /* an option of the command parsed */
bool opt_is_of(opt_id id, unsigned command);             /* an option `command` takes */
const char *opt_name(opt_id id);
/* "" (command line), " (from the environment)", " (from the config file)" or " (default)" */
const char *opt_source_note(const pgd_options *opts, opt_id id);

bool opt_int(const pgd_options *opts, opt_id id, long min, long max, long *out, pgd_error *err);
bool opt_bool(const pgd_options *opts, opt_id id, bool *out, pgd_error *err);
bool opt_size(const pgd_options *opts, opt_id id, uint64_t min, uint64_t max, uint64_t *out,
              pgd_error *err);
/* One of a '|'-separated list of words; returns its index. */
bool opt_enum(const pgd_options *opts, opt_id id, const char *choices, int *out, pgd_error *err);

/* "90s", "30m", "36h", "7d", "2w" or plain seconds -> seconds. */
bool parse_duration(const char *text, int64_t *seconds);
bool opt_duration(const pgd_options *opts, opt_id id, int64_t min, int64_t max, int64_t *out,
                  pgd_error *err);

/*
 * A point in time: a duration before `now` ("7d") or an ISO 8601 date and
 * time with an explicit zone ("2026-11-29 21:00:00+00", "...T21:00Z",
 * "... UTC"); a time without a zone is refused, as restore's --target-time
 * does, because whoever wrote it may not live in UTC.
 */
bool opt_point_in_time(const pgd_options *opts, opt_id id, int64_t now, int64_t *out,
                       pgd_error *err);

/*
 * The manual page comes from this table, so it and --help cannot disagree:
 * after options_help_man_on(), options_print_help prints a command's usage,
 * summary and own options as roff (man(7)) instead of text.
 * options_print_man_shared prints the options shared by every command that
 * uses a repository (shared_repo) or by all commands.
 */
void options_help_man_on(void);
void options_print_man_shared(bool shared_repo);
/* Text for roff: backslashes and hyphens escaped, a leading '.' or '\'' guarded. */
void options_man_text(const char *text);

#endif
