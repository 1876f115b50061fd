/*
 * wal_async.c - the faces of wal-push --archive-async and wal-fetch
 * --prefetch (see wal_async.h): the options become a wal_async_env, and
 * the outcome an exit status.
 */
#include "cmd/wal_async.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/common.h"
#include "pg/wal_name.h"
#include "util/log.h"
#include "util/xmalloc.h"
#include "wal/wal_async.h"

#define WAL_REPO_ID_MAX 2048

/*
 * Everything a background process takes from the command that starts it
 * and keeps for its life: options, and the AWS_* variables (credentials
 * included: a restarted server may bring new ones). Only a hash of them
 * reaches the spool.
 */
static const opt_id wal_async_settings_opts[] = {
    OPT_COMPRESSION,
    OPT_COMPRESSION_LEVEL,
    OPT_ARCHIVE_PUSH_CONCURRENCY,
    OPT_PREFETCH_CONCURRENCY,
    OPT_LOG_LEVEL,
    OPT_S3_ENDPOINT,
    OPT_S3_URI_STYLE,
    OPT_S3_REGION,
    OPT_S3_STORAGE_CLASS,
    OPT_S3_SSE,
    OPT_S3_PART_SIZE,
    OPT_S3_UPLOAD_CONCURRENCY,
    OPT_S3_RETRIES,
    OPT_S3_TIMEOUT,
    OPT_DOWNLOAD_CONCURRENCY,
    OPT_AZURE_ENDPOINT,
    OPT_SFTP_PRIVATE_KEY_FILE,
    OPT_SFTP_KNOWN_HOSTS,
};
static const char *const wal_async_settings_env[] = {
    "AWS_ACCESS_KEY_ID",       "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",       "AWS_REGION",
    "AWS_DEFAULT_REGION",      "AWS_ENDPOINT_URL",
    "AZURE_STORAGE_ACCOUNT",   "AZURE_STORAGE_KEY",
    "AZURE_STORAGE_SAS_TOKEN", "AZURE_STORAGE_CONNECTION_STRING",
    "SSH_AUTH_SOCK",
};

static uint64_t wal_async_hash(uint64_t h, const char *s)
{
    for (const char *p = s != NULL ? s : "(unset)"; *p != '\0'; p++)
        h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
    return (h ^ '\n') * 0x100000001b3ull;
}

/* The fingerprint of the settings above (see wal_spool_settings_write). */
static void wal_async_settings(const pgd_options *opts, char *out, size_t outlen)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */

    for (size_t i = 0; i < sizeof(wal_async_settings_opts) / sizeof(wal_async_settings_opts[0]);
         i++)
        h = wal_async_hash(h, opt_str(opts, wal_async_settings_opts[i]));
    for (size_t i = 0; i < sizeof(wal_async_settings_env) / sizeof(wal_async_settings_env[0]); i++)
        h = wal_async_hash(h, getenv(wal_async_settings_env[i]));
    snprintf(out, outlen, "%016" PRIx64, h);
}

/*
 * The repository as the spool keys it: its URI (without ?settings) and, for S3 and Azure,
 * the endpoint; opts are that repository's own (command_repo_options).
 */
static void wal_async_repo_id(const pgd_options *opts, char *out, size_t outlen)
{
    const char *endpoint = opt_str(opts, OPT_S3_ENDPOINT), *repo = opt_str(opts, OPT_REPO);

    if (endpoint == NULL)
        endpoint = getenv("AWS_ENDPOINT_URL");
    if (storage_uri_is_azure(repo))
        endpoint = opt_str(opts, OPT_AZURE_ENDPOINT);
    else if (endpoint == NULL || !storage_uri_is_s3(repo))
        endpoint = NULL;
    snprintf(out, outlen, "%s%s%s", repo, endpoint != NULL ? " at " : "",
             endpoint != NULL ? endpoint : "");
}

/* Repository i of the command, as the background process opens it. */
typedef struct wal_async_repo {
    const pgd_options *opts; /* the command's */
    size_t i;
    pgd_options *own; /* repository i's own options (its URI, its settings) */
    char repo_id[WAL_REPO_ID_MAX];
    char uris[WAL_REPO_ID_MAX]; /* several repositories read through one (prefetch) */
    char settings[WAL_SETTINGS_LEN];
} wal_async_repo;

static storage *wal_async_open_repo(void *arg, pgd_error *err)
{
    const wal_async_repo *r = arg;

    return command_open_repo_at(r->opts, r->i, err);
}

/*
 * What the options say the spool and the background process of repository i are;
 * r holds it (wal_async_repo_free). False: its --repo value is wrong.
 */
static bool wal_async_env_of(const pgd_options *opts, size_t i, wal_async_repo *r,
                             wal_async_env *env, pgd_error *err)
{
    r->opts = opts;
    r->i = i;
    if ((r->own = command_repo_options(opts, i, err)) == NULL)
        return false;
    wal_async_repo_id(r->own, r->repo_id, sizeof(r->repo_id));
    wal_async_settings(r->own, r->settings, sizeof(r->settings));
    *env = (wal_async_env){.spool_path = opt_str(opts, OPT_SPOOL_PATH),
                           .repo_id = r->repo_id,
                           .repo_uri = opt_str(r->own, OPT_REPO),
                           .settings = r->settings,
                           .open_repo = wal_async_open_repo,
                           .open_arg = r};
    return true;
}

static storage *wal_async_open_all(void *arg, pgd_error *err)
{
    const wal_async_repo *r = arg;

    return command_open_repo(r->opts, err);
}

/*
 * The prefetcher of several repositories reads through them all (storage/tee.h: the first
 * that has a segment serves it): its spool is keyed by every repository, in order, and its
 * settings are those of every one. r[0] holds it.
 */
static bool wal_async_env_of_all(const pgd_options *opts, wal_async_repo *r, wal_async_env *env,
                                 pgd_error *err)
{
    size_t n = command_repo_count(opts);
    char ids[WAL_REPO_ID_MAX] = "", uris[WAL_REPO_ID_MAX] = "";
    uint64_t h = 0xcbf29ce484222325ull;

    for (size_t i = 0; i < n; i++) {
        wal_async_repo one = {0};
        wal_async_env e;
        size_t li = strlen(ids), lu = strlen(uris);

        if (!wal_async_env_of(opts, i, &one, &e, err))
            return false;
        bool fits = (size_t)snprintf(ids + li, sizeof(ids) - li, "%s%s", i > 0 ? " + " : "",
                                     one.repo_id) < sizeof(ids) - li &&
                    (size_t)snprintf(uris + lu, sizeof(uris) - lu, "%s%s", i > 0 ? ", " : "",
                                     e.repo_uri) < sizeof(uris) - lu;
        h = wal_async_hash(h, one.settings);
        command_repo_options_free(one.own);
        if (!fits)
            return err_set(err, "option \"--repo\": the repositories' names are too long "
                                "together for --prefetch's spool");
    }
    r->opts = opts;
    snprintf(r->repo_id, sizeof(r->repo_id), "%s", ids);
    snprintf(r->uris, sizeof(r->uris), "%s", uris);
    snprintf(r->settings, sizeof(r->settings), "%016" PRIx64, h);
    *env = (wal_async_env){.spool_path = opt_str(opts, OPT_SPOOL_PATH),
                           .repo_id = r->repo_id,
                           .repo_uri = r->uris,
                           .settings = r->settings,
                           .open_repo = wal_async_open_all,
                           .open_arg = r};
    return true;
}

static void wal_async_repo_free(wal_async_repo *r, size_t n)
{
    for (size_t i = 0; r != NULL && i < n; i++)
        command_repo_options_free(r[i].own);
    free(r);
}

/* The exit status of a process that became the background one, at the end of its life. */
static int wal_async_daemon_status(wal_async_outcome o)
{
    return o == WAL_ASYNC_DAEMON_OK ? EXIT_OK : EXIT_ERROR;
}

static bool wal_async_push_settings_of(const pgd_options *opts, wal_async_push_settings *s,
                                       pgd_error *err)
{
    long concurrency;

    if (!opt_int(opts, OPT_ARCHIVE_PUSH_CONCURRENCY, 1, WAL_PUSH_CONCURRENCY_MAX, &concurrency,
                 err) ||
        !opt_size(opts, OPT_ARCHIVE_PUSH_QUEUE_MAX, WAL_SEG_SIZE_MIN, UINT64_MAX, &s->queue_max,
                  err) ||
        !opt_int(opts, OPT_ARCHIVE_TIMEOUT, 1, WAL_ARCHIVE_TIMEOUT_MAX_S, &s->timeout_s, err) ||
        !command_compression(opts, &s->kind, &s->level, err))
        return false;
    s->concurrency = (unsigned)concurrency;
    return true;
}

int cmd_wal_async_push(const pgd_options *opts, const char *path, wal_direct_push_fn direct)
{
    size_t n = command_repo_count(opts);
    wal_async_repo *repos = xcalloc(n, sizeof(*repos));
    wal_async_env *envs = xcalloc(n, sizeof(*envs));
    wal_async_push_settings s;
    pgd_error err = {0};
    wal_async_outcome o;
    bool ok = wal_async_push_settings_of(opts, &s, &err);

    for (size_t i = 0; ok && i < n; i++)
        ok = wal_async_env_of(opts, i, &repos[i], &envs[i], &err);
    if (!ok) {
        wal_async_repo_free(repos, n);
        free(envs);
        err_mark(&err, PGD_ERR_USAGE);
        return command_fail(CMD_WAL_PUSH, &err);
    }
    o = n == 1 ? wal_async_push(&envs[0], &s, path, &err)
               : wal_async_push_several(envs, n, &s, path, &err);
    wal_async_repo_free(repos, n);
    free(envs);
    switch (o) {
    case WAL_ASYNC_DONE:
        return EXIT_OK;
    case WAL_ASYNC_DIRECT:
        return direct(opts, path);
    case WAL_ASYNC_FAILED:
        return command_fail(CMD_WAL_PUSH, &err);
    default:
        return wal_async_daemon_status(o);
    }
}

int cmd_wal_async_fetch(const pgd_options *opts, const char *name, const char *dest,
                        unsigned prefetch, wal_direct_fetch_fn direct)
{
    wal_async_repo repo = {0};
    wal_async_env env;
    wal_async_fetch_call call;
    pgd_error err = {0};
    wal_async_outcome o;
    long concurrency;
    int rc;

    if (prefetch == 0)
        return direct(opts, name, dest);
    if (!(command_repo_count(opts) > 1 ? wal_async_env_of_all(opts, &repo, &env, &err)
                                       : wal_async_env_of(opts, 0, &repo, &env, &err)) ||
        !opt_int(opts, OPT_PREFETCH_CONCURRENCY, 1, WAL_PREFETCH_MAX, &concurrency, &err)) {
        command_repo_options_free(repo.own);
        err_mark(&err, PGD_ERR_USAGE);
        return command_fail(CMD_WAL_FETCH, &err);
    }
    rc = wal_async_fetch_serve(&env, name, dest, &call) == WAL_ASYNC_DONE
             ? EXIT_OK
             : direct(opts, name, dest);
    if (rc == EXIT_OK) {
        o = wal_async_fetch_ahead(&env, &call, name, dest, prefetch, (unsigned)concurrency);
        rc = o == WAL_ASYNC_DONE ? EXIT_OK : wal_async_daemon_status(o);
    }
    command_repo_options_free(repo.own);
    return rc;
}

bool cmd_wal_async_backlog(const pgd_options *opts, size_t i, const char *datadir,
                           wal_queue_stat *st, bool *none, pgd_error *err)
{
    wal_async_repo repo = {0};
    wal_async_env env;
    bool ok = wal_async_env_of(opts, i, &repo, &env, err) &&
              wal_async_backlog(&env, datadir, st, none, err);

    command_repo_options_free(repo.own);
    return ok;
}
