/*
 * internal.h - what the files of the SFTP driver share: the repository
 * (one SSH connection, opened on first use, shared by every thread under
 * one lock), the URI's parts, and the calls that keep the connection.
 *
 * libssh2 lets one session be used by one thread at a time: every call on
 * the session or one of its handles is made holding sftp_storage.lock.
 * A connection that fails (the server went away, a timeout) is dropped, and
 * the next operation connects again; handles opened on a dropped
 * connection are never used again (their generation tells).
 */
#ifndef PGD_SFTP_INTERNAL_H
#define PGD_SFTP_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "storage/sftp/sftp.h"
#include "storage/sftp/sftp_libs.h"

/* A blocking call that gets no answer for this long fails (and the connection is dropped). */
#define SFTP_TIMEOUT_MS 30000
/* Directories the driver creates, and objects (as fs.c does). */
#define SFTP_DIR_MODE  0750
#define SFTP_FILE_MODE 0640

/* The parts of "sftp://USER@HOST[:PORT]/PATH". */
typedef struct sftp_uri {
    char *user, *host, *path; /* path: absolute, no trailing '/' (but "/") */
    int port;
} sftp_uri;

typedef struct sftp_storage {
    storage base;
    sftp_uri uri;
    char *key_file;    /* absolute, or NULL */
    char *known_hosts; /* absolute */
    char *where;       /* "HOST:PORT", for messages */

    pthread_mutex_t lock;
    int sock;
    pid_t pid; /* the process that connected: a forked child never uses or closes it */
    LIBSSH2_SESSION *session;
    LIBSSH2_SFTP *sftp;
    unsigned generation; /* of the connection: counts connects */
    /* the raw SFTP channel for posix-rename@openssh.com (rename.c; sftp_session_drop frees it) */
    LIBSSH2_CHANNEL *ext;
    bool ext_tried, ext_posix_rename;
    uint32_t ext_id;
} sftp_storage;

/*
 * Parse an sftp:// URI; false with *why saying what is wrong. The parts are
 * malloc'd (sftp_uri_free).
 */
bool sftp_config_parse_uri(const char *uri, sftp_uri *out, const char **why);
void sftp_config_uri_free(sftp_uri *u);

/* Connect unless connected (host key, authentication, SFTP); with s->lock held. */
bool sftp_session_connect(sftp_storage *s, pgd_error *err);

/* Close the connection (with s->lock held); handles of it are dead. */
void sftp_session_drop(sftp_storage *s);

/*
 * Set err for an operation that failed: "could not OP \"OBJECT\" on HOST:PORT:
 * CAUSE" ("could not OP sftp server HOST:PORT: CAUSE" when object is NULL),
 * the cause from libssh2 (the SFTP status, or the connection's error). A
 * failure of the connection is marked PGD_ERR_TRANSIENT and the connection
 * dropped. *status (when not NULL) receives the SFTP status code, 0 when
 * the failure was not one. Always returns false. With s->lock held.
 */
bool sftp_session_fail(sftp_storage *s, pgd_error *err, unsigned long *status, const char *op,
                       const char *object);

/*
 * Check the server's host key against the known hosts file: false with one
 * line naming the host and the file when it is missing, different, or the
 * file cannot be read. Separate from the connection for the unit tests.
 */
bool sftp_session_check_host_key(LIBSSH2_SESSION *session, const char *host, int port,
                                 const char *known_hosts, const char *key, size_t key_len,
                                 int key_type, pgd_error *err);

/* The remote path of a repository path ("" for the root); malloc'd. */
char *sftp_config_remote_path(const sftp_storage *s, const char *path);

/*
 * Rename src over dst, atomically replacing dst (posix-rename@openssh.com,
 * over a raw SFTP channel: libssh2 1.10 sends no extended request). With
 * s->lock held. A server without the extension gets a plain rename: a new
 * object is renamed into place, and replacing one fails, saying why.
 */
bool sftp_rename_replace(sftp_storage *s, const char *src, const char *dst, pgd_error *err);

/*
 * The extensions of an SFTP VERSION packet's body (after the type byte):
 * is "posix-rename@openssh.com" one of them? False when the body is
 * malformed (untrusted bytes from the server).
 */
bool sftp_rename_parse_version(const unsigned char *body, size_t len, bool *posix_rename);

extern const storage_ops sftp_files_ops;

#endif
