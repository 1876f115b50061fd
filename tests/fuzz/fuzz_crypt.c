/*
 * fuzz_crypt.c - what an encrypted repository's reader takes from the
 * store (src/storage/crypt/): the first byte chooses
 *   even: an encrypted object (format.c, crypt_format_in_new), read to its
 *         end in pieces of a size the input chooses, with data key 1 the
 *         key 00 01 .. 1f and 7 its complement; a reader that hands on a
 *         byte must end authenticated or with an error of kind DAMAGED,
 *         and never more bytes than the object can hold;
 *   odd:  a keyring's text (keyring.c, crypt_keyring_open), opened with a
 *         random-bytes master key (HKDF: a keyring asking for scrypt is
 *         refused before any derivation, so an input never costs seconds).
 * The seeds (corpus/crypt) are valid objects and a valid keyring for those
 * keys, made by make_crypt_seeds.py with Python's cryptography.
 */
#include "fuzz_common.h"

#include "storage/crypt/format.h"
#include "storage/crypt/keyring.h"

static bool fuzz_crypt_key(void *arg, uint32_t id, uint8_t key[CRYPT_KEY_LEN])
{
    (void)arg;
    if (id != 1 && id != 7)
        return false;
    for (int i = 0; i < CRYPT_KEY_LEN; i++)
        key[i] = (uint8_t)(id == 1 ? i : ~i);
    return true;
}

static void fuzz_crypt_object(const uint8_t *data, size_t size)
{
    pgd_error err = {0};
    in_stream *in = crypt_format_in_new(mem_in_new(data, size), fuzz_crypt_key, NULL,
                                        "wal/00000001/000000010000000000000001.lz4", "fuzz");
    uint8_t buf[CRYPT_FORMAT_CHUNK + 1];
    size_t piece = size > 0 ? (size_t)data[size - 1] % sizeof(buf) + 1 : sizeof(buf);
    uint64_t total = 0, most = 0;
    size_t n;

    crypt_format_plain_size(size, &most);
    for (;;) {
        if (!in_read(in, buf, piece, &n, &err)) {
            fuzz_check_refusal(&err);
            break;
        }
        if (n == 0) {
            /* the end, authenticated: exactly the plaintext the object's size holds */
            uint64_t plain;
            fuzz_assert(crypt_format_plain_size(size, &plain) && plain == total);
            break;
        }
        fuzz_assert(n <= piece);
        total += n;
        fuzz_assert(total <= most);
    }
    in_close(in);
}

static void fuzz_crypt_keyring(const uint8_t *data, size_t size)
{
    crypt_master m = {.path = (char *)"fuzz.key", .len = 32, .passphrase = false};
    uint8_t secret[32];
    pgd_error err = {0};
    crypt_keyring *kr;

    for (int i = 0; i < 32; i++)
        secret[i] = (uint8_t)(0x80 + i);
    m.secret = secret;
    kr = crypt_keyring_open((const char *)data, size, &m, "fuzz", &err);
    if (kr == NULL) {
        fuzz_check_refusal(&err);
        return;
    }
    {
        uint8_t k[CRYPT_KEY_LEN];
        size_t len;
        char *text = crypt_keyring_text(kr, &len);
        fuzz_assert(crypt_keyring_key(kr, crypt_keyring_active(kr), k));
        free(text);
    }
    crypt_keyring_free(kr);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if (data[0] % 2 == 0)
        fuzz_crypt_object(data + 1, size - 1);
    else
        fuzz_crypt_keyring(data + 1, size - 1);
    return 0;
}
