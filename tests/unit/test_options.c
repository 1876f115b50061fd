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
        const char *text = "# comment\nblock-count = 32\nconcurrency = 3\n"
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

/* Parse `text` as the config file of `cmd` into o (freed by the caller); false with err set. */
static bool parse_config_text(pgd_options *o, unsigned cmd, const char *text, pgd_error *err)
{
    char *dir = test_tmpdir();
    char cfg[4200];
    bool ok;

    snprintf(cfg, sizeof(cfg), "%s/pgdirect.conf", dir);
    write_test_file(cfg, text, strlen(text));
    ok = parse(o, cmd, cfg, 0, NULL, err);
    rm_rf(dir);
    return ok;
}

/* The error of a config file holding `text`, from "line N: " on (the path is a temporary one). */
static void assert_config_error(const char *text, const char *expected)
{
    pgd_options o;
    pgd_error err = {0};
    const char *line;

    assert_false(parse_config_text(&o, CMD_BACKUP, text, &err));
    assert_non_null(strstr(err.msg, "config file \""));
    line = strstr(err.msg, "\" line ");
    assert_non_null(line);
    assert_string_equal(line + 2, expected);
    options_free(&o);
}

/* Values are read as postgresql.conf's are: a quoted string, or one word. */
static void test_config_values_as_postgresql_reads_them(void **state)
{
    pgd_options o;
    pgd_error err = {0};
    const char *text = "repo = '/var/lib/pgdirect'\n"              /* quoted */
                       "label = 'it''s # not a comment'   # one\n" /* '' and # in quotes */
                       "dbname 'host=/tmp port=5433'\n"            /* no '=' */
                       "compression=zstd#comment\n"                /* no spaces */
                       "  \t# an indented comment\n"
                       "\n"
                       "partition-size   512MiB  \r\n"             /* CRLF, unquoted */
                       "tablespace-map = /old=/new\n"              /* '=' in a word */
                       "tablespace-map = 'a\\'b\\\\c\\tz\\101'\n"; /* backslash escapes */

    (void)state;
    assert_true(parse_config_text(&o, CMD_BACKUP | CMD_RESTORE, text, &err));
    assert_string_equal(opt_str(&o, OPT_REPO), "/var/lib/pgdirect");
    assert_string_equal(opt_str(&o, OPT_LABEL), "it's # not a comment");
    assert_string_equal(opt_str(&o, OPT_DBNAME), "host=/tmp port=5433");
    assert_string_equal(opt_str(&o, OPT_COMPRESSION), "zstd");
    assert_string_equal(opt_str(&o, OPT_PARTITION_SIZE), "512MiB");
    assert_int_equal(o.v[OPT_TABLESPACE_MAP].nvalues, 2);
    assert_string_equal(o.v[OPT_TABLESPACE_MAP].values[0], "/old=/new");
    assert_string_equal(o.v[OPT_TABLESPACE_MAP].values[1], "a'b\\c\tzA");
    assert_int_equal(o.v[OPT_REPO].source, SRC_CONFIG);
    options_free(&o);

    /* an empty value is written as one: '' */
    assert_true(parse_config_text(&o, CMD_BACKUP, "label = ''\n", &err));
    assert_string_equal(opt_str(&o, OPT_LABEL), "");
    options_free(&o);
}

/* What PostgreSQL would refuse, and what an INI reader would skip, is refused by line. */
static void test_config_syntax_errors_name_the_line(void **state)
{
    (void)state;
    assert_config_error("# settings\n\n[main]\nrepo = /x\n",
                        "line 3: unexpected section header \"[main]\" (the file has no "
                        "sections: name = value lines only)");
    assert_config_error("repo = /x\nlabel = 'nightly\n",
                        "line 2: unterminated quoted string in the value of \"label\"");
    assert_config_error("label = 'a\\'\n",
                        "line 1: unterminated quoted string in the value of \"label\"");
    assert_config_error("repo = '/x' /y\n", "line 1: unexpected \"/y\" after the value of "
                                            "\"repo\" (quote a value that holds white space "
                                            "or '#')");
    assert_config_error("repo = '/x'y\n", "line 1: unexpected \"y\" after the value of \"repo\" "
                                          "(quote a value that holds white space or '#')");
    assert_config_error("label = nightly run\n",
                        "line 1: unexpected \"run\" after the value of \"label\" (quote a value "
                        "that holds white space or '#')");
    assert_config_error("\nrepo = /var/lib/pgdirect'\n",
                        "line 2: quote inside the unquoted value of \"repo\" (quote the whole "
                        "value, with '' for a quote in it)");
    assert_config_error("repo =\n", "line 1: no value for \"repo\"");
    assert_config_error("repo   # nothing\n", "line 1: no value for \"repo\"");
    assert_config_error("= /x\n", "line 1: expected \"name = value\"");
    assert_config_error("; an INI comment\n", "line 1: \";\" starts no comment here: use \"#\"");
    assert_config_error("label = 'a\\0b'\n", "line 1: NUL character (\\0) in the value of "
                                             "\"label\"");
    assert_config_error("repo = /x\ninclude 'other.conf'\n", "line 2: unknown option \"include\"");
    {
        char text[300], expected[100];

        memset(text, 'a', 200);
        strcpy(text + 200, " = 1\n");
        snprintf(expected, sizeof(expected), "line 1: unknown option \"%.40s...\"", text);
        assert_config_error(text, expected);
    }
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
        cmocka_unit_test(test_config_values_as_postgresql_reads_them),
        cmocka_unit_test(test_config_syntax_errors_name_the_line),
        cmocka_unit_test(test_invalid_values_name_the_option),
        cmocka_unit_test(test_values_with_edge_white_space_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
