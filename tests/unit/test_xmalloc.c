/*
 * test_xmalloc.c - covers src/util/xmalloc.c: each call gives usable memory
 * (a size of 0 too), and a request the system refuses ends the process with
 * one "out of memory" line and the status the command set: 1 by default, 254
 * for wal-fetch. The failures run in a forked child, whose standard error
 * and exit status the parent reads.
 */
#include "helpers.h"

#include <stdint.h>

#include "util/xmalloc.h"

/* more than any address space holds (4 EiB): glibc, ASan and valgrind all refuse it */
#define XMALLOC_TEST_HUGE ((size_t)1 << 62)

/* ASan aborts on such a request unless told to return NULL as malloc does */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "allocator_may_return_null=1";
}

static void test_xmalloc_gives_usable_memory(void **state)
{
    char *p = xmalloc(100), *z = xmalloc(0);

    (void)state;
    memset(p, 'x', 100);
    assert_non_null(z);
    free(p);
    free(z);
}

static void test_xcalloc_gives_zeroed_memory(void **state)
{
    unsigned char *p = xcalloc(64, 4), *z = xcalloc(0, 8);

    (void)state;
    for (size_t i = 0; i < 256; i++)
        assert_int_equal(p[i], 0);
    assert_non_null(z);
    free(p);
    free(z);
}

static void test_xrealloc_keeps_the_content(void **state)
{
    char *p = xrealloc(NULL, 4);

    (void)state;
    memcpy(p, "abc", 4);
    p = xrealloc(p, 1 << 20);
    assert_string_equal(p, "abc");
    p = xrealloc(p, 0); /* not freed: one byte is kept */
    assert_non_null(p);
    free(p);
}

static void test_xstrdup_and_xstrndup_copy(void **state)
{
    char *a = xstrdup("segment"), *b = xstrndup("segment", 3), *c = xstrndup("ab", 10);

    (void)state;
    assert_string_equal(a, "segment");
    assert_string_equal(b, "seg");
    assert_string_equal(c, "ab");
    free(a);
    free(b);
    free(c);
}

static char *xmalloc_test_vformat(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xmalloc_test_vformat(const char *fmt, ...)
{
    va_list ap;
    char *text;

    va_start(ap, fmt);
    text = xvasprintf(fmt, ap);
    va_end(ap);
    return text;
}

static void test_xasprintf_formats(void **state)
{
    char *s = xasprintf("%s/%08X", "pg_wal", 42u), *e = xasprintf("%s", "");
    char *v = xmalloc_test_vformat("%d-%s", 7, "seven");

    (void)state;
    assert_string_equal(s, "pg_wal/0000002A");
    assert_string_equal(e, "");
    assert_string_equal(v, "7-seven");
    free(s);
    free(e);
    free(v);
}

/* the block a failing xrealloc keeps: reachable, so valgrind counts no leak in the child */
static void *volatile xmalloc_test_kept;

typedef enum { XMALLOC_TEST_MALLOC, XMALLOC_TEST_CALLOC, XMALLOC_TEST_REALLOC } xmalloc_test_call;

/*
 * Run the call in a child with `status` set (0: left at its default); its
 * exit status is returned and what it printed to standard error is in out.
 */
static int xmalloc_test_fail_in_child(xmalloc_test_call call, int status, char *out, size_t len)
{
    int pipefd[2], wstatus;
    size_t got = 0;
    ssize_t n;
    pid_t pid;

    assert_int_equal(pipe(pipefd), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        void *p = NULL;

        dup2(pipefd[1], STDERR_FILENO);
        close(pipefd[0]);
        if (status != 0)
            xmalloc_set_exit_status(status);
        if (call == XMALLOC_TEST_MALLOC)
            p = xmalloc(XMALLOC_TEST_HUGE);
        else if (call == XMALLOC_TEST_CALLOC)
            p = xcalloc(SIZE_MAX / 4, 8); /* n * size overflows */
        else
            p = xrealloc(xmalloc_test_kept = xmalloc(16), XMALLOC_TEST_HUGE);
        free(p);
        _exit(100); /* the call came back: the test fails */
    }
    close(pipefd[1]);
    while (got + 1 < len && (n = read(pipefd[0], out + got, len - 1 - got)) > 0)
        got += (size_t)n;
    out[got] = '\0';
    close(pipefd[0]);
    assert_int_equal(waitpid(pid, &wstatus, 0), pid);
    assert_true(WIFEXITED(wstatus));
    return WEXITSTATUS(wstatus);
}

/*
 * The line xmalloc prints for `size`, alone on its line (valgrind may add
 * its own warning about the request on the same standard error).
 */
static void xmalloc_test_assert_message(const char *out, size_t size)
{
    char line[128];
    const char *at;

    snprintf(line, sizeof(line), "pgdirect: error: out of memory (could not allocate %zu bytes)\n",
             size);
    at = strstr(out, line);
    assert_non_null(at);
    assert_true(at == out || at[-1] == '\n');
    assert_null(strstr(at + strlen(line), "pgdirect:")); /* one line, nothing after it */
}

static void test_failure_exits_1_by_default(void **state)
{
    char out[1024];

    (void)state;
    assert_int_equal(xmalloc_test_fail_in_child(XMALLOC_TEST_MALLOC, 0, out, sizeof(out)), 1);
    xmalloc_test_assert_message(out, XMALLOC_TEST_HUGE);
}

static void test_failure_exits_with_the_status_set(void **state)
{
    char out[1024];

    (void)state;
    assert_int_equal(xmalloc_test_fail_in_child(XMALLOC_TEST_MALLOC, 254, out, sizeof(out)), 254);
    xmalloc_test_assert_message(out, XMALLOC_TEST_HUGE);
    assert_int_equal(xmalloc_test_fail_in_child(XMALLOC_TEST_REALLOC, 254, out, sizeof(out)), 254);
    xmalloc_test_assert_message(out, XMALLOC_TEST_HUGE);
}

static void test_xcalloc_overflow_exits(void **state)
{
    char out[1024];

    (void)state;
    assert_int_equal(xmalloc_test_fail_in_child(XMALLOC_TEST_CALLOC, 0, out, sizeof(out)), 1);
    xmalloc_test_assert_message(out, SIZE_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_xmalloc_gives_usable_memory),
        cmocka_unit_test(test_xcalloc_gives_zeroed_memory),
        cmocka_unit_test(test_xrealloc_keeps_the_content),
        cmocka_unit_test(test_xstrdup_and_xstrndup_copy),
        cmocka_unit_test(test_xasprintf_formats),
        cmocka_unit_test(test_failure_exits_1_by_default),
        cmocka_unit_test(test_failure_exits_with_the_status_set),
        cmocka_unit_test(test_xcalloc_overflow_exits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
