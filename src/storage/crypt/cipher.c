/*
 * cipher.c - see cipher.h. The soname comes from the build, as for
 * util/digest.c, which opens the same library (dlopen returns the same handle).
 */
#include "storage/crypt/cipher.h"

#include <errno.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "util/digest.h"
#include "util/shared_lib.h"
#include "util/xmalloc.h"

/* every libcrypto function this file calls */
#define CRYPT_CIPHER_FUNCTIONS(X)                                                                  \
    X(EVP_CIPHER_CTX_new)                                                                          \
    X(EVP_CIPHER_CTX_free)                                                                         \
    X(EVP_CIPHER_CTX_ctrl)                                                                         \
    X(EVP_CIPHER_fetch)                                                                            \
    X(EVP_EncryptInit_ex)                                                                          \
    X(EVP_EncryptUpdate)                                                                           \
    X(EVP_EncryptFinal_ex)                                                                         \
    X(EVP_DecryptInit_ex)                                                                          \
    X(EVP_DecryptUpdate)                                                                           \
    X(EVP_DecryptFinal_ex)                                                                         \
    X(EVP_PBE_scrypt)

static struct {
#define CRYPT_CIPHER_SLOT(name) __typeof__(name) *name;
    CRYPT_CIPHER_FUNCTIONS(CRYPT_CIPHER_SLOT)
#undef CRYPT_CIPHER_SLOT
} crypt_cipher_lib;

/* fetched once: a legacy EVP_aes_256_gcm() is looked up among the engines and
 * fetched again for every context */
static EVP_CIPHER *crypt_cipher_gcm;

static pthread_once_t crypt_cipher_once = PTHREAD_ONCE_INIT;
static pgd_error crypt_cipher_error; /* set when loading failed */

struct crypt_cipher {
    EVP_CIPHER_CTX *enc;
    EVP_CIPHER_CTX *dec;
};

static void crypt_cipher_load_once(void)
{
    void *lib;

    /* first: digest_load starts the library (util/digest.c says how) */
    if (!digest_load(&crypt_cipher_error))
        return;
    if ((lib = shared_lib_open(PGD_LIBCRYPTO_SONAME, &crypt_cipher_error)) == NULL)
        return;
#define CRYPT_CIPHER_RESOLVE(name)                                                                 \
    crypt_cipher_lib.name = (__typeof__(crypt_cipher_lib.name))shared_lib_symbol(                  \
        lib, PGD_LIBCRYPTO_SONAME, #name, &crypt_cipher_error);
    CRYPT_CIPHER_FUNCTIONS(CRYPT_CIPHER_RESOLVE)
#undef CRYPT_CIPHER_RESOLVE
    if (!crypt_cipher_error.set &&
        (crypt_cipher_gcm = crypt_cipher_lib.EVP_CIPHER_fetch(NULL, "AES-256-GCM", NULL)) == NULL)
        err_set(&crypt_cipher_error,
                "the shared library \"%s\" loads but makes no AES-256-GCM (does its OpenSSL "
                "configuration, OPENSSL_CONF, load a provider that has it?)",
                PGD_LIBCRYPTO_SONAME);
}

bool crypt_cipher_load(pgd_error *err)
{
    pthread_once(&crypt_cipher_once, crypt_cipher_load_once);
    if (!crypt_cipher_error.set)
        return true;
    return err_set(err, "%s", crypt_cipher_error.msg);
}

void crypt_cipher_wipe(void *p, size_t len)
{
    volatile unsigned char *v = p;

    while (len-- > 0)
        *v++ = 0;
}

crypt_cipher *crypt_cipher_new(const uint8_t key[CRYPT_KEY_LEN], pgd_error *err)
{
    crypt_cipher *c;
    const EVP_CIPHER *gcm;

    if (!crypt_cipher_load(err))
        return NULL;
    c = xcalloc(1, sizeof(*c));
    gcm = crypt_cipher_gcm;
    c->enc = crypt_cipher_lib.EVP_CIPHER_CTX_new();
    c->dec = crypt_cipher_lib.EVP_CIPHER_CTX_new();
    if (c->enc == NULL || c->dec == NULL ||
        crypt_cipher_lib.EVP_EncryptInit_ex(c->enc, gcm, NULL, key, NULL) != 1 ||
        crypt_cipher_lib.EVP_DecryptInit_ex(c->dec, gcm, NULL, key, NULL) != 1) {
        crypt_cipher_free(c);
        err_set(err, "libcrypto could not set up AES-256-GCM");
        return NULL;
    }
    return c;
}

void crypt_cipher_free(crypt_cipher *c)
{
    if (c == NULL)
        return;
    if (c->enc != NULL)
        crypt_cipher_lib.EVP_CIPHER_CTX_free(c->enc);
    if (c->dec != NULL)
        crypt_cipher_lib.EVP_CIPHER_CTX_free(c->dec);
    free(c);
}

/* EVP takes int lengths: a chunk or a key is far below INT_MAX. */
#define CRYPT_CIPHER_MAX_LEN (1u << 30)

bool crypt_cipher_seal(crypt_cipher *c, const uint8_t nonce[CRYPT_NONCE_LEN], const void *aad,
                       size_t aad_len, const void *in, size_t len, uint8_t *out, pgd_error *err)
{
    int n = 0, fin = 0;

    if (len > CRYPT_CIPHER_MAX_LEN || aad_len > CRYPT_CIPHER_MAX_LEN ||
        crypt_cipher_lib.EVP_EncryptInit_ex(c->enc, NULL, NULL, NULL, nonce) != 1 ||
        (aad_len > 0 &&
         crypt_cipher_lib.EVP_EncryptUpdate(c->enc, NULL, &n, aad, (int)aad_len) != 1) ||
        (len > 0 && crypt_cipher_lib.EVP_EncryptUpdate(c->enc, out, &n, in, (int)len) != 1) ||
        crypt_cipher_lib.EVP_EncryptFinal_ex(c->enc, out + (len > 0 ? n : 0), &fin) != 1 ||
        crypt_cipher_lib.EVP_CIPHER_CTX_ctrl(c->enc, EVP_CTRL_GCM_GET_TAG, CRYPT_TAG_LEN,
                                             out + len) != 1)
        return err_set(err, "libcrypto could not encrypt with AES-256-GCM");
    return true;
}

bool crypt_cipher_open(crypt_cipher *c, const uint8_t nonce[CRYPT_NONCE_LEN], const void *aad,
                       size_t aad_len, const uint8_t *in, size_t len, uint8_t *out, bool *authentic,
                       pgd_error *err)
{
    int n = 0, fin = 0;
    uint8_t tag[CRYPT_TAG_LEN];

    *authentic = true;
    memcpy(tag, in + len, CRYPT_TAG_LEN);
    if (len > CRYPT_CIPHER_MAX_LEN || aad_len > CRYPT_CIPHER_MAX_LEN ||
        crypt_cipher_lib.EVP_DecryptInit_ex(c->dec, NULL, NULL, NULL, nonce) != 1 ||
        (aad_len > 0 &&
         crypt_cipher_lib.EVP_DecryptUpdate(c->dec, NULL, &n, aad, (int)aad_len) != 1) ||
        (len > 0 && crypt_cipher_lib.EVP_DecryptUpdate(c->dec, out, &n, in, (int)len) != 1) ||
        crypt_cipher_lib.EVP_CIPHER_CTX_ctrl(c->dec, EVP_CTRL_GCM_SET_TAG, CRYPT_TAG_LEN, tag) !=
            1) {
        crypt_cipher_wipe(out, len);
        return err_set(err, "libcrypto could not decrypt with AES-256-GCM");
    }
    if (crypt_cipher_lib.EVP_DecryptFinal_ex(c->dec, out + (len > 0 ? n : 0), &fin) != 1) {
        /* the plaintext of a chunk that failed authentication is never used */
        crypt_cipher_wipe(out, len);
        *authentic = false;
        return false;
    }
    return true;
}

/*
 * OpenSSL refuses scrypt parameters needing more than maxmem; the default
 * (32 MiB) is below what N = 2^15, r = 8 needs (128 * r * N = 32 MiB, plus
 * the small buffers), so the limit is given: 256 MiB bounds what a keyring
 * read from the repository may make a command allocate.
 */
#define CRYPT_CIPHER_SCRYPT_MAXMEM (256ull * 1024 * 1024)

bool crypt_cipher_scrypt(const void *pass, size_t pass_len, const void *salt, size_t salt_len,
                         uint64_t n, uint64_t r, uint64_t p, uint8_t *out, size_t out_len,
                         pgd_error *err)
{
    if (!crypt_cipher_load(err))
        return false;
    if (crypt_cipher_lib.EVP_PBE_scrypt(pass, pass_len, salt, salt_len, n, r, p,
                                        CRYPT_CIPHER_SCRYPT_MAXMEM, out, out_len) != 1)
        return err_set(err, "libcrypto could not derive a key with scrypt (N=%llu, r=%llu, p=%llu)",
                       (unsigned long long)n, (unsigned long long)r, (unsigned long long)p);
    return true;
}

bool crypt_cipher_hkdf(const void *ikm, size_t ikm_len, const void *salt, size_t salt_len,
                       const void *info, size_t info_len, uint8_t *out, size_t out_len,
                       pgd_error *err)
{
    uint8_t prk[DIGEST_SHA256_LEN], t[DIGEST_SHA256_LEN];
    uint8_t zero_salt[DIGEST_SHA256_LEN] = {0};
    size_t tlen = 0, done = 0, mlen = DIGEST_SHA256_LEN + info_len + 1;
    uint8_t *msg;

    if (out_len > 255 * DIGEST_SHA256_LEN)
        return err_set(err, "HKDF output of %zu bytes is too long", out_len);
    if (salt_len == 0) {
        salt = zero_salt;
        salt_len = sizeof(zero_salt);
    }
    if (!digest_load(err))
        return false;
    if (!digest_hmac_sha256(salt, salt_len, ikm, ikm_len, prk))
        return err_set(err, "libcrypto could not compute HMAC-SHA-256");
    msg = xmalloc(mlen);
    for (uint8_t i = 1; done < out_len; i++) {
        size_t step;
        memcpy(msg, t, tlen);
        memcpy(msg + tlen, info, info_len);
        msg[tlen + info_len] = i;
        if (!digest_hmac_sha256(prk, sizeof(prk), msg, tlen + info_len + 1, t)) {
            crypt_cipher_wipe(prk, sizeof(prk));
            free(msg);
            return err_set(err, "libcrypto could not compute HMAC-SHA-256");
        }
        tlen = DIGEST_SHA256_LEN;
        step = out_len - done < tlen ? out_len - done : tlen;
        memcpy(out + done, t, step);
        done += step;
    }
    crypt_cipher_wipe(prk, sizeof(prk));
    crypt_cipher_wipe(t, sizeof(t));
    crypt_cipher_wipe(msg, mlen);
    free(msg);
    return true;
}

bool crypt_cipher_random(void *out, size_t len, pgd_error *err)
{
    uint8_t *p = out;

    while (len > 0) {
        ssize_t n = getrandom(p, len, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return err_errno(err, errno, "could not read random bytes (getrandom)");
        }
        p += n;
        len -= (size_t)n;
    }
    return true;
}
