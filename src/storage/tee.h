/*
 * tee.h - several repositories behind the one storage interface (--repo
 * given more than once), so that backup reads the data directory once and
 * restore, verify and wal-fetch read from whichever repository answers.
 *
 * Writes go to every repository that is still in the run: each object is
 * opened in each of them, and every byte written is handed to each one's
 * writer in turn (an object store's writer uploads its parts in the
 * background, so the repositories are written at the same time). A
 * no-replace write that one repository refuses (PGD_ERR_EXISTS) is taken
 * back from those that accepted it, so a backup id is claimed in all or in
 * none.
 *
 * Reads go to the repositories in the order given: the first that has the
 * object serves it; one that fails (other than "not found") is passed over
 * with a warning that names it and the next. An object none has is missing;
 * when one failed and none had it, the first failure is the error (its kind
 * kept: wal-fetch's 254, not "not archived"). exists is true when any
 * repository has the object; list is the union of the listings.
 *
 * With TEE_DROP_FAILED (backup), a repository whose write (or read) fails
 * is dropped from the run with a warning and the others go on; the run
 * fails only when none is left. tee_storage_dropped tells the command which
 * were dropped, and why. Without it, a failed write fails the operation.
 */
#ifndef PGD_TEE_H
#define PGD_TEE_H

#include <stdbool.h>
#include <stddef.h>

#include "storage/storage.h"

enum {
    TEE_DROP_FAILED = 1 << 0,
};

/* Takes the n repositories (n >= 2), freed with the tee. */
storage *tee_storage_new(storage **children, size_t n, unsigned flags);

/* Is s a tee? Its repositories, in order (NULL past the last). */
bool tee_storage_is(const storage *s);
size_t tee_storage_count(const storage *s);
storage *tee_storage_child(storage *s, size_t i);

/* Was repository i dropped from the run (TEE_DROP_FAILED)? *why: the error that dropped it. */
bool tee_storage_dropped(storage *s, size_t i, const pgd_error **why);

/*
 * Repository i failed with e in work of the caller's own (backup's choice of a delta parent, in
 * each repository): with TEE_DROP_FAILED it leaves the run as a failed write makes it (true
 * while another is left); otherwise, or when none is left, false with err set.
 */
bool tee_storage_drop(storage *s, size_t i, const pgd_error *e, pgd_error *err);

#endif
