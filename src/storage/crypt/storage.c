/*
 * storage.c - see storage.h.
 */
#include "storage/crypt/storage.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "storage/crypt/format.h"
#include "storage/crypt/keyring.h"
#include "util/xmalloc.h"

typedef struct crypt_storage {
    storage base;
    storage *inner;
    crypt_keyring *keyring;
} crypt_storage;

/*
 * The marker: a second, tiny object written beside the keyring when a
 * repository is made encrypted, so that one object deleted by hand does not
 * lose the fact that the repository is encrypted (a keyless writer would
 * then write plaintext beside encrypted objects).
 */
#define CRYPT_STORAGE_MARKER CRYPT_MARKER_NAME
#define CRYPT_STORAGE_MARKER_TEXT                                                                  \
    "pgdirect: this repository is encrypted; its keyring is keyring.pgdirect\n"

/* the keyring or the marker: objects of the repository's root the filter does not pass */
static bool crypt_storage_is_keyring(const char *path)
{
    return strcmp(path, CRYPT_KEYRING_NAME) == 0 || strcmp(path, CRYPT_STORAGE_MARKER) == 0;
}

static bool crypt_storage_key(void *arg, uint32_t id, uint8_t key[CRYPT_KEY_LEN])
{
    return crypt_keyring_key(arg, id, key);
}

static out_stream *crypt_storage_write_open(storage *s, const char *path, unsigned flags,
                                            pgd_error *err)
{
    crypt_storage *cs = (crypt_storage *)s;
    uint8_t key[CRYPT_KEY_LEN];
    uint32_t id = crypt_keyring_active(cs->keyring);
    out_stream *out, *enc;

    if (crypt_storage_is_keyring(path)) {
        err_set(err, "object \"%s\" of repository \"%s\" is written by pgdirect key rotate only",
                path, s->uri);
        return NULL;
    }
    if ((out = storage_write_open(cs->inner, path, flags, err)) == NULL)
        return NULL;
    crypt_keyring_key(cs->keyring, id, key);
    enc = crypt_format_out_new(out, key, id, path, NULL, err);
    crypt_cipher_wipe(key, sizeof(key));
    return enc;
}

static in_stream *crypt_storage_read_open(storage *s, const char *path, bool *missing,
                                          pgd_error *err)
{
    crypt_storage *cs = (crypt_storage *)s;
    in_stream *in = storage_read_open(cs->inner, path, missing, err);

    if (in == NULL || crypt_storage_is_keyring(path))
        return in;
    return crypt_format_in_new(in, crypt_storage_key, cs->keyring, path, s->uri);
}

static bool crypt_storage_exists(storage *s, const char *path, bool *exists, pgd_error *err)
{
    return storage_exists(((crypt_storage *)s)->inner, path, exists, err);
}

typedef struct crypt_storage_listing {
    const char *dir;
    storage_list_cb cb;
    void *arg;
} crypt_storage_listing;

/* Plaintext sizes; an object too short to be encrypted is listed as it is (a read finds it
 * damaged). */
static bool crypt_storage_list_entry(void *arg, const char *name, uint64_t size, bool is_dir,
                                     pgd_error *err)
{
    crypt_storage_listing *l = arg;
    uint64_t plain;

    if (is_dir)
        return l->cb(l->arg, name, size, is_dir, err);
    if (l->dir[0] == '\0' && crypt_storage_is_keyring(name))
        return true;
    return l->cb(l->arg, name, crypt_format_plain_size(size, &plain) ? plain : size, false, err);
}

static bool crypt_storage_list(storage *s, const char *dir, storage_list_cb cb, void *arg,
                               pgd_error *err)
{
    crypt_storage_listing l = {dir, cb, arg};

    return storage_list(((crypt_storage *)s)->inner, dir, crypt_storage_list_entry, &l, err);
}

static bool crypt_storage_remove(storage *s, const char *path, pgd_error *err)
{
    if (crypt_storage_is_keyring(path))
        return err_set(err,
                       "object \"%s\" of repository \"%s\" is not removed: without it, "
                       "nothing in the repository can be read",
                       path, s->uri);
    return storage_remove(((crypt_storage *)s)->inner, path, err);
}

static bool crypt_storage_remove_many(storage *s, const char *const *paths, size_t n,
                                      pgd_error *err)
{
    for (size_t i = 0; i < n; i++)
        if (crypt_storage_is_keyring(paths[i]))
            return crypt_storage_remove(s, paths[i], err);
    return storage_remove_many(((crypt_storage *)s)->inner, paths, n, err);
}

static bool crypt_storage_remove_stale_temp(storage *s, const char *dir, int64_t older_than_s,
                                            pgd_error *err)
{
    return storage_remove_stale_temp(((crypt_storage *)s)->inner, dir, older_than_s, err);
}

static bool crypt_storage_remove_stale_temp_of(storage *s, const char *path, int64_t older_than_s,
                                               pgd_error *err)
{
    return storage_remove_stale_temp_of(((crypt_storage *)s)->inner, path, older_than_s, err);
}

static bool crypt_storage_sync(storage *s, const char *path, pgd_error *err)
{
    return storage_sync(((crypt_storage *)s)->inner, path, err);
}

static bool crypt_storage_root_exists(storage *s, bool *exists, pgd_error *err)
{
    return storage_root_exists(((crypt_storage *)s)->inner, exists, err);
}

/* locks are the store's: asked of the object as stored */
static bool crypt_storage_retained_until(storage *s, const char *path, int64_t *until,
                                         pgd_error *err)
{
    return storage_retained_until(((crypt_storage *)s)->inner, path, until, err);
}

static void crypt_storage_free(storage *s)
{
    crypt_storage *cs = (crypt_storage *)s;

    storage_free(cs->inner);
    crypt_keyring_free(cs->keyring);
    free(s->uri);
    free(cs);
}

static const storage_ops crypt_storage_ops_with_sync = {
    .write_open = crypt_storage_write_open,
    .read_open = crypt_storage_read_open,
    .exists = crypt_storage_exists,
    .list = crypt_storage_list,
    .remove = crypt_storage_remove,
    .free = crypt_storage_free,
    .remove_many = crypt_storage_remove_many,
    .remove_stale_temp = crypt_storage_remove_stale_temp,
    .remove_stale_temp_of = crypt_storage_remove_stale_temp_of,
    .sync = crypt_storage_sync,
    .root_exists = crypt_storage_root_exists,
    .retained_until = crypt_storage_retained_until,
};

/* storage_needs_sync asks whether ops->sync is set: the filter keeps the inner's answer */
static const storage_ops crypt_storage_ops_without_sync = {
    .write_open = crypt_storage_write_open,
    .read_open = crypt_storage_read_open,
    .exists = crypt_storage_exists,
    .list = crypt_storage_list,
    .remove = crypt_storage_remove,
    .free = crypt_storage_free,
    .remove_many = crypt_storage_remove_many,
    .remove_stale_temp = crypt_storage_remove_stale_temp,
    .remove_stale_temp_of = crypt_storage_remove_stale_temp_of,
    .root_exists = crypt_storage_root_exists,
    .retained_until = crypt_storage_retained_until,
};

bool crypt_storage_is_encrypted(const storage *s)
{
    return s->ops == &crypt_storage_ops_with_sync || s->ops == &crypt_storage_ops_without_sync;
}

/* ---- a repository read without a key: an encrypted object is refused, not parsed ---- */

typedef struct crypt_storage_sniffer {
    in_stream base;
    in_stream *src;
    char *name;
    char *where;
    uint8_t head[CRYPT_FORMAT_MAGIC_LEN];
    size_t head_len, head_pos;
    bool checked;
} crypt_storage_sniffer;

static bool crypt_storage_sniffer_read(in_stream *s, void *buf, size_t len, size_t *n,
                                       pgd_error *err)
{
    crypt_storage_sniffer *f = (crypt_storage_sniffer *)s;

    if (!f->checked) {
        if (!in_read_full(f->src, f->head, sizeof(f->head), &f->head_len, err))
            return false;
        f->checked = true;
        if (f->head_len == sizeof(f->head) &&
            (memcmp(f->head, CRYPT_FORMAT_MAGIC, CRYPT_FORMAT_MAGIC_LEN) == 0 ||
             memcmp(f->head, CRYPT_FORMAT_MAGIC_V1, CRYPT_FORMAT_MAGIC_LEN) == 0)) {
            f->head_len = 0;
            return err_set(err,
                           "repository \"%s\" is encrypted: an encryption key file is needed "
                           "(--encryption-key-file; object \"%s\" is encrypted)",
                           f->where, f->name);
        }
    }
    if (f->head_pos < f->head_len) {
        *n = f->head_len - f->head_pos < len ? f->head_len - f->head_pos : len;
        memcpy(buf, f->head + f->head_pos, *n);
        f->head_pos += *n;
        return true;
    }
    if (f->head_len > 0 && f->head_len < sizeof(f->head)) {
        *n = 0; /* the object was shorter than the magic: its end */
        return true;
    }
    return in_read(f->src, buf, len, n, err);
}

static void crypt_storage_sniffer_close(in_stream *s)
{
    crypt_storage_sniffer *f = (crypt_storage_sniffer *)s;

    in_close(f->src);
    free(f->name);
    free(f->where);
    free(f);
}

static const in_stream_ops crypt_storage_sniffer_ops = {crypt_storage_sniffer_read,
                                                        crypt_storage_sniffer_close};

typedef struct crypt_storage_plain {
    storage base;
    storage *inner;
    pthread_mutex_t lock;
    bool probed;      /* the keyring was looked for (before the first write) */
    bool miss_probed; /* a miss is news only once the keyring was looked for (wal-fetch) */
} crypt_storage_plain;

static bool crypt_storage_root_encrypted(storage *inner, bool *encrypted, pgd_error *err);

/*
 * Opened without a probe (every command without a key but backup and check:
 * storage.h), the keyring and the marker are looked for before the first
 * write or removal, and before a listing that found nothing is answered,
 * with one listing of the root (on S3 one request, as the HEAD of the keyring
 * alone was: both objects are seen, so the repository stays known as
 * encrypted when one of them is deleted by hand), so that nothing unencrypted
 * lands in an encrypted repository, nothing is removed from one without its
 * key, and an encrypted repository never looks empty. What is read is sniffed
 * instead.
 */
static bool crypt_storage_plain_probe(crypt_storage_plain *p, pgd_error *err)
{
    bool exists = false, ok = true;

    pthread_mutex_lock(&p->lock);
    if (!p->probed) {
        ok = crypt_storage_root_encrypted(p->inner, &exists, err);
        if (ok && exists)
            ok = err_set(err,
                         "repository \"%s\" is encrypted: an encryption key file is needed "
                         "(--encryption-key-file)",
                         p->base.uri);
        p->probed = ok;
    }
    pthread_mutex_unlock(&p->lock);
    return ok;
}

static out_stream *crypt_storage_plain_write_open(storage *s, const char *path, unsigned flags,
                                                  pgd_error *err)
{
    crypt_storage_plain *p = (crypt_storage_plain *)s;

    if (!crypt_storage_plain_probe(p, err))
        return NULL;
    return storage_write_open(p->inner, path, flags, err);
}

static in_stream *crypt_storage_plain_read_open(storage *s, const char *path, bool *missing,
                                                pgd_error *err)
{
    in_stream *in = storage_read_open(((crypt_storage_plain *)s)->inner, path, missing, err);
    crypt_storage_sniffer *f;

    /*
     * "Missing" is news only from a repository that is not encrypted: without
     * the key, wal-fetch must not answer "not archived" (exit 1, which ends
     * recovery) for an encrypted repository it cannot read, but say the key
     * is needed (254). One listing of the root, once, on the first miss; for
     * wal-fetch and wal-push (CRYPT_STORAGE_NO_PROBE) only, whose misses mean
     * something to PostgreSQL: other readers meet an encrypted object soon.
     */
    if (in == NULL && *missing && ((crypt_storage_plain *)s)->miss_probed &&
        !crypt_storage_plain_probe((crypt_storage_plain *)s, err))
        *missing = false;
    if (in == NULL)
        return NULL;
    f = xcalloc(1, sizeof(*f));
    f->base.ops = &crypt_storage_sniffer_ops;
    f->src = in;
    f->name = xstrdup(path);
    f->where = xstrdup(s->uri);
    return &f->base;
}

static bool crypt_storage_plain_exists(storage *s, const char *path, bool *exists, pgd_error *err)
{
    return storage_exists(((crypt_storage_plain *)s)->inner, path, exists, err);
}

typedef struct crypt_storage_plain_listing {
    storage_list_cb cb;
    void *arg;
    bool any;
} crypt_storage_plain_listing;

static bool crypt_storage_plain_list_entry(void *arg, const char *name, uint64_t size, bool is_dir,
                                           pgd_error *err)
{
    crypt_storage_plain_listing *l = arg;

    l->any = true;
    return l->cb(l->arg, name, size, is_dir, err);
}

static bool crypt_storage_plain_list(storage *s, const char *dir, storage_list_cb cb, void *arg,
                                     pgd_error *err)
{
    crypt_storage_plain *p = (crypt_storage_plain *)s;
    crypt_storage_plain_listing l = {cb, arg, false};

    if (!storage_list(p->inner, dir, crypt_storage_plain_list_entry, &l, err))
        return false;
    /* what is listed is read next (and sniffed); "nothing" must not hide an encrypted repository */
    return l.any || crypt_storage_plain_probe(p, err);
}

static bool crypt_storage_plain_remove(storage *s, const char *path, pgd_error *err)
{
    return crypt_storage_plain_probe((crypt_storage_plain *)s, err) &&
           storage_remove(((crypt_storage_plain *)s)->inner, path, err);
}

static bool crypt_storage_plain_remove_many(storage *s, const char *const *paths, size_t n,
                                            pgd_error *err)
{
    return crypt_storage_plain_probe((crypt_storage_plain *)s, err) &&
           storage_remove_many(((crypt_storage_plain *)s)->inner, paths, n, err);
}

static bool crypt_storage_plain_remove_stale_temp(storage *s, const char *dir, int64_t older_than_s,
                                                  pgd_error *err)
{
    return crypt_storage_plain_probe((crypt_storage_plain *)s, err) &&
           storage_remove_stale_temp(((crypt_storage_plain *)s)->inner, dir, older_than_s, err);
}

static bool crypt_storage_plain_remove_stale_temp_of(storage *s, const char *path,
                                                     int64_t older_than_s, pgd_error *err)
{
    return crypt_storage_plain_probe((crypt_storage_plain *)s, err) &&
           storage_remove_stale_temp_of(((crypt_storage_plain *)s)->inner, path, older_than_s, err);
}

static bool crypt_storage_plain_sync(storage *s, const char *path, pgd_error *err)
{
    return storage_sync(((crypt_storage_plain *)s)->inner, path, err);
}

static bool crypt_storage_plain_root_exists(storage *s, bool *exists, pgd_error *err)
{
    return storage_root_exists(((crypt_storage_plain *)s)->inner, exists, err);
}

static bool crypt_storage_plain_retained_until(storage *s, const char *path, int64_t *until,
                                               pgd_error *err)
{
    return storage_retained_until(((crypt_storage_plain *)s)->inner, path, until, err);
}

static void crypt_storage_plain_free(storage *s)
{
    pthread_mutex_destroy(&((crypt_storage_plain *)s)->lock);
    storage_free(((crypt_storage_plain *)s)->inner);
    free(s->uri);
    free(s);
}

static const storage_ops crypt_storage_plain_ops_with_sync = {
    .write_open = crypt_storage_plain_write_open,
    .read_open = crypt_storage_plain_read_open,
    .exists = crypt_storage_plain_exists,
    .list = crypt_storage_plain_list,
    .remove = crypt_storage_plain_remove,
    .free = crypt_storage_plain_free,
    .remove_many = crypt_storage_plain_remove_many,
    .remove_stale_temp = crypt_storage_plain_remove_stale_temp,
    .remove_stale_temp_of = crypt_storage_plain_remove_stale_temp_of,
    .sync = crypt_storage_plain_sync,
    .root_exists = crypt_storage_plain_root_exists,
    .retained_until = crypt_storage_plain_retained_until,
};

static const storage_ops crypt_storage_plain_ops_without_sync = {
    .write_open = crypt_storage_plain_write_open,
    .read_open = crypt_storage_plain_read_open,
    .exists = crypt_storage_plain_exists,
    .list = crypt_storage_plain_list,
    .remove = crypt_storage_plain_remove,
    .free = crypt_storage_plain_free,
    .remove_many = crypt_storage_plain_remove_many,
    .remove_stale_temp = crypt_storage_plain_remove_stale_temp,
    .remove_stale_temp_of = crypt_storage_plain_remove_stale_temp_of,
    .root_exists = crypt_storage_plain_root_exists,
    .retained_until = crypt_storage_plain_retained_until,
};

static bool crypt_storage_is_plain(const storage *s)
{
    return s->ops == &crypt_storage_plain_ops_with_sync ||
           s->ops == &crypt_storage_plain_ops_without_sync;
}

/* probed: the keyring is known to be absent (else the first write looks for it); miss_probed: a
 * missing object is said to be missing only once the keyring was looked for */
static storage *crypt_storage_plain_new(storage *inner, bool probed, bool miss_probed)
{
    crypt_storage_plain *p = xcalloc(1, sizeof(*p));

    pthread_mutex_init(&p->lock, NULL);
    p->probed = probed;
    p->miss_probed = miss_probed;
    p->base.ops = storage_needs_sync(inner) ? &crypt_storage_plain_ops_with_sync
                                            : &crypt_storage_plain_ops_without_sync;
    p->base.uri = xstrdup(inner->uri);
    p->base.stream_memory = inner->stream_memory;
    p->inner = inner;
    return &p->base;
}

const storage *crypt_storage_inner(const storage *s)
{
    if (crypt_storage_is_plain(s))
        return ((const crypt_storage_plain *)s)->inner;
    return crypt_storage_is_encrypted(s) ? ((const crypt_storage *)s)->inner : s;
}

static storage *crypt_storage_wrap(storage *inner, crypt_keyring *kr)
{
    crypt_storage *cs = xcalloc(1, sizeof(*cs));

    cs->base.ops =
        storage_needs_sync(inner) ? &crypt_storage_ops_with_sync : &crypt_storage_ops_without_sync;
    cs->base.uri = xstrdup(inner->uri);
    cs->base.stream_memory = inner->stream_memory;
    cs->inner = inner;
    cs->keyring = kr;
    return &cs->base;
}

/* ---- is the repository empty? ---- */

typedef struct crypt_storage_probe {
    storage *inner;
    const char *dir;
    bool found;
    bool keyring; /* the root lists a keyring */
    bool marker;  /* the root lists the marker */
    bool shallow; /* the root's entries only */
} crypt_storage_probe;

static bool crypt_storage_probe_entry(void *arg, const char *name, uint64_t size, bool is_dir,
                                      pgd_error *err)
{
    crypt_storage_probe *p = arg;

    (void)size;
    if (p->dir[0] == '\0' && strcmp(name, CRYPT_STORAGE_MARKER) == 0) {
        p->marker = true;
        return true;
    }
    if (p->dir[0] == '\0' && crypt_storage_is_keyring(name)) {
        p->keyring = true;
        return true;
    }
    if (is_dir && p->dir[0] == '\0' && !p->shallow) {
        /* a directory left empty (a removed probe, a local repository's folders) holds nothing */
        crypt_storage_probe sub = {p->inner, name, false, false, false, false};
        if (!storage_list(p->inner, name, crypt_storage_probe_entry, &sub, err))
            return false;
        p->found = p->found || sub.found;
        return true;
    }
    p->found = true;
    return true;
}

static bool crypt_storage_empty(storage *inner, bool *empty, bool *marker, pgd_error *err)
{
    crypt_storage_probe p = {inner, "", false, false, false, false};

    if (!storage_list(inner, "", crypt_storage_probe_entry, &p, err))
        return false;
    *empty = !p.found;
    *marker = p.marker;
    return true;
}

/* Does the root of `inner` list the keyring or the marker? One listing, of the root alone. */
static bool crypt_storage_root_encrypted(storage *inner, bool *encrypted, pgd_error *err)
{
    crypt_storage_probe p = {inner, "", false, false, false, true};

    if (!storage_list(inner, "", crypt_storage_probe_entry, &p, err))
        return false;
    *encrypted = p.keyring || p.marker;
    return true;
}

/* ---- opening ---- */

/* The keyring's text; *missing when there is none. */
static bool crypt_storage_read_keyring(storage *inner, char **text, size_t *len, bool *missing,
                                       pgd_error *err)
{
    *text = NULL;
    if (!storage_get(inner, CRYPT_KEYRING_NAME, text, len, missing, err)) {
        if (*missing)
            return true; /* no error is set for a missing object */
        err_prefix(err, "could not read the keyring of repository \"%s\"", inner->uri);
        return false;
    }
    *missing = false;
    return true;
}

/*
 * Without a key: is the repository encrypted? A command that writes (backup,
 * check) asks at once, with one listing of its root (its failure reads as the
 * command's own first request would), before it touches a server; the others
 * ask only when they must (crypt_storage_plain_probe).
 */
static storage *crypt_storage_open_plain(storage *inner, unsigned flags, pgd_error *err)
{
    bool now = (flags & CRYPT_STORAGE_CREATE) && !(flags & CRYPT_STORAGE_NO_PROBE), enc = false;

    if (now) {
        if (!crypt_storage_root_encrypted(inner, &enc, err)) {
            storage_free(inner);
            return NULL;
        }
        if (enc) {
            err_set(err,
                    "repository \"%s\" is encrypted: an encryption key file is needed "
                    "(--encryption-key-file)",
                    inner->uri);
            storage_free(inner);
            return NULL;
        }
    }
    return crypt_storage_plain_new(inner, now, (flags & CRYPT_STORAGE_NO_PROBE) != 0);
}

/* The keyring is gone, and the marker says the repository is encrypted: damaged repository data. */
static void crypt_storage_missing(storage *inner, pgd_error *err)
{
    err_set(err,
            "the keyring \"%s\" of repository \"%s\" is missing, and object \"%s\" says the "
            "repository is encrypted; nothing in it can be read without the keyring: restore it "
            "from a copy of that object",
            CRYPT_KEYRING_NAME, inner->uri, CRYPT_STORAGE_MARKER);
    err_mark(err, PGD_ERR_DAMAGED);
}

/* The marker, written (or written again) beside the keyring. */
static bool crypt_storage_put_marker(storage *inner, pgd_error *err)
{
    if (storage_put(inner, CRYPT_STORAGE_MARKER, CRYPT_STORAGE_MARKER_TEXT,
                    strlen(CRYPT_STORAGE_MARKER_TEXT), 0, err))
        return true;
    err_prefix(err, "could not write object \"%s\" of repository \"%s\"", CRYPT_STORAGE_MARKER,
               inner->uri);
    return false;
}

/* Write a new keyring into an empty repository; another command may have just done so. */
static crypt_keyring *crypt_storage_create(storage *inner, const crypt_master *m, bool *raced,
                                           pgd_error *err)
{
    crypt_keyring *kr = crypt_keyring_create(m, err);
    char *text;
    size_t len;
    pgd_error put = {0};

    *raced = false;
    if (kr == NULL)
        return NULL;
    text = crypt_keyring_text(kr, &len);
    if (!storage_put(inner, CRYPT_KEYRING_NAME, text, len, STORAGE_WRITE_NO_REPLACE, &put)) {
        free(text);
        crypt_keyring_free(kr);
        if (err_is(&put, PGD_ERR_EXISTS)) {
            *raced = true;
            return NULL;
        }
        err_set(err, "could not write the keyring of repository \"%s\": %s", inner->uri, put.msg);
        return NULL;
    }
    free(text);
    if (!crypt_storage_put_marker(inner, err)) {
        crypt_keyring_free(kr);
        return NULL;
    }
    return kr;
}

storage *crypt_storage_open(storage *inner, const char *key_file, unsigned flags, pgd_error *err)
{
    crypt_master *m = NULL;
    crypt_keyring *kr = NULL;
    char *text = NULL;
    size_t len;
    bool missing, empty, marker, raced = false;

    if (key_file == NULL)
        return crypt_storage_open_plain(inner, flags, err);
    if ((m = crypt_keyring_master_load(key_file, err)) == NULL)
        goto fail;
    for (int attempt = 0; attempt < 2; attempt++) {
        if (!crypt_storage_read_keyring(inner, &text, &len, &missing, err))
            goto fail;
        if (!missing)
            break;
        if (!crypt_storage_empty(inner, &empty, &marker, err))
            goto fail;
        if (marker) {
            crypt_storage_missing(inner, err);
            goto fail;
        }
        if (!empty) {
            err_set(err,
                    "repository \"%s\" holds unencrypted backups or WAL, or backups and WAL "
                    "without their keyring \"%s\", and an encryption key file was given "
                    "(\"%s\"); an encrypted repository is made empty (see the README: moving a "
                    "repository to encryption), and a keyring removed by hand is restored from a "
                    "copy",
                    inner->uri, CRYPT_KEYRING_NAME, m->path);
            goto fail;
        }
        if (!(flags & CRYPT_STORAGE_CREATE)) {
            crypt_keyring_master_free(m);
            return crypt_storage_plain_new(inner, true, false);
        }
        if ((kr = crypt_storage_create(inner, m, &raced, err)) != NULL)
            break;
        if (!raced)
            goto fail;
    }
    if (kr == NULL) {
        if (text == NULL) {
            err_set(err, "could not make repository \"%s\" encrypted: its keyring came and went",
                    inner->uri);
            goto fail;
        }
        kr = crypt_keyring_open(text, len, m, inner->uri, err);
        if (kr == NULL)
            goto fail;
    }
    free(text);
    crypt_keyring_master_free(m);
    /* a repository made encrypted before the marker existed gets it from backup and check */
    if ((flags & CRYPT_STORAGE_CREATE) && !(flags & CRYPT_STORAGE_NO_PROBE) &&
        (!storage_exists(inner, CRYPT_STORAGE_MARKER, &marker, err) ||
         (!marker && !crypt_storage_put_marker(inner, err)))) {
        crypt_keyring_free(kr);
        storage_free(inner);
        return NULL;
    }
    if (!crypt_cipher_load(err)) {
        crypt_keyring_free(kr);
        storage_free(inner);
        return NULL;
    }
    return crypt_storage_wrap(inner, kr);

fail:
    free(text);
    crypt_keyring_master_free(m);
    storage_free(inner);
    return NULL;
}

bool crypt_storage_rotate(storage *inner, const char *old_file, const char *new_file, size_t *nkeys,
                          pgd_error *err)
{
    crypt_master *old_m = NULL, *new_m = NULL;
    crypt_keyring *kr = NULL;
    char *text = NULL, *new_text = NULL;
    size_t len, new_len;
    bool missing, ok = false;

    if ((old_m = crypt_keyring_master_load(old_file, err)) == NULL ||
        (new_m = crypt_keyring_master_load(new_file, err)) == NULL ||
        !crypt_storage_read_keyring(inner, &text, &len, &missing, err))
        goto done;
    if (missing) {
        bool marker = false;
        if (!storage_exists(inner, CRYPT_STORAGE_MARKER, &marker, err))
            goto done;
        if (marker)
            crypt_storage_missing(inner, err);
        else
            err_set(err,
                    "repository \"%s\" has no keyring \"%s\" to rotate: it is not encrypted, or "
                    "its keyring was removed by hand (restore it from a copy)",
                    inner->uri, CRYPT_KEYRING_NAME);
        goto done;
    }
    if ((kr = crypt_keyring_open(text, len, old_m, inner->uri, err)) == NULL ||
        !crypt_keyring_rekey(kr, new_m, err))
        goto done;
    new_text = crypt_keyring_text(kr, &new_len);
    /* the one write: the storage's atomic replace (a temporary object, then its name) */
    if (!storage_put(inner, CRYPT_KEYRING_NAME, new_text, new_len, 0, err)) {
        err_prefix(err,
                   "could not write the new keyring of repository \"%s\" (the old key "
                   "still opens it)",
                   inner->uri);
        goto done;
    }
    *nkeys = crypt_keyring_count(kr);
    ok = true;
done:
    free(text);
    free(new_text);
    crypt_keyring_free(kr);
    crypt_keyring_master_free(old_m);
    crypt_keyring_master_free(new_m);
    return ok;
}
