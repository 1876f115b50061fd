/*
 * format.h - an encrypted object: a fixed header, then the plaintext cut into
 * chunks, each sealed with AES-256-GCM (storage/crypt/cipher.h).
 *
 *   header   8 bytes  "PGDCRYP2" (the format's magic and version: 2)
 *            4 bytes  the data key's id, big-endian (storage/crypt/keyring.h)
 *           32 bytes  a random salt drawn for this object
 *   chunks   CRYPT_FORMAT_CHUNK bytes of plaintext each, the last one shorter
 *            (0 .. CRYPT_FORMAT_CHUNK - 1 bytes, so every object has one),
 *            each stored as its ciphertext followed by its 16-byte tag
 *
 * Each object has its own key: HKDF-SHA-256 (RFC 5869) of the data key, with
 * the object's salt as HKDF's salt and CRYPT_FORMAT_KEY_INFO as its info. Chunk
 * i's nonce is i, a 96-bit big-endian counter, so within an object a nonce is
 * never used twice, and two objects share a key only when they draw the same
 * 256-bit salt (after 2^32 objects under one data key, one chance in 2^193):
 * a data key may encrypt WAL for as long as a repository lives. (Version 1,
 * "PGDCRYPT", drew a 64-bit nonce prefix per object under the data key itself:
 * a nonce repeated after about 2^32 objects, too close to NIST SP 800-38D's
 * bound; its objects are refused with a message that says so.) The cost is
 * one HKDF and one key schedule per object: a few microseconds.
 *
 * A chunk's associated data is the header, the object's name (its path in
 * the repository, 4-byte length first), i (8 bytes) and a byte that is 1 for
 * the last chunk. So a flipped byte, a chunk dropped, moved or taken from
 * another object, an object cut at any byte (a full chunk is never the last,
 * and the last is authenticated as last), and two objects swapped (each is
 * bound to its name) all fail authentication. A chunk's plaintext is handed
 * on only after its tag matched.
 *
 * The stored size is a function of the plaintext size (the header and 16
 * bytes per chunk), so a listing reports plaintext sizes (crypt_format_plain_size).
 */
#ifndef PGD_CRYPT_FORMAT_H
#define PGD_CRYPT_FORMAT_H

#include <stdbool.h>
#include <stdint.h>

#include "io/stream.h"
#include "storage/crypt/cipher.h"
#include "util/error.h"

#define CRYPT_FORMAT_MAGIC      "PGDCRYP2"
#define CRYPT_FORMAT_MAGIC_V1   "PGDCRYPT" /* recognized, to refuse it by name */
#define CRYPT_FORMAT_MAGIC_LEN  8
#define CRYPT_FORMAT_SALT_LEN   32
#define CRYPT_FORMAT_HEADER_LEN (CRYPT_FORMAT_MAGIC_LEN + 4 + CRYPT_FORMAT_SALT_LEN)
#define CRYPT_FORMAT_KEY_INFO   "pgdirect object key PGDCRYP2"
/*
 * 64 KiB: the 16-byte tag costs 0.02 %, and a reader holds two chunks (the
 * stored one and its plaintext), bounded whatever the object's size.
 */
#define CRYPT_FORMAT_CHUNK      (64u * 1024)
#define CRYPT_FORMAT_CHUNKS_MAX UINT32_MAX /* 256 TiB an object */

/*
 * Encrypt what is written into `next` as object `name`, with data key `key`
 * of id `key_id`. salt: the object's salt, NULL to draw one (a fixed salt is
 * for the known-answer test only). NULL with err set (next aborted) when
 * libcrypto or the random generator fails.
 */
out_stream *crypt_format_out_new(out_stream *next, const uint8_t key[CRYPT_KEY_LEN],
                                 uint32_t key_id, const char *name,
                                 const uint8_t salt[CRYPT_FORMAT_SALT_LEN], pgd_error *err);

/* The data key of id `id`; false when there is none of that id. */
typedef bool (*crypt_format_key_fn)(void *arg, uint32_t id, uint8_t key[CRYPT_KEY_LEN]);

/*
 * Decrypt object `name` read from `src`, naming it and `where` (the
 * repository) in messages. Damage (a bad header, a chunk whose tag does not
 * match, bytes after the last chunk, an object that ends before its last
 * chunk) is a read error of kind PGD_ERR_DAMAGED; an unknown data key id too.
 * Never NULL.
 */
in_stream *crypt_format_in_new(in_stream *src, crypt_format_key_fn key_fn, void *key_arg,
                               const char *name, const char *where);

/* The stored size of `plain` bytes, and back; false for a size no object can have. */
uint64_t crypt_format_stored_size(uint64_t plain);
bool crypt_format_plain_size(uint64_t stored, uint64_t *plain);

#endif
