/*
 * test_filter_tar.c - covers src/backup/filter_tar.c: a file becomes one
 * tar entry, padded in the chunk when there is room and after it when
 * not; a file that shrank is completed with zeros; more bytes than the
 * header announced fail.
 */
#include "helpers.h"

#include "backup/filter_tar.h"

/* Read back the single entry of `m`: its header's size and its data (malloc'd). */
static unsigned char *entry_of(mem_out *m, const char *path, uint64_t *size, char *type)
{
    pgd_error err = {0};
    in_stream *in = mem_in_new(m->data, m->len);
    tar_reader r;
    tar_entry e;
    bool end;
    unsigned char *data;
    size_t n;

    tar_reader_init(&r, in, "test");
    assert_true(tar_reader_next(&r, &e, &end, &err));
    assert_false(end);
    assert_string_equal(e.path, path);
    *size = e.size;
    *type = e.type;
    data = malloc(e.size + 1);
    assert_true(tar_reader_data(&r, data, e.size + 1, &n, &err));
    assert_int_equal(n, e.size);
    tar_entry_free(&e);
    assert_true(tar_reader_next(&r, &e, &end, &err));
    assert_true(end);
    in_close(in);
    return data;
}

/* One file of `size` bytes through the filter, in chunks of `step` with `room` bytes each. */
static void one_file(size_t size, size_t step, size_t room, size_t deliver)
{
    mem_out m;
    pgd_error err = {0};
    uint64_t written = 0, got_size;
    unsigned char *data = malloc(size + room), *got;
    file_filter *tar = filter_tar_new();
    file_filter_file file = {.path = "base/1/2", .size = size, .mode = 0600};
    file_filter_result result = {0};
    char type;

    mem_out_init(&m);
    fill_pattern(data, size + room, 3);
    filter_tar_attach(tar, &m.base, &written);
    assert_true(file_filter_begin(tar, &file, &err));
    for (size_t off = 0; off < deliver; off += step) {
        size_t n = deliver - off < step ? deliver - off : step;
        unsigned char *buf = malloc(room);
        memcpy(buf, data + off, n);
        file_chunk chunk = {.data = buf, .len = n, .room = room, .offset = off};
        assert_true(file_filter_data(tar, &chunk, &err));
        free(buf);
    }
    assert_true(file_filter_end(tar, &result, &err));
    assert_true(tar_write_end(&m.base, &err));
    assert_int_equal(m.len % TAR_BLOCK, 0);
    assert_int_equal(written + 2 * TAR_BLOCK, m.len);
    got = entry_of(&m, "base/1/2", &got_size, &type);
    assert_int_equal(type, TAR_FILE);
    assert_int_equal(got_size, size);
    assert_memory_equal(got, data, deliver);
    for (size_t i = deliver; i < size; i++)
        assert_int_equal(got[i], 0); /* shrank: completed with zeros */
    free(got);
    free(data);
    mem_out_free(&m);
    file_filter_free(tar);
}

static void test_padded_in_the_chunk_when_it_has_room(void **state)
{
    (void)state;
    one_file(10000, 4096, 4096 + 512, 10000);
}

static void test_padded_after_the_chunk_when_it_has_none(void **state)
{
    (void)state;
    one_file(10000, 4096, 4096, 10000); /* last chunk: 1808 bytes, room for them only */
    one_file(1808, 1808, 1808, 1808);
}

static void test_a_file_that_shrank_is_completed_with_zeros(void **state)
{
    (void)state;
    one_file(10000, 4096, 4096 + 512, 5000);
    one_file(10000, 4096, 4096 + 512, 0);
}

static void test_more_bytes_than_announced_fail(void **state)
{
    mem_out m;
    pgd_error err = {0};
    uint64_t written = 0;
    unsigned char buf[1024] = {0};
    file_filter *tar = filter_tar_new();
    file_filter_file file = {.path = "x", .size = 1000};
    file_chunk chunk = {.data = buf, .len = 1024, .room = 1024};

    (void)state;
    mem_out_init(&m);
    filter_tar_attach(tar, &m.base, &written);
    assert_true(file_filter_begin(tar, &file, &err));
    assert_false(file_filter_data(tar, &chunk, &err));
    assert_non_null(strstr(err.msg, "internal error: 1024 bytes of \"x\""));
    mem_out_free(&m);
    file_filter_free(tar);
}

static void test_entries_without_data(void **state)
{
    mem_out m;
    pgd_error err = {0};
    uint64_t written = 0, size;
    file_filter *tar = filter_tar_new();
    tar_entry e = {.path = "loop", .linkpath = ".", .mode = 0777, .type = TAR_SYMLINK};
    unsigned char *got;
    char type;

    (void)state;
    mem_out_init(&m);
    filter_tar_attach(tar, &m.base, &written);
    assert_true(filter_tar_entry(tar, &e, &err));
    assert_true(tar_write_end(&m.base, &err));
    got = entry_of(&m, "loop", &size, &type);
    assert_int_equal(type, TAR_SYMLINK);
    assert_int_equal(size, 0);
    assert_int_equal(written, TAR_BLOCK);
    free(got);
    mem_out_free(&m);
    file_filter_free(tar);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_padded_in_the_chunk_when_it_has_room),
        cmocka_unit_test(test_padded_after_the_chunk_when_it_has_none),
        cmocka_unit_test(test_a_file_that_shrank_is_completed_with_zeros),
        cmocka_unit_test(test_more_bytes_than_announced_fail),
        cmocka_unit_test(test_entries_without_data),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
