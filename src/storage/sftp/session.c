/*
 * session.c - the SSH connection of an SFTP repository: TCP, the handshake,
 * the server's host key checked against the known hosts file (an unknown
 * or changed key is refused, never accepted), authentication with the key
 * file and then the agent, and the SFTP subsystem; and the errors of
 * libssh2 in the project's words.
 */
#define _GNU_SOURCE
#include "storage/sftp/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* known_hosts names a host on SSH's port plainly, on another as "[host]:port" */
#define SFTP_SESSION_SSH_PORT 22
#define SFTP_SESSION_HOST_MAX 1100
/* the bits of a private key file's mode that ssh refuses: group and others */
#define SFTP_SESSION_KEY_PRIVATE_MODE 077

/* SSH_FX_* status codes (draft-ietf-secsh-filexfer-02) in words. */
static const char *sftp_session_status_text(unsigned long status)
{
    switch (status) {
    case LIBSSH2_FX_EOF:
        return "end of file";
    case LIBSSH2_FX_NO_SUCH_FILE:
        return "no such file";
    case LIBSSH2_FX_PERMISSION_DENIED:
        return "permission denied";
    case LIBSSH2_FX_FAILURE:
        return "failure reported by the server";
    case LIBSSH2_FX_BAD_MESSAGE:
        return "bad message";
    case LIBSSH2_FX_NO_CONNECTION:
        return "no connection";
    case LIBSSH2_FX_CONNECTION_LOST:
        return "connection lost";
    case LIBSSH2_FX_OP_UNSUPPORTED:
        return "operation not supported by the server";
    case LIBSSH2_FX_FILE_ALREADY_EXISTS:
        return "file already exists";
    case LIBSSH2_FX_NO_SPACE_ON_FILESYSTEM:
    case LIBSSH2_FX_QUOTA_EXCEEDED:
        return "no space left on the server";
    default:
        return "SFTP error";
    }
}

bool sftp_session_fail(sftp_storage *s, pgd_error *err, unsigned long *status, const char *op,
                       const char *object)
{
    char *msg = NULL;
    int code = s->session != NULL ? libssh2_session_last_error(s->session, &msg, NULL, 0)
                                  : LIBSSH2_ERROR_SOCKET_DISCONNECT;
    unsigned long st;

    if (status != NULL)
        *status = 0;
    if (code == LIBSSH2_ERROR_SFTP_PROTOCOL && s->sftp != NULL) {
        st = libssh2_sftp_last_error(s->sftp);
        if (status != NULL)
            *status = st;
        if (object != NULL)
            err_set(err, "could not %s \"%s\" on %s: %s (SFTP status %lu)", op, object, s->where,
                    sftp_session_status_text(st), st);
        else
            err_set(err, "could not %s sftp server %s: %s (SFTP status %lu)", op, s->where,
                    sftp_session_status_text(st), st);
        if (st == LIBSSH2_FX_NO_CONNECTION || st == LIBSSH2_FX_CONNECTION_LOST)
            err_mark(err, PGD_ERR_TRANSIENT);
        return false;
    }
    if (object != NULL)
        err_set(err, "could not %s \"%s\" on %s: connection failed: %s", op, object, s->where,
                msg != NULL && msg[0] != '\0' ? msg : "unknown libssh2 error");
    else
        err_set(err, "could not %s sftp server %s: connection failed: %s", op, s->where,
                msg != NULL && msg[0] != '\0' ? msg : "unknown libssh2 error");
    err_mark(err, PGD_ERR_TRANSIENT);
    sftp_session_drop(s);
    return false;
}

void sftp_session_drop(sftp_storage *s)
{
    if (s->pid == getpid()) {
        if (s->ext != NULL)
            libssh2_channel_free(s->ext);
        if (s->sftp != NULL)
            libssh2_sftp_shutdown(s->sftp);
        if (s->session != NULL) {
            libssh2_session_disconnect_ex(s->session, SSH_DISCONNECT_BY_APPLICATION, "bye", "");
            libssh2_session_free(s->session);
        }
    }
    if (s->sock >= 0)
        close(s->sock);
    s->ext = NULL;
    s->ext_tried = s->ext_posix_rename = false;
    s->sftp = NULL;
    s->session = NULL;
    s->sock = -1;
}

/* libssh2's host key type as the known hosts check wants it. */
static int sftp_session_key_bit(int key_type)
{
    switch (key_type) {
    case LIBSSH2_HOSTKEY_TYPE_RSA:
        return LIBSSH2_KNOWNHOST_KEY_SSHRSA;
    case LIBSSH2_HOSTKEY_TYPE_DSS:
        return LIBSSH2_KNOWNHOST_KEY_SSHDSS;
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_256:
        return LIBSSH2_KNOWNHOST_KEY_ECDSA_256;
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_384:
        return LIBSSH2_KNOWNHOST_KEY_ECDSA_384;
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_521:
        return LIBSSH2_KNOWNHOST_KEY_ECDSA_521;
    case LIBSSH2_HOSTKEY_TYPE_ED25519:
        return LIBSSH2_KNOWNHOST_KEY_ED25519;
    default:
        return LIBSSH2_KNOWNHOST_KEY_UNKNOWN;
    }
}

bool sftp_session_check_host_key(LIBSSH2_SESSION *session, const char *host, int port,
                                 const char *known_hosts, const char *key, size_t key_len,
                                 int key_type, pgd_error *err)
{
    LIBSSH2_KNOWNHOSTS *kh = libssh2_knownhost_init(session);
    int rc, bit = sftp_session_key_bit(key_type);
    char name[SFTP_SESSION_HOST_MAX];

    if (kh == NULL)
        return err_set(err, "could not check the host key of \"%s\": out of memory in libssh2",
                       host);
    if (access(known_hosts, R_OK) != 0) {
        int e = errno;
        libssh2_knownhost_free(kh);
        return err_errno(err, e,
                         "could not check the host key of \"%s\": could not read known hosts "
                         "file \"%s\"",
                         host, known_hosts);
    }
    if (libssh2_knownhost_readfile(kh, known_hosts, LIBSSH2_KNOWNHOST_FILE_OPENSSH) < 0) {
        libssh2_knownhost_free(kh);
        return err_set(err,
                       "could not check the host key of \"%s\": known hosts file \"%s\" is not "
                       "in OpenSSH's format",
                       host, known_hosts);
    }
    if (key == NULL || bit == LIBSSH2_KNOWNHOST_KEY_UNKNOWN)
        rc = LIBSSH2_KNOWNHOST_CHECK_FAILURE;
    else if (snprintf(name, sizeof(name), port == SFTP_SESSION_SSH_PORT ? "%s" : "[%s]:%d", host,
                      port) >= (int)sizeof(name))
        rc = LIBSSH2_KNOWNHOST_CHECK_NOTFOUND;
    else
        /*
         * The name as OpenSSH writes it, and port -1: given the port,
         * libssh2 also accepts an entry of the host without it, a key
         * known for another server of the same host.
         */
        rc = libssh2_knownhost_checkp(
            kh, name, -1, key, key_len,
            LIBSSH2_KNOWNHOST_TYPE_PLAIN | LIBSSH2_KNOWNHOST_KEYENC_RAW | bit, NULL);
    libssh2_knownhost_free(kh);
    switch (rc) {
    case LIBSSH2_KNOWNHOST_CHECK_MATCH:
        return true;
    case LIBSSH2_KNOWNHOST_CHECK_MISMATCH:
        return err_set(err,
                       "host key of \"%s\" port %d does not match known hosts file \"%s\": "
                       "refusing to connect (the key changed, or another host answers)",
                       host, port, known_hosts);
    case LIBSSH2_KNOWNHOST_CHECK_NOTFOUND:
        return err_set(err,
                       "host key of \"%s\" port %d is not in known hosts file \"%s\": refusing "
                       "to connect (add it after checking its fingerprint, e.g. with "
                       "ssh-keyscan)",
                       host, port, known_hosts);
    default:
        return err_set(err,
                       "could not check the host key of \"%s\" port %d against known hosts file "
                       "\"%s\" (unsupported key type %d)",
                       host, port, known_hosts, key_type);
    }
}

/* A TCP connection to the server; -1 with err (transient: the server may come back). */
static int sftp_session_tcp(sftp_storage *s, pgd_error *err)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res, *ai;
    char port[16];
    int fd = -1, rc, e = 0;

    snprintf(port, sizeof(port), "%d", s->uri.port);
    rc = getaddrinfo(s->uri.host, port, &hints, &res);
    if (rc != 0) {
        err_set(err, "could not resolve sftp host \"%s\": %s", s->uri.host, gai_strerror(rc));
        err_mark(err, PGD_ERR_TRANSIENT);
        return -1;
    }
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            e = errno;
            continue;
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        e = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        err_errno(err, e, "could not connect to sftp server %s", s->where);
        err_mark(err, PGD_ERR_TRANSIENT);
    }
    return fd;
}

/* The key file, then every identity of the agent (when SSH_AUTH_SOCK is set). */
static bool sftp_session_authenticate(sftp_storage *s, pgd_error *err)
{
    const char *user = s->uri.user;
    char *msg = NULL;
    bool agent_tried = false;

    if (s->key_file != NULL) {
        struct stat st;

        if (access(s->key_file, R_OK) != 0 || stat(s->key_file, &st) != 0)
            return err_errno(err, errno, "could not read private key file \"%s\"", s->key_file);
        /* as ssh does: a key others can read is not a secret any more */
        if ((st.st_mode & SFTP_SESSION_KEY_PRIVATE_MODE) != 0)
            return err_set(err,
                           "private key file \"%s\" is readable by others (mode %04o): refusing "
                           "to use it (chmod 600 it, as ssh requires)",
                           s->key_file, (unsigned)(st.st_mode & 07777));
        if (libssh2_userauth_publickey_fromfile_ex(s->session, user, (unsigned)strlen(user), NULL,
                                                   s->key_file, NULL) == 0)
            return true;
        libssh2_session_last_error(s->session, &msg, NULL, 0);
    }
    if (getenv("SSH_AUTH_SOCK") != NULL) {
        LIBSSH2_AGENT *agent = libssh2_agent_init(s->session);
        struct libssh2_agent_publickey *id = NULL;
        bool ok = false;

        agent_tried = true;
        if (agent != NULL && libssh2_agent_connect(agent) == 0 &&
            libssh2_agent_list_identities(agent) == 0) {
            while (!ok && libssh2_agent_get_identity(agent, &id, id) == 0)
                ok = libssh2_agent_userauth(agent, user, id) == 0;
            libssh2_agent_disconnect(agent);
        }
        if (agent != NULL)
            libssh2_agent_free(agent);
        if (ok)
            return true;
    }
    if (s->key_file == NULL && !agent_tried)
        return err_set(err,
                       "no key to log in to sftp server %s as \"%s\" (give "
                       "--sftp-private-key-file, or run an ssh agent)",
                       s->where, user);
    return err_set(
        err, "sftp server %s refused user \"%s\" with %s%s%s%s%s%s", s->where, user,
        s->key_file != NULL ? "private key file \"" : "", s->key_file != NULL ? s->key_file : "",
        s->key_file != NULL ? (agent_tried ? "\" and " : "\"") : "",
        agent_tried ? "the agent's keys" : "", msg != NULL ? ": " : "", msg != NULL ? msg : "");
}

bool sftp_session_connect(sftp_storage *s, pgd_error *err)
{
    const char *key;
    size_t key_len;
    int key_type;

    if (s->session != NULL && s->pid == getpid())
        return true;
    if (s->session != NULL) /* a forked child: the parent's connection is not ours */
        sftp_session_drop(s);
    if (!sftp_libs_load(err))
        return false;
    s->pid = getpid();
    if ((s->sock = sftp_session_tcp(s, err)) < 0)
        return false;
    s->session = libssh2_session_init_ex(NULL, NULL, NULL, NULL);
    if (s->session == NULL) {
        sftp_session_drop(s);
        return err_set(err, "could not start an SSH session with %s", s->where);
    }
    libssh2_session_set_timeout(s->session, SFTP_TIMEOUT_MS);
    if (libssh2_session_handshake(s->session, s->sock) != 0)
        return sftp_session_fail(s, err, NULL, "start SSH with", NULL);
    key = libssh2_session_hostkey(s->session, &key_len, &key_type);
    if (!sftp_session_check_host_key(s->session, s->uri.host, s->uri.port, s->known_hosts, key,
                                     key_len, key_type, err) ||
        !sftp_session_authenticate(s, err)) {
        sftp_session_drop(s);
        return false;
    }
    s->sftp = libssh2_sftp_init(s->session);
    if (s->sftp == NULL)
        return sftp_session_fail(s, err, NULL, "start SFTP on", NULL);
    s->generation++;
    return true;
}
