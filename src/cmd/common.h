/*
 * common.h - what every command does the same way: parse options (with
 * --help), apply --log-level, open the repository, and report an error.
 */
#ifndef PGD_CMD_COMMON_H
#define PGD_CMD_COMMON_H

#include <stdbool.h>

#include "compress/compress.h"
#include "repo/metrics.h"
#include "storage/storage.h"
#include "util/options.h"

typedef struct command_help {
    unsigned command;
    const char *usage;
    const char *summary;
} command_help;

/*
 * Parse; on --help print it and set *exit_code = 0; on an error (or more
 * than max_args positional arguments, or a --repo no repository can have:
 * a relative path) print it and set *exit_code to the command's status for
 * a usage error (2; wal-fetch's is 254).
 * Returns true when the command should run; otherwise opts is freed.
 */
bool command_start(pgd_options *opts, const command_help *help, size_t max_args, int argc,
                   char **argv, int *exit_code);

/*
 * The exit status of `command` (CMD_* of util/options.h) when it fails with
 * err: the one place an error's kind (util/error.h) becomes an exit status
 * (cmd.h; what each means to a caller: docs/user-guide.md#exit-codes).
 *
 *   kind               wal-fetch                  backup, verify   the others
 *   PGD_ERR_USAGE      254                        2                2
 *   PGD_ERR_NOT_FOUND  1 (not archived)           1                1
 *   PGD_ERR_TRANSIENT  254; 1 on a standby        1                1
 *   PGD_ERR_DAMAGED    254                        3                1
 *   any other          254                        1                1
 *
 * wal-fetch is on a standby when standby.signal is in the current directory
 * (restore_command runs in the data directory): a standby does not promote
 * on 1, it asks again later, which is what a repository that did not answer
 * needs. backup's PGD_ERR_DAMAGED is its report of a backup that completed
 * with pages that failed their data checksum (--checksum-errors fail);
 * verify's, of a backup or WAL it found damaged. Never EXIT_OK: an err that
 * is NULL or not set is a failure of unknown cause.
 */
int command_exit_status(unsigned command, const pgd_error *err);

/* Print err once ("pgdirect: error: ...") and return command_exit_status(command, err). */
int command_fail(unsigned command, const pgd_error *err);

/*
 * The repository --repo names (its form was checked by command_start). For
 * the commands that never create one (list, restore, verify, delete,
 * wal-fetch), a repository that does not exist is an error that names it
 * and where --repo came from, instead of an empty repository.
 */
storage *command_open_repo(const pgd_options *opts, pgd_error *err);

/*
 * --repo may be given several times (storage/tee.h); each value is a URI with,
 * optionally, the repository's own settings: URI?NAME=VALUE&NAME=VALUE, NAME one
 * of the repository options (s3-endpoint, encryption-key-file, ...),
 * which replace the command's for that repository. With several, command_open_repo
 * returns them behind a tee; command_open_repo_at opens repository i alone.
 */
size_t command_repo_count(const pgd_options *opts);
storage *command_open_repo_at(const pgd_options *opts, size_t i, pgd_error *err);
/* opts as repository i sees them (NULL: a malformed setting, in err); freed with the next */
pgd_options *command_repo_options(const pgd_options *opts, size_t i, pgd_error *err);
void command_repo_options_free(pgd_options *o);

/* The same repository without the encryption filter: its objects as stored (key rotate). */
storage *command_open_store(const pgd_options *opts, pgd_error *err);

/* --compression and --compression-level, validated together. */
bool command_compression(const pgd_options *opts, compress_kind *kind, int *level, pgd_error *err);

/*
 * --json of backup, restore and delete: one object on standard output when the command ends.
 * On success `o` gets "ok": true; on failure `o` (or an empty object when o is NULL: nothing
 * was done) gets "ok": false, the error and the exit code. o is consumed. Returns rc, or 1 when
 * standard output fails.
 */
struct json_t;
int command_print_json(struct json_t *o, int rc, const pgd_error *err);
/* o with what command_print_json adds ("ok", and the error's), not printed; NULL on failure. */
struct json_t *command_json_outcome(struct json_t *o, int rc, const pgd_error *err);

/*
 * --metrics-file: the repository's metrics (repo/metrics.h) written there when the command is
 * done, whatever its outcome; a failure to write them is a warning, never the command's failure
 * (wal-push must not stop archiving for it). Nothing when the option is not set.
 */
void command_write_metrics(const pgd_options *opts, storage *repo, const metrics_extra *extra);

/* --progress auto|on|off against whether stderr is a terminal. */
bool command_progress(const pgd_options *opts, bool *enabled, pgd_error *err);

#endif
