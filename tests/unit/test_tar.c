/* test_tar.c - covers src/repo/tar.c: writer and strict reader, pax headers, corruption. */
#include "helpers.h"

#include "repo/tar.h"

static void add_file(mem_out *m, const char *path, const void *data, uint64_t size)
{
    pgd_error err = {0};
    tar_entry e = {
        .path = (char *)path, .size = size, .mode = 0600, .mtime = 1700000000, .type = TAR_FILE};

    assert_true(tar_write_header(&m->base, &e, &err));
    assert_true(out_write(&m->base, data, size, &err));
    assert_true(tar_write_zeros(&m->base, tar_padding(size), &err));
}

static void test_round_trip_with_long_names(void **state)
{
    char long_name[300];
    unsigned char data[5000];
    mem_out m;
    pgd_error err = {0};
    in_stream *in;
    tar_reader r;
    tar_entry e;
    bool end;
    size_t n;
    char buf[8192];

    (void)state;
    memset(long_name, 'a', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = '\0';
    memcpy(long_name, "base/1/", 7);
    fill_pattern(data, sizeof(data), 1);
    mem_out_init(&m);
    add_file(&m, "PG_VERSION", "15\n", 3);
    add_file(&m, long_name, data, sizeof(data));
    add_file(&m, "empty", "", 0);
    {
        tar_entry d = {.path = "base", .mode = 0700, .mtime = 1, .type = TAR_DIR};
        assert_true(tar_write_header(&m.base, &d, &err));
    }
    assert_true(tar_write_end(&m.base, &err));
    assert_int_equal(m.len % TAR_BLOCK, 0);

    in = mem_in_new(m.data, m.len);
    tar_reader_init(&r, in, "test.tar");
    assert_true(tar_reader_next(&r, &e, &end, &err));
    assert_false(end);
    assert_string_equal(e.path, "PG_VERSION");
    assert_int_equal(e.size, 3);
    assert_int_equal(e.mode, 0600);
    assert_int_equal(e.mtime, 1700000000);
    assert_true(tar_reader_data(&r, buf, sizeof(buf), &n, &err));
    assert_int_equal(n, 3);
    assert_memory_equal(buf, "15\n", 3);
    tar_entry_free(&e);

    assert_true(tar_reader_next(&r, &e, &end, &err));
    assert_string_equal(e.path, long_name);
    assert_int_equal(e.size, sizeof(data));
    assert_true(tar_reader_data(&r, buf, sizeof(buf), &n, &err));
    assert_int_equal(n, sizeof(data));
    assert_memory_equal(buf, data, sizeof(data));
    tar_entry_free(&e);

    /* skipping unread data works */
    assert_true(tar_reader_next(&r, &e, &end, &err));
    assert_string_equal(e.path, "empty");
    assert_int_equal(e.size, 0);
    tar_entry_free(&e);
    assert_true(tar_reader_next(&r, &e, &end, &err));
    assert_string_equal(e.path, "base");
    assert_int_equal(e.type, TAR_DIR);
    tar_entry_free(&e);
    assert_true(tar_reader_next(&r, &e, &end, &err));
    assert_true(end);
    in_close(in);
    mem_out_free(&m);
}

static void test_size_above_ustar_limit_uses_pax(void **state)
{
    mem_out m;
    pgd_error err = {0};
    tar_entry e = {.path = "big", .size = 9ULL << 30, .mode = 0600, .type = TAR_FILE};
    tar_entry got;
    in_stream *in;
    tar_reader r;
    bool end;

    (void)state;
    mem_out_init(&m);
    assert_true(tar_write_header(&m.base, &e, &err));
    in = mem_in_new(m.data, m.len);
    tar_reader_init(&r, in, "big.tar");
    assert_true(tar_reader_next(&r, &got, &end, &err));
    assert_int_equal(got.size, 9ULL << 30);
    tar_entry_free(&got);
    in_close(in);
    mem_out_free(&m);
}

static void test_corrupt_header_is_refused(void **state)
{
    mem_out m;
    pgd_error err = {0};
    in_stream *in;
    tar_reader r;
    tar_entry e;
    bool end;

    (void)state;
    mem_out_init(&m);
    add_file(&m, "a", "x", 1);
    m.data[3] ^= 0x20; /* flip a bit in the name */
    in = mem_in_new(m.data, m.len);
    tar_reader_init(&r, in, "part_0001.tar");
    assert_false(tar_reader_next(&r, &e, &end, &err));
    assert_non_null(strstr(err.msg, "part_0001.tar"));
    assert_non_null(strstr(err.msg, "checksum"));
    in_close(in);
    mem_out_free(&m);
}

static void test_truncated_archive_is_an_error(void **state)
{
    mem_out m;
    pgd_error err = {0};
    in_stream *in;
    tar_reader r;
    tar_entry e;
    bool end;
    char buf[100];
    size_t n;

    (void)state;
    mem_out_init(&m);
    add_file(&m, "a", "0123456789", 10);
    in = mem_in_new(m.data, TAR_BLOCK + 5); /* header and 5 of 10 bytes */
    tar_reader_init(&r, in, "cut.tar");
    assert_true(tar_reader_next(&r, &e, &end, &err));
    assert_false(tar_reader_data(&r, buf, sizeof(buf), &n, &err));
    assert_non_null(strstr(err.msg, "truncated"));
    tar_entry_free(&e);
    in_close(in);
    mem_out_free(&m);
}

static void test_missing_end_marker_is_an_error(void **state)
{
    mem_out m;
    pgd_error err = {0};
    in_stream *in;
    tar_reader r;
    tar_entry e;
    bool end;

    (void)state;
    mem_out_init(&m);
    add_file(&m, "a", "0123456789", 10);
    in = mem_in_new(m.data, m.len);
    tar_reader_init(&r, in, "noend.tar");
    assert_true(tar_reader_next(&r, &e, &end, &err));
    tar_entry_free(&e);
    assert_false(tar_reader_next(&r, &e, &end, &err));
    assert_non_null(strstr(err.msg, "truncated"));
    in_close(in);
    mem_out_free(&m);
}

/* A ustar header block with a correct checksum; fields given as raw text. */
static void raw_header(char *block, const char *name, char type, const char *size, const char *uid)
{
    unsigned sum = 0;

    memset(block, 0, TAR_BLOCK);
    memcpy(block, name, strlen(name));
    memcpy(block + 100, "0000644", 7); /* mode */
    memcpy(block + 108, uid, strlen(uid));
    memcpy(block + 116, "0000000", 7); /* gid */
    memcpy(block + 124, size, strlen(size));
    memcpy(block + 136, "00000000000", 11); /* mtime */
    block[156] = type;
    memcpy(block + 257, "ustar", 6);
    memcpy(block + 263, "00", 2);
    memset(block + 148, ' ', 8);
    for (int i = 0; i < TAR_BLOCK; i++)
        sum += (unsigned char)block[i];
    snprintf(block + 148, 8, "%06o", sum);
    block[155] = ' ';
}

/* Read the first entry of `data`; returns whether it was accepted, the error in err. */
static bool read_first(const char *data, size_t len, pgd_error *err)
{
    in_stream *in = mem_in_new(data, len);
    tar_reader r;
    tar_entry e;
    bool end, ok;

    tar_reader_init(&r, in, "forged.tar");
    ok = tar_reader_next(&r, &e, &end, err);
    if (ok)
        tar_entry_free(&e);
    in_close(in);
    return ok;
}

static void test_pax_size_that_overflows_is_refused(void **state)
{
    static const char *const sizes[] = {"99999999999999999999999",
                                        "18446744073709551615",
                                        "9223372036854775807",
                                        "-1",
                                        " 5",
                                        "+5",
                                        "0x10",
                                        ""};
    char data[TAR_BLOCK * 5];

    (void)state;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        char rec[128];
        pgd_error err = {0};
        int len = (int)strlen(sizes[i]) + (int)strlen(" size=\n");
        int digits = len + 2 >= 100 ? 3 : len + 2 >= 10 ? 2 : 1;
        char size_field[16];

        /* "LEN size=VALUE\n" where LEN counts itself */
        snprintf(rec, sizeof(rec), "%d size=%s\n", len + digits, sizes[i]);
        snprintf(size_field, sizeof(size_field), "%011o", (unsigned)strlen(rec));
        memset(data, 0, sizeof(data));
        raw_header(data, "././@PaxHeader", 'x', size_field, "0000000");
        memcpy(data + TAR_BLOCK, rec, strlen(rec));
        raw_header(data + 2 * TAR_BLOCK, "a", '0', "00000000000", "0000000");
        assert_false(read_first(data, sizeof(data), &err));
        assert_non_null(strstr(err.msg, "pax"));
    }
}

static void test_numeric_field_that_does_not_parse_is_refused(void **state)
{
    char data[TAR_BLOCK * 3];
    pgd_error err = {0};

    (void)state;
    memset(data, 0, sizeof(data));
    raw_header(data, "a", '0', "00000000000", "0000000");
    assert_true(read_first(data, sizeof(data), &err));
    raw_header(data, "a", '0', "00000000000", "00x0000"); /* uid */
    assert_false(read_first(data, sizeof(data), &err));
    assert_non_null(strstr(err.msg, "bad number"));
    err_clear(&err);
    raw_header(data, "a", '0', "\x80\x01", "0000000"); /* base-256: our writer never uses it */
    assert_false(read_first(data, sizeof(data), &err));
    assert_non_null(strstr(err.msg, "bad number"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_with_long_names),
        cmocka_unit_test(test_size_above_ustar_limit_uses_pax),
        cmocka_unit_test(test_corrupt_header_is_refused),
        cmocka_unit_test(test_truncated_archive_is_an_error),
        cmocka_unit_test(test_missing_end_marker_is_an_error),
        cmocka_unit_test(test_pax_size_that_overflows_is_refused),
        cmocka_unit_test(test_numeric_field_that_does_not_parse_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
