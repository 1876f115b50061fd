/*
 * test_repo_lock.c - covers src/repo/repo_lock.c on a local repository:
 * one holder at a time (also when several processes race for it), the
 * holder named to the others, expired and released leases taken over,
 * a holder that lost its lease told so, and an unreadable lock refused.
 */
#include "helpers.h"

#include <sys/wait.h>
#include <time.h>

#include "repo/repo_lock.h"

#define RACERS 4

static bool exists(storage *repo, const char *path)
{
    pgd_error err = {0};
    bool e = false;

    assert_true(storage_exists(repo, path, &e, &err));
    return e;
}

static void put(storage *repo, const char *path, const char *text)
{
    pgd_error err = {0};

    assert_true(storage_put(repo, path, text, strlen(text), 0, &err));
}

static char *get(storage *repo, const char *path)
{
    pgd_error err = {0};
    bool missing = false;
    char *text;
    size_t len;

    assert_true(storage_get(repo, path, &text, &len, &missing, &err));
    return text;
}

static void test_one_holder_and_the_others_told_who(void **state)
{
    char *dir = test_tmpdir(), host[256] = "", pid[32];
    storage *repo = repo_in(dir);
    pgd_error err = {0};
    repo_lock *a, *b;

    (void)state;
    gethostname(host, sizeof(host) - 1);
    a = repo_lock_acquire(repo, "delete", REPO_LOCK_LEASE_S, &err);
    assert_non_null(a);
    assert_true(exists(repo, "lock/delete.0000000001.json"));
    b = repo_lock_acquire(repo, "delete", REPO_LOCK_LEASE_S, &err);
    assert_null(b);
    assert_non_null(strstr(err.msg, "is locked by another delete run"));
    assert_non_null(strstr(err.msg, host));
    snprintf(pid, sizeof(pid), "pid %ld", (long)getpid());
    assert_non_null(strstr(err.msg, pid));
    /* another lease name is another lock */
    err_clear(&err);
    b = repo_lock_acquire(repo, "other", REPO_LOCK_LEASE_S, &err);
    assert_non_null(b);
    assert_true(repo_lock_release(b, &err));
    assert_true(repo_lock_keep(a, &err));
    assert_true(repo_lock_release(a, &err));
    storage_free(repo);
    rm_rf(dir);
}

static void test_released_lease_is_taken_and_old_generations_pruned(void **state)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    pgd_error err = {0};
    repo_lock *a;
    char *text;

    (void)state;
    a = repo_lock_acquire(repo, "delete", REPO_LOCK_LEASE_S, &err);
    assert_true(repo_lock_release(a, &err));
    text = get(repo, "lock/delete.0000000001.json");
    assert_non_null(strstr(text, "\"released\": true"));
    free(text);
    a = repo_lock_acquire(repo, "delete", REPO_LOCK_LEASE_S, &err);
    assert_non_null(a);
    assert_true(exists(repo, "lock/delete.0000000002.json"));
    assert_false(exists(repo, "lock/delete.0000000001.json"));
    assert_true(repo_lock_release(a, &err));
    /* the highest generation stays, released: generations only grow */
    assert_true(exists(repo, "lock/delete.0000000002.json"));
    storage_free(repo);
    rm_rf(dir);
}

static void test_expired_lease_is_taken_over(void **state)
{
    char *dir = test_tmpdir(), text[512];
    storage *repo = repo_in(dir);
    pgd_error err = {0};
    repo_lock *a;

    (void)state;
    snprintf(text, sizeof(text),
             "{\"lock\": \"delete\", \"generation\": 7, \"host\": \"elsewhere\", \"pid\": 1, "
             "\"token\": \"00\", \"expires\": %lld, \"released\": false}",
             (long long)time(NULL) - 1);
    put(repo, "lock/delete.0000000007.json", text);
    a = repo_lock_acquire(repo, "delete", REPO_LOCK_LEASE_S, &err);
    assert_non_null(a);
    assert_true(exists(repo, "lock/delete.0000000008.json"));
    assert_false(exists(repo, "lock/delete.0000000007.json"));
    assert_true(repo_lock_release(a, &err));

    /* the same lease, still valid, is refused */
    snprintf(text, sizeof(text),
             "{\"lock\": \"delete\", \"generation\": 9, \"host\": \"elsewhere\", \"pid\": 1, "
             "\"token\": \"00\", \"expires\": %lld, \"released\": false}",
             (long long)time(NULL) + 300);
    put(repo, "lock/delete.0000000009.json", text);
    assert_null(repo_lock_acquire(repo, "delete", REPO_LOCK_LEASE_S, &err));
    assert_non_null(strstr(err.msg, "host elsewhere, pid 1"));
    storage_free(repo);
    rm_rf(dir);
}

static void test_holder_that_lost_its_lease_stops(void **state)
{
    char *dir = test_tmpdir(), *text;
    storage *repo = repo_in(dir);
    pgd_error err = {0};
    repo_lock *a;

    (void)state;
    a = repo_lock_acquire(repo, "delete", REPO_LOCK_LEASE_S, &err);
    assert_non_null(a);
    /* another run took over (as it would after our lease ran out) */
    put(repo, "lock/delete.0000000002.json",
        "{\"lock\": \"delete\", \"generation\": 2, \"host\": \"h\", \"pid\": 2, \"token\": \"11\", "
        "\"expires\": 99999999999, \"released\": false}");
    assert_false(repo_lock_keep(a, &err));
    assert_non_null(strstr(err.msg, "another run took it over"));
    err_clear(&err);
    assert_true(repo_lock_release(a, &err)); /* says so, touches nothing */
    text = get(repo, "lock/delete.0000000002.json");
    assert_non_null(strstr(text, "\"released\": false"));
    free(text);
    storage_free(repo);
    rm_rf(dir);
}

/* A lease shorter than the clock margin has run out for its holder at once. */
static void test_lease_runs_out_before_its_expiry_by_the_clock_margin(void **state)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    pgd_error err = {0};
    repo_lock *a;

    (void)state;
    a = repo_lock_acquire(repo, "delete", REPO_LOCK_CLOCK_MARGIN_S / 2, &err);
    assert_non_null(a);
    assert_false(repo_lock_keep(a, &err));
    assert_non_null(strstr(err.msg, "ran out"));
    err_clear(&err);
    assert_true(repo_lock_release(a, &err));
    storage_free(repo);
    rm_rf(dir);
}

static void test_unreadable_lock_is_refused(void **state)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    pgd_error err = {0};

    (void)state;
    put(repo, "lock/delete.0000000003.json", "{not json");
    assert_null(repo_lock_acquire(repo, "delete", REPO_LOCK_LEASE_S, &err));
    assert_non_null(strstr(err.msg, "lock/delete.0000000003.json"));
    assert_non_null(strstr(err.msg, "is unreadable"));
    storage_free(repo);
    rm_rf(dir);
}

/*
 * Processes released together: exactly one takes the lease. Each reports
 * its result, and only when all have tried does the winner release it.
 */
static void test_racing_processes_one_wins(void **state)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    int go[2], result[2], done[2], winners = 0;
    pid_t pids[RACERS];

    (void)state;
    assert_int_equal(pipe(go), 0);
    assert_int_equal(pipe(result), 0);
    assert_int_equal(pipe(done), 0);
    for (int i = 0; i < RACERS; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            pgd_error err = {0};
            repo_lock *l;
            char c;
            close(go[1]);
            close(done[1]);
            close(result[0]);
            if (read(go[0], &c, 1) != 0) /* EOF: all start together */
                _exit(2);
            l = repo_lock_acquire(repo, "delete", REPO_LOCK_LEASE_S, &err);
            c = l != NULL ? 'W' : 'L';
            if (write(result[1], &c, 1) != 1 || read(done[0], &c, 1) != 0)
                _exit(2);
            repo_lock_release(l, &err);
            storage_free(repo);
            free(dir);
            _exit(0);
        }
    }
    close(go[0]);
    close(go[1]);
    close(result[1]);
    for (int i = 0; i < RACERS; i++) {
        char c;
        assert_int_equal(read(result[0], &c, 1), 1);
        winners += c == 'W';
    }
    close(done[0]);
    close(done[1]);
    close(result[0]);
    for (int i = 0; i < RACERS; i++) {
        int status;
        assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
    assert_int_equal(winners, 1);
    storage_free(repo);
    rm_rf(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_holder_and_the_others_told_who),
        cmocka_unit_test(test_released_lease_is_taken_and_old_generations_pruned),
        cmocka_unit_test(test_expired_lease_is_taken_over),
        cmocka_unit_test(test_holder_that_lost_its_lease_stops),
        cmocka_unit_test(test_lease_runs_out_before_its_expiry_by_the_clock_margin),
        cmocka_unit_test(test_unreadable_lock_is_refused),
        cmocka_unit_test(test_racing_processes_one_wins),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
