/*
 * wal_async_fetch.c - the foreground of wal-fetch --prefetch: the command
 * PostgreSQL's restore_command runs serves a segment from the prefetch
 * spool when it is there and intact (else fetches it directly), then asks
 * the background fetcher for the segments after it, starting one when
 * none runs. Also the fetcher's life, once started: keep the requested
 * segments ready until nobody asks any more.
 */
#define _GNU_SOURCE
#include "cmd/wal_async.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/common.h"
#include "cmd/wal_async_internal.h"
#include "io/politeness.h"
#include "pg/wal_segment.h"
#include "wal/wal_prefetch.h"
#include "util/log.h"

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
static int wal_async_fetch_background(const pgd_options *opts, unsigned concurrency,
                                      const char *dir, const char *settings, int lock_fd)
{
    wal_prefetch_config cfg = {
        .spool_dir = dir,
        .concurrency = concurrency,
        .idle_exit_s = WAL_FETCHER_IDLE_EXIT_S,
        .hooks = wal_async_daemon_hooks(opts, dir, settings),
    };
    pgd_error err = {0};
    char when[WAL_WHEN_LEN];
    wal_prefetch_stop why;
    bool ok;

    wal_async_daemon_when(when, sizeof(when));
    log_info("prefetcher %d started at %s: repository \"%s\", %u at a time", (int)getpid(), when,
             opt_str(opts, OPT_REPO), concurrency);
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
    return ok ? EXIT_OK : EXIT_ERROR;
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

/*
 * After `name` was served: ask for the `prefetch` segments after it and
 * make sure a fetcher works on them. Returns true in the fetcher it starts
 * (*rc: its exit status). Failures only cost the prefetch: warned, no more.
 */
static bool wal_async_fetch_ahead(const pgd_options *opts, const char *dir, const char *name,
                                  const char *dest, unsigned prefetch, unsigned concurrency,
                                  int *rc)
{
    wal_fetch_request req = {.count = prefetch}, old;
    pgd_error err = {0};
    bool missing, held, started, daemon = false;
    char settings[WAL_SETTINGS_LEN];
    int lock_fd;

    wal_async_settings(opts, settings, sizeof(settings));
    snprintf(req.name, sizeof(req.name), "%s", name);
    if (!wal_spool_segment_identity(dest, &req.sysid, &req.seg_size, &err) ||
        !wal_spool_request_read(dir, &old, &missing, &err)) {
        log_warn("%s; no prefetch after \"%s\"", err.msg, name);
        return false;
    }
    /* another cluster restored here: nothing of the last one may be served */
    if (!missing && old.sysid != req.sysid && !wal_spool_entry_prune(dir, NULL, false, &err)) {
        log_warn("%s; no prefetch after \"%s\"", err.msg, name);
        return false;
    }
    if (!wal_spool_settings_write(dir, settings, &err) ||
        !wal_spool_request_write(dir, &req, &err) ||
        !wal_spool_entry_prune(dir, &req, false, &err) || !wal_spool_lock_held(dir, &held, &err)) {
        log_warn("%s; no prefetch after \"%s\"", err.msg, name);
        return false;
    }
    if (held) {
        wal_spool_wake(dir);
        return false;
    }
    if (!wal_async_daemon_spawn(dir, &started, &daemon, &lock_fd, &err)) {
        log_warn("%s; no prefetch after \"%s\"", err.msg, name);
        return false;
    }
    if (!daemon)
        return false;
    *rc = wal_async_fetch_background(opts, concurrency, dir, settings, lock_fd);
    return true;
}

int wal_async_fetch(const pgd_options *opts, const char *name, const char *dest, unsigned prefetch,
                    wal_direct_fetch_fn direct)
{
    char datadir[PATH_MAX], dir[WAL_SPOOL_PATH_MAX];
    pgd_error err = {0};
    long concurrency;
    bool served = false;
    int rc;

    if (prefetch == 0 || wal_name_kind(name) != WAL_FILE_SEGMENT)
        return direct(opts, name, dest);
    if (!opt_int(opts, OPT_PREFETCH_CONCURRENCY, 1, WAL_PREFETCH_MAX, &concurrency, &err)) {
        log_error("%s", err.msg);
        return EXIT_WAL_FATAL;
    }
    /* restore_command runs in the data directory */
    if (realpath(".", datadir) == NULL) {
        log_warn("could not resolve the current directory: %s; no prefetch", strerror(errno));
        return direct(opts, name, dest);
    }
    if (!wal_async_spool_dir(opts, WAL_SPOOL_FETCH, datadir, dir, sizeof(dir), &err)) {
        log_warn("%s; no prefetch", err.msg);
        return direct(opts, name, dest);
    }
    wal_async_fetch_spooled(dir, datadir, name, dest, &served);
    rc = served ? EXIT_OK : direct(opts, name, dest);
    if (rc == EXIT_OK)
        wal_async_fetch_ahead(opts, dir, name, dest, prefetch, (unsigned)concurrency, &rc);
    return rc;
}
