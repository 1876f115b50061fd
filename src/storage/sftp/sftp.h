/*
 * sftp.h - the repository in a directory of another host, over SSH's file
 * transfer protocol (libssh2): the SFTP back end of storage.h and its
 * settings.
 *
 * As with S3 (storage/s3/s3.h), the generic interface knows nothing of
 * these settings: src/cmd/common.c fills an sftp_options from the command
 * line, and storage_open forwards it to sftp_storage_open for an sftp:// URI.
 */
#ifndef PGD_SFTP_H
#define PGD_SFTP_H

#include "storage/storage.h"
#include "util/error.h"

/* NULL means the default. */
typedef struct sftp_options {
    /* the user's key (OpenSSH or PEM format, no passphrase); default: the agent only */
    const char *private_key_file;
    /* the host keys the server's is checked against; default ~/.ssh/known_hosts */
    const char *known_hosts;
} sftp_options;

/* The known hosts file when --sftp-known-hosts is not given, under $HOME. */
#define SFTP_KNOWN_HOSTS_DEFAULT ".ssh/known_hosts"

/*
 * "sftp://USER@HOST[:PORT]/PATH" (PATH absolute on the server); o may be
 * NULL for every default. Nothing is connected before the first operation:
 * a command that never touches the repository never reaches the server.
 */
storage *sftp_storage_open(const char *uri, const sftp_options *o, pgd_error *err);

/*
 * The key and known hosts files an open SFTP repository uses, as absolute
 * paths (key_file NULL when there is none): for a command line that must
 * reach it the same way. False for a repository of another driver.
 */
bool sftp_storage_where(const storage *repo, const char **key_file, const char **known_hosts);

#endif
