/*
 * storage.h - the repository's storage back end: one interface, so backup,
 * restore and the WAL commands never know whether they talk to a local
 * directory or to an object store.
 *
 * Paths are relative to the repository root and use '/'. Every object is
 * written atomically: it becomes visible, whole, when its out_stream is
 * closed; an aborted or killed writer leaves at most hidden garbage (a
 * temporary name that no reader looks at).
 */
#ifndef PGD_STORAGE_H
#define PGD_STORAGE_H

#include <stdbool.h>
#include <stdint.h>

#include "io/stream.h"
#include "util/error.h"

typedef struct storage storage;

/* Called once per entry of a listed directory; return false to stop with an error. */
typedef bool (*storage_list_cb)(void *arg, const char *name, uint64_t size, bool is_dir,
                                pgd_error *err);

/* What an object store's listing page holds: a whole key, or a prefix (with its delimiter). */
typedef struct storage_key {
    char *name;
    uint64_t size; /* 0 for a prefix */
    bool is_prefix;
} storage_key;

/*
 * The keys of a listing page under list_prefix (the directory `dir`, as a key prefix ending
 * with '/'), given to cb as the entries directly under dir; a "directory" marker object is
 * passed over. A key outside dir, or one deeper than a common prefix would be, is an error
 * naming `where` (the store, for the message): the server ignored the prefix or the delimiter.
 */
bool storage_list_keys(const char *where, const char *dir, const char *list_prefix,
                       const storage_key *keys, size_t n, storage_list_cb cb, void *arg,
                       pgd_error *err);

enum {
    STORAGE_WRITE_NO_REPLACE = 1 << 0, /* closing fails if the object already exists */
};

typedef struct storage_ops {
    out_stream *(*write_open)(storage *s, const char *path, unsigned flags, pgd_error *err);
    /* NULL with *missing = true and no error when the object does not exist. */
    in_stream *(*read_open)(storage *s, const char *path, bool *missing, pgd_error *err);
    bool (*exists)(storage *s, const char *path, bool *exists, pgd_error *err);
    /* Entries directly under `dir`; a missing dir lists nothing. */
    bool (*list)(storage *s, const char *dir, storage_list_cb cb, void *arg, pgd_error *err);
    bool (*remove)(storage *s, const char *path, pgd_error *err);
    void (*free)(storage *s);
    /* optional: many objects in few requests (S3 DeleteObjects) */
    bool (*remove_many)(storage *s, const char *const *paths, size_t n, pgd_error *err);
    /*
     * optional: remove the temporary objects a killed writer left under
     * `dir` (recursively) that nobody has written to for older_than_s
     * seconds; back ends without temporary objects leave it NULL.
     */
    bool (*remove_stale_temp)(storage *s, const char *dir, int64_t older_than_s, pgd_error *err);
    /*
     * optional, with remove_stale_temp: the same for the temporary objects
     * of the one object `path` (beside it, not in the folders below it).
     */
    bool (*remove_stale_temp_of)(storage *s, const char *path, int64_t older_than_s,
                                 pgd_error *err);
    /*
     * optional: make an object that is there durable (its content and its
     * name), for a writer that was stopped after the object became visible
     * and before it was made durable; back ends whose objects are durable
     * once visible leave it NULL.
     */
    bool (*sync)(storage *s, const char *path, pgd_error *err);
    /*
     * optional: is the repository's root there? For back ends whose root
     * can be missing on its own (a local directory); NULL: it always is.
     */
    bool (*root_exists)(storage *s, bool *exists, pgd_error *err);
    /*
     * optional: until when the store refuses to remove the object at `path`
     * (S3 Object Lock's retain-until date), Unix seconds; 0 when never
     * (no lock, a missing object). NULL: objects are never locked.
     */
    bool (*retained_until)(storage *s, const char *path, int64_t *until, pgd_error *err);
} storage_ops;

struct storage {
    const storage_ops *ops;
    char *uri;              /* for messages; never holds credentials */
    uint64_t stream_memory; /* buffers one open writer holds (upload parts) */
};

/*
 * Settings of back ends that need more than a URI are each back end's own
 * business: the S3 driver's are declared in storage/s3/s3.h, the Azure
 * driver's in storage/azure/azure.h, filled by the command, and forwarded
 * here untouched. Any of them may be NULL: that driver's defaults.
 */
struct s3_options;
struct azure_options;
struct sftp_options; /* storage/sftp/sftp.h */

typedef struct storage_options {
    const struct s3_options *s3;
    const struct azure_options *azure;
    const struct sftp_options *sftp;
} storage_options;

/*
 * "file:///path", a plain absolute path, "null:" (keeps nothing),
 * "s3://bucket/prefix" (defaults and AWS_*), "azure://container/prefix"
 * (defaults and AZURE_STORAGE_*) or "sftp://USER@HOST[:PORT]/PATH"; o, and
 * any of its members, may be NULL: that driver's defaults. A relative path
 * is refused (storage_uri_valid). A local directory that does not exist is
 * opened all the same (writers create it): storage_root_exists tells.
 */
storage *storage_open(const char *uri, const storage_options *o, pgd_error *err);

/*
 * Is `uri` of a form storage_open accepts? Decided from the text alone,
 * nothing is looked at; when not, *why says what is wrong, to follow
 * "invalid repository \"URI\": " or the option that gave it.
 */
bool storage_uri_valid(const char *uri, const char **why);

/*
 * The first "." or ".." segment of the '/'-separated `path` (its length in
 * *len), or NULL. An object store's URL cannot hold one: libcurl and the
 * services remove dot segments, so the request would name another object
 * than the one signed (answered 403) or stored; s3:// and azure:// refuse
 * them in their prefix.
 */
const char *storage_path_dot_segment(const char *path, size_t *len);

/*
 * The prefix of an object store's URI (s3://, azure://) from `slash`, its '/' after the bucket
 * or container (NULL: none), without leading and trailing '/' (xmalloc'd). False, naming
 * `uri` (which passed storage_uri_valid), when it holds a control character (the stores list
 * keys in XML 1.0, which cannot carry one) or a "." or ".." segment (storage_path_dot_segment).
 */
bool storage_uri_prefix(const char *uri, const char *slash, char **prefix, pgd_error *err);

/*
 * `uri` as a message may show it (xmalloc'd): a password of its user part
 * (SCHEME://USER:PASSWORD@...) and the values after '?' (a SAS token, a
 * presigned signature) masked as "***", but the values of the settings
 * named in `keep` (NULL-terminated, may be NULL), which are never secret
 * and are shown with their own user part masked. Every message, log line
 * and JSON field that carries a URI a user gave goes through it.
 */
char *storage_uri_redact(const char *uri, const char *const *keep);

/* The schemes of repository URIs, and whether `uri` is of one of them. */
#define STORAGE_S3_SCHEME    "s3://"
#define STORAGE_AZURE_SCHEME "azure://"
#define STORAGE_SFTP_SCHEME  "sftp://"
#define STORAGE_FILE_SCHEME  "file://"
#define STORAGE_NULL_URI     "null:"
bool storage_uri_is_s3(const char *uri);
bool storage_uri_is_azure(const char *uri);
bool storage_uri_is_sftp(const char *uri);
void storage_free(storage *s);

/*
 * Is the repository itself there? False, without an error, for a local
 * directory that does not exist; always true for back ends without a root
 * of their own (an S3 prefix exists with its first object, and a bucket
 * that does not exist fails the first request, naming it).
 */
bool storage_root_exists(storage *s, bool *exists, pgd_error *err);

/* Remove many objects (batched where the back end can). */
bool storage_remove_many(storage *s, const char *const *paths, size_t n, pgd_error *err);

/* Temporary objects of killed writers under `dir`, idle for older_than_s (no-op where none). */
bool storage_remove_stale_temp(storage *s, const char *dir, int64_t older_than_s, pgd_error *err);

/*
 * The temporary objects a killed writer of `path` left ("<path>.tmp.*"),
 * idle for older_than_s (no-op where none): for an object at the root,
 * whose folder is not swept as a whole (keyring.pgdirect).
 */
bool storage_remove_stale_temp_of(storage *s, const char *path, int64_t older_than_s,
                                  pgd_error *err);

/*
 * "<name>.tmp.<pid>.<n>": the temporary name under which the drivers that
 * rename into place (fs.c, sftp/) write an object, and what their
 * remove_stale_temp sweeps.
 */
bool storage_is_temp_name(const char *name);

/* Write and remove a probe object: fails early when the repository is not writable. */
bool storage_check_writable(storage *s, pgd_error *err);

/* Whole small objects (manifests, sentinels): read into a NUL-terminated buffer. */
bool storage_get(storage *s, const char *path, char **data, size_t *len, bool *missing,
                 pgd_error *err);
bool storage_put(storage *s, const char *path, const void *data, size_t len, unsigned flags,
                 pgd_error *err);

static inline out_stream *storage_write_open(storage *s, const char *path, unsigned flags,
                                             pgd_error *err)
{
    return s->ops->write_open(s, path, flags, err);
}

static inline in_stream *storage_read_open(storage *s, const char *path, bool *missing,
                                           pgd_error *err)
{
    return s->ops->read_open(s, path, missing, err);
}

static inline bool storage_exists(storage *s, const char *path, bool *exists, pgd_error *err)
{
    return s->ops->exists(s, path, exists, err);
}

static inline bool storage_list(storage *s, const char *dir, storage_list_cb cb, void *arg,
                                pgd_error *err)
{
    return s->ops->list(s, dir, cb, arg, err);
}

static inline bool storage_remove(storage *s, const char *path, pgd_error *err)
{
    return s->ops->remove(s, path, err);
}

/* Until when the object at `path` cannot be removed; 0: it can (storage_ops.retained_until). */
static inline bool storage_retained_until(storage *s, const char *path, int64_t *until,
                                          pgd_error *err)
{
    *until = 0;
    return s->ops->retained_until == NULL || s->ops->retained_until(s, path, until, err);
}

/* Are objects durable only once synced (see storage_ops.sync)? */
static inline bool storage_needs_sync(const storage *s)
{
    return s->ops->sync != NULL;
}

static inline bool storage_sync(storage *s, const char *path, pgd_error *err)
{
    return s->ops->sync == NULL || s->ops->sync(s, path, err);
}

/* Back ends; never NULL (a failed allocation ends the process, util/xmalloc.h). */
storage *storage_fs_new(const char *root);
storage *storage_null_new(void); /* keeps nothing: read-speed benchmarks */

#endif
