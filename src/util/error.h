/*
 * error.h - error reports that carry the operation and the object.
 *
 * Modules return false (or NULL) and fill a pgd_error; the command prints it
 * once and exits non-zero. Nothing below src/cmd calls exit().
 */
#ifndef PGD_ERROR_H
#define PGD_ERROR_H

#include <stdbool.h>

#define PGD_ERROR_MAX 1024

typedef struct pgd_error {
    bool set;
    /*
     * The cause may go away by itself (a repository that did not answer
     * after its retries: 5xx, 429, timeouts, refused connections). Callers
     * that can wait, such as wal-fetch on a standby, tell it apart from a
     * definite failure (corrupt data, permission, a bucket that does not
     * exist).
     */
    bool transient;
    /*
     * An object written with STORAGE_WRITE_NO_REPLACE was not created
     * because one already stands under its name. Only that: an object that
     * became visible and then failed to be made durable is another error.
     */
    bool exists;
    char msg[PGD_ERROR_MAX];
} pgd_error;

/* Set the error (first one wins: later calls keep the original cause). */
bool err_set(pgd_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Like err_set, appending ": <strerror(errnum)>". Always returns false. */
bool err_errno(pgd_error *err, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefix an existing message with more context ("while restoring backup X: ..."). */
void err_prefix(pgd_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Mark an error that is already set as transient (see pgd_error). */
void err_mark_transient(pgd_error *err);

/* Mark an error that is already set as "the object already exists" (see pgd_error). */
void err_mark_exists(pgd_error *err);

void err_clear(pgd_error *err);

#endif
