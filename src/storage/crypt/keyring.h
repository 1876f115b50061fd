/*
 * keyring.h - the master key and the repository's keyring.
 *
 * Objects are encrypted with data keys (random, 32 bytes); the keyring holds
 * them wrapped (AES-256-GCM) by the master key, which is derived from the
 * key file with the keyring's salt. The keyring is one small object at the
 * repository's root, CRYPT_KEYRING_NAME, stored as it is (it holds nothing
 * but wrapped keys and the KDF's parameters), so `pgdirect key rotate`
 * rewrites one object, atomically, whatever the repository holds.
 *
 * The key file: at least CRYPT_KEY_FILE_MIN bytes, readable by its owner
 * only. A file whose bytes are all printable text (a trailing newline
 * aside) is a passphrase: scrypt (N = 2^15, r = 8, p = 1: 32 MiB, about
 * 0.1 s) stretches it. Any other file is random bytes (`openssl rand 32 >
 * key`): HKDF-SHA-256, a few microseconds, which is what archive_command,
 * started once per segment, can pay.
 *
 * The keyring's text, one item a line:
 *   pgdirect-keyring 2
 *   kdf scrypt N r p SALT            (or: kdf hkdf-sha256 SALT)
 *   key ID NONCE WRAPPED             (one per data key; WRAPPED: key and tag)
 *   active ID                        (the data key new objects are written with)
 *   check MAC                        (HMAC-SHA-256 of "pgdirect keyring check" under the KEK)
 *   sum SHA256                       (of every byte before this line; the last line)
 * in lower-case hex; a key's associated data is "pgdirect data key ID".
 * The check value tells a wrong key (it differs) from a damaged keyring (the
 * sum differs, or a data key fails to unwrap under a key the check value
 * accepts). Version 1 (the same without check and sum) is still read; there
 * a data key that does not unwrap reads as a wrong key.
 */
#ifndef PGD_CRYPT_KEYRING_H
#define PGD_CRYPT_KEYRING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/crypt/cipher.h"
#include "util/error.h"

#define CRYPT_KEYRING_NAME "keyring.pgdirect"
/* Beside the keyring, its marker: the repository is encrypted (crypt/storage.h). */
#define CRYPT_MARKER_NAME  "encryption.pgdirect"
#define CRYPT_KEY_FILE_MIN 32
#define CRYPT_KEY_FILE_MAX 4096
#define CRYPT_KEYRING_SALT 16
#define CRYPT_KEYRING_KEYS 1024 /* data keys a keyring may hold: one per rotation */

/* scrypt's cost for passphrases (RFC 7914's interactive-use figure, doubled) */
#define CRYPT_KEYRING_SCRYPT_N (1u << 15)
#define CRYPT_KEYRING_SCRYPT_R 8
#define CRYPT_KEYRING_SCRYPT_P 1

typedef struct crypt_master {
    char *path; /* for messages */
    uint8_t *secret;
    size_t len;
    bool passphrase;
} crypt_master;

/*
 * Read the key file: refused (PGD_ERR_USAGE, one line naming it) when
 * group or others have any permission on it, when it is not a regular file,
 * or shorter than CRYPT_KEY_FILE_MIN bytes (a passphrase: its newline
 * aside) or longer than CRYPT_KEY_FILE_MAX.
 */
crypt_master *crypt_keyring_master_load(const char *path, pgd_error *err);
void crypt_keyring_master_free(crypt_master *m);

typedef struct crypt_keyring crypt_keyring;

/* A new keyring for master `m`: a new salt and one data key, active. */
crypt_keyring *crypt_keyring_create(const crypt_master *m, pgd_error *err);

/*
 * Parse a keyring's text and unwrap its data keys with master `m`. A wrong
 * master is an error saying the key file does not open the repository
 * `where` (PGD_ERR_FAILED); a damaged keyring, one saying so, naming it, of
 * kind PGD_ERR_DAMAGED (command_open_one makes that 1 for backup, whose 3
 * means "completed, with pages that failed their checksum").
 */
crypt_keyring *crypt_keyring_open(const char *text, size_t len, const crypt_master *m,
                                  const char *where, pgd_error *err);

/* Rewrap every data key with master `m` (a new salt), and add a new active data key. */
bool crypt_keyring_rekey(crypt_keyring *kr, const crypt_master *m, pgd_error *err);

/* The keyring's text (free it). */
char *crypt_keyring_text(const crypt_keyring *kr, size_t *len);

uint32_t crypt_keyring_active(const crypt_keyring *kr);
size_t crypt_keyring_count(const crypt_keyring *kr);
/* The data key `id`; false when the keyring has none of that id. */
bool crypt_keyring_key(const crypt_keyring *kr, uint32_t id, uint8_t key[CRYPT_KEY_LEN]);

void crypt_keyring_free(crypt_keyring *kr);

#endif
