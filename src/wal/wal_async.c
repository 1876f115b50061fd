/*
 * wal_async.c - what the foregrounds of wal-push --archive-async and
 * wal-fetch --prefetch share: where the command's spool is (keyed by its
 * data directory and repository) and the clock a waiting command polls
 * with. The foregrounds are wal_async_push.c and wal_async_fetch.c; the
 * background processes are started by wal_async_daemon.c.
 */
#include "wal/wal_async.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "wal/wal_async_internal.h"

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

/* The spool directory of `role` for datadir (absolute), created if missing. */
bool wal_async_spool_dir(const wal_async_env *env, wal_spool_role role, const char *datadir,
                         char *dir, size_t dirlen, pgd_error *err)
{
    char root[WAL_SPOOL_PATH_MAX];
    const char *given = env->spool_path;

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
    return wal_spool_open(root, role, datadir, env->repo_id, dir, dirlen, err);
}
