/*
 * test_crypt_keyring.c - covers src/storage/crypt/keyring.c and the key
 * derivations of src/storage/crypt/cipher.c: scrypt against RFC 7914's
 * published vectors, HKDF-SHA-256 against RFC 5869's first vector, the key
 * file's checks (mode, length, kind), and the keyring: a wrong key, a
 * passphrase given for a random key's repository, damaged texts, and a
 * rekey after which the old key opens nothing and the data keys are kept;
 * version 2's check value and sum (a damaged keyring is never a wrong key),
 * version 1 still read, and a known-answer keyring made by Python.
 */
#include "helpers.h"

#include "storage/crypt/keyring.h"
#include "util/digest.h"

static void test_keyring_hex(const char *hex, uint8_t *out, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned v;
        assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
        out[i] = (uint8_t)v;
    }
}

static void test_scrypt_rfc7914(void **state)
{
    pgd_error err = {0};
    uint8_t out[64], expect[64];

    (void)state;
    assert_true(crypt_cipher_scrypt("", 0, "", 0, 16, 1, 1, out, 64, &err));
    test_keyring_hex("77d6576238657b203b19ca42c18a0497f16b4844e3074ae8dfdffa3fede21442"
                     "fcd0069ded0948f8326a753a0fc81f17e8d3e0fb2e0d3628cf35e20c38d18906",
                     expect, 64);
    assert_memory_equal(out, expect, 64);
    assert_true(crypt_cipher_scrypt("password", 8, "NaCl", 4, 1024, 8, 16, out, 64, &err));
    test_keyring_hex("fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b373162"
                     "2eaf30d92e22a3886ff109279d9830dac727afb94a83ee6d8360cbdfa2cc0640",
                     expect, 64);
    assert_memory_equal(out, expect, 64);
    /* N not a power of two: libcrypto refuses, and says so */
    assert_false(crypt_cipher_scrypt("p", 1, "s", 1, 1000, 8, 1, out, 32, &err));
    assert_non_null(strstr(err.msg, "scrypt"));
}

static void test_hkdf_rfc5869(void **state)
{
    pgd_error err = {0};
    uint8_t ikm[22], salt[13], info[10], out[42], expect[42];

    (void)state;
    memset(ikm, 0x0b, sizeof(ikm));
    for (int i = 0; i < 13; i++)
        salt[i] = (uint8_t)i;
    for (int i = 0; i < 10; i++)
        info[i] = (uint8_t)(0xf0 + i);
    assert_true(crypt_cipher_hkdf(ikm, 22, salt, 13, info, 10, out, 42, &err));
    test_keyring_hex("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf"
                     "34007208d5b887185865",
                     expect, 42);
    assert_memory_equal(out, expect, 42);
}

static char *test_keyring_file(const char *dir, const char *name, const void *data, size_t len,
                               mode_t mode)
{
    char *path;
    int fd;

    assert_true(asprintf(&path, "%s/%s", dir, name) > 0);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    close(fd);
    assert_int_equal(chmod(path, mode), 0);
    return path;
}

static void test_key_file_checks(void **state)
{
    char *dir = test_tmpdir(), *path;
    pgd_error err = {0};
    crypt_master *m;
    uint8_t rnd[32];
    static const char pass[] = "correct horse battery staple, twice over\n";

    (void)state;
    for (int i = 0; i < 32; i++)
        rnd[i] = (uint8_t)(i * 37 + 1); /* holds bytes that are not text */
    /* mode 0644, and 0640: refused, naming the file and the mode */
    path = test_keyring_file(dir, "k644", rnd, 32, 0644);
    assert_null(crypt_keyring_master_load(path, &err));
    assert_true(err_is(&err, PGD_ERR_USAGE));
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "0644"));
    free(path);
    err_clear(&err);
    path = test_keyring_file(dir, "k640", rnd, 32, 0640);
    assert_null(crypt_keyring_master_load(path, &err));
    assert_non_null(strstr(err.msg, "group or world access"));
    free(path);
    err_clear(&err);
    /* positive control: the same bytes, mode 0600 */
    path = test_keyring_file(dir, "k600", rnd, 32, 0600);
    m = crypt_keyring_master_load(path, &err);
    assert_non_null(m);
    assert_false(m->passphrase);
    assert_int_equal(m->len, 32);
    crypt_keyring_master_free(m);
    free(path);
    /* 31 random bytes: too short */
    path = test_keyring_file(dir, "k31", rnd, 31, 0600);
    assert_null(crypt_keyring_master_load(path, &err));
    assert_non_null(strstr(err.msg, "at least 32"));
    free(path);
    err_clear(&err);
    /* a passphrase of 31 characters and its newline: too short (the newline is not counted) */
    path = test_keyring_file(dir, "p31", "abcdefghijklmnopqrstuvwxyz01234\n", 32, 0400);
    assert_null(crypt_keyring_master_load(path, &err));
    assert_non_null(strstr(err.msg, "holds 31 bytes"));
    free(path);
    err_clear(&err);
    /* a passphrase: text, its newline left out */
    path = test_keyring_file(dir, "pass", pass, strlen(pass), 0400);
    m = crypt_keyring_master_load(path, &err);
    assert_non_null(m);
    assert_true(m->passphrase);
    assert_int_equal(m->len, strlen(pass) - 1);
    crypt_keyring_master_free(m);
    free(path);
    /* a passphrase ending in \r\n: neither is part of it */
    path = test_keyring_file(dir, "crlf", "0123456789abcdef0123456789abcdef\r\n", 34, 0600);
    m = crypt_keyring_master_load(path, &err);
    assert_non_null(m);
    assert_true(m->passphrase);
    assert_int_equal(m->len, 32);
    crypt_keyring_master_free(m);
    free(path);
    /* longer than CRYPT_KEY_FILE_MAX: refused (not read in part) */
    {
        char big[CRYPT_KEY_FILE_MAX + 1];
        memset(big, 'x', sizeof(big));
        path = test_keyring_file(dir, "big", big, sizeof(big), 0600);
        assert_null(crypt_keyring_master_load(path, &err));
        assert_non_null(strstr(err.msg, "longer than 4096 bytes"));
        free(path);
        err_clear(&err);
        path = test_keyring_file(dir, "max", big, CRYPT_KEY_FILE_MAX, 0600);
        m = crypt_keyring_master_load(path, &err);
        assert_non_null(m);
        assert_int_equal(m->len, CRYPT_KEY_FILE_MAX);
        crypt_keyring_master_free(m);
        free(path);
    }
    /* missing, and a directory */
    assert_null(crypt_keyring_master_load("/nonexistent/key", &err));
    assert_non_null(strstr(err.msg, "could not open encryption key file \"/nonexistent/key\""));
    err_clear(&err);
    assert_int_equal(chmod(dir, 0700), 0);
    assert_null(crypt_keyring_master_load(dir, &err));
    assert_non_null(strstr(err.msg, "not a regular file"));
    rm_rf(dir);
}

static crypt_master *test_keyring_master(bool passphrase, uint8_t seed)
{
    crypt_master *m = calloc(1, sizeof(*m));

    m->path = strdup(passphrase ? "/keys/pass" : "/keys/random");
    m->passphrase = passphrase;
    m->len = 40;
    m->secret = malloc(40);
    for (int i = 0; i < 40; i++)
        m->secret[i] = passphrase ? (uint8_t)('a' + (i + seed) % 26) : (uint8_t)(i * seed);
    return m;
}

static void test_keyring_open_and_wrong_key(void **state)
{
    pgd_error err = {0};
    crypt_master *a = test_keyring_master(false, 3), *b = test_keyring_master(false, 5);
    crypt_master *p = test_keyring_master(true, 1);
    crypt_keyring *kr = crypt_keyring_create(a, &err), *again;
    uint8_t k1[32], k2[32];
    char *text;
    size_t len;

    (void)state;
    assert_non_null(kr);
    assert_int_equal(crypt_keyring_count(kr), 1);
    assert_true(crypt_keyring_key(kr, crypt_keyring_active(kr), k1));
    assert_false(crypt_keyring_key(kr, 99, k2));
    text = crypt_keyring_text(kr, &len);
    assert_non_null(strstr(text, "kdf hkdf-sha256 "));
    /* the data key is not in the text */
    for (size_t i = 0; i + 32 <= len; i++)
        assert_memory_not_equal(text + i, k1, 32);
    again = crypt_keyring_open(text, len, a, "/repo", &err);
    assert_non_null(again);
    assert_true(crypt_keyring_key(again, crypt_keyring_active(again), k2));
    assert_memory_equal(k1, k2, 32);
    crypt_keyring_free(again);
    /* another random key: wrong key, naming the file and the repository */
    assert_null(crypt_keyring_open(text, len, b, "/repo", &err));
    assert_non_null(strstr(err.msg, "encryption key file \"/keys/random\" does not open "
                                    "repository \"/repo\" (wrong key)"));
    err_clear(&err);
    /* a passphrase for a random key's repository */
    assert_null(crypt_keyring_open(text, len, p, "/repo", &err));
    assert_non_null(strstr(err.msg, "wrong key"));
    err_clear(&err);
    free(text);
    crypt_keyring_free(kr);

    /* a passphrase's keyring: scrypt with the documented cost */
    kr = crypt_keyring_create(p, &err);
    assert_non_null(kr);
    text = crypt_keyring_text(kr, &len);
    assert_non_null(strstr(text, "kdf scrypt 32768 8 1 "));
    again = crypt_keyring_open(text, len, p, "/repo", &err);
    assert_non_null(again);
    crypt_keyring_free(again);
    free(text);
    crypt_keyring_free(kr);
    crypt_keyring_master_free(a);
    crypt_keyring_master_free(b);
    crypt_keyring_master_free(p);
}

static void test_keyring_damaged(void **state)
{
    static const char *texts[] = {
        "",
        "pgdirect-keyring 2\n",
        "pgdirect-keyring 1\nkdf hkdf-sha256 00\nactive 1\n",
        "pgdirect-keyring 1\nkdf hkdf-sha256 00112233445566778899aabbccddeeff\nactive 1\n",
        "pgdirect-keyring 1\nkdf scrypt 1000 8 1 00112233445566778899aabbccddeeff\n",
        "pgdirect-keyring 1\nkdf scrypt 4194304 8 1 00112233445566778899aabbccddeeff\n",
        "pgdirect-keyring 1\nkdf hkdf-sha256 00112233445566778899aabbccddeeff\nkey 1 00 00\n"
        "active 1\n",
        "pgdirect-keyring 1\nkdf hkdf-sha256 00112233445566778899aabbccddeeff", /* no newline */
    };
    crypt_master *a = test_keyring_master(false, 3);

    (void)state;
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        pgd_error err = {0};
        assert_null(crypt_keyring_open(texts[i], strlen(texts[i]), a, "/repo", &err));
        /* damaged repository data (command_open_one makes it 1 for backup) */
        assert_true(err_is(&err, PGD_ERR_DAMAGED));
        assert_non_null(strstr(err.msg, "keyring \"keyring.pgdirect\" of repository \"/repo\" "
                                        "is damaged"));
    }
    crypt_keyring_master_free(a);
}

/* A keyring's text with `from` (the first match) replaced by `to`. */
static char *test_keyring_edit(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    char *out;

    assert_non_null(at);
    out = malloc(strlen(text) - strlen(from) + strlen(to) + 1);
    assert_non_null(out);
    memcpy(out, text, (size_t)(at - text));
    strcpy(out + (at - text), to);
    strcat(out, at + strlen(from));
    return out;
}

/*
 * A byte flipped in any line of a keyring is "damaged", of kind
 * PGD_ERR_DAMAGED, and never "wrong key"; a wrong key is "wrong key", of
 * kind PGD_ERR_FAILED; the right key opens it (the positive control).
 * A keyring of version 1 (no check value, no sum) still opens.
 */
static void test_keyring_damaged_or_wrong_key(void **state)
{
    pgd_error err = {0};
    crypt_master *a = test_keyring_master(false, 3), *b = test_keyring_master(false, 5);
    crypt_keyring *kr = crypt_keyring_create(a, &err), *opened;
    char *text, *v1, *tmp;
    size_t len, lines = 0;

    (void)state;
    assert_non_null(kr);
    text = crypt_keyring_text(kr, &len);
    assert_non_null(strstr(text, "pgdirect-keyring 2\n"));
    assert_non_null(strstr(text, "\ncheck "));
    assert_non_null(strstr(text, "\nsum "));
    opened = crypt_keyring_open(text, len, a, "/repo", &err);
    assert_non_null(opened);
    crypt_keyring_free(opened);
    assert_null(crypt_keyring_open(text, len, b, "/repo", &err));
    assert_true(err_is(&err, PGD_ERR_FAILED));
    assert_non_null(strstr(err.msg, "(wrong key)"));
    err_clear(&err);
    /* one byte of each line, its middle, turned into another hex digit or letter */
    for (size_t start = 0; start < len; lines++) {
        size_t end = (size_t)(strchr(text + start, '\n') - text), mid = start + (end - start) / 2;
        char *copy = strdup(text);
        assert_non_null(copy);
        copy[mid] = copy[mid] == '0' ? '1' : '0';
        assert_null(crypt_keyring_open(copy, len, a, "/repo", &err));
        assert_true(err_is(&err, PGD_ERR_DAMAGED));
        assert_non_null(strstr(err.msg, "keyring \"keyring.pgdirect\" of repository \"/repo\" "
                                        "is damaged"));
        assert_null(strstr(err.msg, "wrong key"));
        err_clear(&err);
        free(copy);
        start = end + 1;
    }
    assert_int_equal(lines, 6); /* header, kdf, key, active, check, sum */
    free(text);

    /* a wrapped key changed and the sum made right again: damaged, since the check value matches */
    {
        char *nosum, *at;
        uint8_t sum[DIGEST_SHA256_LEN];
        text = crypt_keyring_text(kr, &len);
        at = strstr(text, "\nkey 1 ");
        assert_non_null(at);
        at += strlen("\nkey 1 ") + 2 * CRYPT_NONCE_LEN + 1 + 4;
        *at = *at == '0' ? '1' : '0';
        nosum = strndup(text, (size_t)(strstr(text, "sum ") - text));
        assert_true(digest_sha256(nosum, strlen(nosum), sum));
        tmp = malloc(strlen(nosum) + 4 + 2 * DIGEST_SHA256_LEN + 2);
        strcpy(tmp, nosum);
        strcat(tmp, "sum ");
        for (size_t i = 0; i < sizeof(sum); i++)
            sprintf(tmp + strlen(tmp), "%02x", sum[i]);
        strcat(tmp, "\n");
        assert_null(crypt_keyring_open(tmp, strlen(tmp), a, "/repo", &err));
        assert_true(err_is(&err, PGD_ERR_DAMAGED));
        assert_non_null(strstr(err.msg, "is damaged (data key 1 fails authentication under the "
                                        "right key)"));
        err_clear(&err);
        /* and with the wrong key, that keyring says "wrong key" */
        assert_null(crypt_keyring_open(tmp, strlen(tmp), b, "/repo", &err));
        assert_non_null(strstr(err.msg, "(wrong key)"));
        err_clear(&err);
        free(tmp);
        free(nosum);
        free(text);
    }

    /* version 1: no check value, no sum; opens with the right key, "wrong key" with another */
    text = crypt_keyring_text(kr, &len);
    *strstr(text, "check ") = '\0';
    v1 = test_keyring_edit(text, "pgdirect-keyring 2", "pgdirect-keyring 1");
    opened = crypt_keyring_open(v1, strlen(v1), a, "/repo", &err);
    assert_non_null(opened);
    crypt_keyring_free(opened);
    assert_null(crypt_keyring_open(v1, strlen(v1), b, "/repo", &err));
    assert_non_null(strstr(err.msg, "(wrong key)"));
    err_clear(&err);
    /* a version 2 keyring stripped of its check value and sum is damaged */
    tmp = test_keyring_edit(v1, "pgdirect-keyring 1", "pgdirect-keyring 2");
    assert_null(crypt_keyring_open(tmp, strlen(tmp), a, "/repo", &err));
    assert_true(err_is(&err, PGD_ERR_DAMAGED));
    err_clear(&err);
    /* a rotation writes version 2 */
    crypt_keyring_free(kr);
    kr = crypt_keyring_open(v1, strlen(v1), a, "/repo", &err);
    assert_non_null(kr);
    assert_true(crypt_keyring_rekey(kr, b, &err));
    free(text);
    text = crypt_keyring_text(kr, &len);
    assert_non_null(strstr(text, "pgdirect-keyring 2\n"));
    opened = crypt_keyring_open(text, len, b, "/repo", &err);
    assert_non_null(opened);
    crypt_keyring_free(opened);
    free(tmp);
    free(v1);
    free(text);
    crypt_keyring_free(kr);
    crypt_keyring_master_free(a);
    crypt_keyring_master_free(b);
}

static void test_keyring_rekey(void **state)
{
    pgd_error err = {0};
    crypt_master *old_m = test_keyring_master(false, 3), *new_m = test_keyring_master(false, 9);
    crypt_keyring *kr = crypt_keyring_create(old_m, &err), *opened;
    uint8_t k1[32], k1b[32], k2[32];
    uint32_t first;
    char *old_text, *new_text;
    size_t old_len, new_len;

    (void)state;
    assert_non_null(kr);
    first = crypt_keyring_active(kr);
    assert_true(crypt_keyring_key(kr, first, k1));
    old_text = crypt_keyring_text(kr, &old_len);
    assert_true(crypt_keyring_rekey(kr, new_m, &err));
    new_text = crypt_keyring_text(kr, &new_len);
    /* the old key opens the new keyring no more; the new one does, with every data key */
    assert_null(crypt_keyring_open(new_text, new_len, old_m, "/repo", &err));
    assert_non_null(strstr(err.msg, "wrong key"));
    err_clear(&err);
    opened = crypt_keyring_open(new_text, new_len, new_m, "/repo", &err);
    assert_non_null(opened);
    assert_int_equal(crypt_keyring_count(opened), 2);
    assert_int_not_equal(crypt_keyring_active(opened), first);
    assert_true(crypt_keyring_key(opened, first, k1b));
    assert_memory_equal(k1, k1b, 32);
    assert_true(crypt_keyring_key(opened, crypt_keyring_active(opened), k2));
    assert_memory_not_equal(k1, k2, 32);
    crypt_keyring_free(opened);
    /* the old keyring (what a crash before the write leaves) still opens with the old key */
    opened = crypt_keyring_open(old_text, old_len, old_m, "/repo", &err);
    assert_non_null(opened);
    crypt_keyring_free(opened);
    free(old_text);
    free(new_text);
    crypt_keyring_free(kr);
    crypt_keyring_master_free(old_m);
    crypt_keyring_master_free(new_m);
}

/*
 * Known answer: a keyring of version 2 written by Python's cryptography
 * (tests/fuzz/make_crypt_seeds.py, corpus/crypt/keyring_v2), independently
 * of keyring.c: master 80 81 .. 9f, data key 1 = 00 01 .. 1f, data key 7 its
 * complement. It opens, giving those keys; another master is a wrong key.
 */
static void test_keyring_v2_known_answer(void **state)
{
    static const char text[] =
        "pgdirect-keyring 2\n"
        "kdf hkdf-sha256 000102030405060708090a0b0c0d0e0f\n"
        "key 1 010101010101010101010101 "
        "b0c973b98a2aea1b90dfafbf975f38379f1142bdcf53863730199b6365afef2e07ed1b12b2d5f7243c684d0dd7"
        "52d3d0\n"
        "key 7 070707070707070707070707 "
        "7d2619475946bb537806e4c2e3c249871fe3e56170e460935d794817d7a2eba2a57cb5b852e500fc82feb7310f"
        "6b03bd\n"
        "active 7\n"
        "check 12ff6bdfa7fa31c2ac7e3ef644a7ebd456dda2a093aa31c16f301e5333cb185b\n"
        "sum fe392388467be65cc9ed7624e6cc28366c4690d7e66a5bb2edf2dcd11fd602ba\n";
    crypt_master m = {.path = (char *)"/keys/kat", .len = 32, .passphrase = false};
    crypt_master *other = test_keyring_master(false, 3);
    uint8_t secret[32], k[32], want[32];
    pgd_error err = {0};
    crypt_keyring *kr;

    (void)state;
    for (int i = 0; i < 32; i++)
        secret[i] = (uint8_t)(0x80 + i);
    m.secret = secret;
    kr = crypt_keyring_open(text, strlen(text), &m, "/repo", &err);
    assert_non_null(kr);
    assert_int_equal(crypt_keyring_active(kr), 7);
    assert_true(crypt_keyring_key(kr, 1, k));
    for (int i = 0; i < 32; i++)
        want[i] = (uint8_t)i;
    assert_memory_equal(k, want, 32);
    assert_true(crypt_keyring_key(kr, 7, k));
    for (int i = 0; i < 32; i++)
        want[i] = (uint8_t)~i;
    assert_memory_equal(k, want, 32);
    crypt_keyring_free(kr);
    assert_null(crypt_keyring_open(text, strlen(text), other, "/repo", &err));
    assert_non_null(strstr(err.msg, "(wrong key)"));
    crypt_keyring_master_free(other);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scrypt_rfc7914),
        cmocka_unit_test(test_hkdf_rfc5869),
        cmocka_unit_test(test_key_file_checks),
        cmocka_unit_test(test_keyring_open_and_wrong_key),
        cmocka_unit_test(test_keyring_damaged),
        cmocka_unit_test(test_keyring_rekey),
        cmocka_unit_test(test_keyring_damaged_or_wrong_key),
        cmocka_unit_test(test_keyring_v2_known_answer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
