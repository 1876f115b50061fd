/*
 * test_cache_report_json.c - covers src/cache/report_json.c: the streamed JSON is, byte for byte,
 * the document jansson printed from a tree (what `pgdirect cache --json` printed before), for
 * every shape of report; and it is valid JSON where jansson gave up (invalid UTF-8).
 */
#include "helpers.h"

#include <jansson.h>

#include "cache/report_json.h"

/* The reference: the report as a jansson tree, dumped as the command dumped it. */
static json_t *reference_figures(const cache_figures *f, const cache_report *r)
{
    json_t *o = json_pack("{s:I}", "size", (json_int_t)f->size);

    json_object_set_new(o, "shared_buffers",
                        r->shared_buffers_known ? json_integer((json_int_t)f->shared_buffers)
                                                : json_null());
    json_object_set_new(o, "os_cache",
                        r->os_known ? json_integer((json_int_t)f->os_cache) : json_null());
    json_object_set_new(o, "disk_only",
                        r->os_known ? json_integer((json_int_t)f->disk_only) : json_null());
    json_object_set_new(o, "evicted_pages", json_integer((json_int_t)f->evicted_pages));
    return o;
}

static char *reference_json(const cache_report *r, size_t top)
{
    json_t *root = json_object(), *rows = json_array(), *notes = json_array();
    cache_figures t = cache_totals(r);
    size_t n = top && top < r->n ? top : r->n;
    char *text, *line;

    for (size_t i = 0; i < n; i++) {
        json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "database", r->rows[i].database, "relation",
                              r->rows[i].name, "kind", r->rows[i].kind, "fork", r->rows[i].fork);
        json_t *f = reference_figures(&r->rows[i].f, r);
        assert_non_null(o);
        json_object_update(o, f);
        json_decref(f);
        json_array_append_new(rows, o);
    }
    for (size_t i = 0; i < r->nnotes; i++)
        json_array_append_new(notes, json_string(r->notes[i]));
    json_object_set_new(root, "relations", rows);
    json_object_set_new(root, "totals", reference_figures(&t, r));
    json_object_set_new(root, "notes", notes);
    text = json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    json_decref(root);
    assert_non_null(text);
    assert_true(asprintf(&line, "%s\n", text) > 0);
    free(text);
    return line;
}

static char *streamed_json(const cache_report *r, size_t top)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    pgd_error err = {0};

    assert_non_null(out);
    assert_true(cache_report_write_json(out, r, top, &err));
    assert_int_equal(fclose(out), 0);
    return text;
}

static void assert_same_as_reference(const cache_report *r, size_t top)
{
    char *want = reference_json(r, top), *got = streamed_json(r, top);

    assert_string_equal(got, want);
    free(want);
    free(got);
}

static cache_row rows_fixture[] = {
    {"postgres", "public.big", "table", "main", {1073741824ull * 3, 8192, 40960, 12288, 7}},
    {"(shared)", "pg_catalog.pg_database", "table", "fsm", {24576, 0, 24576, 0, 0}},
    {"caf\xc3\xa9", "public.\"quoted\\name\"", "index", "vm", {0, 0, 0, 0, 0}},
    {"db",
     "ctl\x01\x1f\b\f\n\r\t\x7f/\xe2\x80\xa8\xf0\x9f\x98\x80",
     "toast",
     "init",
     {8192, 0, 0, 8192, 0}},
};

/* Every combination of known and unknown columns, with and without rows and notes, and --top. */
static void test_json_is_what_jansson_printed(void **state)
{
    char *notes[] = {"pg_buffercache is not installed in database \"db\": its shared_buffers",
                     "tab\there"};
    cache_report r = {.rows = rows_fixture, .n = 4, .notes = notes, .nnotes = 2};

    (void)state;
    for (int sb = 0; sb < 2; sb++)
        for (int os = 0; os < 2; os++) {
            r.shared_buffers_known = sb;
            r.os_known = os;
            assert_same_as_reference(&r, 0);
        }
    assert_same_as_reference(&r, 2);
    assert_same_as_reference(&r, 4);
    assert_same_as_reference(&r, 100);
    r.nnotes = 0;
    assert_same_as_reference(&r, 1);
    r.n = 0;
    assert_same_as_reference(&r, 0);
    r.nnotes = 2;
    assert_same_as_reference(&r, 0);
}

/*
 * A name that is not valid UTF-8 (a LATIN1 database): jansson refused the string and the row went
 * missing; the row is there now, each invalid byte as U+FFFD, and the document is valid JSON.
 */
static void test_invalid_utf8_becomes_replacement_characters(void **state)
{
    cache_row row = {"latin1", "public.caf\xe9", "table", "main", {8192, 0, 8192, 0, 0}};
    cache_report r = {.rows = &row, .n = 1, .os_known = true};
    static const char *const bad[] = {"\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
                                      "\xe2\x82", "\x80",         "\xff"};
    char *text = streamed_json(&r, 0), name[32];
    json_error_t jerr;
    json_t *doc = json_loads(text, 0, &jerr);

    (void)state;
    assert_non_null(doc);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(doc, "relations"), 0), "relation")),
                        "public.caf\xef\xbf\xbd");
    json_decref(doc);
    free(text);
    /* overlong, surrogate, past U+10FFFF, cut short, a lone continuation byte, never UTF-8 */
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(name, sizeof(name), "x%sy", bad[i]);
        row.name = name;
        text = streamed_json(&r, 0);
        doc = json_loads(text, 0, &jerr);
        assert_non_null(doc);
        assert_null(strstr(text, bad[i]));
        assert_non_null(strstr(text, "\"x\xef\xbf\xbd"));
        json_decref(doc);
        free(text);
    }
}

/* A stream that cannot be written is an error, not a report cut short in silence. */
static void test_write_error_is_reported(void **state)
{
    cache_report r = {.rows = rows_fixture, .n = 4};
    FILE *full = fopen("/dev/full", "w");
    pgd_error err = {0};

    (void)state;
    if (full == NULL)
        skip();
    assert_false(cache_report_write_json(full, &r, 0, &err));
    assert_true(err.set);
    fclose(full);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_is_what_jansson_printed),
        cmocka_unit_test(test_invalid_utf8_becomes_replacement_characters),
        cmocka_unit_test(test_write_error_is_reported),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
