/*
 * test_sftp_config.c - covers src/storage/sftp/config.c: the parts of an
 * sftp:// URI and what is refused (no user, no path, a password, a bad
 * port), and an opened repository's URI, key and known hosts files (made
 * absolute; the default under $HOME), with nothing connected.
 */
#include "helpers.h"

#include <limits.h>

#include "storage/sftp/internal.h"

static void expect_uri(const char *uri, const char *user, const char *host, int port,
                       const char *path)
{
    sftp_uri u;
    const char *why;

    if (!sftp_config_parse_uri(uri, &u, &why))
        fail_msg("%s: %s", uri, why);
    assert_string_equal(u.user, user);
    assert_string_equal(u.host, host);
    assert_int_equal(u.port, port);
    assert_string_equal(u.path, path);
    sftp_config_uri_free(&u);
}

static void expect_bad_uri(const char *uri, const char *want)
{
    sftp_uri u;
    const char *why;

    if (sftp_config_parse_uri(uri, &u, &why))
        fail_msg("%s: accepted", uri);
    if (strstr(why, want) == NULL)
        fail_msg("%s: \"%s\" does not say \"%s\"", uri, why, want);
}

static void test_uri(void **state)
{
    (void)state;
    expect_uri("sftp://postgres@backup.example.com/srv/pg", "postgres", "backup.example.com", 22,
               "/srv/pg");
    expect_uri("sftp://pg@127.0.0.1:2222/srv/pg/", "pg", "127.0.0.1", 2222, "/srv/pg");
    expect_uri("sftp://pg@[::1]:2200/r", "pg", "::1", 2200, "/r");
    expect_uri("sftp://pg@[::1]/r", "pg", "::1", 22, "/r");
    expect_uri("sftp://pg@h:65535/a/b//", "pg", "h", 65535, "/a/b");
    expect_uri("sftp://pg@h//", "pg", "h", 22, "/");
}

static void test_bad_uri(void **state)
{
    (void)state;
    expect_bad_uri("s3://bucket/x", "expected sftp://");
    expect_bad_uri("sftp://host/srv", "no user");
    expect_bad_uri("sftp://@host/srv", "no user");
    expect_bad_uri("sftp://pg@host", "no path");
    expect_bad_uri("sftp://pg@host/", "no path");
    expect_bad_uri("sftp://pg@/srv", "no host");
    expect_bad_uri("sftp://pg@:22/srv", "no host");
    expect_bad_uri("sftp://pg:secret@host/srv", "password");
    expect_bad_uri("sftp://pg@host:0/srv", "port");
    expect_bad_uri("sftp://pg@host:65536/srv", "port");
    expect_bad_uri("sftp://pg@host:22x/srv", "port");
    expect_bad_uri("sftp://pg@host:/srv", "port");
    expect_bad_uri("sftp://pg@[::1/srv", "IPv6");
    expect_bad_uri("sftp://pg@[]:22/srv", "IPv6");
    expect_bad_uri("sftp://pg@[::1]x/srv", "IPv6");
}

/* A password never reaches a message: the URI is refused, named with its password masked. */
static void test_password_never_echoed(void **state)
{
    static const char *const uris[] = {"sftp://pg:hunter2@host/srv",
                                       "sftp://pg:hun@ter2@host/srv", /* '@' in the password */
                                       "sftp://pg:hun/ter2@host/srv", "sftp://pg:hunter2@host/"};

    (void)state;
    for (size_t i = 0; i < sizeof(uris) / sizeof(*uris); i++) {
        pgd_error err = {0};
        assert_null(sftp_storage_open(uris[i], NULL, &err));
        assert_true(err_is(&err, PGD_ERR_USAGE));
        if (strstr(err.msg, "ter2") != NULL)
            fail_msg("%s: the password is in \"%s\"", uris[i], err.msg);
        /* the URI is still named, its password masked */
        if (strstr(err.msg, "invalid repository \"sftp://pg:***@host/") == NULL)
            fail_msg("%s: got \"%s\"", uris[i], err.msg);
    }
}

static void test_open(void **state)
{
    sftp_options o = {.private_key_file = "keys/id", .known_hosts = "/etc/pgd/known"};
    const char *key, *known;
    pgd_error err = {0};
    char cwd[PATH_MAX], want[PATH_MAX + 16];
    storage *s;
    char *remote;

    (void)state;
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    s = sftp_storage_open("sftp://pg@127.0.0.1:2222/srv/pg/", &o, &err);
    assert_non_null(s);
    assert_string_equal(s->uri, "sftp://pg@127.0.0.1:2222/srv/pg");
    assert_true(sftp_storage_where(s, &key, &known));
    snprintf(want, sizeof(want), "%s/keys/id", cwd);
    assert_string_equal(key, want);
    assert_string_equal(known, "/etc/pgd/known");
    remote = sftp_config_remote_path((sftp_storage *)s, "wal/1/x.lz4");
    assert_string_equal(remote, "/srv/pg/wal/1/x.lz4");
    free(remote);
    remote = sftp_config_remote_path((sftp_storage *)s, "");
    assert_string_equal(remote, "/srv/pg");
    free(remote);
    /* nothing was connected: freeing it touches no server */
    assert_int_equal(((sftp_storage *)s)->sock, -1);
    storage_free(s);
}

static void test_defaults(void **state)
{
    const char *key, *known, *home = getenv("HOME");
    char *saved = home != NULL ? strdup(home) : NULL;
    pgd_error err = {0};
    storage *s;

    (void)state;
    setenv("HOME", "/home/someone", 1);
    s = sftp_storage_open("sftp://pg@h//", NULL, &err);
    assert_non_null(s);
    assert_string_equal(s->uri, "sftp://pg@h:22/");
    assert_true(sftp_storage_where(s, &key, &known));
    assert_null(key);
    assert_string_equal(known, "/home/someone/.ssh/known_hosts");
    char *remote = sftp_config_remote_path((sftp_storage *)s, "a/b");
    assert_string_equal(remote, "/a/b");
    free(remote);
    storage_free(s);
    if (saved != NULL) {
        setenv("HOME", saved, 1);
        free(saved);
    } else {
        unsetenv("HOME");
    }
}

/* storage_open chooses the driver, and storage_uri_valid refuses what is not an sftp URI. */
static void test_storage_open(void **state)
{
    const char *why, *key, *known;
    pgd_error err = {0};
    storage *s;

    (void)state;
    assert_true(storage_uri_valid("sftp://pg@h/srv", &why));
    assert_false(storage_uri_valid("sftp://h", &why));
    assert_non_null(strstr(why, "sftp://USER@HOST"));
    assert_false(storage_uri_valid("ftp://pg@h/srv", &why));
    assert_non_null(strstr(why, "sftp://"));
    s = storage_open("sftp://pg@h/srv", NULL, &err);
    assert_non_null(s);
    assert_true(sftp_storage_where(s, &key, &known));
    storage_free(s);
    /* another driver's repository is not an SFTP one */
    s = storage_open("/tmp", NULL, &err);
    assert_non_null(s);
    assert_false(sftp_storage_where(s, &key, &known));
    storage_free(s);
    assert_null(storage_open("sftp://pg@h:99999/srv", NULL, &err));
    assert_non_null(strstr(err.msg, "invalid repository \"sftp://pg@h:99999/srv\""));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uri),
        cmocka_unit_test(test_bad_uri),
        cmocka_unit_test(test_password_never_echoed),
        cmocka_unit_test(test_open),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_storage_open),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
