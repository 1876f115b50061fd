/*
 * storage.c - see storage.h.
 */
#include "storage/crypt/storage.h"

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

static bool crypt_storage_is_keyring(const char *path)
{
    return strcmp(path, CRYPT_KEYRING_NAME) == 0;
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

static bool crypt_storage_sync(storage *s, const char *path, pgd_error *err)
{
    return storage_sync(((crypt_storage *)s)->inner, path, err);
}

static bool crypt_storage_root_exists(storage *s, bool *exists, pgd_error *err)
{
    return storage_root_exists(((crypt_storage *)s)->inner, exists, err);
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
    .sync = crypt_storage_sync,
    .root_exists = crypt_storage_root_exists,
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
    .root_exists = crypt_storage_root_exists,
};

bool crypt_storage_is_encrypted(const storage *s)
{
    return s->ops == &crypt_storage_ops_with_sync || s->ops == &crypt_storage_ops_without_sync;
}

const storage *crypt_storage_inner(const storage *s)
{
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
} crypt_storage_probe;

static bool crypt_storage_probe_entry(void *arg, const char *name, uint64_t size, bool is_dir,
                                      pgd_error *err)
{
    crypt_storage_probe *p = arg;

    (void)size;
    if (p->dir[0] == '\0' && crypt_storage_is_keyring(name))
        return true;
    if (is_dir && p->dir[0] == '\0') {
        /* a directory left empty (a removed probe, a local repository's folders) holds nothing */
        crypt_storage_probe sub = {p->inner, name, false};
        if (!storage_list(p->inner, name, crypt_storage_probe_entry, &sub, err))
            return false;
        p->found = p->found || sub.found;
        return true;
    }
    p->found = true;
    return true;
}

static bool crypt_storage_empty(storage *inner, bool *empty, pgd_error *err)
{
    crypt_storage_probe p = {inner, "", false};

    if (!storage_list(inner, "", crypt_storage_probe_entry, &p, err))
        return false;
    *empty = !p.found;
    return true;
}

/* ---- opening ---- */

/* The keyring's text; *missing when there is none. */
static bool crypt_storage_read_keyring(storage *inner, char **text, size_t *len, bool *missing,
                                       pgd_error *err)
{
    if (!storage_get(inner, CRYPT_KEYRING_NAME, text, len, missing, err)) {
        if (*missing)
            return true; /* no error is set for a missing object */
        err_prefix(err, "could not read the keyring of repository \"%s\"", inner->uri);
        return false;
    }
    *missing = false;
    return true;
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
    return kr;
}

storage *crypt_storage_open(storage *inner, const char *key_file, bool create, pgd_error *err)
{
    crypt_master *m = NULL;
    crypt_keyring *kr = NULL;
    char *text = NULL;
    size_t len;
    bool missing, empty, raced = false;

    if (key_file != NULL && (m = crypt_keyring_master_load(key_file, err)) == NULL)
        goto fail;
    for (int attempt = 0; attempt < 2; attempt++) {
        if (!crypt_storage_read_keyring(inner, &text, &len, &missing, err))
            goto fail;
        if (!missing)
            break;
        if (m == NULL) {
            storage *plain = inner;
            return plain;
        }
        if (!crypt_storage_empty(inner, &empty, err))
            goto fail;
        if (!empty) {
            err_set(err,
                    "repository \"%s\" holds unencrypted backups or WAL, and an encryption key "
                    "file was given (\"%s\"); an encrypted repository is made empty (see the "
                    "README: moving a repository to encryption)",
                    inner->uri, m->path);
            goto fail;
        }
        if (!create) {
            crypt_keyring_master_free(m);
            return inner;
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
        if (m == NULL) {
            err_set(err,
                    "repository \"%s\" is encrypted: an encryption key file is needed "
                    "(--encryption-key-file)",
                    inner->uri);
            goto fail;
        }
        kr = crypt_keyring_open(text, len, m, inner->uri, err);
        if (kr == NULL)
            goto fail;
    }
    free(text);
    crypt_keyring_master_free(m);
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
        err_set(err, "repository \"%s\" is not encrypted: it has no keyring to rotate", inner->uri);
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
