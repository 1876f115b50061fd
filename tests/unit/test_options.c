/* test_options.c - covers src/util/options.c: the three sources, their order, validation. */
#include "helpers.h"

#include "util/options.h"

static bool parse(pgd_options *o, unsigned cmd, const char *config, int argc, char **argv,
                  pgd_error *err)
{
    char *full[32];
    int n = 0;
    char cfg[8400];

    snprintf(cfg, sizeof(cfg), "--config=%s", config);
    full[n++] = cfg;
    for (int i = 0; i < argc; i++)
        full[n++] = argv[i];
    return options_parse(o, cmd, n, full, err);
}

static void test_cli_forms_and_positionals(void **state)
{
    pgd_options o;
    pgd_error err = {0};
    char *argv[] = {"LATEST",         "--target-dir",     "/srv/x", "--concurrency=4",
                    "--progress=off", "--tablespace-map", "/a=/b",  "--tablespace-map=/c=/d"};
    long c;

    (void)state;
    assert_true(parse(&o, CMD_RESTORE, "/dev/null", 8, argv, &err));
    assert_int_equal(o.nargs, 1);
    assert_string_equal(o.args[0], "LATEST");
    assert_string_equal(opt_str(&o, OPT_TARGET_DIR), "/srv/x");
    assert_true(opt_int(&o, OPT_CONCURRENCY, 1, 256, &c, &err));
    assert_int_equal(c, 4);
    assert_int_equal(o.v[OPT_TABLESPACE_MAP].nvalues, 2);
    assert_string_equal(o.v[OPT_TABLESPACE_MAP].values[1], "/c=/d");
    options_free(&o);
}

static void test_unknown_option_and_wrong_command(void **state)
{
    pgd_options o;
    pgd_error err = {0};
    char *bad[] = {"--no-such-thing"};
    char *other[] = {"--target-dir=/x"}; /* a restore option given to backup */
    char *dash[] = {"-x"};

    (void)state;
    assert_false(parse(&o, CMD_BACKUP, "/dev/null", 1, bad, &err));
    assert_string_equal(err.msg, "unknown option \"--no-such-thing\" (see --help)");
    options_free(&o);
    err_clear(&err);
    assert_false(parse(&o, CMD_BACKUP, "/dev/null", 1, other, &err));
    assert_non_null(strstr(err.msg, "--target-dir"));
    options_free(&o);
    err_clear(&err);
    assert_false(parse(&o, CMD_BACKUP, "/dev/null", 1, dash, &err));
    options_free(&o);
}

static void test_precedence_cli_env_config_default(void **state)
{
    char *dir = test_tmpdir();
    char cfg[4200];
    pgd_options o;
    pgd_error err = {0};
    char *argv_cli[] = {"--block-count=64"};
    long v;

    (void)state;
    snprintf(cfg, sizeof(cfg), "%s/pgdirect.conf", dir);
    {
        const char *text = "# comment\n[global]\nblock-count = 32\nconcurrency = 3\n"
                           "target-dir = /ignored/for/backup\n";
        write_test_file(cfg, text, strlen(text));
    }
    setenv("PGDIRECT_BLOCK_COUNT", "128", 1);
    assert_true(parse(&o, CMD_BACKUP, cfg, 1, argv_cli, &err));
    assert_true(opt_int(&o, OPT_BLOCK_COUNT, 1, 16384, &v, &err));
    assert_int_equal(v, 64); /* command line wins */
    assert_true(opt_int(&o, OPT_CONCURRENCY, 1, 256, &v, &err));
    assert_int_equal(v, 3);                                   /* config file */
    assert_string_equal(opt_str(&o, OPT_COMPRESSION), "lz4"); /* default */
    options_free(&o);

    assert_true(parse(&o, CMD_BACKUP, cfg, 0, NULL, &err));
    assert_true(opt_int(&o, OPT_BLOCK_COUNT, 1, 16384, &v, &err));
    assert_int_equal(v, 128); /* environment beats config */
    options_free(&o);
    unsetenv("PGDIRECT_BLOCK_COUNT");
    rm_rf(dir);
}

static void test_config_errors_name_file_and_line(void **state)
{
    char *dir = test_tmpdir();
    char cfg[4200];
    pgd_options o;
    pgd_error err = {0};

    (void)state;
    snprintf(cfg, sizeof(cfg), "%s/bad.conf", dir);
    write_test_file(cfg, "repo = /x\nblok-count = 3\n", strlen("repo = /x\nblok-count = 3\n"));
    assert_false(parse(&o, CMD_BACKUP, cfg, 0, NULL, &err));
    assert_non_null(strstr(err.msg, "line 2"));
    assert_non_null(strstr(err.msg, "blok-count"));
    options_free(&o);
    err_clear(&err);
    assert_false(parse(&o, CMD_BACKUP, "/nonexistent/pgdirect.conf", 0, NULL, &err));
    assert_non_null(strstr(err.msg, "/nonexistent/pgdirect.conf"));
    options_free(&o);
    err_clear(&err);
    /* a file that cannot be read is not an empty one */
    assert_false(parse(&o, CMD_BACKUP, dir, 0, NULL, &err));
    assert_non_null(strstr(err.msg, "could not read config file"));
    assert_non_null(strstr(err.msg, "Is a directory"));
    options_free(&o);
    err_clear(&err);
    /* a line longer than the reader's buffer is refused, not read as two lines */
    {
        size_t n = 9000;
        char *text = malloc(n + 40);

        assert_non_null(text);
        strcpy(text, "repo = /x\nrepo = /");
        memset(text + strlen(text), 'a', n);
        strcpy(text + strlen("repo = /x\nrepo = /") + n, "\nconcurrency = 2\n");
        write_test_file(cfg, text, strlen(text));
        free(text);
    }
    assert_false(parse(&o, CMD_BACKUP, cfg, 0, NULL, &err));
    assert_non_null(strstr(err.msg, "line 2: longer than 8190 bytes"));
    options_free(&o);
    rm_rf(dir);
}

static void test_invalid_values_name_the_option(void **state)
{
    pgd_options o;
    pgd_error err = {0};
    char *argv[] = {"--block-count=0", "--concurrency=abc", "--direct-io", "off"};
    long v;
    bool b;

    (void)state;
    assert_true(parse(&o, CMD_BACKUP, "/dev/null", 4, argv, &err));
    assert_false(opt_int(&o, OPT_BLOCK_COUNT, 1, 16384, &v, &err));
    assert_string_equal(err.msg, "invalid value \"0\" for option \"--block-count\": expected an "
                                 "integer from 1 to 16384");
    err_clear(&err);
    assert_false(opt_int(&o, OPT_CONCURRENCY, 1, 256, &v, &err));
    assert_non_null(strstr(err.msg, "--concurrency"));
    assert_true(opt_bool(&o, OPT_DIRECT_IO, &b, &err));
    assert_false(b); /* "--direct-io off" with a space */
    assert_int_equal(o.nargs, 0);
    options_free(&o);
}

/* " lz4", "4 ": refused from every source, naming the option and the source. */
static void test_values_with_edge_white_space_are_refused(void **state)
{
    char *dir = test_tmpdir();
    char cfg[4200];
    pgd_options o;
    pgd_error err = {0};
    char *lead[] = {"--compression", " lz4"};
    char *trail[] = {"--concurrency=4 "};
    char *inner[] = {"--label=nightly run"};

    (void)state;
    assert_false(parse(&o, CMD_BACKUP, "/dev/null", 2, lead, &err));
    assert_string_equal(err.msg, "invalid value \" lz4\" for option \"--compression\": leading "
                                 "or trailing white space");
    options_free(&o);
    err_clear(&err);
    assert_false(parse(&o, CMD_BACKUP, "/dev/null", 1, trail, &err));
    assert_non_null(strstr(err.msg, "\"--concurrency\""));
    options_free(&o);
    err_clear(&err);

    setenv("PGDIRECT_COMPRESSION", "lz4 ", 1);
    assert_false(parse(&o, CMD_BACKUP, "/dev/null", 0, NULL, &err));
    assert_string_equal(err.msg, "invalid value \"lz4 \" for option \"--compression\" (from the "
                                 "environment): leading or trailing white space");
    options_free(&o);
    err_clear(&err);
    setenv("PGDIRECT_CONCURRENCY", "\t4", 1);
    unsetenv("PGDIRECT_COMPRESSION");
    assert_false(parse(&o, CMD_BACKUP, "/dev/null", 0, NULL, &err));
    assert_non_null(strstr(err.msg, "--concurrency"));
    options_free(&o);
    err_clear(&err);
    unsetenv("PGDIRECT_CONCURRENCY");

    /* white space inside a value is the value's own; the config file's spacing is allowed */
    snprintf(cfg, sizeof(cfg), "%s/pgdirect.conf", dir);
    {
        const char *text = "compression   =   zstd  \nconcurrency=4\n";
        write_test_file(cfg, text, strlen(text));
    }
    assert_true(parse(&o, CMD_BACKUP, cfg, 1, inner, &err));
    assert_string_equal(opt_str(&o, OPT_COMPRESSION), "zstd");
    assert_string_equal(opt_str(&o, OPT_CONCURRENCY), "4");
    assert_string_equal(opt_str(&o, OPT_LABEL), "nightly run");
    options_free(&o);

    /* a malformed variable of an option the command does not have is not its business */
    setenv("PGDIRECT_TARGET_DIR", " /x", 1);
    assert_true(parse(&o, CMD_BACKUP, "/dev/null", 0, NULL, &err));
    options_free(&o);
    unsetenv("PGDIRECT_TARGET_DIR");
    rm_rf(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cli_forms_and_positionals),
        cmocka_unit_test(test_unknown_option_and_wrong_command),
        cmocka_unit_test(test_precedence_cli_env_config_default),
        cmocka_unit_test(test_config_errors_name_file_and_line),
        cmocka_unit_test(test_invalid_values_name_the_option),
        cmocka_unit_test(test_values_with_edge_white_space_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
