/*
 * storage.c - what every back end shares, built on the interface alone:
 * repository URIs, whole small objects, batched removal. Choosing a back
 * end is storage_open.c's, above the drivers: this file knows none.
 */
#include "storage/storage.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/xmalloc.h"

#define SMALL_OBJECT_MAX (256u * 1024 * 1024)

bool storage_uri_is_s3(const char *uri)
{
    return strncmp(uri, STORAGE_S3_SCHEME, strlen(STORAGE_S3_SCHEME)) == 0;
}

bool storage_uri_is_sftp(const char *uri)
{
    return strncmp(uri, STORAGE_SFTP_SCHEME, strlen(STORAGE_SFTP_SCHEME)) == 0;
}

bool storage_uri_is_azure(const char *uri)
{
    return strncmp(uri, STORAGE_AZURE_SCHEME, strlen(STORAGE_AZURE_SCHEME)) == 0;
}

/* What --repo may be, for the messages that refuse something else (null: is for benchmarks). */
#define STORAGE_URI_FORMS                                                                          \
    "an absolute path, file:///path, s3://bucket/prefix, azure://container/prefix or "             \
    "sftp://user@host[:port]/path"

const char *storage_path_dot_segment(const char *path, size_t *len)
{
    for (const char *seg = path; *seg; seg++) {
        size_t n;
        if (*seg == '/')
            continue;
        n = strcspn(seg, "/");
        if ((n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.')) {
            *len = n;
            return seg;
        }
        seg += n - 1;
    }
    return NULL;
}

bool storage_uri_prefix(const char *uri, const char *slash, char **prefix, pgd_error *err)
{
    const char *rest = slash != NULL ? slash : "", *seg;
    size_t len;

    *prefix = NULL;
    for (const char *c = rest; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            return err_set(err, "invalid repository \"%s\": the prefix holds a control character",
                           uri);
    if ((seg = storage_path_dot_segment(rest, &len)) != NULL)
        return err_set(err,
                       "invalid repository \"%s\": the prefix holds a \"%.*s\" segment, "
                       "which URLs remove",
                       uri, (int)len, seg);
    while (*rest == '/')
        rest++;
    len = strlen(rest);
    while (len > 0 && rest[len - 1] == '/')
        len--;
    *prefix = xstrndup(rest, len);
    return true;
}

/* "." or ".." in the prefix of an object store's URI: why it is refused, or NULL. */
static const char *storage_uri_dot_segment(const char *rest)
{
    size_t len;
    const char *slash = strchr(rest, '/');
    const char *seg = slash != NULL ? storage_path_dot_segment(slash, &len) : NULL;

    if (seg == NULL)
        return NULL;
    return len == 1 ? "the prefix holds a \".\" segment, which URLs remove"
                    : "the prefix holds a \"..\" segment, which URLs remove";
}

/*
 * A plain path must be absolute: archive_command and restore_command run
 * in the data directory, the other commands wherever they are started, so
 * a relative path would name another repository in each.
 */
bool storage_uri_valid(const char *uri, const char **why)
{
    const char *rest;

    *why = NULL;
    if (uri[0] == '\0')
        *why = "empty; expected " STORAGE_URI_FORMS;
    else if (strcmp(uri, STORAGE_NULL_URI) == 0)
        return true;
    else if (storage_uri_is_s3(uri)) {
        rest = uri + strlen(STORAGE_S3_SCHEME);
        if (rest[0] == '\0' || rest[0] == '/')
            *why = "no bucket; expected s3://bucket/prefix";
        else if (strcspn(rest, "/") > strcspn(rest, ":@"))
            *why = "credentials in the URI (give them in AWS_ACCESS_KEY_ID and "
                   "AWS_SECRET_ACCESS_KEY); expected s3://bucket/prefix";
        else
            *why = storage_uri_dot_segment(rest);
    } else if (storage_uri_is_sftp(uri)) {
        /* the rest is the driver's to parse (storage/sftp/config.c): it says what is wrong */
        rest = uri + strlen(STORAGE_SFTP_SCHEME);
        if (strchr(rest, '@') != NULL && strcspn(rest, ":/@") < strcspn(rest, "/@"))
            *why = "a password in the URI (use a key: --sftp-private-key-file or an agent)";
        else if (strchr(rest, '@') == NULL || strchr(rest, '/') == NULL)
            *why = "expected sftp://USER@HOST[:PORT]/PATH";
    } else if (storage_uri_is_azure(uri)) {
        rest = uri + strlen(STORAGE_AZURE_SCHEME);
        if (rest[0] == '\0' || rest[0] == '/')
            *why = "no container; expected azure://container/prefix";
        else if (strcspn(rest, "/") > strcspn(rest, ":@"))
            *why = "credentials in the URI (give them in AZURE_STORAGE_KEY, "
                   "AZURE_STORAGE_SAS_TOKEN or AZURE_STORAGE_CONNECTION_STRING); expected "
                   "azure://container/prefix";
        else
            *why = storage_uri_dot_segment(rest);
    } else if (strncmp(uri, STORAGE_FILE_SCHEME, strlen(STORAGE_FILE_SCHEME)) == 0) {
        rest = uri + strlen(STORAGE_FILE_SCHEME);
        if (rest[0] != '/')
            *why = "expected file:///absolute/path";
    } else if (strstr(uri, "://") != NULL)
        *why = "unsupported scheme; expected " STORAGE_URI_FORMS;
    else if (uri[0] != '/')
        *why = "a relative path (archive_command and restore_command run in the data "
               "directory); expected " STORAGE_URI_FORMS;
    return *why == NULL;
}

/* Is name[0..len) one of keep? */
static bool storage_uri_kept(const char *name, size_t len, const char *const *keep)
{
    for (; keep != NULL && *keep != NULL; keep++)
        if (strlen(*keep) == len && strncmp(*keep, name, len) == 0)
            return true;
    return false;
}

/*
 * The password of SCHEME://USER:PASSWORD@HOST masked from its ':' up to the
 * last '@' (a password may hold '@', '/', '?' itself: more is masked rather
 * than less), then each NAME=VALUE after '?' with its value masked unless
 * NAME is kept; an item without '=' is masked whole.
 */
char *storage_uri_redact(const char *uri, const char *const *keep)
{
    const char *auth = strstr(uri, "://"), *rest = uri, *q;
    size_t cap = strlen(uri) * 2 + 16, used = 0;
    char *out = xmalloc(cap);

#define STORAGE_URI_PUT(p, n)                                                                      \
    do {                                                                                           \
        size_t n_ = (n);                                                                           \
        if (used + n_ + 1 > cap)                                                                   \
            out = xrealloc(out, cap = (used + n_ + 1) * 2);                                        \
        memcpy(out + used, (p), n_);                                                               \
        used += n_;                                                                                \
    } while (0)

    if (auth != NULL && strcspn(uri, "/?") > (size_t)(auth - uri)) {
        const char *colon, *at;
        auth += 3;
        colon = auth + strcspn(auth, ":/@?");
        at = strrchr(auth, '@');
        if (*colon == ':' && at != NULL && at > colon) {
            STORAGE_URI_PUT(uri, (size_t)(colon - uri));
            STORAGE_URI_PUT(":***", 4);
            rest = at;
        }
    }
    q = strchr(rest, '?');
    STORAGE_URI_PUT(rest, q != NULL ? (size_t)(q - rest) : strlen(rest));
    while (q != NULL) {
        const char *item = q + 1, *end = item + strcspn(item, "&"),
                   *eq = memchr(item, '=', end - item);
        STORAGE_URI_PUT(q, 1);
        if (eq == NULL)
            STORAGE_URI_PUT("***", item == end ? 0 : 3);
        else if (!storage_uri_kept(item, (size_t)(eq - item), keep)) {
            STORAGE_URI_PUT(item, (size_t)(eq - item) + 1);
            STORAGE_URI_PUT("***", 3);
        } else {
            char *value = xstrndup(eq + 1, (size_t)(end - eq - 1));
            char *shown = storage_uri_redact(value, NULL);
            STORAGE_URI_PUT(item, (size_t)(eq - item) + 1);
            STORAGE_URI_PUT(shown, strlen(shown));
            free(shown);
            free(value);
        }
        q = *end == '&' ? end : NULL;
    }
#undef STORAGE_URI_PUT
    out[used] = '\0';
    return out;
}

bool storage_list_keys(const char *where, const char *dir, const char *list_prefix,
                       const storage_key *keys, size_t n, storage_list_cb cb, void *arg,
                       pgd_error *err)
{
    size_t plen = strlen(list_prefix);

    for (size_t i = 0; i < n; i++) {
        const storage_key *e = &keys[i];
        char *name;
        size_t nlen;
        bool ok;
        if (strncmp(e->name, list_prefix, plen) != 0)
            return err_set(err, "listing \"%s\" in %s returned \"%s\", which is not under it", dir,
                           where, e->name);
        if (!e->is_prefix && e->name[plen] == '\0')
            continue; /* a "directory" marker object */
        nlen = strlen(e->name + plen) - (e->is_prefix ? 1 : 0);
        if (nlen == 0 || memchr(e->name + plen, '/', nlen) != NULL ||
            (e->is_prefix && e->name[plen + nlen] != '/'))
            return err_set(err,
                           "listing \"%s\" in %s returned \"%s\", which is not directly under it "
                           "(does the server ignore the delimiter?)",
                           dir, where, e->name);
        name = xstrndup(e->name + plen, nlen);
        ok = cb(arg, name, e->size, e->is_prefix, err);
        free(name);
        if (!ok)
            return false;
    }
    return true;
}

bool storage_is_temp_name(const char *name)
{
    const char *t = strstr(name, ".tmp."), *p;

    if (t == NULL || t == name)
        return false;
    for (const char *next; (next = strstr(t + 1, ".tmp.")) != NULL;)
        t = next;
    p = t + strlen(".tmp.");
    if (!isdigit((unsigned char)*p))
        return false;
    while (isdigit((unsigned char)*p))
        p++;
    if (*p++ != '.' || !isdigit((unsigned char)*p))
        return false;
    while (isdigit((unsigned char)*p))
        p++;
    return *p == '\0';
}

bool storage_root_exists(storage *s, bool *exists, pgd_error *err)
{
    *exists = true;
    return s->ops->root_exists == NULL || s->ops->root_exists(s, exists, err);
}

void storage_free(storage *s)
{
    if (s != NULL)
        s->ops->free(s);
}

bool storage_check_writable(storage *s, pgd_error *err)
{
    char probe[64];

    snprintf(probe, sizeof(probe), ".probe.%ld", (long)getpid());
    if (!storage_put(s, probe, "probe", 5, 0, err)) {
        err_prefix(err, "repository \"%s\" is not writable", s->uri);
        return false;
    }
    return storage_remove(s, probe, err);
}

bool storage_get(storage *s, const char *path, char **data, size_t *len, bool *missing,
                 pgd_error *err)
{
    in_stream *in = storage_read_open(s, path, missing, err);
    size_t cap = 64 * 1024, used = 0;
    char *buf;

    *data = NULL;
    *len = 0;
    if (in == NULL)
        return false;
    buf = xmalloc(cap + 1);
    for (;;) {
        size_t n;
        if (used == cap) {
            if (cap >= SMALL_OBJECT_MAX) {
                free(buf);
                in_close(in);
                return err_set(err, "object \"%s\" in repository \"%s\" is larger than %u bytes",
                               path, s->uri, SMALL_OBJECT_MAX);
            }
            cap *= 2;
            buf = xrealloc(buf, cap + 1);
        }
        if (!in_read(in, buf + used, cap - used, &n, err)) {
            free(buf);
            in_close(in);
            return false;
        }
        if (n == 0)
            break;
        used += n;
    }
    in_close(in);
    buf[used] = '\0';
    *data = buf;
    *len = used;
    return true;
}

bool storage_put(storage *s, const char *path, const void *data, size_t len, unsigned flags,
                 pgd_error *err)
{
    out_stream *out = storage_write_open(s, path, flags, err);

    if (out == NULL)
        return false;
    if (!out_write(out, data, len, err)) {
        out_abort(out);
        return false;
    }
    return out_close(out, err);
}

bool storage_remove_many(storage *s, const char *const *paths, size_t n, pgd_error *err)
{
    if (s->ops->remove_many != NULL)
        return s->ops->remove_many(s, paths, n, err);
    for (size_t i = 0; i < n; i++)
        if (!storage_remove(s, paths[i], err))
            return false;
    return true;
}

bool storage_remove_stale_temp(storage *s, const char *dir, int64_t older_than_s, pgd_error *err)
{
    if (s->ops->remove_stale_temp == NULL)
        return true;
    return s->ops->remove_stale_temp(s, dir, older_than_s, err);
}

bool storage_remove_stale_temp_of(storage *s, const char *path, int64_t older_than_s,
                                  pgd_error *err)
{
    if (s->ops->remove_stale_temp_of == NULL)
        return true;
    return s->ops->remove_stale_temp_of(s, path, older_than_s, err);
}
