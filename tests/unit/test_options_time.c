/*
 * test_options_time.c - covers the duration and point-in-time getters at
 * the end of src/util/options.c (delete's --garbage-age and
 * --retain-since), and the roff text of the manual page.
 */
#include "helpers.h"

#include "util/options.h"

#define NOW 1800000000 /* 2027-01-15 08:00:00 UTC */

static bool point(const char *value, int64_t *out, pgd_error *err)
{
    pgd_options o;
    char arg[256];
    char *argv[] = {"--config=/dev/null", arg};
    bool ok;

    snprintf(arg, sizeof(arg), "--retain-since=%s", value);
    assert_true(options_parse(&o, CMD_DELETE, 2, argv, err));
    ok = opt_point_in_time(&o, OPT_RETAIN_SINCE, NOW, out, err);
    options_free(&o);
    return ok;
}

static void test_durations(void **state)
{
    int64_t s;

    (void)state;
    assert_true(parse_duration("90", &s));
    assert_int_equal(s, 90);
    assert_true(parse_duration("90s", &s));
    assert_int_equal(s, 90);
    assert_true(parse_duration("30m", &s));
    assert_int_equal(s, 1800);
    assert_true(parse_duration("36h", &s));
    assert_int_equal(s, 36 * 3600);
    assert_true(parse_duration("7d", &s));
    assert_int_equal(s, 7 * 86400);
    assert_true(parse_duration("2w", &s));
    assert_int_equal(s, 14 * 86400);
    assert_true(parse_duration("0", &s));
    assert_int_equal(s, 0);
    assert_false(parse_duration("", &s));
    assert_false(parse_duration("-1d", &s));
    assert_false(parse_duration("1 d", &s));
    assert_false(parse_duration("1y", &s));
    assert_false(parse_duration("d", &s));
    assert_false(parse_duration("99999999999999999999s", &s));
    assert_false(parse_duration("9223372036854775807w", &s));
}

static void test_garbage_age_getter_names_the_option(void **state)
{
    pgd_options o;
    pgd_error err = {0};
    char *argv[] = {"--config=/dev/null", "--garbage-age=soon"};
    int64_t v;

    (void)state;
    assert_true(options_parse(&o, CMD_DELETE, 2, argv, &err));
    assert_false(opt_duration(&o, OPT_GARBAGE_AGE, 0, 100, &v, &err));
    assert_non_null(strstr(err.msg, "invalid value \"soon\" for option \"--garbage-age\""));
    options_free(&o);
    /* the default */
    err_clear(&err);
    assert_true(options_parse(&o, CMD_DELETE, 1, argv, &err));
    assert_true(opt_duration(&o, OPT_GARBAGE_AGE, 0, INT64_MAX, &v, &err));
    assert_int_equal(v, 86400);
    options_free(&o);
}

static void test_points_in_time(void **state)
{
    pgd_error err = {0};
    int64_t t;

    (void)state;
    assert_true(point("14d", &t, &err));
    assert_int_equal(t, NOW - 14 * 86400);
    assert_true(point("2027-01-15 08:00:00+00", &t, &err));
    assert_int_equal(t, NOW);
    assert_true(point("2027-01-15T08:00Z", &t, &err));
    assert_int_equal(t, NOW);
    assert_true(point("2027-01-15 08:00:00.75 UTC", &t, &err));
    assert_int_equal(t, NOW);
    assert_true(point("2027-01-15 09:30:00+01:30", &t, &err));
    assert_int_equal(t, NOW);
    assert_true(point("2027-01-15 03:00:00-0500", &t, &err));
    assert_int_equal(t, NOW);
    assert_true(point("2027-01-15 10:00+02", &t, &err));
    assert_int_equal(t, NOW);
}

static void test_points_in_time_refused(void **state)
{
    static const char *const bad[] = {
        "2027-01-15 08:00:00", /* no zone: whose clock? */
        "2027-01-15",          "2027-02-30 08:00+00",
        "2027-13-01 08:00+00", "2027-01-15 24:00+00",
        "2027-01-15 08:00+25", "2027-01-15 08:00 Europe/Berlin",
        "yesterday",           "",
    };
    pgd_error err = {0};
    int64_t t;

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err_clear(&err);
        assert_false(point(bad[i], &t, &err));
        assert_non_null(strstr(err.msg, "for option \"--retain-since\""));
        assert_non_null(strstr(err.msg, "with a zone"));
    }
}

/* Roff: hyphens and backslashes escaped, a control character at a line start guarded. */
static void test_man_text(void **state)
{
    char *dir = test_tmpdir(), path[4200], buf[256];
    FILE *f;
    size_t n;
    int saved;

    (void)state;
    snprintf(path, sizeof(path), "%s/out", dir);
    fflush(stdout);
    saved = dup(STDOUT_FILENO);
    assert_non_null(freopen(path, "w", stdout));
    options_man_text("--repo a\\b\n.start\n'quote");
    fflush(stdout);
    assert_true(dup2(saved, STDOUT_FILENO) >= 0);
    close(saved);
    f = fopen(path, "r");
    n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    assert_string_equal(buf, "\\-\\-repo a\\eb\n\\&.start\n\\&'quote");
    rm_rf(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_durations),
        cmocka_unit_test(test_garbage_age_getter_names_the_option),
        cmocka_unit_test(test_points_in_time),
        cmocka_unit_test(test_points_in_time_refused),
        cmocka_unit_test(test_man_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
