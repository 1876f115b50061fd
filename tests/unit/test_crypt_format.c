/*
 * test_crypt_format.c - covers src/storage/crypt/format.c and the
 * AES-256-GCM of src/storage/crypt/cipher.c: the published GCM vectors
 * (McGrew and Viega's GCM specification, test cases 14 and 16), the object
 * format against ciphertexts computed independently from format.h's
 * description (Python's `cryptography` HKDF and AESGCM:
 * crypt_format_vectors.py, beside this file), a round trip at the chunk
 * boundaries, and every tamper case: a flipped byte in each part, an object
 * cut at a chunk boundary and inside a chunk, a chunk dropped, two chunks
 * swapped, bytes appended, an object read under another name, an unknown
 * data key. A chunk that fails is never handed on.
 */
#include "helpers.h"

#include "storage/crypt/format.h"
#include "util/digest.h"

static void test_crypt_hex(const char *hex, uint8_t *out, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned v;
        assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
        out[i] = (uint8_t)v;
    }
}

static void test_gcm_vectors(void **state)
{
    pgd_error err = {0};
    uint8_t key[32], iv[12], p[60], aad[20], expect[76], out[76], back[60];
    uint8_t zero[32] = {0}, zero_iv[12] = {0}, z16[16] = {0}, e14[32], o14[32];
    crypt_cipher *c;
    bool authentic;

    (void)state;
    /* test case 16: 256-bit key, 60-byte plaintext, 20 bytes of associated data */
    test_crypt_hex("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308", key, 32);
    test_crypt_hex("cafebabefacedbaddecaf888", iv, 12);
    test_crypt_hex("d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
                   "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39",
                   p, 60);
    test_crypt_hex("feedfacedeadbeeffeedfacedeadbeefabaddad2", aad, 20);
    test_crypt_hex("522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
                   "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662"
                   "76fc6ece0f4e1768cddf8853bb2d551b",
                   expect, 76);
    c = crypt_cipher_new(key, &err);
    assert_non_null(c);
    assert_true(crypt_cipher_seal(c, iv, aad, 20, p, 60, out, &err));
    assert_memory_equal(out, expect, 76);
    assert_true(crypt_cipher_open(c, iv, aad, 20, out, 60, back, &authentic, &err));
    assert_memory_equal(back, p, 60);
    /* one flipped bit of the associated data: refused, and nothing of the plaintext kept */
    aad[0] ^= 1;
    memset(back, 0x55, sizeof(back));
    assert_false(crypt_cipher_open(c, iv, aad, 20, out, 60, back, &authentic, &err));
    assert_false(authentic);
    assert_false(err.set);
    for (size_t i = 0; i < sizeof(back); i++)
        assert_int_equal(back[i], 0);
    crypt_cipher_free(c);
    /* test case 14: all-zero key and IV, 16 zero bytes */
    test_crypt_hex("cea7403d4d606b6e074ec5d3baf39d18d0d1c8a799996bf0265b98b5d48ab919", e14, 32);
    c = crypt_cipher_new(zero, &err);
    assert_non_null(c);
    assert_true(crypt_cipher_seal(c, zero_iv, NULL, 0, z16, 16, o14, &err));
    assert_memory_equal(o14, e14, 32);
    crypt_cipher_free(c);
}

#define TEST_NAME "backups/20261206T061000F/part_0001.tar.lz4"

static uint8_t test_crypt_key[32];

static bool test_crypt_key_fn(void *arg, uint32_t id, uint8_t key[CRYPT_KEY_LEN])
{
    (void)arg;
    if (id != 7 && id != 1)
        return false;
    memcpy(key, test_crypt_key, CRYPT_KEY_LEN);
    return true;
}

static void test_crypt_encrypt(mem_out *m, uint32_t id, const char *name, const uint8_t *p,
                               size_t len, bool fixed)
{
    uint8_t salt[CRYPT_FORMAT_SALT_LEN];
    pgd_error err = {0};
    out_stream *out;

    for (int i = 0; i < 32; i++) {
        test_crypt_key[i] = (uint8_t)i;
        salt[i] = (uint8_t)(i + 1);
    }
    mem_out_init(m);
    out = crypt_format_out_new(&m->base, test_crypt_key, id, name, fixed ? salt : NULL, &err);
    assert_non_null(out);
    /* written in uneven pieces: the chunks do not depend on how the writes fall */
    for (size_t off = 0; off < len;) {
        size_t n = len - off < 1000 ? len - off : 1000 + off % 777;
        if (n > len - off)
            n = len - off;
        assert_true(out_write(out, p + off, n, &err));
        off += n;
    }
    assert_true(out_close(out, &err));
    assert_true(m->closed);
    assert_int_equal(m->len, crypt_format_stored_size(len));
}

/* Decrypt: true when the whole object authenticated; *got: plaintext bytes handed on. */
static bool test_crypt_decrypt(const void *data, size_t len, const char *name, uint8_t *out,
                               size_t cap, size_t *got, pgd_error *err)
{
    in_stream *in =
        crypt_format_in_new(mem_in_new(data, len), test_crypt_key_fn, NULL, name, "/repo");
    bool ok = true;

    *got = 0;
    for (;;) {
        size_t n;
        uint8_t buf[5000];
        if (!in_read(in, buf, sizeof(buf), &n, err)) {
            ok = false;
            break;
        }
        if (n == 0)
            break;
        assert_true(*got + n <= cap);
        memcpy(out + *got, buf, n);
        *got += n;
    }
    in_close(in);
    return ok;
}

static void test_format_known_answer(void **state)
{
    static const char *pt = "the quick brown fox jumps over the lazy dog";
    uint8_t expect[103], sha[32], expect_sha[32], back[64];
    mem_out m;
    pgd_error err = {0};
    size_t got, big = 2 * CRYPT_FORMAT_CHUNK + 5;
    uint8_t *p = malloc(big), *b = malloc(big);

    (void)state;
    test_crypt_hex("5047444352595032000000010102030405060708090a0b0c0d0e0f101112131415161718"
                   "191a1b1c1d1e1f200674cd23156a0891fc864b9e9d4d4378f14a72f1e89767238bfa1d10a9"
                   "c3a73a6da7204ba4ee8d5c39a659182250b07c3bb38bfdafb9a267971bb1",
                   expect, 103);
    test_crypt_encrypt(&m, 1, "wal/0000000100000000/000000010000000000000001.lz4",
                       (const uint8_t *)pt, strlen(pt), true);
    assert_int_equal(m.len, 103);
    assert_memory_equal(m.data, expect, 103);
    assert_true(test_crypt_decrypt(m.data, m.len,
                                   "wal/0000000100000000/000000010000000000000001.lz4", back,
                                   sizeof(back), &got, &err));
    assert_int_equal(got, strlen(pt));
    assert_memory_equal(back, pt, got);
    mem_out_free(&m);

    /* three chunks, data key 7: the SHA-256 of the object Python's AESGCM wrote */
    for (size_t i = 0; i < big; i++)
        p[i] = (uint8_t)(i * 7 + 3);
    test_crypt_encrypt(&m, 7, TEST_NAME, p, big, true);
    assert_int_equal(m.len, 131169);
    assert_true(digest_sha256(m.data, m.len, sha));
    test_crypt_hex("34661f8c6030a0e747676b94ac176e28c7dab21e6a95ccd5b6c74d2afccc1db9", expect_sha,
                   32);
    assert_memory_equal(sha, expect_sha, 32);
    assert_true(test_crypt_decrypt(m.data, m.len, TEST_NAME, b, big, &got, &err));
    assert_int_equal(got, big);
    assert_memory_equal(b, p, big);
    mem_out_free(&m);
    free(p);
    free(b);
}

static void test_format_round_trip_and_sizes(void **state)
{
    size_t sizes[] = {0,
                      1,
                      CRYPT_FORMAT_CHUNK - 1,
                      CRYPT_FORMAT_CHUNK,
                      CRYPT_FORMAT_CHUNK + 1,
                      3 * CRYPT_FORMAT_CHUNK};
    uint8_t *p = malloc(3 * CRYPT_FORMAT_CHUNK + 1), *b = malloc(3 * CRYPT_FORMAT_CHUNK + 1);
    mem_out m1, m2;
    uint64_t plain;

    (void)state;
    for (size_t i = 0; i < 3 * CRYPT_FORMAT_CHUNK + 1; i++)
        p[i] = (uint8_t)(i ^ (i >> 8));
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        pgd_error err = {0};
        size_t got;
        test_crypt_encrypt(&m1, 1, TEST_NAME, p, sizes[k], false);
        test_crypt_encrypt(&m2, 1, TEST_NAME, p, sizes[k], false);
        /* a new random salt per object: the same plaintext never gives the same bytes */
        assert_memory_not_equal(m1.data + 12, m2.data + 12, CRYPT_FORMAT_SALT_LEN);
        if (sizes[k] > 0)
            assert_memory_not_equal(m1.data + CRYPT_FORMAT_HEADER_LEN,
                                    m2.data + CRYPT_FORMAT_HEADER_LEN, sizes[k]);
        assert_true(crypt_format_plain_size(m1.len, &plain));
        assert_int_equal(plain, sizes[k]);
        assert_true(test_crypt_decrypt(m1.data, m1.len, TEST_NAME, b, sizes[k] + 1, &got, &err));
        assert_int_equal(got, sizes[k]);
        assert_memory_equal(b, p, got);
        mem_out_free(&m1);
        mem_out_free(&m2);
    }
    /* sizes no object can have */
    assert_false(crypt_format_plain_size(0, &plain));
    assert_false(crypt_format_plain_size(CRYPT_FORMAT_HEADER_LEN + CRYPT_TAG_LEN - 1, &plain));
    assert_false(crypt_format_plain_size(
        CRYPT_FORMAT_HEADER_LEN + CRYPT_TAG_LEN + CRYPT_FORMAT_CHUNK, &plain));
    free(p);
    free(b);
}

/* Expect damage; the bytes handed on are exactly the authenticated chunks before it. */
static void test_crypt_expect_damage(const uint8_t *data, size_t len, const char *name,
                                     const uint8_t *p, size_t handed, const char *what)
{
    pgd_error err = {0};
    size_t got;
    uint8_t *b = malloc(4 * CRYPT_FORMAT_CHUNK);

    assert_false(test_crypt_decrypt(data, len, name, b, 4 * CRYPT_FORMAT_CHUNK, &got, &err));
    assert_true(err_is(&err, PGD_ERR_DAMAGED));
    if (strstr(err.msg, what) == NULL)
        fail_msg("\"%s\" not in \"%s\"", what, err.msg);
    assert_non_null(strstr(err.msg, "/repo"));
    assert_int_equal(got, handed);
    if (handed > 0)
        assert_memory_equal(b, p, handed);
    free(b);
}

static void test_format_tampering(void **state)
{
    const size_t C = CRYPT_FORMAT_CHUNK, S = CRYPT_FORMAT_CHUNK + CRYPT_TAG_LEN,
                 H = CRYPT_FORMAT_HEADER_LEN, len = 3 * C + 100;
    uint8_t *p = malloc(len), *t;
    mem_out m;
    size_t n;

    (void)state;
    for (size_t i = 0; i < len; i++)
        p[i] = (uint8_t)(i * 13);
    test_crypt_encrypt(&m, 1, TEST_NAME, p, len, false);
    n = m.len;
    t = malloc(n + 10);

    /* a flipped byte: in the magic, the key id, the salt, each chunk's body and a tag */
    size_t flips[] = {0, 11, 40, H + 5, H + S + 7, H + 2 * S + C + 3, n - 1};
    size_t handed[] = {0, 0, 0, 0, C, 2 * C, 3 * C};
    for (size_t k = 0; k < sizeof(flips) / sizeof(flips[0]); k++) {
        memcpy(t, m.data, n);
        t[flips[k]] ^= 0x20;
        test_crypt_expect_damage(t, n, TEST_NAME, p, handed[k],
                                 k == 0   ? "no encryption header"
                                 : k == 1 ? "data key"
                                          : "failed authentication");
    }
    /* cut at a chunk boundary (the last full chunk is never the last one) */
    test_crypt_expect_damage((uint8_t *)m.data, H + 2 * S, TEST_NAME, p, 2 * C,
                             "ends before its last chunk");
    /* cut inside a chunk: authenticated as the last one, and it was not */
    test_crypt_expect_damage((uint8_t *)m.data, H + S + 100, TEST_NAME, p, C,
                             "chunk 1 failed authentication");
    /* cut inside the header */
    test_crypt_expect_damage((uint8_t *)m.data, 10, TEST_NAME, p, 0, "no encryption header");
    /* chunk 1 dropped */
    memcpy(t, m.data, H + S);
    memcpy(t + H + S, m.data + H + 2 * S, n - H - 2 * S);
    test_crypt_expect_damage(t, n - S, TEST_NAME, p, C, "chunk 1 failed authentication");
    /* chunks 0 and 1 swapped */
    memcpy(t, m.data, n);
    memcpy(t + H, m.data + H + S, S);
    memcpy(t + H + S, m.data + H, S);
    test_crypt_expect_damage(t, n, TEST_NAME, p, 0, "chunk 0 failed authentication");
    /* bytes appended after the last chunk: the last chunk is no longer last */
    memcpy(t, m.data, n);
    memset(t + n, 0, 10);
    test_crypt_expect_damage(t, n + 10, TEST_NAME, p, 3 * C, "chunk 3 failed authentication");
    /* the object read under another name (two objects swapped in the repository) */
    test_crypt_expect_damage((uint8_t *)m.data, n, "backups/20261206T061000F/part_0002.tar.lz4", p,
                             0, "chunk 0 failed authentication");
    /* an empty object */
    test_crypt_expect_damage((uint8_t *)m.data, 0, TEST_NAME, p, 0, "no encryption header");
    /* format 1's magic (a 64-bit nonce prefix under the data key): refused by name, nothing read */
    {
        pgd_error err = {0};
        size_t got;
        uint8_t *b = malloc(4 * C);
        memcpy(t, m.data, n);
        memcpy(t, "PGDCRYPT", 8);
        assert_false(test_crypt_decrypt(t, n, TEST_NAME, b, 4 * C, &got, &err));
        assert_non_null(strstr(err.msg, "is in encryption format 1 (\"PGDCRYPT\")"));
        assert_non_null(strstr(err.msg, TEST_NAME));
        assert_int_equal(got, 0);
        free(b);
    }
    free(t);
    mem_out_free(&m);
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gcm_vectors),
        cmocka_unit_test(test_format_known_answer),
        cmocka_unit_test(test_format_round_trip_and_sizes),
        cmocka_unit_test(test_format_tampering),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
