/*
 * common.c - option handling, repository opening and error reporting
 * shared by the commands.
 */
#include "cmd/common.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "storage/azure/azure.h"
#include "storage/crypt/storage.h"
#include "storage/s3/s3.h"
#include "storage/sftp/sftp.h"
#include "storage/tee.h"
#include "util/log.h"
#include "util/xmalloc.h"

/*
 * The commands that never create a repository: for them, one that is not
 * there is a wrong --repo (or one not mounted), not an empty repository.
 * The others (backup, wal-push, check) create it.
 */
/* the commands that write to a repository: the first one with a key makes an empty one encrypted */
#define COMMAND_REPO_WRITERS (CMD_BACKUP | CMD_WAL_PUSH | CMD_CHECK)
#define COMMAND_REPO_READERS                                                                       \
    (CMD_LIST | CMD_RESTORE | CMD_VERIFY | CMD_DELETE | CMD_WAL_FETCH | CMD_KEY | CMD_CAT |        \
     CMD_DRILL | CMD_METRICS | CMD_ANNOTATE)

/* In the data directory, which is restore_command's working directory (PostgreSQL >= 12). */
#define COMMAND_STANDBY_SIGNAL_FILE "standby.signal"

/*
 * The settings a repository may have of its own, after '?' in its --repo
 * value: where it is and how to reach it, never a secret (keys are named by
 * the files that hold them), so a --repo value can go on a command line
 * that ps shows (restore_command).
 */
static const opt_id command_repo_settings[] = {
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
    OPT_RETAIN_FULL, /* delete: each repository's own retention */
    OPT_RETAIN_SINCE,
};
#define COMMAND_REPO_NSETTINGS (sizeof(command_repo_settings) / sizeof(command_repo_settings[0]))

/* The commands that take --repo more than once (the others work on one repository at a time). */
#define COMMAND_REPO_SEVERAL                                                                       \
    (CMD_BACKUP | CMD_RESTORE | CMD_WAL_FETCH | CMD_WAL_PUSH | CMD_LIST | CMD_DELETE |             \
     CMD_VERIFY | CMD_CHECK)

/* One --repo value's own options: the command's, with its URI and settings in place. */
typedef struct command_repo_opts {
    pgd_options o; /* first: command_repo_options_free finds the rest */
    char *buf;     /* the value, cut at '?', '&' and '=' */
    char *uri;
    char *vals[OPT_COUNT];
} command_repo_opts;

size_t command_repo_count(const pgd_options *opts)
{
    return opts->v[OPT_REPO].nvalues > 0 ? opts->v[OPT_REPO].nvalues : 1;
}

void command_repo_options_free(pgd_options *o)
{
    command_repo_opts *r = (command_repo_opts *)o;

    if (r != NULL)
        free(r->buf);
    free(r);
}

/*
 * A --repo value as a message shows it: a password before '@' and the
 * values after '?' that are not repository settings masked (a SAS token
 * or a signature given there by mistake never reaches a log).
 */
static char *command_repo_echo(const char *whole)
{
    const char *keep[COMMAND_REPO_NSETTINGS + 1];

    for (size_t k = 0; k < COMMAND_REPO_NSETTINGS; k++)
        keep[k] = opt_name(command_repo_settings[k]);
    keep[COMMAND_REPO_NSETTINGS] = NULL;
    return storage_uri_redact(whole, keep);
}

/* NAME=VALUE after the '?' of --repo value `whole`: one of command_repo_settings. */
static bool command_repo_setting(command_repo_opts *r, const char *whole, char *item,
                                 pgd_error *err)
{
    char *eq = strchr(item, '='), *shown;
    const char *problem = NULL;
    opt_id id = OPT_COUNT;

    for (size_t k = 0; eq != NULL && k < COMMAND_REPO_NSETTINGS && problem == NULL; k++) {
        id = command_repo_settings[k];
        if (strncmp(item, opt_name(id), (size_t)(eq - item)) != 0 ||
            opt_name(id)[eq - item] != '\0')
            continue;
        if (r->vals[id] != NULL)
            problem = "is given twice";
        else if (eq[1] == '\0')
            problem = "has no value";
        else {
            r->vals[id] = eq + 1;
            r->o.v[id] = (opt_value){&r->vals[id], 1, SRC_CLI};
            return true;
        }
    }
    shown = command_repo_echo(whole);
    if (problem != NULL)
        err_set(err, "invalid value \"%s\" for option \"--repo\": \"%s\" %s", shown, opt_name(id),
                problem);
    else if (eq == NULL) /* not even NAME=VALUE: it may be a token, never echoed */
        err_set(err,
                "invalid value \"%s\" for option \"--repo\": an item after '?' is not "
                "NAME=VALUE (URI?NAME=VALUE&...: s3-*, download-concurrency, azure-endpoint, "
                "sftp-*, encryption-key-file, retain-full, retain-since)",
                shown);
    else {
        *eq = '\0';
        err_set(err,
                "invalid value \"%s\" for option \"--repo\": \"%s\" is not a repository "
                "setting (URI?NAME=VALUE&...: s3-*, download-concurrency, azure-endpoint, "
                "sftp-*, encryption-key-file, retain-full, retain-since)",
                shown, item);
    }
    free(shown);
    return false;
}

pgd_options *command_repo_options(const pgd_options *opts, size_t i, pgd_error *err)
{
    command_repo_opts *r = xcalloc(1, sizeof(*r));
    const char *whole = opts->v[OPT_REPO].nvalues > i ? opts->v[OPT_REPO].values[i] : NULL;
    char *q, *item, *save = NULL;

    r->o = *opts;
    if (whole == NULL) /* no --repo and no default: the command's own message */
        return &r->o;
    r->buf = xstrdup(whole);
    r->uri = r->buf;
    r->o.v[OPT_REPO] = (opt_value){&r->uri, 1, opts->v[OPT_REPO].source};
    if ((q = strchr(r->buf, '?')) == NULL)
        return &r->o;
    *q = '\0';
    for (item = strtok_r(q + 1, "&", &save); item != NULL; item = strtok_r(NULL, "&", &save))
        if (!command_repo_setting(r, whole, item, err)) {
            command_repo_options_free(&r->o);
            return NULL;
        }
    return &r->o;
}

/*
 * --repo's form, before anything runs: a value no repository can have is a
 * usage error, naming where the value came from; so is a command that
 * works on one repository given several.
 */
static bool command_repo_valid(const pgd_options *opts, pgd_error *err)
{
    const char *why;

    if (!opt_applies(opts, OPT_REPO))
        return true;
    if (opts->v[OPT_REPO].nvalues > 1 && !(opts->command & COMMAND_REPO_SEVERAL))
        return err_set(err,
                       "option \"--repo\" is given %zu times%s: this command works on one "
                       "repository at a time",
                       opts->v[OPT_REPO].nvalues, opt_source_note(opts, OPT_REPO));
    for (size_t i = 0; i < opts->v[OPT_REPO].nvalues; i++) {
        pgd_options *o = command_repo_options(opts, i, err);
        const char *uri = o != NULL ? opt_str(o, OPT_REPO) : NULL;
        bool ok = o != NULL && (uri == NULL || storage_uri_valid(uri, &why));

        if (o != NULL && !ok) {
            char *shown = command_repo_echo(uri);
            err_set(err, "invalid value \"%s\" for option \"--repo\"%s: %s", shown,
                    opt_source_note(opts, OPT_REPO), why);
            free(shown);
        }
        /* the same repository twice would refuse its own claim: one copy is all it can hold */
        for (size_t j = 0; ok && j < i; j++) {
            const char *other = opts->v[OPT_REPO].values[j];
            size_t len = strcspn(other, "?");
            if (strlen(uri) == len && strncmp(uri, other, len) == 0)
                ok = err_set(err, "option \"--repo\"%s names repository \"%s\" twice",
                             opt_source_note(opts, OPT_REPO), uri);
        }
        command_repo_options_free(o);
        if (!ok)
            return false;
    }
    return true;
}

/* The table of command_exit_status (common.h). */
static int command_kind_status(unsigned command, pgd_error_kind kind)
{
    if (command == CMD_WAL_FETCH) {
        /* PostgreSQL ends recovery on 1: only for a file that is not there (cmd.h) */
        if (kind == PGD_ERR_NOT_FOUND ||
            (kind == PGD_ERR_TRANSIENT && access(COMMAND_STANDBY_SIGNAL_FILE, F_OK) == 0))
            return EXIT_WAL_NOT_ARCHIVED;
        return EXIT_WAL_FATAL;
    }
    switch (kind) {
    case PGD_ERR_USAGE:
        return EXIT_USAGE;
    case PGD_ERR_DAMAGED:
        if (command == CMD_VERIFY || command == CMD_DRILL)
            return EXIT_DAMAGED;
        if (command == CMD_BACKUP)
            return EXIT_CHECKSUM_ERRORS;
        return EXIT_ERROR;
    case PGD_ERR_FAILED:
    case PGD_ERR_NOT_FOUND:
    case PGD_ERR_TRANSIENT:
    case PGD_ERR_EXISTS:
        break;
    }
    return EXIT_ERROR;
}

/* A command's name, for JSON log lines. */
static const char *command_name(unsigned command)
{
    static const char *const names[] = {"backup",    "restore", "list",  "wal-push",
                                        "wal-fetch", "cache",   "tune",  "check",
                                        "delete",    "verify",  "drill", "metrics"};

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (command == 1u << i)
            return names[i];
    return "";
}

/* --log-format and --log-file, before anything is logged: false (printed) when they are wrong. */
static bool command_log_setup(const pgd_options *opts, unsigned command, int *exit_code)
{
    const char *format = opt_str(opts, OPT_LOG_FORMAT), *path = opt_str(opts, OPT_LOG_FILE);
    FILE *f;

    if (strcmp(format, "text") != 0 && strcmp(format, "json") != 0) {
        log_error("invalid value \"%s\" for option \"--log-format\"%s: expected text or json",
                  format, opt_source_note(opts, OPT_LOG_FORMAT));
        return false;
    }
    log_set_json(strcmp(format, "json") == 0, command_name(command));
    if (path == NULL)
        return true;
    if ((f = fopen(path, "ae")) == NULL) {
        log_error("could not open log file \"%s\" (--log-file%s): %s", path,
                  opt_source_note(opts, OPT_LOG_FILE), strerror(errno));
        *exit_code = command_kind_status(command, PGD_ERR_FAILED);
        return false;
    }
    log_set_file(f);
    return true;
}

bool command_start(pgd_options *opts, const command_help *help, size_t max_args, int argc,
                   char **argv, int *exit_code)
{
    pgd_error err = {0};
    log_level level;

    *exit_code = command_kind_status(help->command, PGD_ERR_USAGE);
    if (!options_parse(opts, help->command, argc, argv, &err)) {
        log_error("%s", err.msg);
    } else if (opt_is_set(opts, OPT_HELP)) {
        options_print_help(help->command, help->usage, help->summary);
        *exit_code = EXIT_OK;
    } else if (!log_parse_level(opt_str(opts, OPT_LOG_LEVEL), &level)) {
        log_error("invalid value \"%s\" for option \"--log-level\": expected one of "
                  "debug|info|warning|error",
                  opt_str(opts, OPT_LOG_LEVEL));
    } else if (opts->nargs > max_args) {
        log_error("unexpected argument \"%s\" (see --help)", opts->args[max_args]);
    } else if (!command_repo_valid(opts, &err)) {
        log_error("%s", err.msg);
    } else if (command_log_setup(opts, help->command, exit_code)) {
        log_set_level(level);
        return true;
    }
    options_free(opts);
    return false;
}

int command_exit_status(unsigned command, const pgd_error *err)
{
    return command_kind_status(command, err != NULL && err->set ? err->kind : PGD_ERR_FAILED);
}

int command_fail(unsigned command, const pgd_error *err)
{
    log_error("%s", err->set ? err->msg : "unknown error");
    return command_exit_status(command, err);
}

/* Where --repo came from, in the words of a message that sends the user there. */
static void command_repo_source(const pgd_options *opts, char *out, size_t len)
{
    switch (opts->v[OPT_REPO].source) {
    case SRC_CLI:
        snprintf(out, len, "--repo");
        break;
    case SRC_ENV:
        snprintf(out, len, "PGDIRECT_REPO");
        break;
    case SRC_CONFIG:
        snprintf(out, len, "repo in config file \"%s\"", opts->config_path);
        break;
    default:
        snprintf(out, len, "the default of --repo");
        break;
    }
}

/* For a command that never creates the repository: is it there? */
static bool command_repo_exists(const pgd_options *opts, storage *repo, pgd_error *err)
{
    char source[sizeof(opts->config_path) + 32];
    bool exists;

    if (!(opts->command & COMMAND_REPO_READERS))
        return true;
    if (!storage_root_exists(repo, &exists, err))
        return false;
    if (exists)
        return true;
    command_repo_source(opts, source, sizeof(source));
    return err_set(err,
                   "repository \"%s\" does not exist (%s; backups and archive_command create it)",
                   repo->uri, source);
}

#define COMMAND_LOCK_MAX_S (36500LL * 86400) /* a hundred years: S3 takes no more */

/*
 * --s3-object-lock MODE with --s3-lock-days N: each given without the other is a mistake. N
 * days, or a duration with a unit ("90s": a test's short lock).
 */
static bool command_object_lock(const pgd_options *opts, s3_options *s3, pgd_error *err)
{
    const char *days = opt_str(opts, OPT_S3_LOCK_DAYS);
    int mode;

    if (opt_str(opts, OPT_S3_OBJECT_LOCK) == NULL && days == NULL)
        return true;
    if (opt_str(opts, OPT_S3_OBJECT_LOCK) == NULL || days == NULL)
        return err_set(err, "options \"--s3-object-lock\" and \"--s3-lock-days\" go together");
    /* a lock asked for and silently not set would look like protection */
    if (!storage_uri_is_s3(opt_str(opts, OPT_REPO)))
        return err_set(err, "option \"--s3-object-lock\" needs an S3 repository; \"%s\" is not one",
                       opt_str(opts, OPT_REPO));
    if (!opt_enum(opts, OPT_S3_OBJECT_LOCK, "governance|compliance", &mode, err))
        return false;
    if (days[0] != '\0' && strspn(days, "0123456789") == strlen(days)) {
        char *end;
        unsigned long long n = strtoull(days, &end, 10);
        s3->lock_seconds = n > 0 && n <= COMMAND_LOCK_MAX_S / 86400 ? (int64_t)n * 86400 : 0;
    } else if (!parse_duration(days, &s3->lock_seconds) || s3->lock_seconds > COMMAND_LOCK_MAX_S) {
        s3->lock_seconds = 0;
    }
    if (s3->lock_seconds <= 0)
        return err_set(err,
                       "invalid value \"%s\" for option \"--s3-lock-days\": expected days from 1 "
                       "to 36500, or a duration with a unit (\"90s\", \"12h\")",
                       days);
    s3->object_lock = mode == 0 ? "GOVERNANCE" : "COMPLIANCE";
    return true;
}

/*
 * The S3, Azure and SFTP drivers' settings come from here, through their
 * own s3_options, azure_options and sftp_options: the generic storage
 * interface forwards them without knowing what they hold. Part size, upload
 * concurrency, retries and timeout are the same options for S3 and Azure.
 */
static storage *command_open_one_store(const pgd_options *opts, bool check_exists, pgd_error *err)
{
    s3_options s3 = {0};
    azure_options azure = {0};
    sftp_options sftp = {0};
    storage_options so = {&s3, &azure, &sftp};
    storage *repo;
    long up, down, retries, timeout;
    int style;

    if (!opt_enum(opts, OPT_S3_URI_STYLE, "path|host", &style, err) ||
        !opt_size(opts, OPT_S3_PART_SIZE, S3_OPTIONS_PART_MIN, S3_OPTIONS_PART_MAX, &s3.part_size,
                  err) ||
        !opt_int(opts, OPT_S3_UPLOAD_CONCURRENCY, 1, S3_OPTIONS_CONCURRENCY_MAX, &up, err) ||
        !opt_int(opts, OPT_DOWNLOAD_CONCURRENCY, 1, S3_OPTIONS_CONCURRENCY_MAX, &down, err) ||
        !opt_int(opts, OPT_S3_RETRIES, 0, S3_OPTIONS_RETRIES_MAX, &retries, err) ||
        !opt_int(opts, OPT_S3_TIMEOUT, 1, S3_OPTIONS_TIMEOUT_MAX_S, &timeout, err))
        return NULL;
    s3.endpoint = opt_str(opts, OPT_S3_ENDPOINT);
    s3.host_style = style == 1;
    s3.region = opt_str(opts, OPT_S3_REGION);
    s3.storage_class = opt_str(opts, OPT_S3_STORAGE_CLASS);
    s3.sse = opt_str(opts, OPT_S3_SSE);
    s3.upload_concurrency = (unsigned)up;
    s3.download_concurrency = (unsigned)down;
    s3.retries = retries == 0 ? S3_OPTIONS_NO_RETRIES : (unsigned)retries;
    s3.timeout_s = timeout;
    azure.endpoint = opt_str(opts, OPT_AZURE_ENDPOINT);
    azure.block_size = s3.part_size;
    azure.upload_concurrency = s3.upload_concurrency;
    azure.retries = retries == 0 ? AZURE_OPTIONS_NO_RETRIES : (unsigned)retries;
    azure.timeout_s = timeout;
    sftp.private_key_file = opt_str(opts, OPT_SFTP_PRIVATE_KEY_FILE);
    sftp.known_hosts = opt_str(opts, OPT_SFTP_KNOWN_HOSTS);
    if (!command_object_lock(opts, &s3, err))
        return NULL;
    repo = storage_open(opt_str(opts, OPT_REPO), &so, err);
    if (repo != NULL && check_exists && !command_repo_exists(opts, repo, err)) {
        storage_free(repo);
        return NULL;
    }
    return repo;
}

/* One repository with its encryption filter: an encrypted one needs its key. */
static storage *command_open_one(const pgd_options *opts, bool check_exists, pgd_error *err)
{
    storage *repo = command_open_one_store(opts, check_exists, err);

    if (repo == NULL)
        return NULL;
    /* wal-fetch and wal-push: no request before their own (PostgreSQL runs them per segment) */
    repo = crypt_storage_open(
        repo, opt_str(opts, OPT_ENCRYPTION_KEY_FILE),
        ((opts->command & COMMAND_REPO_WRITERS) ? CRYPT_STORAGE_CREATE : 0) |
            ((opts->command & (CMD_WAL_FETCH | CMD_WAL_PUSH)) ? CRYPT_STORAGE_NO_PROBE : 0),
        err);
    /* a damaged keyring is damaged repository data, but backup's 3 means checksum errors */
    if (repo == NULL && opts->command == CMD_BACKUP && err_is(err, PGD_ERR_DAMAGED))
        err_mark(err, PGD_ERR_FAILED);
    return repo;
}

storage *command_open_store(const pgd_options *opts, pgd_error *err)
{
    pgd_options *o = command_repo_options(opts, 0, err);
    storage *repo = o != NULL ? command_open_one_store(o, true, err) : NULL;

    command_repo_options_free(o);
    return repo;
}

storage *command_open_repo_at(const pgd_options *opts, size_t i, pgd_error *err)
{
    pgd_options *o = command_repo_options(opts, i, err);
    storage *repo = o != NULL ? command_open_one(o, true, err) : NULL;

    command_repo_options_free(o);
    return repo;
}

/*
 * Several repositories: each opened on its own (its settings, its key), behind one tee
 * (storage/tee.h). For a reader, one that is not there is passed over while another is.
 */
storage *command_open_repo(const pgd_options *opts, pgd_error *err)
{
    size_t n = command_repo_count(opts);
    storage **children, *tee;
    bool exists;

    if (n == 1)
        return command_open_repo_at(opts, 0, err);
    children = xcalloc(n, sizeof(storage *));
    for (size_t i = 0; i < n; i++) {
        pgd_options *o = command_repo_options(opts, i, err);

        children[i] = o != NULL ? command_open_one(o, false, err) : NULL;
        command_repo_options_free(o);
        if (children[i] == NULL) {
            while (i-- > 0)
                storage_free(children[i]);
            free(children);
            return NULL;
        }
    }
    tee = tee_storage_new(children, n, opts->command == CMD_BACKUP ? TEE_DROP_FAILED : 0);
    free(children);
    if ((opts->command & COMMAND_REPO_READERS) &&
        (!storage_root_exists(tee, &exists, err) ||
         (!exists && !err_set(err,
                              "none of the repositories \"%s\" exists (backups and "
                              "archive_command create them)",
                              tee->uri)))) {
        storage_free(tee);
        return NULL;
    }
    return tee;
}

bool command_compression(const pgd_options *opts, compress_kind *kind, int *level, pgd_error *err)
{
    int idx;
    long lvl;

    if (!opt_enum(opts, OPT_COMPRESSION, "none|lz4|zstd", &idx, err))
        return false;
    *kind = idx == 0 ? COMPRESS_NONE : idx == 1 ? COMPRESS_LZ4 : COMPRESS_ZSTD;
    *level = COMPRESS_LEVEL_DEFAULT;
    if (opt_str(opts, OPT_COMPRESSION_LEVEL) != NULL) {
        if (!opt_int(opts, OPT_COMPRESSION_LEVEL, 0, 22, &lvl, err))
            return false;
        *level = (int)lvl;
    }
    return compress_level_valid(*kind, *level, err);
}

/* An error's kind as --json names it ("error_kind"), for a program that runs the command. */
static const char *command_kind_name(const pgd_error *err)
{
    static const char *const names[] = {
        [PGD_ERR_FAILED] = "failed",       [PGD_ERR_USAGE] = "usage",
        [PGD_ERR_NOT_FOUND] = "not_found", [PGD_ERR_TRANSIENT] = "transient",
        [PGD_ERR_EXISTS] = "exists",       [PGD_ERR_DAMAGED] = "damaged"};

    if (err == NULL || !err->set || (size_t)err->kind >= sizeof(names) / sizeof(names[0]) ||
        names[err->kind] == NULL)
        return "failed";
    return names[err->kind];
}

json_t *command_json_outcome(json_t *o, int rc, const pgd_error *err)
{
    if (rc != EXIT_OK) {
        if (o == NULL)
            o = json_object();
        if (o != NULL &&
            (json_object_set_new(o, "ok", json_false()) != 0 ||
             json_object_set_new(
                 o, "error", json_string(err != NULL && err->set ? err->msg : "unknown error")) !=
                 0 ||
             json_object_set_new(o, "error_kind", json_string(command_kind_name(err))) != 0 ||
             json_object_set_new(o, "exit_code", json_integer(rc)) != 0)) {
            json_decref(o);
            o = NULL;
        }
    } else if (o != NULL) {
        json_object_set_new(o, "ok", json_true());
    }
    return o;
}

int command_print_json(json_t *o, int rc, const pgd_error *err)
{
    char *text;

    o = command_json_outcome(o, rc, err);
    text = o != NULL ? json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    if (text == NULL) {
        log_error("could not serialise the result as JSON");
        return rc != EXIT_OK ? rc : EXIT_ERROR;
    }
    printf("%s\n", text);
    free(text);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        log_error("could not write the JSON result to standard output");
        return rc != EXIT_OK ? rc : EXIT_ERROR;
    }
    return rc;
}

bool command_progress(const pgd_options *opts, bool *enabled, pgd_error *err)
{
    int idx;

    if (!opt_enum(opts, OPT_PROGRESS, "auto|on|off", &idx, err))
        return false;
    *enabled = idx == 1 || (idx == 0 && isatty(STDERR_FILENO));
    return true;
}

void command_write_metrics(const pgd_options *opts, storage *repo, const metrics_extra *extra)
{
    const char *path = opt_applies(opts, OPT_METRICS_FILE) ? opt_str(opts, OPT_METRICS_FILE) : NULL;
    pgd_error err = {0};
    char *text = NULL;

    if (path == NULL || repo == NULL)
        return;
    if (!metrics_collect(repo, extra, &text, &err) || !metrics_write_file(path, text, &err))
        log_warn("could not write the metrics file \"%s\" (--metrics-file): %s", path, err.msg);
    free(text);
}
