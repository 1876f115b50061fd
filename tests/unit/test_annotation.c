/*
 * test_annotation.c - covers src/repo/annotation.c: KEY=VALUE is checked as documented, set and
 * remove keep the object sorted and compact, a sentinel's annotations that are not an object of
 * strings are refused, and the whole never outgrows its buffer.
 */
#include "helpers.h"

#include <jansson.h>
#include <string.h>

#include "repo/annotation.h"

static void test_annotation_parse_splits_at_the_first_equals(void **state)
{
    char key[ANNOTATION_KEY_MAX + 1];
    const char *value;
    pgd_error err = {0};

    (void)state;
    assert_true(annotation_parse("ticket=OPS-1=x", key, &value, &err));
    assert_string_equal(key, "ticket");
    assert_string_equal(value, "OPS-1=x");
    assert_true(annotation_parse("a.b-c_9=", key, &value, &err));
    assert_string_equal(value, "");
}

static void test_annotation_parse_refuses_bad_keys_and_values(void **state)
{
    static const char *const bad[] = {"noequals", "=v",          "bad key=v",
                                      "k\xc3=v",  "k=tab\there", "k=\xff\xfe"};
    char key[ANNOTATION_KEY_MAX + 1], longkey[ANNOTATION_KEY_MAX + 8];
    char longvalue[ANNOTATION_VALUE_MAX + 8];
    const char *value;

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        pgd_error err = {0};
        assert_false(annotation_parse(bad[i], key, &value, &err));
        assert_true(strstr(err.msg, "invalid annotation") != NULL);
    }
    memset(longkey, 'k', ANNOTATION_KEY_MAX + 1);
    strcpy(longkey + ANNOTATION_KEY_MAX + 1, "=v");
    pgd_error err = {0};
    assert_false(annotation_parse(longkey, key, &value, &err));
    memcpy(longvalue, "k=", 2);
    memset(longvalue + 2, 'v', ANNOTATION_VALUE_MAX + 1);
    longvalue[ANNOTATION_VALUE_MAX + 3] = '\0';
    err = (pgd_error){0};
    assert_false(annotation_parse(longvalue, key, &value, &err));
}

/* C1 controls and bytes that are not UTF-8 are refused, naming the key, never echoing them. */
static void test_annotation_parse_refuses_c1_and_invalid_utf8_naming_the_key(void **state)
{
    static const char *const bad[] = {"note=a\xc2\x80z",
                                      "note=a\xc2\x9b"
                                      "31mred",
                                      "note=\xc2\x9f",
                                      "note=\xc2",
                                      "note=a\xe2\x82",
                                      "note=\xed\xa0\x80", /* a surrogate */
                                      "note=\xc0\xaf",
                                      "note=\x1b[31m",
                                      "note=\x7f"};
    static const char *const good[] = {"note=\xc2\xa0nbsp", "note=\xc2\xbf\xc3\xa9",
                                       "note=\xe2\x82\xac 5", "note=\xf0\x9f\x98\x80"};
    char key[ANNOTATION_KEY_MAX + 1];
    const char *value;

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        pgd_error err = {0};
        if (annotation_parse(bad[i], key, &value, &err))
            fail_msg("value %zu accepted", i);
        assert_string_equal(err.msg, "invalid annotation \"note\": its value must be "
                                     "UTF-8 text without control characters (C0, DEL or C1), at "
                                     "most 256 bytes");
    }
    /* the control: the characters just past C1, and other UTF-8 */
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        pgd_error err = {0};
        if (!annotation_parse(good[i], key, &value, &err))
            fail_msg("value %zu refused: %s", i, err.msg);
        assert_string_equal(key, "note");
    }
}

/* A key that is not printable ASCII is refused without being echoed. */
static void test_annotation_parse_never_echoes_a_bad_key_with_controls(void **state)
{
    char key[ANNOTATION_KEY_MAX + 1];
    const char *value;
    pgd_error err = {0};

    (void)state;
    assert_false(annotation_parse("k\xc2\x9b=v", key, &value, &err));
    assert_null(strstr(err.msg, "\xc2"));
    assert_non_null(strstr(err.msg, "invalid annotation: expected KEY=VALUE"));
}

static void test_annotation_set_adds_changes_and_removes(void **state)
{
    char text[ANNOTATIONS_TEXT_MAX] = "";
    pgd_error err = {0};
    bool changed;

    (void)state;
    assert_true(annotation_set(text, "why", "upgrade", &changed, &err) && changed);
    assert_true(annotation_set(text, "a", "1", &changed, &err) && changed);
    assert_string_equal(text, "{\"a\":\"1\",\"why\":\"upgrade\"}");
    assert_true(annotation_set(text, "a", "1", &changed, &err));
    assert_false(changed);
    assert_true(annotation_set(text, "a", "2", &changed, &err) && changed);
    assert_true(annotation_set(text, "why", NULL, &changed, &err) && changed);
    assert_string_equal(text, "{\"a\":\"2\"}");
    assert_true(annotation_set(text, "missing", NULL, &changed, &err));
    assert_false(changed);
    assert_true(annotation_set(text, "a", NULL, &changed, &err) && changed);
    assert_string_equal(text, "");
}

static void test_annotation_set_refuses_what_does_not_fit(void **state)
{
    char text[ANNOTATIONS_TEXT_MAX] = "", before[ANNOTATIONS_TEXT_MAX];
    char value[ANNOTATION_VALUE_MAX + 1], key[16];
    pgd_error err = {0};
    bool changed, ok = true;
    int i;

    (void)state;
    memset(value, 'v', ANNOTATION_VALUE_MAX);
    value[ANNOTATION_VALUE_MAX] = '\0';
    for (i = 0; ok && i < 64; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        memcpy(before, text, sizeof(before));
        ok = annotation_set(text, key, value, &changed, &err);
    }
    assert_false(ok);
    assert_true(strstr(err.msg, "more than") != NULL);
    assert_true(strlen(before) < ANNOTATIONS_TEXT_MAX);
}

static void test_annotation_from_json_refuses_what_is_not_strings(void **state)
{
    char text[ANNOTATIONS_TEXT_MAX];
    json_t *good = json_pack("{s:s, s:s}", "z", "1", "a", "2");
    json_t *number = json_pack("{s:i}", "a", 1);
    json_t *badkey = json_pack("{s:s}", "a b", "1");
    json_t *array = json_array();
    pgd_error err = {0};

    (void)state;
    assert_true(annotation_from_json(good, text, &err));
    assert_string_equal(text, "{\"a\":\"2\",\"z\":\"1\"}");
    assert_false(annotation_from_json(number, text, &err));
    err = (pgd_error){0};
    assert_false(annotation_from_json(badkey, text, &err));
    err = (pgd_error){0};
    assert_false(annotation_from_json(array, text, &err));
    json_decref(good);
    json_decref(number);
    json_decref(badkey);
    json_decref(array);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_annotation_parse_splits_at_the_first_equals),
        cmocka_unit_test(test_annotation_parse_refuses_bad_keys_and_values),
        cmocka_unit_test(test_annotation_parse_refuses_c1_and_invalid_utf8_naming_the_key),
        cmocka_unit_test(test_annotation_parse_never_echoes_a_bad_key_with_controls),
        cmocka_unit_test(test_annotation_set_adds_changes_and_removes),
        cmocka_unit_test(test_annotation_set_refuses_what_does_not_fit),
        cmocka_unit_test(test_annotation_from_json_refuses_what_is_not_strings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
