/*
 * test_piece_upload.c - covers src/storage/http/piece_upload.c, the
 * buffers and upload threads under S3's parts and Azure's blocks, with a
 * recording `send` in place of the store: every piece sent once, numbered
 * from 1, with the bytes written in order; sizes that grow (the buffers
 * grown with them: an overrun shows under ASan and valgrind, which
 * make check runs the unit tests with); the store's limit on pieces; a
 * failing begin or send told, by write or by finish, and nothing sent
 * after a failure.
 */
#include "helpers.h"

#include <pthread.h>
#include <unistd.h>

#include "storage/http/piece_upload.h"
#include "util/xmalloc.h"

#define MAX_SENT 64

typedef struct recorder {
    pthread_mutex_t lock;
    unsigned begins;
    unsigned sent;             /* pieces sent */
    unsigned fail_number;      /* this piece's send fails (0: none) */
    bool fail_begin;           /* begin fails */
    piece_upload *wait_queued; /* the failing send first waits for a piece queued behind it */
    size_t len[MAX_SENT + 1];  /* by number */
    char *data[MAX_SENT + 1];  /* by number */
    unsigned sends[MAX_SENT + 1];
} recorder;

static bool rec_begin(void *owner, pgd_error *err)
{
    recorder *r = owner;

    r->begins++;
    return !r->fail_begin || err_set(err, "begin refused");
}

static bool rec_send(void *owner, const upload_piece *p, pgd_error *err)
{
    recorder *r = owner;
    bool ok = true;

    pthread_mutex_lock(&r->lock);
    assert_true(p->number >= 1 && p->number <= MAX_SENT);
    r->sends[p->number]++;
    r->sent++;
    if (p->number == r->fail_number) {
        for (int i = 0; r->wait_queued != NULL && i < 5000; i++) {
            bool queued;
            pthread_mutex_lock(&r->wait_queued->lock);
            queued = r->wait_queued->qlen > 0;
            pthread_mutex_unlock(&r->wait_queued->lock);
            if (queued)
                break;
            usleep(1000);
        }
        ok = err_set(err, "piece %u refused", p->number);
    } else {
        r->len[p->number] = p->len;
        r->data[p->number] = xmalloc(p->len);
        memcpy(r->data[p->number], p->buf, p->len);
    }
    pthread_mutex_unlock(&r->lock);
    return ok;
}

static const piece_upload_ops rec_ops = {rec_begin, rec_send};

static void rec_init(recorder *r)
{
    memset(r, 0, sizeof(*r));
    pthread_mutex_init(&r->lock, NULL);
}

static void rec_free(recorder *r)
{
    for (unsigned i = 0; i <= MAX_SENT; i++)
        free(r->data[i]);
    pthread_mutex_destroy(&r->lock);
}

/* A recorder, and an upload into it (the recorder's fields may be set after: they are read at
 * sends). */
static void rec_start(recorder *r, piece_upload *u, const char *path,
                      const piece_upload_limits *lim)
{
    rec_init(r);
    piece_upload_init(u, &rec_ops, r, path, lim);
}

static void rec_end(recorder *r, piece_upload *u)
{
    piece_upload_free(u);
    rec_free(r);
}

static const piece_upload_limits small = {
    .size = 1000, .max_size = 4000, .per_size = 2, .max_pieces = 20, .threads = 2, .unit = "parts"};

static void test_sizes(void **state)
{
    (void)state;
    assert_int_equal(piece_upload_size(1000, 1, 2, 4000), 1000);
    assert_int_equal(piece_upload_size(1000, 2, 2, 4000), 1000);
    assert_int_equal(piece_upload_size(1000, 3, 2, 4000), 2000);
    assert_int_equal(piece_upload_size(1000, 5, 2, 4000), 4000);
    assert_int_equal(piece_upload_size(1000, 99, 2, 4000), 4000);
    assert_int_equal(piece_upload_size(5000, 1, 2, 4000), 4000);
}

/* Less than a piece: never begun, the whole object is the current buffer. */
static void test_one_request(void **state)
{
    recorder r;
    piece_upload u;
    pgd_error err = {0};

    (void)state;
    rec_start(&r, &u, "obj", &small);
    assert_true(piece_upload_write(&u, "abc", 3, &err));
    assert_false(u.begun);
    assert_int_equal(u.current->len, 3);
    assert_memory_equal(u.current->buf, "abc", 3);
    assert_int_equal(r.begins, 0);
    assert_int_equal(r.sent, 0);
    rec_end(&r, &u);
}

/* 9,500 bytes in pieces of 1000, 1000, 2000, 2000, 4000 (the last 500 short). */
static void test_pieces_in_order(void **state)
{
    static const size_t expect[] = {0, 1000, 1000, 2000, 2000, 3500};
    unsigned char *data = xmalloc(9500);
    recorder r;
    piece_upload u;
    pgd_error err = {0};
    size_t at = 0;

    (void)state;
    fill_pattern(data, 9500, 7);
    rec_start(&r, &u, "obj", &small);
    for (size_t step = 1; at < 9500; step = step * 3 % 1777 + 1) { /* uneven writes */
        size_t n = step < 9500 - at ? step : 9500 - at;
        assert_true(piece_upload_write(&u, data + at, n, &err));
        at += n;
    }
    assert_true(u.begun);
    assert_true(piece_upload_finish(&u, &err));
    assert_int_equal(u.count, 5);
    assert_int_equal(r.begins, 1);
    assert_int_equal(r.sent, 5);
    at = 0;
    for (unsigned i = 1; i <= 5; i++) {
        assert_int_equal(r.sends[i], 1);
        assert_int_equal(r.len[i], expect[i]);
        assert_memory_equal(r.data[i], data + at, expect[i]);
        at += expect[i];
    }
    rec_end(&r, &u);
    free(data);
}

/* An object of exactly two pieces: the empty buffer after them is not a third. */
static void test_exact_end(void **state)
{
    char data[2000] = {0};
    recorder r;
    piece_upload u;
    pgd_error err = {0};

    (void)state;
    rec_start(&r, &u, "obj", &small);
    assert_true(piece_upload_write(&u, data, sizeof(data), &err));
    assert_true(piece_upload_finish(&u, &err));
    assert_int_equal(u.count, 2);
    assert_int_equal(r.sent, 2);
    rec_end(&r, &u);
}

static void test_begin_fails(void **state)
{
    char data[1500] = {0};
    recorder r;
    piece_upload u;
    pgd_error err = {0};

    (void)state;
    rec_start(&r, &u, "obj", &small);
    r.fail_begin = true;
    assert_false(piece_upload_write(&u, data, sizeof(data), &err));
    assert_string_equal(err.msg, "begin refused");
    assert_int_equal(r.sent, 0);
    rec_end(&r, &u);
}

/*
 * One upload thread; piece 1 fails once piece 2 waits behind it: piece 2
 * is not sent, and the failure comes back from the write that wants a
 * buffer, or from finish.
 */
static void test_send_fails(void **state)
{
    piece_upload_limits lim = small;
    char data[1000] = {0};
    recorder r;
    piece_upload u;
    pgd_error err = {0};
    bool ok = true;

    (void)state;
    lim.threads = 1;
    rec_start(&r, &u, "obj", &lim);
    r.fail_number = 1;
    r.wait_queued = &u;
    for (int i = 0; ok && i < 10; i++)
        ok = piece_upload_write(&u, data, sizeof(data), &err);
    if (ok)
        ok = piece_upload_finish(&u, &err);
    assert_false(ok);
    assert_string_equal(err.msg, "piece 1 refused");
    piece_upload_stop(&u);
    assert_int_equal(r.sends[1], 1);
    assert_int_equal(r.sends[2], 0);
    assert_int_equal(r.sent, 1);
    rec_end(&r, &u);
}

/* The last piece, queued by finish, fails: finish says so (S3 must abort, not complete). */
static void test_finish_fails(void **state)
{
    char data[1500] = {0};
    recorder r;
    piece_upload u;
    pgd_error err = {0};

    (void)state;
    rec_start(&r, &u, "obj", &small);
    r.fail_number = 2;
    assert_true(piece_upload_write(&u, data, sizeof(data), &err));
    assert_false(piece_upload_finish(&u, &err));
    assert_string_equal(err.msg, "piece 2 refused");
    assert_int_equal(u.count, 2);
    assert_int_equal(r.sends[1], 1);
    assert_int_equal(r.sends[2], 1);
    rec_end(&r, &u);
}

/*
 * The store's limit on pieces: the write that would begin piece 4 of 3
 * fails, named with the object and the unit, the two before it pass,
 * finish does not complete what the limit refused, and no piece past the
 * limit is sent.
 */
static void test_too_many_pieces(void **state)
{
    piece_upload_limits lim = small;
    char data[1000] = {0};
    recorder r;
    piece_upload u;
    pgd_error err = {0};

    (void)state;
    lim.max_pieces = 3;
    lim.per_size = 100; /* no growth: 1000 a piece */
    rec_start(&r, &u, "big.tar", &lim);
    assert_true(piece_upload_write(&u, data, sizeof(data), &err));
    assert_true(piece_upload_write(&u, data, sizeof(data), &err));
    assert_false(piece_upload_write(&u, data, sizeof(data), &err));
    assert_string_equal(err.msg, "\"big.tar\" would need more than 3 parts");
    memset(&err, 0, sizeof(err));
    assert_false(piece_upload_finish(&u, &err));
    assert_string_equal(err.msg, "\"big.tar\" would need more than 3 parts");
    /* pieces queued when the limit was reached may be dropped, as after any failure */
    assert_true(r.sent <= 3);
    for (unsigned i = 1; i <= MAX_SENT; i++)
        assert_true(r.sends[i] <= (i <= 3 ? 1u : 0u));
    rec_end(&r, &u);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),           cmocka_unit_test(test_one_request),
        cmocka_unit_test(test_pieces_in_order), cmocka_unit_test(test_exact_end),
        cmocka_unit_test(test_begin_fails),     cmocka_unit_test(test_send_fails),
        cmocka_unit_test(test_finish_fails),    cmocka_unit_test(test_too_many_pieces),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
