/*
 * error.h - error reports that carry the operation, the object and a kind.
 *
 * Modules return false (or NULL) and fill a pgd_error; the command prints it
 * once and exits non-zero. Nothing below src/cmd calls exit().
 *
 * The message says what failed, for a person; the kind says what the
 * failure means, for the code above: whether to wait and try again, whether
 * an object is damaged, and, in one place (command_exit_status in
 * src/cmd/common.c), which exit status the command ends with. The first
 * error wins: a later err_set or err_errno keeps the original cause, and its
 * kind. A kind may be marked later (err_mark) by a caller that learns more of
 * what the failure means than the function that set it (the WAL archive,
 * that a file its codec refused is damaged; a command, that a bad value is
 * the user's): the last mark wins, since it comes from the caller that knows
 * most.
 */
#ifndef PGD_ERROR_H
#define PGD_ERROR_H

#include <stdbool.h>
#include <stddef.h>

#define PGD_ERROR_MAX 1024

typedef enum pgd_error_kind {
    /* the default: the operation failed (permission, a full disk, a refused request) */
    PGD_ERR_FAILED = 0,
    /*
     * the caller's mistake, found before anything was touched: an option, a
     * value, an argument, a --delta-from that names no backup
     */
    PGD_ERR_USAGE,
    /*
     * what was asked for is not there: wal-fetch's "this file is not in the
     * repository", the one failure PostgreSQL may read as the end of recovery
     */
    PGD_ERR_NOT_FOUND,
    /*
     * the cause may go away by itself (a repository that did not answer
     * after its retries: 5xx, 429, timeouts, refused connections). Callers
     * that can wait, such as wal-fetch on a standby, tell it apart from a
     * definite failure (corrupt data, permission, a bucket that does not
     * exist).
     */
    PGD_ERR_TRANSIENT,
    /*
     * an object written with STORAGE_WRITE_NO_REPLACE was not created
     * because one already stands under its name. Only that: an object that
     * became visible and then failed to be made durable is another error.
     */
    PGD_ERR_EXISTS,
    /*
     * what was read is damaged: the verdict of a check of the data (a
     * manifest that does not parse, a WAL file its codec refuses, a backup
     * verify finds damaged, pages that failed their data checksum), not a
     * failure to read it
     */
    PGD_ERR_DAMAGED,
} pgd_error_kind;

typedef struct pgd_error {
    bool set;
    pgd_error_kind kind; /* meaningful when set */
    char msg[PGD_ERROR_MAX];
} pgd_error;

/* Set the error, of kind PGD_ERR_FAILED (first one wins: later calls keep the original cause). */
bool err_set(pgd_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Like err_set, appending ": <strerror(errnum)>". Always returns false. */
bool err_errno(pgd_error *err, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefix an existing message with more context ("while restoring backup X: ..."). */
void err_prefix(pgd_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Mark an error that is already set as of `kind` (see the top of this file). Nothing when unset. */
void err_mark(pgd_error *err, pgd_error_kind kind);

/* Whether err is set and of `kind`. */
static inline bool err_is(const pgd_error *err, pgd_error_kind kind)
{
    return err != NULL && err->set && err->kind == kind;
}

void err_clear(pgd_error *err);

#endif
