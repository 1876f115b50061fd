/*
 * test_filter_crc.c - covers src/backup/filter_crc.c: it counts and
 * checksums what passes, passes it on untouched, and hands its results
 * down with end; a file that delivers fewer bytes than announced is
 * recorded as its tar entry holds it, completed with zeros.
 */
#include "helpers.h"

#include "backup/filter_crc.h"
#include "util/crc32c.h"

/* The end of a test chain: remembers what reached it. */
typedef struct sink {
    file_filter base;
    int begins, ends;
    char path[64];
    uint64_t size, bytes;
    const unsigned char *last_data;
    uint32_t crc_seen_at_end;
} sink;

static bool sink_begin(file_filter *f, const file_filter_file *file, pgd_error *err)
{
    sink *s = (sink *)f;

    (void)err;
    s->begins++;
    snprintf(s->path, sizeof(s->path), "%s", file->path);
    s->size = file->size;
    return true;
}

static bool sink_data(file_filter *f, file_chunk *chunk, pgd_error *err)
{
    sink *s = (sink *)f;

    (void)err;
    s->bytes += chunk->len;
    s->last_data = chunk->data;
    return true;
}

static bool sink_end(file_filter *f, file_filter_result *result, pgd_error *err)
{
    sink *s = (sink *)f;

    (void)err;
    s->ends++;
    s->crc_seen_at_end = result->crc;
    return true;
}

static void sink_free(file_filter *f)
{
    ((sink *)f)->base.ops = NULL; /* freed: the test owns the memory */
}

static const file_filter_ops sink_ops = {sink_begin, sink_data, sink_end, sink_free};

static void test_counts_checksums_and_passes_on(void **state)
{
    sink s = {.base = {.ops = &sink_ops}};
    pgd_error err = {0};
    unsigned char data[10000];
    file_filter *crc = filter_crc_new(&s.base);
    file_filter_file file = {.path = "base/1/2", .size = sizeof(data)};
    file_filter_result result = {0};

    (void)state;
    assert_non_null(crc);
    fill_pattern(data, sizeof(data), 7);
    assert_true(file_filter_begin(crc, &file, &err));
    for (size_t off = 0; off < sizeof(data); off += 4096) {
        size_t n = sizeof(data) - off < 4096 ? sizeof(data) - off : 4096;
        file_chunk chunk = {.data = data + off, .len = n, .room = n, .offset = off};
        assert_true(file_filter_data(crc, &chunk, &err));
        assert_ptr_equal(s.last_data, data + off); /* the same bytes, not a copy */
    }
    assert_true(file_filter_end(crc, &result, &err));
    assert_int_equal(result.size, sizeof(data));
    assert_int_equal(result.crc, crc32c(data, sizeof(data)));
    assert_int_equal(s.crc_seen_at_end, result.crc); /* filled in before passing on */
    assert_string_equal(s.path, "base/1/2");
    assert_int_equal(s.size, sizeof(data));
    assert_int_equal(s.bytes, sizeof(data));

    /* the next file starts from zero */
    file.size = 0;
    assert_true(file_filter_begin(crc, &file, &err));
    assert_true(file_filter_end(crc, &result, &err));
    assert_int_equal(result.size, 0);
    assert_int_equal(result.crc, crc32c(data, 0));
    assert_int_equal(s.begins, 2);
    assert_int_equal(s.ends, 2);
    file_filter_free(crc);
    assert_null(s.base.ops); /* freeing the head freed the chain */
}

/*
 * A file that shrank while it was read: the tar filter completes its entry
 * with zeros to the announced size, so the size and CRC-32C recorded are
 * those of the bytes read and those zeros (what restore and verify will
 * read); only the bytes read were passed on.
 */
static void test_a_file_that_shrank_is_recorded_with_its_zeros(void **state)
{
    sink s = {.base = {.ops = &sink_ops}};
    pgd_error err = {0};
    unsigned char whole[200000] = {0};
    file_filter *crc = filter_crc_new(&s.base);
    file_filter_file file = {.path = "base/1/2", .size = sizeof(whole)};
    file_filter_result result = {0};
    file_chunk chunk = {.data = whole, .len = 8192, .room = 8192, .offset = 0};

    (void)state;
    assert_non_null(crc);
    fill_pattern(whole, 8192, 3); /* the 8192 bytes read; the rest stays zeros */
    assert_true(file_filter_begin(crc, &file, &err));
    assert_true(file_filter_data(crc, &chunk, &err));
    assert_true(file_filter_end(crc, &result, &err));
    assert_int_equal(result.size, sizeof(whole));
    assert_int_equal(result.crc, crc32c(whole, sizeof(whole)));
    assert_int_equal(s.crc_seen_at_end, result.crc);
    assert_int_equal(s.size, sizeof(whole)); /* the entry declares what was announced */
    assert_int_equal(s.bytes, 8192);         /* the zeros are the tar filter's to write */
    file_filter_free(crc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_checksums_and_passes_on),
        cmocka_unit_test(test_a_file_that_shrank_is_recorded_with_its_zeros),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
