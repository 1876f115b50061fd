/*
 * wal_async.c - what the foregrounds of wal-push --archive-async and
 * wal-fetch --prefetch share: where the command's spool is (keyed by its
 * data directory and repository), the clock a waiting command polls
 * with, a repository's backlog, and the queues of repositories no longer
 * given. The foregrounds are wal_async_push.c and wal_async_fetch.c; the
 * background processes are started by wal_async_daemon.c.
 */
#include "wal/wal_async.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/log.h"
#include "util/units.h"
#include "util/xmalloc.h"
#include "wal/wal_async_internal.h"
#include "wal/wal_pusher.h"

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

bool wal_async_spool_root(const wal_async_env *env, const char *datadir, char *root, size_t len,
                          pgd_error *err)
{
    const char *given = env->spool_path;

    if (given != NULL && given[0] != '/') {
        char cwd[PATH_MAX];
        if (getcwd(cwd, sizeof(cwd)) == NULL)
            return err_errno(err, errno, "could not find the current directory");
        if ((size_t)snprintf(root, len, "%s/%s", cwd, given) >= len)
            return err_set(err, "spool path too long: \"%s/%s\"", cwd, given);
        return true;
    }
    if (given != NULL) {
        snprintf(root, len, "%s", given);
        return true;
    }
    return wal_spool_default_root(datadir, root, len, err);
}

/* The spool directory of `role` for datadir (absolute), created if missing. */
bool wal_async_spool_dir(const wal_async_env *env, wal_spool_role role, const char *datadir,
                         char *dir, size_t dirlen, pgd_error *err)
{
    char root[WAL_SPOOL_PATH_MAX];

    return wal_async_spool_root(env, datadir, root, sizeof(root), err) &&
           wal_spool_open(root, role, datadir, env->repo_id, dir, dirlen, err);
}

bool wal_async_backlog(const wal_async_env *env, const char *datadir, wal_queue_stat *st,
                       bool *none, pgd_error *err)
{
    char real[PATH_MAX], root[WAL_SPOOL_PATH_MAX], dir[WAL_SPOOL_PATH_MAX + 32];
    char pg_wal[PATH_MAX + 16];
    struct stat sb;

    memset(st, 0, sizeof(*st));
    *none = true;
    if (realpath(datadir, real) == NULL)
        return err_errno(err, errno, "could not resolve data directory \"%s\"", datadir);
    if (!wal_async_spool_root(env, real, root, sizeof(root), err))
        return false;
    snprintf(dir, sizeof(dir), "%s/push-%016" PRIx64, root, wal_spool_key(real, env->repo_id));
    if (stat(dir, &sb) != 0)
        return errno == ENOENT
                   ? true
                   : err_errno(err, errno, "could not open spool directory \"%s\"", dir);
    *none = false;
    snprintf(pg_wal, sizeof(pg_wal), "%s/pg_wal", real);
    return wal_pusher_backlog(pg_wal, dir, st, err);
}

/* Warn about each non-empty queue of this data directory whose repository is no longer given. */
static bool wal_async_orphan(void *arg, const char *dir, const char *repo_id,
                             const wal_queue_stat *st, pgd_error *err)
{
    char bytes[32];

    (void)arg;
    (void)err;
    units_format_bytes(st->bytes, bytes, sizeof(bytes));
    log_warn("the queue of repository \"%s\" (\"%s/queue\") holds %u WAL files (%s, oldest "
             "\"%s\"), but that repository is no longer given with --repo: they wait there "
             "and are pushed nowhere (give the repository again to have them pushed, or remove "
             "the directory to drop them)",
             repo_id, dir, st->files, bytes, st->oldest);
    return true;
}

void wal_async_report_orphans(const wal_async_env *const *envs, size_t n, const char *datadir)
{
    char root[WAL_SPOOL_PATH_MAX];
    const char **ids = xcalloc(n, sizeof(*ids));
    pgd_error err = {0};

    for (size_t i = 0; i < n; i++)
        ids[i] = envs[i]->repo_id;
    if (!wal_async_spool_root(envs[0], datadir, root, sizeof(root), &err) ||
        !wal_spool_queue_orphans(root, datadir, ids, n, wal_async_orphan, NULL, &err))
        log_debug("could not look for the queues of repositories no longer given: %s", err.msg);
    free(ids);
}
