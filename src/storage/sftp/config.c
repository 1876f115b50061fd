/*
 * config.c - an SFTP repository from its URI and settings: the parts of
 * "sftp://USER@HOST[:PORT]/PATH", the key and known hosts files made
 * absolute (archive_command runs in the data directory), and nothing
 * connected yet.
 */
#define _GNU_SOURCE
#include "storage/sftp/internal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/xmalloc.h"

#define SFTP_SCHEME       "sftp://"
#define SFTP_DEFAULT_PORT 22

void sftp_config_uri_free(sftp_uri *u)
{
    free(u->user);
    free(u->host);
    free(u->path);
    memset(u, 0, sizeof(*u));
}

/* The port after ':' up to end: 1..65535, digits only. */
static bool sftp_config_port(const char *p, const char *end, int *port)
{
    long v = 0;

    if (p == end || end - p > 5)
        return false;
    for (; p < end; p++) {
        if (*p < '0' || *p > '9')
            return false;
        v = v * 10 + (*p - '0');
    }
    if (v < 1 || v > 65535)
        return false;
    *port = (int)v;
    return true;
}

bool sftp_config_parse_uri(const char *uri, sftp_uri *out, const char **why)
{
    const char *p, *at, *slash, *host_end, *colon;
    size_t len;

    memset(out, 0, sizeof(*out));
    out->port = SFTP_DEFAULT_PORT;
    *why = NULL;
    if (strncmp(uri, SFTP_SCHEME, strlen(SFTP_SCHEME)) != 0) {
        *why = "expected sftp://USER@HOST[:PORT]/PATH";
        return false;
    }
    p = uri + strlen(SFTP_SCHEME);
    slash = strchr(p, '/');
    at = memchr(p, '@', slash != NULL ? (size_t)(slash - p) : strlen(p));
    if (at == NULL || at == p) {
        *why = "no user; expected sftp://USER@HOST[:PORT]/PATH";
        return false;
    }
    if (slash == NULL || slash[1] == '\0') {
        *why = "no path; expected sftp://USER@HOST[:PORT]/PATH";
        return false;
    }
    if (memchr(p, ':', (size_t)(at - p)) != NULL) {
        *why = "a password in the URI (use a key: --sftp-private-key-file or an agent)";
        return false;
    }
    /* the host: a name, an IPv4 address or [an IPv6 one] */
    host_end = slash;
    colon = NULL;
    if (at[1] == '[') {
        const char *close = memchr(at + 1, ']', (size_t)(slash - at - 1));
        if (close == NULL || close == at + 2 || (close + 1 != slash && close[1] != ':')) {
            *why = "a malformed [IPv6] host; expected sftp://USER@[ADDRESS]:PORT/PATH";
            return false;
        }
        host_end = close + 1;
        colon = close + 1 != slash ? close + 1 : NULL;
    } else {
        colon = memchr(at + 1, ':', (size_t)(slash - at - 1));
        if (colon != NULL)
            host_end = colon;
    }
    if (host_end == at + 1) {
        *why = "no host; expected sftp://USER@HOST[:PORT]/PATH";
        return false;
    }
    if (colon != NULL && !sftp_config_port(colon + 1, slash, &out->port)) {
        *why = "the port is not a number from 1 to 65535";
        return false;
    }
    if (at[1] == '[')
        out->host = xstrndup(at + 2, (size_t)(host_end - at - 3));
    else
        out->host = xstrndup(at + 1, (size_t)(host_end - at - 1));
    out->user = xstrndup(p, (size_t)(at - p));
    len = strlen(slash);
    while (len > 1 && slash[len - 1] == '/')
        len--;
    out->path = xstrndup(slash, len);
    return true;
}

char *sftp_config_remote_path(const sftp_storage *s, const char *path)
{
    const char *root = s->uri.path;

    if (path[0] == '\0')
        return xstrdup(root);
    return xasprintf("%s%s%s", root, strcmp(root, "/") == 0 ? "" : "/", path);
}

/* An absolute path of a file that may not exist yet (realpath needs it there). */
static char *sftp_config_absolute(const char *path)
{
    char cwd[PATH_MAX];

    if (path[0] == '/' || getcwd(cwd, sizeof(cwd)) == NULL)
        return xstrdup(path);
    return xasprintf("%s/%s", cwd, path);
}

storage *sftp_storage_open(const char *uri, const sftp_options *o, pgd_error *err)
{
    sftp_storage *s;
    sftp_uri parts;
    const char *why, *home;

    if (!sftp_config_parse_uri(uri, &parts, &why)) {
        char *echo = storage_uri_redact(uri, NULL);
        err_set(err, "invalid repository \"%s\": %s", echo, why);
        err_mark(err, PGD_ERR_USAGE);
        free(echo);
        return NULL;
    }
    s = xcalloc(1, sizeof(*s));
    s->base.ops = &sftp_files_ops;
    s->uri = parts;
    s->sock = -1;
    pthread_mutex_init(&s->lock, NULL);
    if (o != NULL && o->private_key_file != NULL && o->private_key_file[0] != '\0')
        s->key_file = sftp_config_absolute(o->private_key_file);
    if (o != NULL && o->known_hosts != NULL && o->known_hosts[0] != '\0')
        s->known_hosts = sftp_config_absolute(o->known_hosts);
    else if ((home = getenv("HOME")) != NULL && home[0] == '/')
        s->known_hosts = xasprintf("%s/%s", home, SFTP_KNOWN_HOSTS_DEFAULT);
    else
        s->known_hosts = xasprintf("~/%s", SFTP_KNOWN_HOSTS_DEFAULT); /* fails, naming it */
    s->where =
        xasprintf(strchr(parts.host, ':') != NULL ? "[%s]:%d" : "%s:%d", parts.host, parts.port);
    s->base.uri = xasprintf("sftp://%s@%s%s", parts.user, s->where, parts.path);
    return &s->base;
}

bool sftp_storage_where(const storage *repo, const char **key_file, const char **known_hosts)
{
    const sftp_storage *s = (const sftp_storage *)repo;

    if (repo->ops != &sftp_files_ops)
        return false;
    *key_file = s->key_file;
    *known_hosts = s->known_hosts;
    return true;
}
