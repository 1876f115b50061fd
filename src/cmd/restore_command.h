/*
 * restore_command.h - the restore_command a restore writes for the
 * restored server: this pgdirect, by its absolute path, running wal-fetch
 * against the repository the restore read.
 *
 * Every repository option wal-fetch needs to read what the restore read
 * is written out as a flag, resolved to its value wherever it came from
 * (flag, PGDIRECT_*, AWS_*, the config file), so the server's environment
 * does not decide where WAL comes from: a local repository as an absolute
 * path (the server runs the command in the data directory), an S3 one
 * with its endpoint, region, URI style, retries and timeouts, and the
 * config file when one was given (it may hold what no flag carries).
 * Upload-only options do not matter to a read; secrets are never written:
 * the server needs the AWS credentials in its own environment.
 */
#ifndef PGD_CMD_RESTORE_COMMAND_H
#define PGD_CMD_RESTORE_COMMAND_H

#include <stdbool.h>

#include "storage/storage.h"
#include "util/error.h"
#include "util/options.h"

/* An S3 repository (whose credentials the restored server must have itself). */
bool restore_command_repo_is_s3(const storage *repo);

/* An Azure repository (whose credentials the restored server must have itself). */
bool restore_command_repo_is_azure(const storage *repo);

/* The command line, quoted for /bin/sh and PostgreSQL's %-escapes; *out is malloc'd. */
bool restore_command_build(const pgd_options *opts, const storage *repo, char **out,
                           pgd_error *err);

#endif
