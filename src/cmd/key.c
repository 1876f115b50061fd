/*
 * key.c - `pgdirect key rotate`: the master key of an encrypted repository
 * changes by rewriting one object, its keyring (storage/crypt/storage.h),
 * whatever the number of backups and WAL files.
 */
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/common.h"
#include "repo/repo_lock.h"
#include "storage/crypt/storage.h"
#include "util/log.h"

static const command_help cmd_key_help = {
    CMD_KEY,
    "usage: pgdirect key rotate --encryption-key-file OLD --new-encryption-key-file NEW "
    "[OPTIONS]",
    "Rewrap the data keys of an encrypted repository with the master key of NEW, and\n"
    "start a new data key for the objects written from now on. One object is rewritten,\n"
    "atomically: killed at any point, OLD or NEW opens the repository, never neither;\n"
    "afterwards OLD opens nothing. With NEW the same file as OLD, it retires the data\n"
    "key in use (objects written with it still read, and leave with retention)."};

/*
 * Two rotations at once would each rewrap the keyring they read, and the
 * second write would drop the data key the first one started (and every
 * object written with it since): a lease makes them take turns, and the
 * second one reads the keyring the first one wrote (and refuses its OLD key
 * if the first changed it). A rotation takes a second or less; a killed one
 * blocks the next for KEY_LOCK_LEASE_S at most.
 */
#define KEY_LOCK_NAME    "key-rotate"
#define KEY_LOCK_LEASE_S (3 * REPO_LOCK_CLOCK_MARGIN_S)

static bool key_rotate_leased(storage *repo, const char *old_file, const char *new_file,
                              size_t *nkeys, pgd_error *err)
{
    repo_lock *lock = repo_lock_acquire(repo, KEY_LOCK_NAME, KEY_LOCK_LEASE_S, err);
    pgd_error release = {0};
    bool ok;

    if (lock == NULL)
        return false;
    ok = repo_lock_keep(lock, err) && crypt_storage_rotate(repo, old_file, new_file, nkeys, err);
    /* the keyring is rotated by then: a lease that could not be marked released just expires */
    if (!repo_lock_release(lock, &release) && ok)
        log_warn("%s (it expires within %d seconds)", release.msg, KEY_LOCK_LEASE_S);
    return ok;
}

int cmd_key(int argc, char **argv)
{
    pgd_options opts;
    pgd_error err = {0};
    storage *repo = NULL;
    const char *old_file, *new_file;
    size_t nkeys = 0;
    int rc;

    if (!command_start(&opts, &cmd_key_help, 1, argc, argv, &rc))
        return rc;
    old_file = opt_str(&opts, OPT_ENCRYPTION_KEY_FILE);
    new_file = opt_str(&opts, OPT_NEW_ENCRYPTION_KEY_FILE);
    if (opts.nargs != 1 || strcmp(opts.args[0], "rotate") != 0) {
        err_set(&err, "expected \"key rotate\" (see --help)");
        err_mark(&err, PGD_ERR_USAGE);
        rc = command_fail(CMD_KEY, &err);
    } else if (old_file == NULL || new_file == NULL) {
        err_set(&err, "key rotate needs --encryption-key-file (the key that opens the repository "
                      "now) and --new-encryption-key-file");
        err_mark(&err, PGD_ERR_USAGE);
        rc = command_fail(CMD_KEY, &err);
    } else if ((repo = command_open_store(&opts, &err)) == NULL ||
               !key_rotate_leased(repo, old_file, new_file, &nkeys, &err)) {
        rc = command_fail(CMD_KEY, &err);
    } else {
        if (strcmp(old_file, new_file) == 0)
            log_info("keyring of repository \"%s\" rotated: %zu data keys, rewrapped with a new "
                     "salt; new objects use a new data key (the key file is unchanged)",
                     repo->uri, nkeys);
        else
            log_info("keyring of repository \"%s\" rotated: %zu data keys now wrapped by the key "
                     "in \"%s\", new objects use a new data key; \"%s\" opens nothing any more",
                     repo->uri, nkeys, new_file, old_file);
        rc = EXIT_OK;
    }
    storage_free(repo);
    options_free(&opts);
    return rc;
}
