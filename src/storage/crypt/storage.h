/*
 * storage.h - encryption at rest as a storage filter: a `storage` that wraps
 * any other (local, S3, and every driver added later), so that every object
 * of an encrypted repository is written and read through
 * storage/crypt/format.h under its own name, with the data keys of the
 * repository's keyring (storage/crypt/keyring.h). Objects keep their names;
 * a listing reports their plaintext sizes. The keyring object itself is not
 * encrypted, and is neither listed nor written through the filter.
 *
 * An encrypted repository is one that holds a keyring, and a marker
 * (encryption.pgdirect) beside it, so that one of the two deleted by hand
 * still says the repository is encrypted. It is made so by the
 * first command that writes to it empty with a key file (the keyring stays if
 * that command then fails: another writer with the same key may already rely
 * on it; docs/user-guide.md#encryption-at-rest); from then on every
 * command needs the key file, and a key file is refused for a repository
 * that holds anything else (no repository holds both).
 */
#ifndef PGD_CRYPT_STORAGE_H
#define PGD_CRYPT_STORAGE_H

#include <stdbool.h>

#include "storage/storage.h"
#include "util/error.h"

enum {
    CRYPT_STORAGE_CREATE = 1 << 0,   /* a command that writes: make an empty repository encrypted */
    CRYPT_STORAGE_NO_PROBE = 1 << 1, /* without a key, do not look for a keyring (see below) */
};

/*
 * The repository `inner` as a command sees it. inner is taken over: the
 * result is it or a filter over it, and it is freed on failure.
 *   key_file NULL: inner as it is stored, unless it is encrypted: an error
 *     saying the key file is needed. With CRYPT_STORAGE_CREATE alone (backup,
 *     check: they write, and should fail before they touch a server), that
 *     is found at once by a listing of the root (one request, whose failure
 *     reads as the command's own first request would). Otherwise (readers,
 *     and with CRYPT_STORAGE_NO_PROBE wal-fetch and wal-push, started once
 *     per segment), no request is made for it before the command's own: the
 *     first object read is refused when it begins as an encrypted object
 *     does, and the keyring and the marker are looked for (one listing of
 *     the root, once) before the first write or removal, before a listing
 *     that found nothing is answered, and, with CRYPT_STORAGE_NO_PROBE,
 *     before an object is said to be missing (wal-fetch's "not archived"
 *     ends recovery),
 *     so that nothing unencrypted is written into an encrypted repository,
 *     nothing is removed from one without its key, and an encrypted
 *     repository never looks empty.
 *   key_file given: the filter, the keyring opened with it (a wrong key: an
 *     error naming the file and the repository; a damaged keyring, of kind
 *     PGD_ERR_DAMAGED). A repository without a keyring: with the marker, the
 *     keyring is missing (PGD_ERR_DAMAGED, saying to restore it from a copy);
 *     refused when it holds anything; empty, it is made encrypted (keyring,
 *     then marker) with CRYPT_STORAGE_CREATE, and is read as it is without.
 *     backup and check (CRYPT_STORAGE_CREATE alone) write the marker when an
 *     encrypted repository lacks it (made before it existed).
 */
storage *crypt_storage_open(storage *inner, const char *key_file, unsigned flags, pgd_error *err);

/* Is `s` a repository opened through the filter? */
bool crypt_storage_is_encrypted(const storage *s);

/* The driver under the filter (s itself when it is not the filter): for a driver's own settings. */
const storage *crypt_storage_inner(const storage *s);

/*
 * `pgdirect key rotate`: open the keyring of `inner` with old_file, rewrap
 * its data keys with new_file's master key, add a new data key for new
 * objects, and replace the keyring in one atomic write. Killed at any point,
 * the repository holds the old keyring or the new one, whole.
 * *nkeys: the data keys the keyring holds after it.
 */
bool crypt_storage_rotate(storage *inner, const char *old_file, const char *new_file, size_t *nkeys,
                          pgd_error *err);

#endif
