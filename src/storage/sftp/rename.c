/*
 * rename.c - an atomic rename that replaces its target, over SFTP.
 *
 * SFTP version 3, which OpenSSH speaks, renames without replacing (its
 * server links the new name, then unlinks the old: the rename fails when
 * the target exists, which is what a no-replace write wants). A write that
 * replaces (a lease renewed, a verify record) needs OpenSSH's extension
 * posix-rename@openssh.com, rename(2) on the server. libssh2 1.10 sends no
 * extended request, so this file opens a second SFTP channel of its own on
 * the same connection for that one request: SSH_FXP_INIT, the VERSION
 * answer and its list of extensions, then SSH_FXP_EXTENDED and the
 * SSH_FXP_STATUS answer (draft-ietf-secsh-filexfer-02, and OpenSSH's
 * PROTOCOL file for the extension).
 */
#include "storage/sftp/internal.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/xmalloc.h"

#define SFTP_RENAME_FXP_INIT     1
#define SFTP_RENAME_FXP_VERSION  2
#define SFTP_RENAME_FXP_STATUS   101
#define SFTP_RENAME_FXP_EXTENDED 200
#define SFTP_RENAME_VERSION      3
#define SFTP_RENAME_EXTENSION    "posix-rename@openssh.com"
/* The largest answer taken: a VERSION packet lists a few extensions, a STATUS a message. */
#define SFTP_RENAME_PACKET_MAX (64u * 1024)

static uint32_t sftp_rename_get32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void sftp_rename_put32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* A string at *p (uint32 length, bytes) within end; false when it runs past. */
static bool sftp_rename_string(const unsigned char **p, const unsigned char *end,
                               const unsigned char **str, uint32_t *len)
{
    if (end - *p < 4)
        return false;
    *len = sftp_rename_get32(*p);
    if ((size_t)(end - *p - 4) < *len)
        return false;
    *str = *p + 4;
    *p += 4 + *len;
    return true;
}

bool sftp_rename_parse_version(const unsigned char *body, size_t len, bool *posix_rename)
{
    const unsigned char *p = body, *end = body + len, *name, *data;
    uint32_t name_len, data_len;

    *posix_rename = false;
    if (len < 4)
        return false;
    p += 4; /* the version */
    while (p < end) {
        if (!sftp_rename_string(&p, end, &name, &name_len) ||
            !sftp_rename_string(&p, end, &data, &data_len))
            return false;
        if (name_len == strlen(SFTP_RENAME_EXTENSION) &&
            memcmp(name, SFTP_RENAME_EXTENSION, name_len) == 0)
            *posix_rename = true;
    }
    return true;
}

static bool sftp_rename_send(sftp_storage *s, const unsigned char *buf, size_t len, pgd_error *err)
{
    while (len > 0) {
        ssize_t n = libssh2_channel_write_ex(s->ext, 0, (const char *)buf, len);
        if (n <= 0)
            return sftp_session_fail(s, err, NULL, "send a rename request to", NULL);
        buf += n;
        len -= (size_t)n;
    }
    return true;
}

static bool sftp_rename_recv_exact(sftp_storage *s, unsigned char *buf, size_t len, pgd_error *err)
{
    while (len > 0) {
        ssize_t n = libssh2_channel_read_ex(s->ext, 0, (char *)buf, len);
        if (n <= 0) {
            if (n == 0) {
                err_set(err, "sftp server %s closed its SFTP channel", s->where);
                err_mark(err, PGD_ERR_TRANSIENT);
                sftp_session_drop(s);
                return false;
            }
            return sftp_session_fail(s, err, NULL, "read an answer from", NULL);
        }
        buf += n;
        len -= (size_t)n;
    }
    return true;
}

/* One packet: its type and body (malloc'd). */
static bool sftp_rename_recv(sftp_storage *s, unsigned char *type, unsigned char **body,
                             size_t *len, pgd_error *err)
{
    unsigned char head[5];
    uint32_t n;

    if (!sftp_rename_recv_exact(s, head, sizeof(head), err))
        return false;
    n = sftp_rename_get32(head);
    if (n < 1 || n > SFTP_RENAME_PACKET_MAX) {
        sftp_session_drop(s);
        return err_set(err, "sftp server %s sent a packet of %u bytes", s->where, n);
    }
    *type = head[4];
    *len = n - 1;
    *body = xmalloc(*len + 1);
    if (!sftp_rename_recv_exact(s, *body, *len, err)) {
        free(*body);
        *body = NULL;
        return false;
    }
    return true;
}

/* The channel, and whether the server has the extension (once per connection). */
static bool sftp_rename_open(sftp_storage *s, pgd_error *err)
{
    unsigned char init[9], type, *body = NULL;
    size_t len;
    bool ok;

    if (s->ext_tried)
        return true;
    s->ext = libssh2_channel_open_ex(s->session, "session", sizeof("session") - 1,
                                     LIBSSH2_CHANNEL_WINDOW_DEFAULT, LIBSSH2_CHANNEL_PACKET_DEFAULT,
                                     NULL, 0);
    if (s->ext == NULL)
        return sftp_session_fail(s, err, NULL, "open a channel to", NULL);
    if (libssh2_channel_process_startup(s->ext, "subsystem", sizeof("subsystem") - 1, "sftp",
                                        sizeof("sftp") - 1) != 0)
        return sftp_session_fail(s, err, NULL, "start SFTP on", NULL);
    sftp_rename_put32(init, 5);
    init[4] = SFTP_RENAME_FXP_INIT;
    sftp_rename_put32(init + 5, SFTP_RENAME_VERSION);
    if (!sftp_rename_send(s, init, sizeof(init), err) ||
        !sftp_rename_recv(s, &type, &body, &len, err))
        return false;
    ok = type == SFTP_RENAME_FXP_VERSION &&
         sftp_rename_parse_version(body, len, &s->ext_posix_rename);
    free(body);
    if (!ok) {
        sftp_session_drop(s);
        return err_set(err, "sftp server %s answered SSH_FXP_INIT with a malformed packet",
                       s->where);
    }
    s->ext_tried = true;
    return true;
}

bool sftp_rename_replace(sftp_storage *s, const char *src, const char *dst, pgd_error *err)
{
    size_t ext_len = strlen(SFTP_RENAME_EXTENSION), src_len = strlen(src), dst_len = strlen(dst);
    size_t len = 4 + 1 + 4 + 4 + ext_len + 4 + src_len + 4 + dst_len, body_len;
    unsigned char *req, *p, type, *body = NULL;
    uint32_t id, code;
    bool ok;

    if (!sftp_rename_open(s, err))
        return false;
    if (!s->ext_posix_rename) {
        pgd_error mine = {0};
        unsigned long status;

        /* a new object needs no replacing: the plain rename does; one that is there stays */
        if (libssh2_sftp_rename_ex(s->sftp, src, (unsigned)src_len, dst, (unsigned)dst_len,
                                   LIBSSH2_SFTP_RENAME_ATOMIC) == 0)
            return true;
        sftp_session_fail(s, &mine, &status, "rename", src);
        if (status == 0) { /* the connection failed */
            err_set(err, "%s", mine.msg);
            err_mark(err, mine.kind);
            return false;
        }
        return err_set(err,
                       "could not rename \"%s\" to \"%s\" on %s: the server does not offer %s, "
                       "and a plain SFTP rename does not replace",
                       src, dst, s->where, SFTP_RENAME_EXTENSION);
    }
    id = ++s->ext_id;
    req = p = xmalloc(len);
    sftp_rename_put32(p, (uint32_t)(len - 4));
    p[4] = SFTP_RENAME_FXP_EXTENDED;
    sftp_rename_put32(p + 5, id);
    p += 9;
    sftp_rename_put32(p, (uint32_t)ext_len);
    memcpy(p + 4, SFTP_RENAME_EXTENSION, ext_len);
    p += 4 + ext_len;
    sftp_rename_put32(p, (uint32_t)src_len);
    memcpy(p + 4, src, src_len);
    p += 4 + src_len;
    sftp_rename_put32(p, (uint32_t)dst_len);
    memcpy(p + 4, dst, dst_len);
    ok = sftp_rename_send(s, req, len, err);
    free(req);
    if (!ok || !sftp_rename_recv(s, &type, &body, &body_len, err))
        return false;
    if (type != SFTP_RENAME_FXP_STATUS || body_len < 8 || sftp_rename_get32(body) != id) {
        free(body);
        sftp_session_drop(s);
        return err_set(err, "sftp server %s answered a rename with a malformed packet", s->where);
    }
    code = sftp_rename_get32(body + 4);
    free(body);
    if (code != LIBSSH2_FX_OK)
        return err_set(err, "could not rename \"%s\" to \"%s\" on %s: SFTP status %u", src, dst,
                       s->where, code);
    return true;
}
