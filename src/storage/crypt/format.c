/*
 * format.c - see format.h.
 */
#include "storage/crypt/format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/xmalloc.h"

#define CRYPT_FORMAT_STORED_CHUNK (CRYPT_FORMAT_CHUNK + CRYPT_TAG_LEN)

/* header, name length and name, then the chunk's index (8) and last-chunk byte (1) */
typedef struct crypt_format_aad {
    uint8_t *buf;
    size_t fixed; /* bytes before the index */
    size_t len;
    uint8_t nonce[CRYPT_NONCE_LEN];
} crypt_format_aad;

static void crypt_format_put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static uint32_t crypt_format_get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void crypt_format_aad_init(crypt_format_aad *a, const uint8_t *header, const char *name)
{
    size_t nlen = strlen(name);

    a->fixed = CRYPT_FORMAT_HEADER_LEN + 4 + nlen;
    a->len = a->fixed + 9;
    a->buf = xmalloc(a->len);
    memcpy(a->buf, header, CRYPT_FORMAT_HEADER_LEN);
    crypt_format_put32(a->buf + CRYPT_FORMAT_HEADER_LEN, (uint32_t)nlen);
    memcpy(a->buf + CRYPT_FORMAT_HEADER_LEN + 4, name, nlen);
    memset(a->nonce, 0, sizeof(a->nonce));
}

static void crypt_format_aad_chunk(crypt_format_aad *a, uint32_t index, bool last)
{
    uint8_t *p = a->buf + a->fixed;

    crypt_format_put32(p, 0);
    crypt_format_put32(p + 4, index);
    p[8] = last ? 1 : 0;
    crypt_format_put32(a->nonce + CRYPT_NONCE_LEN - 4, index); /* the counter's high bytes stay 0 */
}

/* The object's own key (format.h): HKDF-SHA-256 of the data key with the header's salt. */
static crypt_cipher *crypt_format_cipher(const uint8_t data_key[CRYPT_KEY_LEN],
                                         const uint8_t *header, pgd_error *err)
{
    uint8_t key[CRYPT_KEY_LEN];
    crypt_cipher *c = NULL;

    if (crypt_cipher_hkdf(data_key, CRYPT_KEY_LEN, header + CRYPT_FORMAT_MAGIC_LEN + 4,
                          CRYPT_FORMAT_SALT_LEN, CRYPT_FORMAT_KEY_INFO,
                          strlen(CRYPT_FORMAT_KEY_INFO), key, sizeof(key), err))
        c = crypt_cipher_new(key, err);
    crypt_cipher_wipe(key, sizeof(key));
    return c;
}

/* ---- writing ---- */

typedef struct crypt_format_writer {
    out_stream base;
    out_stream *next;
    crypt_cipher *cipher;
    crypt_format_aad aad;
    uint8_t *plain;  /* CRYPT_FORMAT_CHUNK */
    uint8_t *sealed; /* CRYPT_FORMAT_STORED_CHUNK */
    size_t used;
    uint64_t index;
} crypt_format_writer;

static void crypt_format_writer_free(crypt_format_writer *w)
{
    crypt_cipher_free(w->cipher);
    crypt_cipher_wipe(w->plain, CRYPT_FORMAT_CHUNK);
    free(w->plain);
    free(w->sealed);
    free(w->aad.buf);
    free(w);
}

static bool crypt_format_writer_seal(crypt_format_writer *w, bool last, pgd_error *err)
{
    if (w->index > CRYPT_FORMAT_CHUNKS_MAX)
        return err_set(err, "object is too large to encrypt (more than %u chunks of %u bytes)",
                       CRYPT_FORMAT_CHUNKS_MAX, CRYPT_FORMAT_CHUNK);
    crypt_format_aad_chunk(&w->aad, (uint32_t)w->index, last);
    if (!crypt_cipher_seal(w->cipher, w->aad.nonce, w->aad.buf, w->aad.len, w->plain, w->used,
                           w->sealed, err) ||
        !out_write(w->next, w->sealed, w->used + CRYPT_TAG_LEN, err))
        return false;
    w->index++;
    w->used = 0;
    return true;
}

static bool crypt_format_writer_write(out_stream *s, const void *buf, size_t len, pgd_error *err)
{
    crypt_format_writer *w = (crypt_format_writer *)s;
    const uint8_t *p = buf;

    while (len > 0) {
        size_t n = CRYPT_FORMAT_CHUNK - w->used;
        if (n > len)
            n = len;
        memcpy(w->plain + w->used, p, n);
        w->used += n;
        p += n;
        len -= n;
        /* a full chunk is never the last one: the last is shorter, even empty */
        if (w->used == CRYPT_FORMAT_CHUNK && !crypt_format_writer_seal(w, false, err))
            return false;
    }
    return true;
}

static bool crypt_format_writer_close(out_stream *s, pgd_error *err)
{
    crypt_format_writer *w = (crypt_format_writer *)s;
    out_stream *next = w->next;
    bool ok = crypt_format_writer_seal(w, true, err);

    crypt_format_writer_free(w);
    if (!ok) {
        out_abort(next);
        return false;
    }
    return out_close(next, err);
}

static void crypt_format_writer_abort(out_stream *s)
{
    crypt_format_writer *w = (crypt_format_writer *)s;

    out_abort(w->next);
    crypt_format_writer_free(w);
}

static const out_stream_ops crypt_format_writer_ops = {
    crypt_format_writer_write, crypt_format_writer_close, crypt_format_writer_abort};

out_stream *crypt_format_out_new(out_stream *next, const uint8_t key[CRYPT_KEY_LEN],
                                 uint32_t key_id, const char *name,
                                 const uint8_t salt[CRYPT_FORMAT_SALT_LEN], pgd_error *err)
{
    crypt_format_writer *w;
    uint8_t header[CRYPT_FORMAT_HEADER_LEN];
    crypt_cipher *c;

    memcpy(header, CRYPT_FORMAT_MAGIC, CRYPT_FORMAT_MAGIC_LEN);
    crypt_format_put32(header + CRYPT_FORMAT_MAGIC_LEN, key_id);
    if (salt != NULL)
        memcpy(header + CRYPT_FORMAT_MAGIC_LEN + 4, salt, CRYPT_FORMAT_SALT_LEN);
    else if (!crypt_cipher_random(header + CRYPT_FORMAT_MAGIC_LEN + 4, CRYPT_FORMAT_SALT_LEN,
                                  err)) {
        out_abort(next);
        return NULL;
    }
    if ((c = crypt_format_cipher(key, header, err)) == NULL) {
        out_abort(next);
        return NULL;
    }
    if (!out_write(next, header, sizeof(header), err)) {
        crypt_cipher_free(c);
        out_abort(next);
        return NULL;
    }
    w = xcalloc(1, sizeof(*w));
    w->base.ops = &crypt_format_writer_ops;
    w->next = next;
    w->cipher = c;
    w->plain = xmalloc(CRYPT_FORMAT_CHUNK);
    w->sealed = xmalloc(CRYPT_FORMAT_STORED_CHUNK);
    crypt_format_aad_init(&w->aad, header, name);
    return &w->base;
}

/* ---- reading ---- */

typedef struct crypt_format_reader {
    in_stream base;
    in_stream *src;
    crypt_format_key_fn key_fn;
    void *key_arg;
    char *name;
    char *where;
    crypt_cipher *cipher; /* NULL until the header is read */
    crypt_format_aad aad;
    uint8_t *sealed; /* CRYPT_FORMAT_STORED_CHUNK */
    uint8_t *plain;  /* CRYPT_FORMAT_CHUNK: an authenticated chunk */
    size_t pos, len;
    uint64_t index;
    bool last_seen; /* the last chunk has been authenticated */
    bool failed;    /* an error was reported: every later read repeats it */
} crypt_format_reader;

static bool crypt_format_reader_damaged(crypt_format_reader *r, pgd_error *err, const char *what)
{
    r->failed = true;
    err_set(err, "object \"%s\" in repository \"%s\" is damaged: %s", r->name, r->where, what);
    err_mark(err, PGD_ERR_DAMAGED);
    return false;
}

static bool crypt_format_reader_header(crypt_format_reader *r, pgd_error *err)
{
    uint8_t header[CRYPT_FORMAT_HEADER_LEN], key[CRYPT_KEY_LEN];
    size_t n;
    uint32_t id;

    if (!in_read_full(r->src, header, sizeof(header), &n, err)) {
        r->failed = true;
        return false;
    }
    if (n >= CRYPT_FORMAT_MAGIC_LEN &&
        memcmp(header, CRYPT_FORMAT_MAGIC_V1, CRYPT_FORMAT_MAGIC_LEN) == 0) {
        r->failed = true;
        err_set(err,
                "object \"%s\" in repository \"%s\" is in encryption format 1 (\"%s\"), "
                "which this version of pgdirect does not read",
                r->name, r->where, CRYPT_FORMAT_MAGIC_V1);
        return false;
    }
    if (n < sizeof(header) || memcmp(header, CRYPT_FORMAT_MAGIC, CRYPT_FORMAT_MAGIC_LEN) != 0)
        return crypt_format_reader_damaged(r, err,
                                           "no encryption header (not written encrypted, or cut)");
    id = crypt_format_get32(header + CRYPT_FORMAT_MAGIC_LEN);
    if (!r->key_fn(r->key_arg, id, key)) {
        r->failed = true;
        err_set(err,
                "object \"%s\" in repository \"%s\" is encrypted with data key %u, which the "
                "repository's keyring does not hold",
                r->name, r->where, id);
        err_mark(err, PGD_ERR_DAMAGED);
        return false;
    }
    r->cipher = crypt_format_cipher(key, header, err);
    crypt_cipher_wipe(key, sizeof(key));
    if (r->cipher == NULL) {
        r->failed = true;
        return false;
    }
    crypt_format_aad_init(&r->aad, header, r->name);
    return true;
}

/* Read and authenticate the next chunk into r->plain. */
static bool crypt_format_reader_next(crypt_format_reader *r, pgd_error *err)
{
    size_t n;
    bool last, authentic;
    char what[160];

    if (!in_read_full(r->src, r->sealed, CRYPT_FORMAT_STORED_CHUNK, &n, err)) {
        r->failed = true;
        return false;
    }
    last = n < CRYPT_FORMAT_STORED_CHUNK;
    if (n < CRYPT_TAG_LEN) {
        snprintf(what, sizeof(what), "it ends before its last chunk (chunk %llu is %s)",
                 (unsigned long long)r->index, n == 0 ? "missing" : "cut");
        return crypt_format_reader_damaged(r, err, what);
    }
    if (r->index > CRYPT_FORMAT_CHUNKS_MAX)
        return crypt_format_reader_damaged(r, err, "more chunks than an object can have");
    crypt_format_aad_chunk(&r->aad, (uint32_t)r->index, last);
    if (!crypt_cipher_open(r->cipher, r->aad.nonce, r->aad.buf, r->aad.len, r->sealed,
                           n - CRYPT_TAG_LEN, r->plain, &authentic, err)) {
        if (authentic) {
            r->failed = true;
            return false;
        }
        snprintf(what, sizeof(what),
                 "chunk %llu failed authentication (altered, cut, out of place or another "
                 "object's; or written with another key)",
                 (unsigned long long)r->index);
        return crypt_format_reader_damaged(r, err, what);
    }
    r->pos = 0;
    r->len = n - CRYPT_TAG_LEN;
    r->index++;
    r->last_seen = last;
    return true;
}

static bool crypt_format_reader_read(in_stream *s, void *buf, size_t len, size_t *n, pgd_error *err)
{
    crypt_format_reader *r = (crypt_format_reader *)s;

    *n = 0;
    if (r->failed)
        return crypt_format_reader_damaged(r, err, "read again after an error");
    if (r->cipher == NULL && !crypt_format_reader_header(r, err))
        return false;
    while (r->pos == r->len) {
        if (r->last_seen)
            return true; /* the end, authenticated */
        if (!crypt_format_reader_next(r, err))
            return false;
    }
    *n = r->len - r->pos < len ? r->len - r->pos : len;
    memcpy(buf, r->plain + r->pos, *n);
    r->pos += *n;
    return true;
}

static void crypt_format_reader_close(in_stream *s)
{
    crypt_format_reader *r = (crypt_format_reader *)s;

    in_close(r->src);
    crypt_cipher_free(r->cipher);
    crypt_cipher_wipe(r->plain, CRYPT_FORMAT_CHUNK);
    free(r->plain);
    free(r->sealed);
    free(r->aad.buf);
    free(r->name);
    free(r->where);
    free(r);
}

static const in_stream_ops crypt_format_reader_ops = {crypt_format_reader_read,
                                                      crypt_format_reader_close};

in_stream *crypt_format_in_new(in_stream *src, crypt_format_key_fn key_fn, void *key_arg,
                               const char *name, const char *where)
{
    crypt_format_reader *r = xcalloc(1, sizeof(*r));

    r->base.ops = &crypt_format_reader_ops;
    r->src = src;
    r->key_fn = key_fn;
    r->key_arg = key_arg;
    r->name = xstrdup(name);
    r->where = xstrdup(where);
    r->sealed = xmalloc(CRYPT_FORMAT_STORED_CHUNK);
    r->plain = xmalloc(CRYPT_FORMAT_CHUNK);
    return &r->base;
}

/* ---- sizes ---- */

uint64_t crypt_format_stored_size(uint64_t plain)
{
    return CRYPT_FORMAT_HEADER_LEN + plain + (plain / CRYPT_FORMAT_CHUNK + 1) * CRYPT_TAG_LEN;
}

bool crypt_format_plain_size(uint64_t stored, uint64_t *plain)
{
    uint64_t body, full, rest;

    *plain = 0;
    if (stored < CRYPT_FORMAT_HEADER_LEN + CRYPT_TAG_LEN)
        return false;
    body = stored - CRYPT_FORMAT_HEADER_LEN - CRYPT_TAG_LEN;
    full = body / CRYPT_FORMAT_STORED_CHUNK;
    rest = body % CRYPT_FORMAT_STORED_CHUNK;
    if (rest >= CRYPT_FORMAT_CHUNK)
        return false;
    *plain = full * CRYPT_FORMAT_CHUNK + rest;
    return true;
}
