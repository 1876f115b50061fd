/*
 * cat.c - `pgdirect cat OBJECT`: one object of the repository, as the
 * commands read it (decrypted and authenticated in an encrypted
 * repository), on standard output: what restoring by hand needs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "cmd/cmd.h"
#include "cmd/common.h"
#include "repo/manifest.h"
#include "util/log.h"
#include "util/xmalloc.h"

#define CMD_CAT_BUFFER (256 * 1024)

static const command_help cmd_cat_help = {
    CMD_CAT, "usage: pgdirect cat OBJECT [OPTIONS]",
    "Write the object OBJECT of the repository (a path under its root, e.g.\n"
    "backups/ID/part_0001.tar.lz4) to standard output, decrypted when the repository is\n"
    "encrypted. A chunk that fails authentication is never written: the command stops\n"
    "there, exits non-zero, and what it wrote before must be thrown away."};

static bool cmd_cat_copy(storage *repo, const char *object, pgd_error *err)
{
    bool missing = false, ok = true;
    in_stream *in = storage_read_open(repo, object, &missing, err);
    char *buf;

    if (in == NULL) {
        if (missing) {
            err_set(err, "object \"%s\" is not in repository \"%s\"", object, repo->uri);
            err_mark(err, PGD_ERR_NOT_FOUND);
        }
        return false;
    }
    buf = xmalloc(CMD_CAT_BUFFER);
    for (;;) {
        size_t n;
        if (!in_read(in, buf, CMD_CAT_BUFFER, &n, err)) {
            ok = false;
            break;
        }
        if (n == 0)
            break;
        if (fwrite(buf, 1, n, stdout) != n) {
            ok = err_errno(err, errno, "could not write object \"%s\" to standard output", object);
            break;
        }
    }
    free(buf);
    in_close(in);
    if (ok && (fflush(stdout) != 0 || ferror(stdout)))
        ok = err_errno(err, errno, "could not write object \"%s\" to standard output", object);
    return ok;
}

int cmd_cat(int argc, char **argv)
{
    pgd_options opts;
    pgd_error err = {0};
    storage *repo = NULL;
    int rc;

    if (!command_start(&opts, &cmd_cat_help, 1, argc, argv, &rc))
        return rc;
    if (opts.nargs != 1) {
        err_set(&err, "no object given (see --help)");
        err_mark(&err, PGD_ERR_USAGE);
        rc = command_fail(CMD_CAT, &err);
    } else if (!manifest_path_is_safe(opts.args[0])) {
        /* an object of the repository, never a file beside it ("../key") */
        err_set(&err,
                "invalid object \"%s\": expected a path under the repository's root, without "
                "\".\" or \"..\" components (e.g. backups/ID/manifest.json)",
                opts.args[0]);
        err_mark(&err, PGD_ERR_USAGE);
        rc = command_fail(CMD_CAT, &err);
    } else if ((repo = command_open_repo(&opts, &err)) == NULL ||
               !cmd_cat_copy(repo, opts.args[0], &err)) {
        rc = command_fail(CMD_CAT, &err);
    } else {
        rc = EXIT_OK;
    }
    storage_free(repo);
    options_free(&opts);
    return rc;
}
