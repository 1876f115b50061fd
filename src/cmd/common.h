/*
 * common.h - what every command does the same way: parse options (with
 * --help), apply --log-level, open the repository, and report an error.
 */
#ifndef PGD_CMD_COMMON_H
#define PGD_CMD_COMMON_H

#include <stdbool.h>

#include "compress/compress.h"
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
 * a relative path) print it and set *exit_code = 2.
 * Returns true when the command should run; otherwise opts is freed.
 */
bool command_start(pgd_options *opts, const command_help *help, size_t max_args, int argc,
                   char **argv, int *exit_code);

/* Print err once ("pgdirect: error: ...") and return 1. */
int command_fail(const pgd_error *err);

/*
 * The repository --repo names (its form was checked by command_start). For
 * the commands that never create one (list, restore, verify, delete,
 * wal-fetch), a repository that does not exist is an error that names it
 * and where --repo came from, instead of an empty repository.
 */
storage *command_open_repo(const pgd_options *opts, pgd_error *err);

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

/* --progress auto|on|off against whether stderr is a terminal. */
bool command_progress(const pgd_options *opts, bool *enabled, pgd_error *err);

#endif
