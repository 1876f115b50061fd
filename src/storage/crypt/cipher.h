/*
 * cipher.h - the primitives of encryption at rest, from libcrypto opened on
 * first use (util/shared_lib.h: pgdirect does not link it, so a command that
 * encrypts nothing never maps it): AES-256-GCM over one buffer, scrypt, HKDF
 * (RFC 5869, on util/digest.h's HMAC-SHA-256) and random bytes.
 *
 * AES-256-GCM because OpenSSL's runs at several GB/s per core with AES-NI and
 * OpenSSL is already the library pgdirect loads for digests; the chunked
 * object format built on it is storage/crypt/format.h.
 */
#ifndef PGD_CRYPT_CIPHER_H
#define PGD_CRYPT_CIPHER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

#define CRYPT_KEY_LEN   32 /* AES-256 */
#define CRYPT_NONCE_LEN 12 /* GCM's 96-bit IV, the size it is made for */
#define CRYPT_TAG_LEN   16

typedef struct crypt_cipher crypt_cipher;

/* Load libcrypto and check it makes AES-256-GCM; fails naming the library. */
bool crypt_cipher_load(pgd_error *err);

/* A context holding one key's schedule, for many buffers; NULL with err when libcrypto fails. */
crypt_cipher *crypt_cipher_new(const uint8_t key[CRYPT_KEY_LEN], pgd_error *err);
void crypt_cipher_free(crypt_cipher *c);

/* out = ciphertext of in (len bytes), then the tag; out holds len + CRYPT_TAG_LEN. */
bool crypt_cipher_seal(crypt_cipher *c, const uint8_t nonce[CRYPT_NONCE_LEN], const void *aad,
                       size_t aad_len, const void *in, size_t len, uint8_t *out, pgd_error *err);

/*
 * in = ciphertext of len bytes followed by its tag; out receives the
 * plaintext (len bytes). false (*authentic = false, out zeroed) when the tag
 * does not match: the caller must not use out. false with *authentic = true
 * when libcrypto itself failed (err says so).
 */
bool crypt_cipher_open(crypt_cipher *c, const uint8_t nonce[CRYPT_NONCE_LEN], const void *aad,
                       size_t aad_len, const uint8_t *in, size_t len, uint8_t *out, bool *authentic,
                       pgd_error *err);

/* scrypt (RFC 7914) into out_len bytes; N a power of two. */
bool crypt_cipher_scrypt(const void *pass, size_t pass_len, const void *salt, size_t salt_len,
                         uint64_t n, uint64_t r, uint64_t p, uint8_t *out, size_t out_len,
                         pgd_error *err);

/* HKDF-SHA-256 (RFC 5869): extract with salt, expand with info into out_len (<= 255*32) bytes. */
bool crypt_cipher_hkdf(const void *ikm, size_t ikm_len, const void *salt, size_t salt_len,
                       const void *info, size_t info_len, uint8_t *out, size_t out_len,
                       pgd_error *err);

/* Bytes from the operating system's generator (getrandom). */
bool crypt_cipher_random(void *out, size_t len, pgd_error *err);

/* Overwrite a secret so that it does not linger in freed memory. */
void crypt_cipher_wipe(void *p, size_t len);

#endif
