/*
 * wal_async.c - what the foregrounds of wal-push --archive-async and
 * wal-fetch --prefetch share: where the command's spool is (keyed by its
 * data directory and repository), the fingerprint of the settings it
 * would start a background process with, and the clock a waiting command
 * polls with. The foregrounds are wal_async_push.c and wal_async_fetch.c;
 * the background processes are started by wal_async_daemon.c.
 */
#include "cmd/wal_async.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd/wal_async_internal.h"

#define WAL_REPO_ID_MAX 2048

void wal_async_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

long wal_async_now_ms(void)
{
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/* The repository as the spool keys it: its URI and, for S3, the endpoint. */
static void wal_async_repo_id(const pgd_options *opts, char *out, size_t outlen)
{
    const char *endpoint = opt_str(opts, OPT_S3_ENDPOINT), *repo = opt_str(opts, OPT_REPO);

    if (endpoint == NULL)
        endpoint = getenv("AWS_ENDPOINT_URL");
    if (endpoint == NULL || !storage_uri_is_s3(repo))
        endpoint = NULL;
    snprintf(out, outlen, "%s%s%s", repo, endpoint != NULL ? " at " : "",
             endpoint != NULL ? endpoint : "");
}

/* The spool directory of `role` for datadir (absolute), created if missing. */
bool wal_async_spool_dir(const pgd_options *opts, wal_spool_role role, const char *datadir,
                         char *dir, size_t dirlen, pgd_error *err)
{
    char root[WAL_SPOOL_PATH_MAX], repo_id[WAL_REPO_ID_MAX];
    const char *given = opt_str(opts, OPT_SPOOL_PATH);

    if (given != NULL && given[0] != '/') {
        char cwd[PATH_MAX];
        if (getcwd(cwd, sizeof(cwd)) == NULL)
            return err_errno(err, errno, "could not find the current directory");
        if ((size_t)snprintf(root, sizeof(root), "%s/%s", cwd, given) >= sizeof(root))
            return err_set(err, "spool path too long: \"%s/%s\"", cwd, given);
    } else if (given != NULL) {
        snprintf(root, sizeof(root), "%s", given);
    } else if (!wal_spool_default_root(datadir, root, sizeof(root), err)) {
        return false;
    }
    wal_async_repo_id(opts, repo_id, sizeof(repo_id));
    return wal_spool_open(root, role, datadir, repo_id, dir, dirlen, err);
}

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
};
static const char *const wal_async_settings_env[] = {
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
    "AWS_REGION",        "AWS_DEFAULT_REGION",    "AWS_ENDPOINT_URL",
};

static uint64_t wal_async_hash(uint64_t h, const char *s)
{
    for (const char *p = s != NULL ? s : "(unset)"; *p != '\0'; p++)
        h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
    return (h ^ '\n') * 0x100000001b3ull;
}

void wal_async_settings(const pgd_options *opts, char *out, size_t outlen)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */

    for (size_t i = 0; i < sizeof(wal_async_settings_opts) / sizeof(wal_async_settings_opts[0]);
         i++)
        h = wal_async_hash(h, opt_str(opts, wal_async_settings_opts[i]));
    for (size_t i = 0; i < sizeof(wal_async_settings_env) / sizeof(wal_async_settings_env[0]); i++)
        h = wal_async_hash(h, getenv(wal_async_settings_env[i]));
    snprintf(out, outlen, "%016" PRIx64, h);
}
