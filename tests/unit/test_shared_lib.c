/*
 * test_shared_lib.c - covers src/util/shared_lib.c, src/pg/pq_api.c and
 * src/storage/http/http_libs.c and src/util/digest.c: a library that is not
 * there and a function a library lacks are errors naming them; libcrypto
 * loads only when a digest is first asked for and gives known digests;
 * libpq, libcurl and libxml2 load and every slot of their tables is filled
 * (libxml2 only when asked for, not with libcurl); and pgdirect itself no
 * longer names them as libraries to load at start.
 */
#include "helpers.h"

#include <dlfcn.h>

#include "pg/pq_api.h"
#include "storage/http/http_libs.h"
#include "util/digest.h"
#include "util/shared_lib.h"

static void assert_hex(const unsigned char *d, size_t len, const char *want)
{
    char hex[2 * DIGEST_SHA256_LEN + 1];

    for (size_t i = 0; i < len; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
    assert_string_equal(hex, want);
}

/* Runs first: libpq and libcurl bring libcrypto with them. */
static void test_digest(void **state)
{
    pgd_error err = {0};
    unsigned char d[DIGEST_SHA256_LEN];

    (void)state;
    assert_null(dlopen(PGD_LIBCRYPTO_SONAME, RTLD_NOW | RTLD_NOLOAD));
    /* FIPS 180-2's "abc"; RFC 4231's test case 2; RFC 1321's "abc" */
    digest_sha256("abc", 3, d);
    assert_hex(d, DIGEST_SHA256_LEN,
               "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    assert_non_null(dlopen(PGD_LIBCRYPTO_SONAME, RTLD_NOW | RTLD_NOLOAD));
    assert_true(digest_load(&err));
    digest_hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, d);
    assert_hex(d, DIGEST_SHA256_LEN,
               "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    digest_md5("abc", 3, d);
    assert_hex(d, DIGEST_MD5_LEN, "900150983cd24fb0d6963f7d28e17f72");
}

static void test_missing_library(void **state)
{
    pgd_error err = {0};

    (void)state;
    assert_null(shared_lib_open("libpgdirect-none.so.9", &err));
    assert_true(err.set);
    assert_non_null(
        strstr(err.msg, "could not load the shared library \"libpgdirect-none.so.9\": "));
}

static void test_missing_function(void **state)
{
    pgd_error err = {0};
    void *lib = shared_lib_open(PGD_LIBPQ_SONAME, &err);

    (void)state;
    assert_non_null(lib);
    assert_non_null(shared_lib_symbol(lib, PGD_LIBPQ_SONAME, "PQconnectdbParams", &err));
    assert_false(err.set);
    assert_null(shared_lib_symbol(lib, PGD_LIBPQ_SONAME, "PQnoSuchFunction", &err));
    assert_true(err.set);
    assert_non_null(
        strstr(err.msg, "\"" PGD_LIBPQ_SONAME "\" has no function \"PQnoSuchFunction\""));
}

static void test_pq_api(void **state)
{
    pgd_error err = {0};
    const void *const *slot = (const void *const *)&pq_api;

    (void)state;
    assert_true(pq_api_load(&err));
    assert_true(pq_api_load(&err)); /* once per process; again is a no-op */
    for (size_t i = 0; i < sizeof(pq_api) / sizeof(void *); i++)
        assert_non_null(slot[i]);
    /* a call through the table: libpq's own answer for a connection that is not there */
    assert_int_equal(PQstatus(NULL), CONNECTION_BAD);
}

static void test_http_libs(void **state)
{
    pgd_error err = {0};
    const void *const *slot = (const void *const *)&http_libs;

    (void)state;
    assert_true(http_libs_load(&err));
    /* libcurl alone: libxml2 waits for the first answer to parse */
    assert_non_null(curl_easy_perform); /* the slots, by their usual names (http_libs.h) */
    assert_null(xmlReadMemory);
    assert_null(dlopen(PGD_LIBXML2_SONAME, RTLD_NOW | RTLD_NOLOAD));
    assert_true(http_libs_load_xml(&err));
    assert_true(http_libs_load_xml(&err)); /* once per process; again is a no-op */
    assert_non_null(dlopen(PGD_LIBXML2_SONAME, RTLD_NOW | RTLD_NOLOAD));
    for (size_t i = 0; i < sizeof(http_libs) / sizeof(void *); i++)
        assert_non_null(slot[i]);
    assert_string_equal(curl_easy_strerror(CURLE_OK), "No error");
    assert_int_equal(xmlStrcmp(BAD_CAST "a", BAD_CAST "a"), 0);
}

static const char *test_binary; /* argv[0]: /proc/self/exe is valgrind's own under valgrind */

/* The libraries this test's own binary needs at start, from its dynamic section. */
static void test_not_linked(void **state)
{
    char cmd[512], line[256];
    FILE *p;
    int needed = 0;

    (void)state;
    snprintf(cmd, sizeof(cmd), "readelf -d '%s'", test_binary);
    p = popen(cmd, "r");
    assert_non_null(p);
    while (fgets(line, sizeof(line), p) != NULL) {
        if (strstr(line, "(NEEDED)") == NULL)
            continue;
        needed++;
        assert_null(strstr(line, "libpq"));
        assert_null(strstr(line, "libcurl"));
        assert_null(strstr(line, "libxml2"));
        assert_null(strstr(line, "libcrypto"));
    }
    assert_int_equal(pclose(p), 0);
    assert_true(needed > 0);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_digest),           cmocka_unit_test(test_missing_library),
        cmocka_unit_test(test_missing_function), cmocka_unit_test(test_pq_api),
        cmocka_unit_test(test_http_libs),        cmocka_unit_test(test_not_linked),
    };
    (void)argc;
    test_binary = argv[0];
    return cmocka_run_group_tests(tests, NULL, NULL);
}
