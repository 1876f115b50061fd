/*
 * repo_lock.h - a lease on a repository, so that two runs of a command
 * that must not overlap (two `delete` runs) never do, on a local directory
 * and on S3 alike, with nothing but the storage interface.
 *
 * A lease is an object lock/<name>.<generation>.json holding the holder's
 * host, pid, a random token and an expiry time. Taking the lease is
 * creating the next generation with STORAGE_WRITE_NO_REPLACE: of two runs,
 * exactly one creates it. A run may create the next generation only when
 * the highest one is released or expired, so a killed holder blocks others
 * for at most one lease. The holder renews its own generation while it
 * works (repo_lock_keep) and stops when a higher generation appeared (its
 * lease expired and another run took over). The highest generation is
 * never removed, only marked released, so generations only grow and a
 * stale holder can always tell it lost. Older generations are removed by
 * whoever takes the lease.
 *
 * It assumes the clocks of the hosts sharing a repository agree to within
 * REPO_LOCK_CLOCK_MARGIN_S: a holder gives up that long before its expiry.
 */
#ifndef PGD_REPO_LOCK_H
#define PGD_REPO_LOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "storage/storage.h"
#include "util/error.h"

#define REPO_LOCK_DIR "lock"
/*
 * Ten minutes: long enough that one slow step (a DeleteObjects of a
 * thousand keys retried against a struggling endpoint) fits between two
 * renewals, short enough that a killed run blocks the next one briefly.
 */
#define REPO_LOCK_LEASE_S        600
#define REPO_LOCK_CLOCK_MARGIN_S 60

typedef struct repo_lock repo_lock;

/*
 * Take lease `name` for lease_s seconds. When another run holds it, fails
 * naming the holder and when its lease expires.
 */
repo_lock *repo_lock_acquire(storage *repo, const char *name, int64_t lease_s, pgd_error *err);

/*
 * Call before each step that changes the repository: checks the lease is
 * still ours (a listing and a read) and renews it when a third of it has
 * passed. False when the lease was lost (ran out, or taken over): the
 * caller must stop changing the repository at once.
 */
bool repo_lock_keep(repo_lock *lock, pgd_error *err);

/* Mark the lease released and free lock (NULL is fine). */
bool repo_lock_release(repo_lock *lock, pgd_error *err);

#endif
