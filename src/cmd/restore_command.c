/*
 * restore_command.c - wal-fetch and the repository options it needs, for
 * the restored server (see restore_command.h).
 */
#define _GNU_SOURCE
#include "cmd/restore_command.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/common.h"
#include "restore/recovery_conf.h"
#include "storage/azure/azure.h"
#include "storage/crypt/storage.h"
#include "storage/s3/s3.h"
#include "storage/sftp/sftp.h"
#include "storage/tee.h"
#include "util/xmalloc.h"

#define RESTORE_COMMAND_ARGS_MAX 40 /* one repository's 16, or several as one --repo each */
#define SELF_EXE                 "/proc/self/exe"

/* Arguments of wal-fetch (malloc'd). */
typedef struct restore_command_args {
    char *v[RESTORE_COMMAND_ARGS_MAX];
    size_t n;
} restore_command_args;

bool restore_command_repo_is_s3(const storage *repo)
{
    return storage_uri_is_s3(repo->uri);
}

bool restore_command_repo_is_azure(const storage *repo)
{
    return storage_uri_is_azure(repo->uri);
}

static void restore_command_args_free(restore_command_args *a)
{
    for (size_t i = 0; i < a->n; i++)
        free(a->v[i]);
    a->n = 0;
}

static bool restore_command_arg(restore_command_args *a, const char *flag, const char *value,
                                pgd_error *err)
{
    if (a->n + 2 > RESTORE_COMMAND_ARGS_MAX)
        return err_set(err, "too many restore_command arguments");
    a->v[a->n++] = xstrdup(flag);
    a->v[a->n++] = xstrdup(value);
    return true;
}

/* the endpoint and region as the S3 driver resolved them: the server reaches the same store */
static bool restore_command_s3_args(const pgd_options *opts, const storage *repo,
                                    restore_command_args *a, pgd_error *err)
{
    const char *endpoint, *region;

    if (!s3_storage_where(crypt_storage_inner(repo), &endpoint, &region))
        return err_set(err, "repository \"%s\" is not an open S3 repository", repo->uri);
    return restore_command_arg(a, "--repo", repo->uri, err) &&
           restore_command_arg(a, "--s3-endpoint", endpoint, err) &&
           restore_command_arg(a, "--s3-region", region, err) &&
           restore_command_arg(a, "--s3-uri-style", opt_str(opts, OPT_S3_URI_STYLE), err) &&
           restore_command_arg(a, "--s3-retries", opt_str(opts, OPT_S3_RETRIES), err) &&
           restore_command_arg(a, "--s3-timeout", opt_str(opts, OPT_S3_TIMEOUT), err) &&
           restore_command_arg(a, "--download-concurrency", opt_str(opts, OPT_DOWNLOAD_CONCURRENCY),
                               err);
}

/* the key and known hosts files as absolute paths: the server's restore_command runs elsewhere */
static bool restore_command_sftp_args(const storage *repo, restore_command_args *a, pgd_error *err)
{
    const char *key_file, *known_hosts;

    if (!sftp_storage_where(crypt_storage_inner(repo), &key_file, &known_hosts))
        return err_set(err, "repository \"%s\" is not an open SFTP repository", repo->uri);
    return restore_command_arg(a, "--repo", repo->uri, err) &&
           (key_file == NULL || restore_command_arg(a, "--sftp-private-key-file", key_file, err)) &&
           restore_command_arg(a, "--sftp-known-hosts", known_hosts, err);
}

/* the endpoint as the Azure driver resolved it; credentials stay in the server's environment */
static bool restore_command_azure_args(const pgd_options *opts, const storage *repo,
                                       restore_command_args *a, pgd_error *err)
{
    const char *endpoint;

    if (!azure_storage_where(crypt_storage_inner(repo), &endpoint))
        return err_set(err, "repository \"%s\" is not an open Azure repository", repo->uri);
    return restore_command_arg(a, "--repo", repo->uri, err) &&
           restore_command_arg(a, "--azure-endpoint", endpoint, err) &&
           restore_command_arg(a, "--s3-retries", opt_str(opts, OPT_S3_RETRIES), err) &&
           restore_command_arg(a, "--s3-timeout", opt_str(opts, OPT_S3_TIMEOUT), err);
}

static bool restore_command_args_of(const pgd_options *opts, const storage *repo,
                                    restore_command_args *a, pgd_error *err)
{
    char path[PATH_MAX];

    if (restore_command_repo_is_s3(repo)) {
        if (!restore_command_s3_args(opts, repo, a, err))
            return false;
    } else if (storage_uri_is_sftp(repo->uri)) {
        if (!restore_command_sftp_args(repo, a, err))
            return false;
    } else if (restore_command_repo_is_azure(repo)) {
        if (!restore_command_azure_args(opts, repo, a, err))
            return false;
    } else {
        /* the server runs restore_command in the data directory: a relative path would move */
        /* one of several that is gone (the others serve) keeps its absolute path */
        if (realpath(repo->uri, path) == NULL &&
            (errno != ENOENT || repo->uri[0] != '/' ||
             snprintf(path, sizeof(path), "%s", repo->uri) >= (int)sizeof(path)))
            return err_errno(err, errno, "could not resolve repository \"%s\"", repo->uri);
        if (!restore_command_arg(a, "--repo", path, err))
            return false;
    }
    /* the key file's path, never the key: the server reads the file as wal-fetch runs */
    if (crypt_storage_is_encrypted(repo)) {
        if (realpath(opt_str(opts, OPT_ENCRYPTION_KEY_FILE), path) == NULL)
            return err_errno(err, errno, "could not resolve encryption key file \"%s\"",
                             opt_str(opts, OPT_ENCRYPTION_KEY_FILE));
        if (!restore_command_arg(a, "--encryption-key-file", path, err))
            return false;
    }
    return true;
}

/* --config: the file may hold what no flag carries; flags win over it, as here */
static bool restore_command_config(const pgd_options *opts, restore_command_args *a, pgd_error *err)
{
    char path[PATH_MAX];

    if (!opt_is_set(opts, OPT_CONFIG))
        return true;
    if (realpath(opt_str(opts, OPT_CONFIG), path) == NULL)
        return err_errno(err, errno, "could not resolve config file \"%s\"",
                         opt_str(opts, OPT_CONFIG));
    return restore_command_arg(a, "--config", path, err);
}

/*
 * Several repositories: repository i's arguments ("--repo URI --NAME VALUE ...") become one
 * --repo value, URI?NAME=VALUE&... (cmd/common.h), so that wal-fetch reads from them in the
 * same order. Its settings never hold a secret (the key by its file's path).
 */
static bool restore_command_tee_arg(const pgd_options *opts, storage *repo, size_t i,
                                    restore_command_args *a, pgd_error *err)
{
    pgd_options *o = command_repo_options(opts, i, err);
    restore_command_args one = {.n = 0};
    char *value = NULL;
    size_t len;
    bool ok = o != NULL && restore_command_args_of(o, tee_storage_child(repo, i), &one, err);

    command_repo_options_free(o);
    for (size_t k = 2; ok && k + 1 < one.n; k += 2)
        if (strpbrk(one.v[k + 1], "&?\n") != NULL)
            ok = err_set(err,
                         "the restored server cannot be given option \"%s\" of repository "
                         "\"%s\": its value \"%s\" holds '&', '?' or a line break",
                         one.v[k], tee_storage_child(repo, i)->uri, one.v[k + 1]);
    if (ok) {
        value = xstrdup(one.v[1]);
        for (size_t k = 2; k + 1 < one.n; k += 2) {
            char *next =
                xasprintf("%s%c%s=%s", value, k == 2 ? '?' : '&', one.v[k] + 2, one.v[k + 1]);
            free(value);
            value = next;
        }
        len = strlen(value);
        ok = len > 0 && restore_command_arg(a, "--repo", value, err);
    }
    free(value);
    restore_command_args_free(&one);
    return ok;
}

static bool restore_command_all_args(const pgd_options *opts, const storage *repo,
                                     restore_command_args *a, pgd_error *err)
{
    if (!tee_storage_is(repo)) { /* its own settings (URI?...) too: the key file's path */
        pgd_options *o = command_repo_options(opts, 0, err);
        bool ok = o != NULL && restore_command_args_of(o, repo, a, err);
        command_repo_options_free(o);
        return ok && restore_command_config(opts, a, err);
    }
    for (size_t i = 0; i < tee_storage_count(repo); i++)
        if (!restore_command_tee_arg(opts, (storage *)repo, i, a, err))
            return false;
    return restore_command_config(opts, a, err);
}

bool restore_command_build(const pgd_options *opts, const storage *repo, char **out, pgd_error *err)
{
    restore_command_args a = {.n = 0};
    char exe[PATH_MAX];
    ssize_t exe_len = readlink(SELF_EXE, exe, sizeof(exe) - 1);
    bool ok;

    if (exe_len < 0)
        return err_errno(err, errno, "could not find the pgdirect executable");
    exe[exe_len] = '\0';
    ok = restore_command_all_args(opts, repo, &a, err) &&
         recovery_conf_restore_command(exe, (const char *const *)a.v, a.n, out, err);
    restore_command_args_free(&a);
    return ok;
}
