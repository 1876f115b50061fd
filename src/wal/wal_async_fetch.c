/*
 * wal_async_fetch.c - the foreground of wal-fetch --prefetch: the command
 * PostgreSQL's restore_command runs serves a segment from the prefetch
 * spool when it is there and intact (else fetches it directly), then asks
 * the background fetcher for the segments after it, starting one when
 * none runs. Also the fetcher's life, once started: keep the requested
 * segments ready until nobody asks any more.
 */
#define _GNU_SOURCE
#include "wal/wal_async.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/politeness.h"
#include "pg/wal_name.h"
#include "util/log.h"
#include "wal/wal_async_internal.h"
#include "wal/wal_prefetch.h"

/* A fetcher stays this long after the last request (a segment replayed in that time). */
#define WAL_FETCHER_IDLE_EXIT_S 60
/*
 * How long wal-fetch waits for a download of its segment that the fetcher
 * has started, before fetching it itself; a download that takes longer is
 * slow in a way a second one would not fix.
 */
#define WAL_PREFETCH_WAIT_S 60
/*
 * How far the prefetcher raises its nice value (from the server's): replay
 * (the startup process) is recovery's critical path and the prefetcher
 * works ahead of it, so on a machine with few CPUs it should take what
 * replay leaves.
 */
#define WAL_PREFETCH_NICE 10
/* why a prefetched file was not served: one short clause */
#define WAL_WHY_LEN 256

/* The background fetcher's life: keep the requested segments ready until idle. */
static wal_async_outcome wal_async_fetch_background(const wal_async_env *env, unsigned concurrency,
                                                    const char *dir, int lock_fd)
{
    wal_prefetch_config cfg = {
        .spool_dir = dir,
        .concurrency = concurrency,
        .idle_exit_s = WAL_FETCHER_IDLE_EXIT_S,
        .hooks = wal_async_daemon_hooks(env, dir),
    };
    pgd_error err = {0};
    char when[WAL_WHEN_LEN];
    wal_prefetch_stop why;
    bool ok;

    wal_async_daemon_when(when, sizeof(when));
    log_info("prefetcher %d started at %s: repository \"%s\", %u at a time", (int)getpid(), when,
             env->repo_uri, concurrency);
    if (!politeness_nice(WAL_PREFETCH_NICE, &err)) {
        log_warn("%s: the prefetcher runs at the normal nice value", err.msg);
        err = (pgd_error){0};
    }
    ok = wal_prefetch_run(&cfg, &why, &err);
    /*
     * Nobody asks any more: recovery has ended (at its target, say) or
     * waits. What is left would lie on disk for nothing; a later request
     * downloads it again.
     */
    if (ok)
        ok = wal_spool_entry_prune(dir, NULL, true, &err);
    if (!ok)
        log_error("prefetcher %d stopped: %s", (int)getpid(), err.msg);
    else if (why == WAL_PREFETCH_STOP_SETTINGS)
        log_info("prefetcher %d stopped: restore_command runs with other settings now (the next "
                 "wal-fetch starts a prefetcher with those); spool emptied",
                 (int)getpid());
    else if (why == WAL_PREFETCH_STOP_NO_REQUEST)
        log_info("prefetcher %d stopped: the spool holds no request; spool emptied", (int)getpid());
    else
        log_info("prefetcher %d stopped: no request for %d s; spool emptied", (int)getpid(),
                 WAL_FETCHER_IDLE_EXIT_S);
    close(lock_fd);
    return ok ? WAL_ASYNC_DAEMON_OK : WAL_ASYNC_DAEMON_FAILED;
}

/*
 * Serve `name` from the spool if it is there and intact; wait for a
 * download of it in progress. *served says whether dest now holds it.
 */
static void wal_async_fetch_spooled(const char *dir, const char *datadir, const char *name,
                                    const char *dest, bool *served)
{
    uint64_t sysid = wal_spool_control_sysid(datadir);
    long start = wal_async_now_ms(), deadline = start + WAL_PREFETCH_WAIT_S * 1000L,
         pause = WAL_POLL_MIN_MS;
    pgd_error err = {0};
    char why[WAL_WHY_LEN];

    *served = false;
    for (;;) {
        wal_entry_result result;
        bool ready, partial, held;

        if (!wal_spool_entry_take(dir, name, dest, sysid, &result, why, sizeof(why), &err)) {
            log_warn("%s; fetching \"%s\" from the repository", err.msg, name);
            return;
        }
        if (result == WAL_ENTRY_SERVED) {
            /* the time, a download waited for included: does the fetcher keep ahead of recovery? */
            log_debug("WAL file \"%s\" served from the prefetch spool after %ld ms", name,
                      wal_async_now_ms() - start);
            *served = true;
            return;
        }
        if (result == WAL_ENTRY_STALE) {
            log_warn("prefetched WAL file \"%s\" in \"%s\" is %s: removed, fetching it from the "
                     "repository",
                     name, dir, why);
            return;
        }
        if (result == WAL_ENTRY_CORRUPT) {
            log_warn("prefetched WAL file \"%s\" in \"%s\" is corrupt (%s): removed, fetching it "
                     "from the repository",
                     name, dir, why);
            return;
        }
        if (!wal_spool_entry_state(dir, name, &ready, &partial, &err) ||
            !wal_spool_lock_held(dir, &held, &err)) {
            log_warn("%s; fetching \"%s\" from the repository", err.msg, name);
            return;
        }
        if (!ready && (!partial || !held || wal_async_now_ms() >= deadline))
            return;
        wal_async_sleep_ms(pause);
        pause = pause * 2 > WAL_POLL_MAX_MS ? WAL_POLL_MAX_MS : pause * 2;
    }
}

wal_async_outcome wal_async_fetch_serve(const wal_async_env *env, const char *name,
                                        const char *dest, wal_async_fetch_call *call)
{
    pgd_error err = {0};
    bool served;

    call->spooled = false;
    if (wal_name_kind(name) != WAL_FILE_SEGMENT)
        return WAL_ASYNC_DIRECT;
    /* restore_command runs in the data directory */
    if (realpath(".", call->datadir) == NULL) {
        log_warn("could not resolve the current directory: %s; no prefetch", strerror(errno));
        return WAL_ASYNC_DIRECT;
    }
    if (!wal_async_spool_dir(env, WAL_SPOOL_FETCH, call->datadir, call->dir, sizeof(call->dir),
                             &err)) {
        log_warn("%s; no prefetch", err.msg);
        return WAL_ASYNC_DIRECT;
    }
    call->spooled = true;
    wal_async_fetch_spooled(call->dir, call->datadir, name, dest, &served);
    return served ? WAL_ASYNC_DONE : WAL_ASYNC_DIRECT;
}

wal_async_outcome wal_async_fetch_ahead(const wal_async_env *env, wal_async_fetch_call *call,
                                        const char *name, const char *dest, unsigned prefetch,
                                        unsigned concurrency)
{
    wal_fetch_request req = {.count = prefetch}, old;
    const char *dir = call->dir;
    pgd_error err = {0};
    bool missing, held, started, daemon = false;
    int lock_fd;

    if (!call->spooled)
        return WAL_ASYNC_DONE;
    snprintf(req.name, sizeof(req.name), "%s", name);
    if (!wal_spool_segment_identity(dest, &req.sysid, &req.seg_size, &err) ||
        !wal_spool_request_read(dir, &old, &missing, &err)) {
        log_warn("%s; no prefetch after \"%s\"", err.msg, name);
        return WAL_ASYNC_DONE;
    }
    /* another cluster restored here: nothing of the last one may be served */
    if (!missing && old.sysid != req.sysid && !wal_spool_entry_prune(dir, NULL, false, &err)) {
        log_warn("%s; no prefetch after \"%s\"", err.msg, name);
        return WAL_ASYNC_DONE;
    }
    if (!wal_spool_settings_write(dir, env->settings, &err) ||
        !wal_spool_request_write(dir, &req, &err) ||
        !wal_spool_entry_prune(dir, &req, false, &err) || !wal_spool_lock_held(dir, &held, &err)) {
        log_warn("%s; no prefetch after \"%s\"", err.msg, name);
        return WAL_ASYNC_DONE;
    }
    if (held) {
        wal_spool_wake(dir);
        return WAL_ASYNC_DONE;
    }
    if (!wal_async_daemon_spawn(dir, &started, &daemon, &lock_fd, &err)) {
        log_warn("%s; no prefetch after \"%s\"", err.msg, name);
        return WAL_ASYNC_DONE;
    }
    if (!daemon)
        return WAL_ASYNC_DONE;
    return wal_async_fetch_background(env, concurrency, dir, lock_fd);
}
