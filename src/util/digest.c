/*
 * digest.c - see digest.h. The soname comes from the build (meson.build
 * reads it from the library the headers belong to).
 */
#include "util/digest.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <pthread.h>
#include <string.h>

#include "util/shared_lib.h"

/* every libcrypto function pgdirect calls */
#define DIGEST_FUNCTIONS(X)                                                                        \
    X(OPENSSL_init_crypto)                                                                         \
    X(EVP_MD_fetch)                                                                                \
    X(EVP_Digest)                                                                                  \
    X(HMAC)

static struct {
#define DIGEST_SLOT(name) __typeof__(name) *name;
    DIGEST_FUNCTIONS(DIGEST_SLOT)
#undef DIGEST_SLOT
} digest_lib;

/* fetched once (NULL: the providers have none): a legacy EVP_sha256() is looked up among
 * the engines and fetched again at every use */
static EVP_MD *digest_sha256_md, *digest_md5_md;

static pthread_once_t digest_once = PTHREAD_ONCE_INIT;
/* set when loading failed: every later call reports it */
static pgd_error digest_error;

static void digest_load_once(void)
{
    void *lib = shared_lib_open(PGD_LIBCRYPTO_SONAME, &digest_error);

    if (lib == NULL)
        return;
#define DIGEST_RESOLVE(name)                                                                       \
    digest_lib.name = (__typeof__(digest_lib.name))shared_lib_symbol(lib, PGD_LIBCRYPTO_SONAME,    \
                                                                     #name, &digest_error);
    DIGEST_FUNCTIONS(DIGEST_RESOLVE)
#undef DIGEST_RESOLVE
    if (digest_error.set)
        return;
    /*
     * The first call into the library sets how it starts. No handler at exit:
     * its clean-up frees what the process's end frees anyway, and cost about a
     * fifth of an encrypted wal-push's start (callgrind: 1.1 M of 13.7 M
     * instructions); no error strings (pgdirect words its own messages). The
     * configuration file is still read: it may hold a system's TLS policy
     * (crypto-policies), which libcurl and libpq then follow.
     */
    if (digest_lib.OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT | OPENSSL_INIT_NO_LOAD_CRYPTO_STRINGS,
                                       NULL) != 1) {
        err_set(&digest_error, "the shared library \"%s\" could not start", PGD_LIBCRYPTO_SONAME);
        return;
    }
    digest_sha256_md = digest_lib.EVP_MD_fetch(NULL, "SHA256", NULL);
    digest_md5_md = digest_lib.EVP_MD_fetch(NULL, "MD5", NULL);
    /*
     * A library that opens may still refuse to digest (an OpenSSL
     * configuration whose providers have no SHA-256, some FIPS set-ups):
     * asked once here, so that commands that need it fail before their work.
     */
    {
        static const unsigned char abc_sha256[DIGEST_SHA256_LEN] = {
            0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40,
            0xde, 0x5d, 0xae, 0x22, 0x23, 0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17,
            0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad};
        unsigned char d[DIGEST_SHA256_LEN], k[DIGEST_SHA256_LEN];
        unsigned int n = 0, kn = 0;

        if (digest_sha256_md == NULL ||
            digest_lib.EVP_Digest("abc", 3, d, &n, digest_sha256_md, NULL) != 1 ||
            n != DIGEST_SHA256_LEN || memcmp(d, abc_sha256, sizeof(d)) != 0 ||
            digest_lib.HMAC(digest_sha256_md, "k", 1, d, n, k, &kn) == NULL ||
            kn != DIGEST_SHA256_LEN)
            err_set(&digest_error,
                    "the shared library \"%s\" loads but makes no SHA-256 or HMAC-SHA-256 "
                    "(does its OpenSSL configuration, OPENSSL_CONF, load a provider that has "
                    "them?)",
                    PGD_LIBCRYPTO_SONAME);
    }
}

bool digest_load(pgd_error *err)
{
    pthread_once(&digest_once, digest_load_once);
    if (!digest_error.set)
        return true;
    return err_set(err, "%s", digest_error.msg);
}

/* One-shot digest; false, and all zeros, when libcrypto could not be loaded or failed. */
static bool digest_of(bool sha256, const void *data, size_t len, unsigned char *out, size_t out_len)
{
    unsigned int n = 0;

    if (!digest_load(NULL) || (sha256 ? digest_sha256_md : digest_md5_md) == NULL ||
        digest_lib.EVP_Digest(data, len, out, &n, sha256 ? digest_sha256_md : digest_md5_md,
                              NULL) != 1 ||
        n != out_len) {
        memset(out, 0, out_len);
        return false;
    }
    return true;
}

bool digest_sha256(const void *data, size_t len, unsigned char out[DIGEST_SHA256_LEN])
{
    return digest_of(true, data, len, out, DIGEST_SHA256_LEN);
}

bool digest_md5(const void *data, size_t len, unsigned char out[DIGEST_MD5_LEN])
{
    return digest_of(false, data, len, out, DIGEST_MD5_LEN);
}

bool digest_hmac_sha256(const void *key, size_t key_len, const void *msg, size_t msg_len,
                        unsigned char out[DIGEST_SHA256_LEN])
{
    unsigned int n = DIGEST_SHA256_LEN;

    if (!digest_load(NULL) ||
        digest_lib.HMAC(digest_sha256_md, key, (int)key_len, msg, msg_len, out, &n) == NULL ||
        n != DIGEST_SHA256_LEN) {
        memset(out, 0, DIGEST_SHA256_LEN);
        return false;
    }
    return true;
}
