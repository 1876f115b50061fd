/*
 * test_sftp_rename.c - covers the parser of src/storage/sftp/rename.c: the
 * extensions of an SFTP VERSION packet, bytes from the server, with
 * posix-rename@openssh.com found among others, absent, and malformed
 * bodies (a length that runs past the end, a truncated pair) refused.
 */
#include "helpers.h"

#include "storage/sftp/internal.h"

typedef struct packet {
    unsigned char b[512];
    size_t len;
} packet;

static void put32(packet *p, uint32_t v)
{
    p->b[p->len++] = (unsigned char)(v >> 24);
    p->b[p->len++] = (unsigned char)(v >> 16);
    p->b[p->len++] = (unsigned char)(v >> 8);
    p->b[p->len++] = (unsigned char)v;
}

static void put_string(packet *p, const char *s)
{
    put32(p, (uint32_t)strlen(s));
    memcpy(p->b + p->len, s, strlen(s));
    p->len += strlen(s);
}

/* a VERSION body as OpenSSH 9.2's sftp-server sends it (some of its extensions) */
static packet openssh_version(void)
{
    packet p = {.len = 0};

    put32(&p, 3);
    put_string(&p, "posix-rename@openssh.com");
    put_string(&p, "1");
    put_string(&p, "statvfs@openssh.com");
    put_string(&p, "2");
    put_string(&p, "fsync@openssh.com");
    put_string(&p, "1");
    return p;
}

static void test_found(void **state)
{
    packet p = openssh_version();
    bool found;

    (void)state;
    assert_true(sftp_rename_parse_version(p.b, p.len, &found));
    assert_true(found);
}

static void test_absent(void **state)
{
    packet p = {.len = 0};
    bool found = true;

    (void)state;
    put32(&p, 3);
    assert_true(sftp_rename_parse_version(p.b, p.len, &found));
    assert_false(found);
    put_string(&p, "posix-rename@openssh.co"); /* a prefix is not the name */
    put_string(&p, "1");
    put_string(&p, "posix-rename@openssh.comX");
    put_string(&p, "1");
    assert_true(sftp_rename_parse_version(p.b, p.len, &found));
    assert_false(found);
}

static void test_malformed(void **state)
{
    packet p = openssh_version();
    bool found;

    (void)state;
    /* every truncation but at a pair's end is refused, and none reads past it */
    for (size_t len = 0; len < p.len; len++) {
        bool ok = sftp_rename_parse_version(p.b, len, &found);
        if (len < 4)
            assert_false(ok);
        else if (ok && len != 4 && len != 4 + 4 + 24 + 4 + 1 && len != 4 + 33 + 4 + 19 + 4 + 1)
            fail_msg("a body of %zu bytes accepted", len);
    }
    /* a length beyond the end */
    p.len = 0;
    put32(&p, 3);
    put32(&p, 0xffffffffu);
    assert_false(sftp_rename_parse_version(p.b, p.len, &found));
    /* a name without its data */
    p.len = 0;
    put32(&p, 3);
    put_string(&p, "posix-rename@openssh.com");
    assert_false(sftp_rename_parse_version(p.b, p.len, &found));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_found),
        cmocka_unit_test(test_absent),
        cmocka_unit_test(test_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
