/*
 * test_sftp_session.c - covers the host key check of
 * src/storage/sftp/session.c, without a server: a key that is in the known
 * hosts file (for its host and port) is accepted; a missing file, a file
 * that is not in OpenSSH's format, an unknown host, a host known only on
 * another port, and a changed key are each refused with one line naming
 * the host and the file. A file libssh2 cannot parse at all is refused
 * the same way (it skips such lines: nothing is left that could match).
 */
#include "helpers.h"

#include "storage/sftp/internal.h"

/* the raw ssh-ed25519 public keys whose base64 the files below hold: 32 bytes of 1, of 2 */
#define KEY1_B64 "AAAAC3NzaC1lZDI1NTE5AAAAIAEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEB"
#define KEY2_B64 "AAAAC3NzaC1lZDI1NTE5AAAAIAICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIC"

typedef struct fixture {
    char dir[64];
    char file[128];
    LIBSSH2_SESSION *session;
    char key1[51], key2[51];
} fixture;

static void make_key(char *out, unsigned char fill)
{
    static const unsigned char head[] = {0,   0,   0,   11,  's', 's', 'h', '-', 'e', 'd',
                                         '2', '5', '5', '1', '9', 0,   0,   0,   32};

    memcpy(out, head, sizeof(head));
    memset(out + sizeof(head), fill, 32);
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    pgd_error err = {0};

    snprintf(f->dir, sizeof(f->dir), "/tmp/pgd-sftp-test.XXXXXX");
    if (mkdtemp(f->dir) == NULL)
        return -1;
    snprintf(f->file, sizeof(f->file), "%s/known_hosts", f->dir);
    if (!sftp_libs_load(&err))
        fail_msg("%s", err.msg);
    f->session = libssh2_session_init_ex(NULL, NULL, NULL, NULL);
    assert_non_null(f->session);
    make_key(f->key1, 1);
    make_key(f->key2, 2);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;

    libssh2_session_free(f->session);
    unlink(f->file);
    rmdir(f->dir);
    free(f);
    return 0;
}

static void write_file(const fixture *f, const char *text)
{
    FILE *fp = fopen(f->file, "w");

    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

static bool check(fixture *f, const char *host, int port, const char *key, pgd_error *err)
{
    return sftp_session_check_host_key(f->session, host, port, f->file, key, 51,
                                       LIBSSH2_HOSTKEY_TYPE_ED25519, err);
}

static void expect_refused(fixture *f, const char *host, int port, const char *key,
                           const char *want)
{
    pgd_error err = {0};

    assert_false(check(f, host, port, key, &err));
    if (strstr(err.msg, want) == NULL || strstr(err.msg, f->file) == NULL ||
        strstr(err.msg, host) == NULL || strchr(err.msg, '\n') != NULL)
        fail_msg("\"%s\" does not say \"%s\", the host and the file on one line", err.msg, want);
}

static void test_known_key_accepted(void **state)
{
    fixture *f = *state;
    pgd_error err = {0};

    write_file(f, "# a comment\n"
                  "other.example ssh-ed25519 " KEY2_B64 "\n"
                  "[127.0.0.1]:2222 ssh-ed25519 " KEY1_B64 "\n"
                  "backup.example ssh-ed25519 " KEY1_B64 "\n");
    if (!check(f, "127.0.0.1", 2222, f->key1, &err))
        fail_msg("%s", err.msg);
    if (!check(f, "backup.example", 22, f->key1, &err))
        fail_msg("%s", err.msg);
}

static void test_unknown_host_refused(void **state)
{
    fixture *f = *state;

    write_file(f, "other.example ssh-ed25519 " KEY1_B64 "\n");
    expect_refused(f, "127.0.0.1", 2222, f->key1, "is not in known hosts file");
    /* known on port 22 only: another port is another server */
    write_file(f, "127.0.0.1 ssh-ed25519 " KEY1_B64 "\n");
    expect_refused(f, "127.0.0.1", 2222, f->key1, "is not in known hosts file");
    /* an empty file knows nobody */
    write_file(f, "");
    expect_refused(f, "127.0.0.1", 2222, f->key1, "is not in known hosts file");
}

static void test_changed_key_refused(void **state)
{
    fixture *f = *state;

    write_file(f, "[127.0.0.1]:2222 ssh-ed25519 " KEY1_B64 "\n");
    expect_refused(f, "127.0.0.1", 2222, f->key2, "does not match known hosts file");
}

static void test_missing_file_refused(void **state)
{
    fixture *f = *state;

    unlink(f->file);
    expect_refused(f, "127.0.0.1", 2222, f->key1, "could not read known hosts file");
}

static void test_garbage_refused(void **state)
{
    fixture *f = *state;

    /* libssh2 skips the lines it cannot parse: what is left knows nobody, or a wrong key */
    write_file(f, "this is not a known hosts line\n");
    expect_refused(f, "127.0.0.1", 2222, f->key1, "refusing to connect");
    write_file(f, "[127.0.0.1]:2222 ssh-ed25519 !!!not base64!!!\n");
    expect_refused(f, "127.0.0.1", 2222, f->key1, "refusing to connect");
}

static void test_unsupported_key_type_refused(void **state)
{
    fixture *f = *state;
    pgd_error err = {0};

    write_file(f, "[127.0.0.1]:2222 ssh-ed25519 " KEY1_B64 "\n");
    assert_false(sftp_session_check_host_key(f->session, "127.0.0.1", 2222, f->file, f->key1, 51,
                                             LIBSSH2_HOSTKEY_TYPE_UNKNOWN, &err));
    assert_non_null(strstr(err.msg, "unsupported key type"));
    err_clear(&err);
    /* no key at all (the handshake gave none) is no match either */
    assert_false(sftp_session_check_host_key(f->session, "127.0.0.1", 2222, f->file, NULL, 0,
                                             LIBSSH2_HOSTKEY_TYPE_ED25519, &err));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_known_key_accepted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_host_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_changed_key_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_file_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_garbage_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsupported_key_type_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
