/*
 * keyring.c - see keyring.h.
 */
#include "storage/crypt/keyring.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/digest.h"
#include "util/xmalloc.h"

#define CRYPT_KEYRING_HEADER_V1   "pgdirect-keyring 1"
#define CRYPT_KEYRING_HEADER      "pgdirect-keyring 2"
#define CRYPT_KEYRING_HKDF_INFO   "pgdirect master key"
#define CRYPT_KEYRING_CHECK_LABEL "pgdirect keyring check"
#define CRYPT_KEYRING_LINE_MAX    512

typedef struct crypt_keyring_entry {
    uint32_t id;
    uint8_t nonce[CRYPT_NONCE_LEN];
    uint8_t wrapped[CRYPT_KEY_LEN + CRYPT_TAG_LEN];
    uint8_t key[CRYPT_KEY_LEN];
} crypt_keyring_entry;

struct crypt_keyring {
    int version;                      /* 1: no check value, no sum (read only); 2 */
    uint8_t check[DIGEST_SHA256_LEN]; /* HMAC-SHA-256 of CHECK_LABEL under the master's KEK */
    bool scrypt;
    uint64_t n, r, p;
    uint8_t salt[CRYPT_KEYRING_SALT];
    crypt_keyring_entry *keys;
    size_t nkeys;
    uint32_t active;
};

/* ---- the key file ---- */

void crypt_keyring_master_free(crypt_master *m)
{
    if (m == NULL)
        return;
    if (m->secret != NULL)
        crypt_cipher_wipe(m->secret, m->len);
    free(m->secret);
    free(m->path);
    free(m);
}

static bool crypt_keyring_printable(const uint8_t *p, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (p[i] < 0x20 || p[i] > 0x7e)
            return false;
    return true;
}

crypt_master *crypt_keyring_master_load(const char *path, pgd_error *err)
{
    crypt_master *m;
    struct stat st;
    uint8_t buf[CRYPT_KEY_FILE_MAX + 1];
    size_t len = 0, text_len;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0) {
        err_errno(err, errno, "could not open encryption key file \"%s\"", path);
        err_mark(err, PGD_ERR_USAGE);
        return NULL;
    }
    if (fstat(fd, &st) != 0) {
        err_errno(err, errno, "could not stat encryption key file \"%s\"", path);
        close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode) || (st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
        close(fd);
        if (!S_ISREG(st.st_mode))
            err_set(err, "encryption key file \"%s\" is not a regular file", path);
        else
            err_set(err,
                    "encryption key file \"%s\" has group or world access (mode %04o); it must "
                    "be readable by its owner only (chmod 600)",
                    path, (unsigned)(st.st_mode & 07777));
        err_mark(err, PGD_ERR_USAGE);
        return NULL;
    }
    for (;;) {
        ssize_t n = read(fd, buf + len, sizeof(buf) - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            err_errno(err, errno, "could not read encryption key file \"%s\"", path);
            close(fd);
            crypt_cipher_wipe(buf, sizeof(buf));
            return NULL;
        }
        if (n == 0 || len + (size_t)n == sizeof(buf)) {
            len += (size_t)n;
            break;
        }
        len += (size_t)n;
    }
    close(fd);
    if (len > CRYPT_KEY_FILE_MAX) {
        crypt_cipher_wipe(buf, sizeof(buf));
        err_set(err, "encryption key file \"%s\" is longer than %d bytes", path,
                CRYPT_KEY_FILE_MAX);
        err_mark(err, PGD_ERR_USAGE);
        return NULL;
    }
    /* a passphrase: printable text, its line end (\n or \r\n) not part of it */
    text_len = len;
    if (text_len > 0 && buf[text_len - 1] == '\n')
        text_len--;
    if (text_len > 0 && buf[text_len - 1] == '\r')
        text_len--;
    m = xcalloc(1, sizeof(*m));
    m->passphrase = crypt_keyring_printable(buf, text_len);
    m->len = m->passphrase ? text_len : len;
    if (m->len < CRYPT_KEY_FILE_MIN) {
        crypt_cipher_wipe(buf, sizeof(buf));
        err_set(err,
                "encryption key file \"%s\" holds %zu bytes; it needs at least %d (a passphrase, "
                "or random bytes: openssl rand 32 > FILE)",
                path, m->len, CRYPT_KEY_FILE_MIN);
        err_mark(err, PGD_ERR_USAGE);
        free(m);
        return NULL;
    }
    m->secret = xmalloc(m->len);
    memcpy(m->secret, buf, m->len);
    crypt_cipher_wipe(buf, sizeof(buf));
    m->path = xstrdup(path);
    return m;
}

/* ---- keys ---- */

static bool crypt_keyring_kek(const crypt_keyring *kr, const crypt_master *m,
                              uint8_t kek[CRYPT_KEY_LEN], pgd_error *err)
{
    if (kr->scrypt)
        return crypt_cipher_scrypt(m->secret, m->len, kr->salt, sizeof(kr->salt), kr->n, kr->r,
                                   kr->p, kek, CRYPT_KEY_LEN, err);
    return crypt_cipher_hkdf(m->secret, m->len, kr->salt, sizeof(kr->salt), CRYPT_KEYRING_HKDF_INFO,
                             strlen(CRYPT_KEYRING_HKDF_INFO), kek, CRYPT_KEY_LEN, err);
}

/*
 * The check value: a MAC of a fixed label under the key that wraps the data
 * keys, so that a wrong key (the value differs) and a damaged keyring (the
 * value matches, but a data key does not unwrap) are told apart. It says no
 * more about the key than a wrapped data key already does.
 */
static bool crypt_keyring_check(const uint8_t kek[CRYPT_KEY_LEN], uint8_t out[DIGEST_SHA256_LEN],
                                pgd_error *err)
{
    if (!digest_load(err))
        return false;
    if (!digest_hmac_sha256(kek, CRYPT_KEY_LEN, CRYPT_KEYRING_CHECK_LABEL,
                            strlen(CRYPT_KEYRING_CHECK_LABEL), out))
        return err_set(err, "libcrypto could not compute HMAC-SHA-256");
    return true;
}

static int crypt_keyring_aad(uint32_t id, char *buf, size_t size)
{
    return snprintf(buf, size, "pgdirect data key %u", id);
}

static bool crypt_keyring_wrap(crypt_cipher *c, crypt_keyring_entry *e, pgd_error *err)
{
    char aad[64];
    int alen = crypt_keyring_aad(e->id, aad, sizeof(aad));

    return crypt_cipher_random(e->nonce, sizeof(e->nonce), err) &&
           crypt_cipher_seal(c, e->nonce, aad, (size_t)alen, e->key, CRYPT_KEY_LEN, e->wrapped,
                             err);
}

/* A new salt for master m (its kind decides the KDF), and that master's cipher. */
static crypt_cipher *crypt_keyring_new_kek(crypt_keyring *kr, const crypt_master *m, pgd_error *err)
{
    uint8_t kek[CRYPT_KEY_LEN];
    crypt_cipher *c;

    kr->scrypt = m->passphrase;
    kr->n = kr->scrypt ? CRYPT_KEYRING_SCRYPT_N : 0;
    kr->r = kr->scrypt ? CRYPT_KEYRING_SCRYPT_R : 0;
    kr->p = kr->scrypt ? CRYPT_KEYRING_SCRYPT_P : 0;
    if (!crypt_cipher_random(kr->salt, sizeof(kr->salt), err) ||
        !crypt_keyring_kek(kr, m, kek, err))
        return NULL;
    kr->version = 2;
    if (!crypt_keyring_check(kek, kr->check, err)) {
        crypt_cipher_wipe(kek, sizeof(kek));
        return NULL;
    }
    c = crypt_cipher_new(kek, err);
    crypt_cipher_wipe(kek, sizeof(kek));
    return c;
}

static bool crypt_keyring_add(crypt_keyring *kr, crypt_cipher *kek, pgd_error *err)
{
    crypt_keyring_entry *e;
    uint32_t id = 1;

    if (kr->nkeys >= CRYPT_KEYRING_KEYS)
        return err_set(err, "the keyring holds %d data keys, as many as it may",
                       CRYPT_KEYRING_KEYS);
    for (size_t i = 0; i < kr->nkeys; i++)
        if (kr->keys[i].id >= id)
            id = kr->keys[i].id + 1;
    kr->keys = xrealloc(kr->keys, (kr->nkeys + 1) * sizeof(*kr->keys));
    e = &kr->keys[kr->nkeys];
    memset(e, 0, sizeof(*e));
    e->id = id;
    if (!crypt_cipher_random(e->key, sizeof(e->key), err) || !crypt_keyring_wrap(kek, e, err))
        return false;
    kr->nkeys++;
    kr->active = id;
    return true;
}

crypt_keyring *crypt_keyring_create(const crypt_master *m, pgd_error *err)
{
    crypt_keyring *kr = xcalloc(1, sizeof(*kr));
    crypt_cipher *kek = crypt_keyring_new_kek(kr, m, err);
    bool ok = kek != NULL && crypt_keyring_add(kr, kek, err);

    crypt_cipher_free(kek);
    if (!ok) {
        crypt_keyring_free(kr);
        return NULL;
    }
    return kr;
}

bool crypt_keyring_rekey(crypt_keyring *kr, const crypt_master *m, pgd_error *err)
{
    crypt_cipher *kek = crypt_keyring_new_kek(kr, m, err);
    bool ok = kek != NULL;

    for (size_t i = 0; ok && i < kr->nkeys; i++)
        ok = crypt_keyring_wrap(kek, &kr->keys[i], err);
    ok = ok && crypt_keyring_add(kr, kek, err);
    crypt_cipher_free(kek);
    return ok;
}

/* ---- text ---- */

static void crypt_keyring_hex(FILE *f, const uint8_t *p, size_t len)
{
    for (size_t i = 0; i < len; i++)
        fprintf(f, "%02x", p[i]);
}

char *crypt_keyring_text(const crypt_keyring *kr, size_t *len)
{
    char *text = NULL;
    FILE *f = open_memstream(&text, len);

    if (f == NULL)
        xmalloc_fail(0); /* open_memstream fails only for memory */
    fprintf(f, "%s\n", CRYPT_KEYRING_HEADER);
    if (kr->scrypt)
        fprintf(f, "kdf scrypt %llu %llu %llu ", (unsigned long long)kr->n,
                (unsigned long long)kr->r, (unsigned long long)kr->p);
    else
        fprintf(f, "kdf hkdf-sha256 ");
    crypt_keyring_hex(f, kr->salt, sizeof(kr->salt));
    fputc('\n', f);
    for (size_t i = 0; i < kr->nkeys; i++) {
        fprintf(f, "key %u ", kr->keys[i].id);
        crypt_keyring_hex(f, kr->keys[i].nonce, sizeof(kr->keys[i].nonce));
        fputc(' ', f);
        crypt_keyring_hex(f, kr->keys[i].wrapped, sizeof(kr->keys[i].wrapped));
        fputc('\n', f);
    }
    fprintf(f, "active %u\n", kr->active);
    fprintf(f, "check ");
    crypt_keyring_hex(f, kr->check, sizeof(kr->check));
    fputc('\n', f);
    if (fflush(f) != 0 || text == NULL)
        xmalloc_fail(0);
    {
        uint8_t sum[DIGEST_SHA256_LEN];
        /* loaded: the check value above was computed with it */
        if (!digest_sha256(text, *len, sum))
            memset(sum, 0, sizeof(sum)); /* an open then finds the keyring damaged */
        fprintf(f, "sum ");
        crypt_keyring_hex(f, sum, sizeof(sum));
        fputc('\n', f);
    }
    if (fclose(f) != 0 || text == NULL)
        xmalloc_fail(0);
    return text;
}

static bool crypt_keyring_unhex(const char *s, uint8_t *out, size_t len)
{
    if (strlen(s) != 2 * len)
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned v = 0;
        for (int j = 0; j < 2; j++) {
            char c = s[2 * i + (size_t)j];
            v <<= 4;
            if (c >= '0' && c <= '9')
                v |= (unsigned)(c - '0');
            else if (c >= 'a' && c <= 'f')
                v |= (unsigned)(c - 'a' + 10);
            else
                return false;
        }
        out[i] = (uint8_t)v;
    }
    return true;
}

/* A decimal number in [min, max], the whole word. */
static bool crypt_keyring_number(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    char *end;
    unsigned long long v;

    if (s == NULL || s[0] < '0' || s[0] > '9')
        return false;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max)
        return false;
    *out = v;
    return true;
}

/* Split a line into at most 7 words separated by single spaces. */
static size_t crypt_keyring_words(char *line, char **w, size_t max)
{
    size_t n = 0;

    for (char *p = line; n < max;) {
        w[n++] = p;
        p = strchr(p, ' ');
        if (p == NULL)
            break;
        *p++ = '\0';
    }
    return n;
}

static bool crypt_keyring_parse_line(crypt_keyring *kr, char *line, bool *kdf_seen,
                                     bool *active_seen, bool *check_seen)
{
    char *w[8];
    size_t n = crypt_keyring_words(line, w, 8);
    uint64_t v;

    if (strcmp(w[0], "kdf") == 0 && !*kdf_seen) {
        *kdf_seen = true;
        if (n == 6 && strcmp(w[1], "scrypt") == 0) {
            kr->scrypt = true;
            /* N a power of two from 2^10 to 2^20, r and p small: a keyring cannot make us
             * allocate more than CRYPT_CIPHER_SCRYPT_MAXMEM allows anyway */
            return crypt_keyring_number(w[2], 1024, 1u << 20, &kr->n) &&
                   (kr->n & (kr->n - 1)) == 0 && crypt_keyring_number(w[3], 1, 32, &kr->r) &&
                   crypt_keyring_number(w[4], 1, 16, &kr->p) &&
                   crypt_keyring_unhex(w[5], kr->salt, sizeof(kr->salt));
        }
        return n == 3 && strcmp(w[1], "hkdf-sha256") == 0 &&
               crypt_keyring_unhex(w[2], kr->salt, sizeof(kr->salt));
    }
    if (strcmp(w[0], "key") == 0 && n == 4) {
        crypt_keyring_entry e;
        memset(&e, 0, sizeof(e));
        if (kr->nkeys >= CRYPT_KEYRING_KEYS || !crypt_keyring_number(w[1], 1, UINT32_MAX, &v) ||
            !crypt_keyring_unhex(w[2], e.nonce, sizeof(e.nonce)) ||
            !crypt_keyring_unhex(w[3], e.wrapped, sizeof(e.wrapped)))
            return false;
        e.id = (uint32_t)v;
        for (size_t i = 0; i < kr->nkeys; i++)
            if (kr->keys[i].id == e.id)
                return false;
        kr->keys = xrealloc(kr->keys, (kr->nkeys + 1) * sizeof(*kr->keys));
        kr->keys[kr->nkeys++] = e;
        return true;
    }
    if (strcmp(w[0], "check") == 0 && n == 2 && !*check_seen && kr->version >= 2) {
        *check_seen = true;
        return crypt_keyring_unhex(w[1], kr->check, sizeof(kr->check));
    }
    if (strcmp(w[0], "active") == 0 && n == 2 && !*active_seen) {
        *active_seen = true;
        if (!crypt_keyring_number(w[1], 1, UINT32_MAX, &v))
            return false;
        kr->active = (uint32_t)v;
        return true;
    }
    return false;
}

/* A damaged keyring: damaged repository data (verify: exit 3), with what to do about it. */
static void crypt_keyring_damaged(pgd_error *err, const char *where, const char *why)
{
    err_set(err,
            "the keyring \"%s\" of repository \"%s\" is damaged (%s); restore it from a copy of "
            "that object",
            CRYPT_KEYRING_NAME, where, why);
    err_mark(err, PGD_ERR_DAMAGED);
}

/* The "sum" line, last: the SHA-256 of every byte before it. */
static bool crypt_keyring_sum_ok(const char *text, size_t before, const char *line)
{
    uint8_t want[DIGEST_SHA256_LEN], got[DIGEST_SHA256_LEN];

    return strncmp(line, "sum ", 4) == 0 && crypt_keyring_unhex(line + 4, want, sizeof(want)) &&
           digest_load(NULL) && digest_sha256(text, before, got) &&
           memcmp(want, got, sizeof(got)) == 0;
}

static crypt_keyring *crypt_keyring_parse(const char *text, size_t len, const char *where,
                                          pgd_error *err)
{
    crypt_keyring *kr = xcalloc(1, sizeof(*kr));
    bool kdf_seen = false, active_seen = false, check_seen = false, sum_seen = false, ok = true,
         found = false, sum_bad = false;
    size_t pos = 0, lineno = 0;
    char line[CRYPT_KEYRING_LINE_MAX];

    while (ok && pos < len && !sum_seen) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t l = nl == NULL ? len - pos : (size_t)(nl - (text + pos)), start = pos;
        if (nl == NULL || l >= sizeof(line) || memchr(text + pos, '\0', l) != NULL) {
            ok = false;
            break;
        }
        memcpy(line, text + pos, l);
        line[l] = '\0';
        pos += l + 1;
        if (lineno++ == 0) {
            kr->version = strcmp(line, CRYPT_KEYRING_HEADER) == 0      ? 2
                          : strcmp(line, CRYPT_KEYRING_HEADER_V1) == 0 ? 1
                                                                       : 0;
            ok = kr->version != 0;
        } else if (kr->version >= 2 && strncmp(line, "sum ", 4) == 0) {
            sum_seen = true;
            sum_bad = !crypt_keyring_sum_ok(text, start, line);
            ok = !sum_bad && pos == len; /* the last line */
        } else
            ok = crypt_keyring_parse_line(kr, line, &kdf_seen, &active_seen, &check_seen);
    }
    for (size_t i = 0; ok && i < kr->nkeys; i++)
        found = found || kr->keys[i].id == kr->active;
    if (!ok || lineno == 0 || !kdf_seen || !active_seen || !found ||
        (kr->version >= 2 && (!check_seen || !sum_seen))) {
        crypt_keyring_free(kr);
        crypt_keyring_damaged(err, where,
                              sum_bad ? "its content does not match its checksum"
                                      : "not a pgdirect keyring of a version this pgdirect reads");
        return NULL;
    }
    return kr;
}

/* memcmp that takes as long whatever differs */
static bool crypt_keyring_equal(const uint8_t *a, const uint8_t *b, size_t len)
{
    uint8_t d = 0;

    for (size_t i = 0; i < len; i++)
        d |= (uint8_t)(a[i] ^ b[i]);
    return d == 0;
}

crypt_keyring *crypt_keyring_open(const char *text, size_t len, const crypt_master *m,
                                  const char *where, pgd_error *err)
{
    crypt_keyring *kr = crypt_keyring_parse(text, len, where, err);
    uint8_t kek[CRYPT_KEY_LEN], check[DIGEST_SHA256_LEN];
    crypt_cipher *c;

    if (kr == NULL)
        return NULL;
    if (kr->scrypt != m->passphrase) {
        err_set(err,
                "encryption key file \"%s\" does not open repository \"%s\" (wrong key: the "
                "repository's master key was made from %s, the file holds %s)",
                m->path, where, kr->scrypt ? "a passphrase" : "random bytes",
                m->passphrase ? "a passphrase" : "random bytes");
        crypt_keyring_free(kr);
        return NULL;
    }
    if (!crypt_keyring_kek(kr, m, kek, err) ||
        (kr->version >= 2 && !crypt_keyring_check(kek, check, err)) ||
        (c = crypt_cipher_new(kek, err)) == NULL) {
        crypt_cipher_wipe(kek, sizeof(kek));
        crypt_keyring_free(kr);
        return NULL;
    }
    crypt_cipher_wipe(kek, sizeof(kek));
    if (kr->version >= 2 && !crypt_keyring_equal(check, kr->check, sizeof(check))) {
        err_set(err, "encryption key file \"%s\" does not open repository \"%s\" (wrong key)",
                m->path, where);
        crypt_cipher_free(c);
        crypt_keyring_free(kr);
        return NULL;
    }
    for (size_t i = 0; i < kr->nkeys; i++) {
        crypt_keyring_entry *e = &kr->keys[i];
        char aad[64];
        int alen = crypt_keyring_aad(e->id, aad, sizeof(aad));
        bool authentic;
        if (!crypt_cipher_open(c, e->nonce, aad, (size_t)alen, e->wrapped, CRYPT_KEY_LEN, e->key,
                               &authentic, err)) {
            if (!authentic && kr->version >= 2) {
                /* the check value says the key is right: the wrapped key is what changed */
                char why[96];
                snprintf(why, sizeof(why), "data key %u fails authentication under the right key",
                         e->id);
                crypt_keyring_damaged(err, where, why);
            } else if (!authentic)
                /* a keyring of version 1 has no check value: a wrong key or damage, untold */
                err_set(err,
                        "encryption key file \"%s\" does not open repository \"%s\" (wrong key)",
                        m->path, where);
            crypt_cipher_free(c);
            crypt_keyring_free(kr);
            return NULL;
        }
    }
    crypt_cipher_free(c);
    return kr;
}

uint32_t crypt_keyring_active(const crypt_keyring *kr)
{
    return kr->active;
}

size_t crypt_keyring_count(const crypt_keyring *kr)
{
    return kr->nkeys;
}

bool crypt_keyring_key(const crypt_keyring *kr, uint32_t id, uint8_t key[CRYPT_KEY_LEN])
{
    for (size_t i = 0; i < kr->nkeys; i++)
        if (kr->keys[i].id == id) {
            memcpy(key, kr->keys[i].key, CRYPT_KEY_LEN);
            return true;
        }
    return false;
}

void crypt_keyring_free(crypt_keyring *kr)
{
    if (kr == NULL)
        return;
    if (kr->keys != NULL)
        crypt_cipher_wipe(kr->keys, kr->nkeys * sizeof(*kr->keys));
    free(kr->keys);
    free(kr);
}
