/*
 * test_digest.c - covers the failure paths of src/util/digest.c and of what
 * uses it: libcrypto loads, but its configuration (OPENSSL_CONF, set here
 * before anything loads it) activates only the "base" provider, which has no
 * digests. digest_load says so (the commands that need a digest call it
 * before their work), every digest is false with zeros, and backup_manifest, the
 * SigV4 signature and the Content-MD5 each fail with an error instead of
 * carrying zeros (a zero Manifest-Checksum would make pg_verifybackup call a
 * good backup corrupt).
 */
#include "helpers.h"

#include "repo/pg_manifest.h"
#include "storage/s3/internal.h"
#include "storage/s3/sigv4.h"
#include "util/digest.h"

static void test_digests_refused(void **state)
{
    pgd_error err = {0};
    unsigned char d[DIGEST_SHA256_LEN];
    static const unsigned char zero[DIGEST_SHA256_LEN];

    (void)state;
    /* the library is there, but makes no digest: said at load, before any work */
    assert_false(digest_load(&err));
    assert_non_null(strstr(err.msg, "loads but makes no SHA-256"));
    assert_non_null(strstr(err.msg, PGD_LIBCRYPTO_SONAME));
    memset(d, 0xAA, sizeof(d));
    assert_false(digest_sha256("abc", 3, d));
    assert_memory_equal(d, zero, DIGEST_SHA256_LEN);
    memset(d, 0xAA, sizeof(d));
    assert_false(digest_hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, d));
    assert_memory_equal(d, zero, DIGEST_SHA256_LEN);
    assert_false(digest_md5("abc", 3, d));
}

static void test_manifest_fails(void **state)
{
    manifest m;
    backup_info bi = {.stop_time = 1700000100, .timeline = 1, .pg_version_num = 160004};
    manifest_file data = {.path = "base/5/16384", .size = 8192, .mode = 0600, .partition = 1};
    pgd_error err = {0};
    char *out = NULL;

    (void)state;
    manifest_init(&m);
    m.backup_label = strdup("START WAL LOCATION: 0/2000028 (file 000000010000000000000002)\n");
    m.tablespace_map = strdup("");
    manifest_add_file(&m, &data);
    bi.start_lsn = 0x2000028;
    bi.stop_lsn = 0x2000138;
    assert_false(pg_manifest_build(&m, &bi, &out, &err));
    assert_null(out);
    assert_non_null(strstr(err.msg, "could not compute the SHA-256 of backup_manifest"));
    assert_non_null(strstr(err.msg, "loads but makes no SHA-256"));
    manifest_free(&m);
}

static void test_signatures_fail(void **state)
{
    static const sigv4_credentials cred = {"AKIDEXAMPLE", "secret", "us-east-1", "s3"};
    sigv4_header h[] = {{"host", "127.0.0.1"}, {"x-amz-date", "20261203T000000Z"}};
    sigv4_request r = {"GET", "/bucket/key", "", h, 2, "UNSIGNED-PAYLOAD", true};
    char sig[SIGV4_HEX_LEN + 1], hex[SIGV4_HEX_LEN + 1], md5[S3_MD5_B64_LEN];

    (void)state;
    assert_false(sigv4_sha256_hex("abc", 3, hex));
    assert_false(sigv4_signature(&cred, "20261203T000000Z", "string to sign", sig));
    assert_string_equal(sig, "");
    assert_null(sigv4_string_to_sign("20261203T000000Z", &cred, "request"));
    assert_null(sigv4_authorization(&r, &cred, "20261203T000000Z"));
    assert_false(s3_request_md5_base64("abc", 3, md5));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_digests_refused),
        cmocka_unit_test(test_manifest_fails),
        cmocka_unit_test(test_signatures_fail),
    };
    char conf[] = "/tmp/pgd-test-openssl-XXXXXX";
    int fd = mkstemp(conf), rc;
    static const char text[] = "openssl_conf = openssl_init\n"
                               "[openssl_init]\n"
                               "providers = provider_sect\n"
                               "[provider_sect]\n"
                               "base = base_sect\n"
                               "[base_sect]\n"
                               "activate = 1\n";

    if (fd < 0 || write(fd, text, sizeof(text) - 1) != (ssize_t)(sizeof(text) - 1) ||
        close(fd) != 0)
        return 1;
    setenv("OPENSSL_CONF", conf, 1); /* before the first digest loads libcrypto */
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    unlink(conf);
    return rc;
}
