/*
 * test_crypt_storage.c - covers src/storage/crypt/storage.c, the filter over
 * a local repository: the first writer with a key makes an empty repository
 * encrypted; what is stored holds no plaintext (and, as a positive control,
 * the same object written without the filter does); listings give plaintext
 * sizes and hide the keyring; two objects swapped are each refused; the
 * refusals (no key for an encrypted repository, a wrong key, a key for a
 * repository holding unencrypted objects); rotation; and the keyring or
 * its marker deleted by hand.
 */
#include "helpers.h"

#include "storage/crypt/keyring.h"
#include "storage/crypt/storage.h"

#define MARKER "pgdirect-marker-string-0123456789"

static char *test_crypt_storage_key(const char *dir, const char *name, uint8_t seed)
{
    char *path;
    uint8_t k[32];
    int fd;

    for (int i = 0; i < 32; i++)
        k[i] = (uint8_t)(i * seed + 1);
    assert_true(asprintf(&path, "%s/%s", dir, name) > 0);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, k, 32), 32);
    close(fd);
    return path;
}

static bool test_crypt_storage_file_has(const char *path, const char *needle)
{
    FILE *f = fopen(path, "rb");
    char buf[65536];
    size_t n;

    assert_non_null(f);
    n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    return memmem(buf, n, needle, strlen(needle)) != NULL;
}

typedef struct test_crypt_storage_seen {
    bool keyring;
    uint64_t size_a;
} test_crypt_storage_seen;

static bool test_crypt_storage_list_cb(void *arg, const char *name, uint64_t size, bool is_dir,
                                       pgd_error *err)
{
    test_crypt_storage_seen *s = arg;

    (void)is_dir;
    (void)err;
    if (strcmp(name, CRYPT_KEYRING_NAME) == 0)
        s->keyring = true;
    if (strcmp(name, "a") == 0)
        s->size_a = size;
    return true;
}

static bool test_crypt_storage_count_cb(void *arg, const char *name, uint64_t size, bool is_dir,
                                        pgd_error *err)
{
    (void)name;
    (void)size;
    (void)is_dir;
    (void)err;
    (*(size_t *)arg)++;
    return true;
}

static void test_crypt_storage_all(void **state)
{
    char *keys = test_tmpdir(), *repo = test_tmpdir(), *plain_repo = test_tmpdir();
    char *k1 = test_crypt_storage_key(keys, "k1", 3), *k2 = test_crypt_storage_key(keys, "k2", 5);
    char path[4096], path2[4096], *data;
    size_t len, nkeys = 0;
    bool missing;
    pgd_error err = {0};
    storage *s;
    test_crypt_storage_seen seen = {0};

    (void)state;
    /* a key, an empty repository, a command that only reads: nothing is made */
    s = crypt_storage_open(storage_fs_new(repo), k1, 0, &err);
    assert_non_null(s);
    assert_false(crypt_storage_is_encrypted(s));
    storage_free(s);
    snprintf(path, sizeof(path), "%s/%s", repo, CRYPT_KEYRING_NAME);
    assert_int_not_equal(access(path, F_OK), 0);

    /* the first writer makes it encrypted */
    s = crypt_storage_open(storage_fs_new(repo), k1, CRYPT_STORAGE_CREATE, &err);
    assert_non_null(s);
    assert_true(crypt_storage_is_encrypted(s));
    assert_int_equal(access(path, F_OK), 0);
    assert_true(storage_put(s, "a", MARKER, strlen(MARKER), 0, &err));
    assert_true(storage_put(s, "b", MARKER "-b", strlen(MARKER) + 2, 0, &err));
    assert_true(storage_get(s, "a", &data, &len, &missing, &err));
    assert_int_equal(len, strlen(MARKER));
    assert_memory_equal(data, MARKER, len);
    free(data);
    /* listed: plaintext sizes, and no keyring */
    assert_true(storage_list(s, "", test_crypt_storage_list_cb, &seen, &err));
    assert_false(seen.keyring);
    assert_int_equal(seen.size_a, strlen(MARKER));
    /* the keyring is neither written nor removed through the filter */
    assert_false(storage_put(s, CRYPT_KEYRING_NAME, "x", 1, 0, &err));
    err_clear(&err);
    assert_false(storage_remove(s, CRYPT_KEYRING_NAME, &err));
    err_clear(&err);
    storage_free(s);
    /* no plaintext in the stored object; the positive control: stored unencrypted, it is there */
    snprintf(path, sizeof(path), "%s/a", repo);
    assert_false(test_crypt_storage_file_has(path, MARKER));
    s = storage_fs_new(plain_repo);
    assert_true(storage_put(s, "a", MARKER, strlen(MARKER), 0, &err));
    storage_free(s);
    snprintf(path2, sizeof(path2), "%s/a", plain_repo);
    assert_true(test_crypt_storage_file_has(path2, MARKER));

    /* two objects swapped in the repository: each is refused as damaged */
    snprintf(path2, sizeof(path2), "%s/b", repo);
    assert_int_equal(rename(path, "/tmp/pgd-unit-swap"), 0);
    assert_int_equal(rename(path2, path), 0);
    assert_int_equal(rename("/tmp/pgd-unit-swap", path2), 0);
    s = crypt_storage_open(storage_fs_new(repo), k1, 0, &err);
    assert_non_null(s);
    assert_false(storage_get(s, "a", &data, &len, &missing, &err));
    assert_true(err_is(&err, PGD_ERR_DAMAGED));
    assert_non_null(strstr(err.msg, "object \"a\""));
    err_clear(&err);
    storage_free(s);

    /* no key, a command that writes (backup, check): refused at once, saying what is needed */
    assert_null(crypt_storage_open(storage_fs_new(repo), NULL, CRYPT_STORAGE_CREATE, &err));
    assert_non_null(strstr(err.msg, "is encrypted: an encryption key file is needed"));
    err_clear(&err);
    /*
     * no key, a reader (list, verify, restore, delete...): no request of its own; the first
     * object read is refused, a listing that finds nothing and a removal look for the keyring
     */
    s = crypt_storage_open(storage_fs_new(repo), NULL, 0, &err);
    assert_non_null(s);
    assert_false(storage_get(s, "b", &data, &len, &missing, &err));
    assert_non_null(strstr(err.msg, "is encrypted: an encryption key file is needed"));
    err_clear(&err);
    assert_false(storage_list(s, "backups", test_crypt_storage_count_cb, &nkeys, &err));
    assert_non_null(strstr(err.msg, "is encrypted: an encryption key file is needed"));
    err_clear(&err);
    storage_free(s);
    s = crypt_storage_open(storage_fs_new(repo), NULL, 0, &err);
    assert_non_null(s);
    assert_false(storage_remove(s, "b", &err));
    assert_non_null(strstr(err.msg, "is encrypted: an encryption key file is needed"));
    err_clear(&err);
    snprintf(path2, sizeof(path2), "%s/b", repo);
    assert_int_equal(access(path2, F_OK), 0);
    storage_free(s);
    /* positive control: in an unencrypted repository, the same listing and removal work */
    s = crypt_storage_open(storage_fs_new(plain_repo), NULL, 0, &err);
    assert_non_null(s);
    nkeys = 0;
    assert_true(storage_list(s, "backups", test_crypt_storage_count_cb, &nkeys, &err));
    assert_int_equal(nkeys, 0);
    assert_true(storage_put(s, "gone", "x", 1, 0, &err));
    assert_true(storage_remove(s, "gone", &err));
    storage_free(s);
    /* no key, no probe (wal-fetch): the first object read says it, and nothing of it is given */
    s = crypt_storage_open(storage_fs_new(repo), NULL, CRYPT_STORAGE_NO_PROBE, &err);
    assert_non_null(s);
    assert_false(storage_get(s, "a", &data, &len, &missing, &err));
    assert_non_null(strstr(err.msg, "is encrypted: an encryption key file is needed"));
    assert_non_null(strstr(err.msg, "object \"a\""));
    err_clear(&err);
    /* and the first write looks for the keyring: nothing unencrypted lands in the repository */
    assert_false(storage_put(s, "plain", "x", 1, 0, &err));
    assert_non_null(strstr(err.msg, "is encrypted: an encryption key file is needed"));
    err_clear(&err);
    snprintf(path2, sizeof(path2), "%s/plain", repo);
    assert_int_not_equal(access(path2, F_OK), 0);
    storage_free(s);
    /* positive control: the same guard reads an unencrypted object as it is, short ones too */
    s = crypt_storage_open(storage_fs_new(plain_repo), NULL, CRYPT_STORAGE_NO_PROBE, &err);
    assert_non_null(s);
    assert_true(storage_get(s, "a", &data, &len, &missing, &err));
    assert_int_equal(len, strlen(MARKER));
    assert_memory_equal(data, MARKER, len);
    free(data);
    assert_true(storage_put(s, "short", "abc", 3, 0, &err));
    assert_true(storage_get(s, "short", &data, &len, &missing, &err));
    assert_int_equal(len, 3);
    assert_memory_equal(data, "abc", 3);
    free(data);
    assert_true(storage_put(s, "empty", "", 0, 0, &err));
    assert_true(storage_get(s, "empty", &data, &len, &missing, &err));
    assert_int_equal(len, 0);
    free(data);
    storage_free(s);
    /* a wrong key */
    assert_null(crypt_storage_open(storage_fs_new(repo), k2, 0, &err));
    assert_non_null(strstr(err.msg, "does not open repository"));
    assert_non_null(strstr(err.msg, repo));
    err_clear(&err);
    /* a key for a repository that holds unencrypted objects */
    assert_null(crypt_storage_open(storage_fs_new(plain_repo), k1, CRYPT_STORAGE_CREATE, &err));
    assert_non_null(strstr(err.msg, "holds unencrypted backups or WAL"));
    err_clear(&err);
    snprintf(path, sizeof(path), "%s/%s", plain_repo, CRYPT_KEYRING_NAME);
    assert_int_not_equal(access(path, F_OK), 0);

    /* rotation: the new key opens, the old one no more; objects written before still read */
    s = crypt_storage_open(storage_fs_new(repo), k1, CRYPT_STORAGE_CREATE, &err);
    assert_non_null(s);
    assert_true(storage_put(s, "c", MARKER, strlen(MARKER), 0, &err));
    storage_free(s);
    s = storage_fs_new(repo);
    assert_true(crypt_storage_rotate(s, k1, k2, &nkeys, &err));
    assert_int_equal(nkeys, 2);
    /* a second rotation from k1: k1 opens nothing any more */
    assert_false(crypt_storage_rotate(s, k1, k2, &nkeys, &err));
    assert_non_null(strstr(err.msg, "wrong key"));
    err_clear(&err);
    storage_free(s);
    assert_null(crypt_storage_open(storage_fs_new(repo), k1, 0, &err));
    assert_non_null(strstr(err.msg, "wrong key"));
    err_clear(&err);
    s = crypt_storage_open(storage_fs_new(repo), k2, CRYPT_STORAGE_CREATE, &err);
    assert_non_null(s);
    assert_true(storage_get(s, "c", &data, &len, &missing, &err));
    assert_memory_equal(data, MARKER, strlen(MARKER));
    free(data);
    assert_true(storage_put(s, "d", MARKER, strlen(MARKER), 0, &err));
    assert_true(storage_get(s, "d", &data, &len, &missing, &err));
    free(data);
    storage_free(s);

    rm_rf(keys);
    rm_rf(repo);
    rm_rf(plain_repo);
    free(k1);
    free(k2);
}

/*
 * The keyring deleted by hand: the marker (encryption.pgdirect) still
 * refuses a keyless write, and with the key the open says the keyring is
 * missing (PGD_ERR_DAMAGED); the marker deleted, the keyring refuses the
 * keyless write, and a writer with the key puts the marker back. Positive
 * control: a keyless write into an unencrypted repository works. And
 * without the key, an object an encrypted repository lacks is not
 * "missing" (wal-fetch's "not archived") but an error: the key is needed.
 */
static void test_crypt_storage_keyring_removed(void **state)
{
    char *keys = test_tmpdir(), *repo = test_tmpdir(), *plain_repo = test_tmpdir();
    char *k1 = test_crypt_storage_key(keys, "k1", 3);
    char kr[4096], saved[4096], marker[4096], path[4096], *data = NULL;
    size_t len;
    bool missing;
    pgd_error err = {0};
    storage *s;

    (void)state;
    snprintf(kr, sizeof(kr), "%s/%s", repo, CRYPT_KEYRING_NAME);
    snprintf(saved, sizeof(saved), "%s/keyring.saved", keys);
    snprintf(marker, sizeof(marker), "%s/encryption.pgdirect", repo);
    s = crypt_storage_open(storage_fs_new(repo), k1, CRYPT_STORAGE_CREATE, &err);
    assert_non_null(s);
    assert_true(storage_put(s, "a", MARKER, strlen(MARKER), 0, &err));
    storage_free(s);
    assert_int_equal(access(marker, F_OK), 0);
    /* without the key, an object the encrypted repository lacks is not "missing": the key is needed
     */
    s = crypt_storage_open(storage_fs_new(repo), NULL, CRYPT_STORAGE_NO_PROBE, &err);
    assert_non_null(s);
    assert_false(storage_get(s, "nothing", &data, &len, &missing, &err));
    assert_false(missing);
    assert_non_null(strstr(err.msg, "is encrypted: an encryption key file is needed"));
    err_clear(&err);
    storage_free(s);
    /* positive control: from an unencrypted repository it is missing */
    s = crypt_storage_open(storage_fs_new(plain_repo), NULL, CRYPT_STORAGE_NO_PROBE, &err);
    assert_non_null(s);
    assert_false(storage_get(s, "nothing", &data, &len, &missing, &err));
    assert_true(missing);
    assert_false(err.set);
    storage_free(s);

    assert_int_equal(rename(kr, saved), 0);
    s = crypt_storage_open(storage_fs_new(repo), NULL, CRYPT_STORAGE_NO_PROBE, &err);
    assert_non_null(s);
    assert_false(storage_put(s, "b", "x", 1, 0, &err));
    assert_non_null(strstr(err.msg, "is encrypted: an encryption key file is needed"));
    err_clear(&err);
    storage_free(s);
    snprintf(path, sizeof(path), "%s/b", repo);
    assert_int_not_equal(access(path, F_OK), 0);
    assert_null(crypt_storage_open(storage_fs_new(repo), NULL, CRYPT_STORAGE_CREATE, &err));
    assert_non_null(strstr(err.msg, "is encrypted: an encryption key file is needed"));
    err_clear(&err);
    assert_null(crypt_storage_open(storage_fs_new(repo), k1, 0, &err));
    assert_non_null(strstr(err.msg, "keyring \"keyring.pgdirect\" of repository"));
    assert_non_null(strstr(err.msg, "is missing"));
    assert_null(strstr(err.msg, "unencrypted"));
    assert_true(err_is(&err, PGD_ERR_DAMAGED));
    err_clear(&err);
    /* nor is a new keyring made over the lost one by a writer */
    assert_null(crypt_storage_open(storage_fs_new(repo), k1, CRYPT_STORAGE_CREATE, &err));
    assert_non_null(strstr(err.msg, "is missing"));
    err_clear(&err);
    assert_int_not_equal(access(kr, F_OK), 0);

    assert_int_equal(rename(saved, kr), 0);
    assert_int_equal(unlink(marker), 0);
    s = crypt_storage_open(storage_fs_new(repo), NULL, CRYPT_STORAGE_NO_PROBE, &err);
    assert_non_null(s);
    assert_false(storage_put(s, "b", "x", 1, 0, &err));
    assert_non_null(strstr(err.msg, "is encrypted"));
    err_clear(&err);
    storage_free(s);
    /* a reader with the key does not write; a writer (backup, check) puts the marker back */
    s = crypt_storage_open(storage_fs_new(repo), k1, CRYPT_STORAGE_NO_PROBE, &err);
    assert_non_null(s);
    storage_free(s);
    assert_int_not_equal(access(marker, F_OK), 0);
    s = crypt_storage_open(storage_fs_new(repo), k1, CRYPT_STORAGE_CREATE, &err);
    assert_non_null(s);
    storage_free(s);
    assert_int_equal(access(marker, F_OK), 0);

    /* positive control: without a key, an unencrypted repository takes the write */
    s = crypt_storage_open(storage_fs_new(plain_repo), NULL, CRYPT_STORAGE_NO_PROBE, &err);
    assert_non_null(s);
    assert_true(storage_put(s, "b", "x", 1, 0, &err));
    storage_free(s);
    snprintf(path, sizeof(path), "%s/b", plain_repo);
    assert_int_equal(access(path, F_OK), 0);

    rm_rf(keys);
    rm_rf(repo);
    rm_rf(plain_repo);
    free(k1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crypt_storage_all),
        cmocka_unit_test(test_crypt_storage_keyring_removed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
