/*
 * test_retention.c - covers src/repo/retention.c: which backups and WAL a
 * policy removes, for repositories built in memory: full backups, delta
 * chains, damaged sentinels, broken chains, equal start times, WAL names
 * that do not follow time, running backups, and the claims of backups
 * without a sentinel.
 */
#include "helpers.h"

#include <time.h>

#include "repo/retention.h"

#define MAX_BACKUPS 16
#define T0          1800000000 /* 2027-01-15 08:00:00 UTC */
#define HOUR        3600
#define DAY         (24 * HOUR)

/* A repository in memory: backups with short labels for the assertions. */
typedef struct fixture {
    retention_backup b[MAX_BACKUPS];
    const char *label[MAX_BACKUPS];
    size_t n;
    retention_running running[MAX_BACKUPS];
    size_t nrunning;
    retention_plan plan;
    char text[1024];
} fixture;

static void id_at(int64_t t, char kind, char out[BACKUP_ID_LEN + 1])
{
    layout_backup_id((time_t)t, out);
    out[BACKUP_ID_LEN - 1] = kind;
}

/* A backup that started at t (hours after T0), ran an hour, at WAL segment `segno` of `tli`. */
static retention_backup *add(fixture *f, const char *label, int64_t hours, unsigned tli,
                             unsigned segno, const char *parent_label)
{
    retention_backup *b = &f->b[f->n];

    assert_true(f->n < MAX_BACKUPS);
    memset(b, 0, sizeof(*b));
    b->start_time = T0 + hours * HOUR;
    b->stop_time = b->start_time + HOUR;
    b->start_lsn = (uint64_t)segno << 24;
    snprintf(b->start_wal, sizeof(b->start_wal), "%08X%08X%08X", tli, 0u, segno);
    id_at(b->start_time, parent_label ? 'D' : 'F', b->id);
    if (parent_label != NULL) {
        for (size_t i = 0; i < f->n; i++)
            if (strcmp(f->label[i], parent_label) == 0)
                memcpy(b->parent, f->b[i].id, sizeof(b->parent));
        assert_true(b->parent[0] != '\0');
    }
    f->label[f->n++] = label;
    return b;
}

static retention_backup *full(fixture *f, const char *label, int64_t hours, unsigned segno)
{
    return add(f, label, hours, 1, segno, NULL);
}

static retention_backup *delta(fixture *f, const char *label, int64_t hours, unsigned segno,
                               const char *parent)
{
    return add(f, label, hours, 1, segno, parent);
}

/* A backup whose sentinel cannot be read: only its id (its start time) is known. */
static void damaged(fixture *f, const char *label, int64_t hours)
{
    retention_backup *b = &f->b[f->n];

    memset(b, 0, sizeof(*b));
    id_at(T0 + hours * HOUR, 'F', b->id);
    b->damaged = true;
    f->label[f->n++] = label;
}

static void running(fixture *f, int64_t hours, char kind)
{
    id_at(T0 + hours * HOUR, kind, f->running[f->nrunning++].id);
}

/* A running delta whose claim names its parent (by label). */
static void running_on(fixture *f, int64_t hours, const char *parent_label)
{
    retention_running *r = &f->running[f->nrunning];

    running(f, hours, 'D');
    for (size_t i = 0; i < f->n; i++)
        if (strcmp(f->label[i], parent_label) == 0)
            memcpy(r->parent, f->b[i].id, sizeof(r->parent));
    assert_true(r->parent[0] != '\0');
}

static const char *label_of(const fixture *f, size_t i)
{
    return f->label[i];
}

/* Plan with `p`; true when it could be made. */
static bool plan(fixture *f, const retention_policy *p, pgd_error *err)
{
    return retention_plan_make(f->b, f->n, f->running, f->nrunning, p, &f->plan, err);
}

/* The labels removed, in removal order, separated by spaces ("" when none). */
static const char *removed(fixture *f)
{
    f->text[0] = '\0';
    for (size_t k = 0; k < f->plan.nremove; k++)
        snprintf(f->text + strlen(f->text), sizeof(f->text) - strlen(f->text), "%s%s", k ? " " : "",
                 label_of(f, f->plan.remove_order[k]));
    return f->text;
}

static const char *reason(const fixture *f, const char *label)
{
    for (size_t i = 0; i < f->n; i++)
        if (strcmp(f->label[i], label) == 0)
            return f->plan.decisions[i].reason;
    fail_msg("no backup %s", label);
    return NULL;
}

static void done(fixture *f)
{
    retention_plan_free(&f->plan);
}

static const retention_policy *keep_full(retention_policy *p, long n)
{
    memset(p, 0, sizeof(*p));
    p->retain_full = n;
    return p;
}

static const retention_policy *keep_since(retention_policy *p, int64_t t)
{
    memset(p, 0, sizeof(*p));
    p->retain_since_set = true;
    p->retain_since = t;
    return p;
}

static const retention_policy *named(retention_policy *p, const fixture *f, const char *label,
                                     bool with_dependents)
{
    memset(p, 0, sizeof(*p));
    for (size_t i = 0; i < f->n; i++)
        if (strcmp(f->label[i], label) == 0)
            p->backup_id = f->b[i].id;
    p->with_dependents = with_dependents;
    return p;
}

/* ---- --retain-full ---- */

static void test_retain_full_keeps_the_newest_n(void **state)
{
    fixture f = {0};
    retention_policy p;
    pgd_error err = {0};

    (void)state;
    full(&f, "F1", 0, 0x10);
    full(&f, "F2", 24, 0x20);
    full(&f, "F3", 48, 0x30);
    full(&f, "F4", 72, 0x40);
    full(&f, "F5", 96, 0x50);
    assert_true(plan(&f, keep_full(&p, 2), &err));
    assert_string_equal(removed(&f), "F3 F2 F1"); /* newest first */
    assert_string_equal(f.plan.wal_keep_from, "000000010000000000000040");
    assert_non_null(strstr(reason(&f, "F4"), "one of the 2 newest full backups"));
    assert_non_null(strstr(reason(&f, "F5"), "newest usable backup"));
    assert_non_null(strstr(reason(&f, "F1"), "expired: not among the 2 newest full backups"));
    done(&f);
}

static void test_retain_full_more_than_there_are_removes_nothing(void **state)
{
    fixture f = {0};
    retention_policy p;
    pgd_error err = {0};

    (void)state;
    full(&f, "F1", 0, 0x10);
    full(&f, "F2", 24, 0x20);
    assert_true(plan(&f, keep_full(&p, 5), &err));
    assert_string_equal(removed(&f), "");
    assert_string_equal(f.plan.wal_keep_from, "000000010000000000000010");
    done(&f);
}

static void test_retain_full_keeps_deltas_of_kept_fulls_and_drops_the_others(void **state)
{
    fixture f = {0};
    retention_policy p;
    pgd_error err = {0};

    (void)state;
    full(&f, "F1", 0, 0x10);
    delta(&f, "D1a", 6, 0x14, "F1");
    full(&f, "F2", 24, 0x20);
    delta(&f, "D2a", 30, 0x24, "F2");
    delta(&f, "D2b", 36, 0x28, "D2a");
    full(&f, "F3", 48, 0x30);
    delta(&f, "D3a", 54, 0x34, "F3");
    assert_true(plan(&f, keep_full(&p, 2), &err));
    assert_string_equal(removed(&f), "D1a F1"); /* the dependent before its parent */
    assert_non_null(strstr(reason(&f, "D2b"), "a kept full backup"));
    assert_string_equal(f.plan.wal_keep_from, "000000010000000000000020");
    done(&f);
}

static void test_newest_delta_keeps_its_whole_chain(void **state)
{
    fixture f = {0};
    retention_policy p;
    pgd_error err = {0};

    (void)state;
    full(&f, "F1", 0, 0x10);
    full(&f, "F2", 24, 0x20);
    full(&f, "F3", 48, 0x30);
    delta(&f, "D1", 60, 0x38, "F1"); /* the newest backup depends on the oldest full */
    assert_true(plan(&f, keep_full(&p, 1), &err));
    assert_string_equal(removed(&f), "F2");
    assert_non_null(strstr(reason(&f, "F1"), "parent of kept backup"));
    assert_string_equal(f.plan.wal_keep_from, "000000010000000000000010");
    done(&f);
}

static void test_input_order_does_not_matter(void **state)
{
    fixture f = {0};
    retention_policy p;
    pgd_error err = {0};

    (void)state;
    full(&f, "F3", 48, 0x30);
    full(&f, "F1", 0, 0x10);
    full(&f, "F5", 96, 0x50);
    full(&f, "F2", 24, 0x20);
    full(&f, "F4", 72, 0x40);
    assert_true(plan(&f, keep_full(&p, 2), &err));
    assert_string_equal(removed(&f), "F3 F2 F1");
    done(&f);
}

/* After pg_upgrade (or on a new timeline) WAL names need not follow time: time decides. */
static void test_order_is_by_start_time_not_wal_names(void **state)
{
    fixture f = {0};
    retention_policy p;
    pgd_error err = {0};

    (void)state;
    full(&f, "OLD1", 0, 0x900);
    full(&f, "OLD2", 24, 0x950);
    full(&f, "NEW", 48, 0x3); /* newest, lowest WAL name */
    assert_true(plan(&f, keep_full(&p, 1), &err));
    assert_string_equal(removed(&f), "OLD2 OLD1");
    assert_string_equal(f.plan.wal_keep_from, "000000010000000000000003");
    done(&f);
}

static void test_equal_start_times_are_ordered_by_lsn_then_id(void **state)
{
    fixture f = {0};
    retention_policy p;
    pgd_error err = {0};
    retention_backup *b;

    (void)state;
    full(&f, "A", 0, 0x20);
    b = full(&f, "B", 0, 0x10); /* same second, earlier LSN: older */
    /* different ids for the same second, as the claim of the next second gives */
    b->id[BACKUP_ID_LEN - 2] = '1';
    assert_true(plan(&f, keep_full(&p, 1), &err));
    assert_string_equal(removed(&f), "B");
    done(&f);

    memset(&f, 0, sizeof(f));
    full(&f, "A", 0, 0x20);
    b = full(&f, "B", 0, 0x20); /* same time and LSN: the id decides */
    b->id[BACKUP_ID_LEN - 2] = '1';
    assert_true(plan(&f, keep_full(&p, 1), &err));
    assert_string_equal(removed(&f), "A");
    done(&f);
}

/* ---- damaged sentinels and broken chains ---- */

static void test_damaged_backup_older_than_the_kept_ones_goes(void **state)
{
    fixture f = {0};
    retention_policy p;
    pgd_error err = {0};

    (void)state;
    full(&f, "F1", 0, 0x10);
    damaged(&f, "X2", 24);
    full(&f, "F3", 48, 0x30);
    full(&f, "F4", 72, 0x40);
    full(&f, "F5", 96, 0x50);
    assert_true(plan(&f, keep_full(&p, 2), &err));
    assert_string_equal(removed(&f), "F3 X2 F1");
    assert_non_null(strstr(reason(&f, "X2"), "damaged"));
    assert_non_null(strstr(reason(&f, "X2"), "started before"));
    done(&f);
}

static void test_damaged_backup_is_never_counted_as_kept(void **state)
{
    fixture f = {0};
    retention_policy p;
    pgd_error err = {0};

    (void)state;
    full(&f, "F1", 0, 0x10);
    full(&f, "F2", 24, 0x20);
    full(&f, "F3", 48, 0x30);
    damaged(&f, "X4", 72); /* the newest: --retain-full 1 still keeps F3 */
    assert_true(plan(&f, keep_full(&p, 1), &err));
    assert_string_equal(removed(&f), "F2 F1");
    assert_non_null(strstr(reason(&f, "X4"), "not counted as kept"));
    assert_non_null(strstr(reason(&f, "F3"), "newest usable"));
    assert_string_equal(f.plan.wal_keep_from, "000000010000000000000030");
    done(&f);
}

static void test_only_damaged_backups_removes_nothing(void **state)
{
    fixture f = {0};
    retention_policy p;
    pgd_error err = {0};

    (void)state;
    damaged(&f, "X1", 0);
    damaged(&f, "X2", 24);
    assert_true(plan(&f, keep_full(&p, 1), &err));
    assert_string_equal(removed(&f), "");
    assert_string_equal(f.plan.wal_keep_from, "");
    assert_non_null(strstr(f.plan.wal_note, "no readable backup is kept"));
    done(&f);
}

static void test_empty_repository(void **state)
{
    fixture f = {0};
    retention_policy p;
    pgd_error err = {0};

    (void)state;
    assert_true(plan(&f, keep_full(&p, 1), &err));
    assert_string_equal(removed(&f), "");
    assert_string_equal(f.plan.wal_keep_from, "");
    done(&f);
}

static void test_delta_of_a_damaged_parent_is_broken_and_kept_when_new(void **state)
{
    fixture f = {0};
    retention_policy p;
    pgd_error err = {0};
    retention_backup *d;

    (void)state;
    full(&f, "F0", 0, 0x10);
    damaged(&f, "X1", 24);
    d = delta(&f, "D1", 30, 0x24, "F0");
    memcpy(d->parent, f.b[1].id, sizeof(d->parent)); /* its parent is X1 */
    assert_true(plan(&f, keep_full(&p, 1), &err));
    assert_string_equal(removed(&f), "");
    assert_non_null(strstr(reason(&f, "D1"), "parent "));
    assert_non_null(strstr(reason(&f, "D1"), "is damaged"));
    assert_non_null(strstr(reason(&f, "X1"), "not counted as kept"));
    done(&f);
}

static void test_broken_chains_missing_parent_and_loops(void **state)
{
    fixture f = {0};
    retention_policy p;
    pgd_error err = {0};
    retention_backup *a, *b, *m;

    (void)state;
    full(&f, "F0", 0, 0x08);
    m = delta(&f, "M", 2, 0x09, "F0");
    snprintf(m->parent, sizeof(m->parent), "20000101T000000F"); /* not in the repository */
    a = delta(&f, "LA", 4, 0x0A, "F0");
    b = delta(&f, "LB", 6, 0x0B, "F0");
    memcpy(a->parent, b->id, sizeof(a->parent));
    memcpy(b->parent, a->id, sizeof(b->parent));
    full(&f, "F1", 24, 0x10);
    full(&f, "F2", 48, 0x20);
    assert_true(plan(&f, keep_full(&p, 1), &err));
    /* older than F2, the oldest kept: all go, the broken ones with their cause */
    assert_string_equal(removed(&f), "F1 LB LA M F0");
    assert_non_null(strstr(reason(&f, "M"), "parent 20000101T000000F is missing"));
    assert_non_null(strstr(reason(&f, "LA"), "parents loop"));
    done(&f);
}

/* ---- --retain-since ---- */

static void test_retain_since_keeps_the_backup_finished_by_then_and_after(void **state)
{
    fixture f = {0};
    retention_policy p;
    pgd_error err = {0};

    (void)state;
    full(&f, "F1", 0, 0x10);  /* stops at 1h */
    full(&f, "F2", 24, 0x20); /* stops at 25h */
    full(&f, "F3", 48, 0x30);
    full(&f, "F4", 72, 0x40);
    assert_true(plan(&f, keep_since(&p, T0 + 30 * HOUR), &err));
    assert_string_equal(removed(&f), "F1");
    assert_non_null(strstr(reason(&f, "F2"), "the newest backup that finished by"));
    assert_non_null(strstr(reason(&f, "F1"), "expired: not needed after"));
    assert_string_equal(f.plan.wal_keep_from, "000000010000000000000020");
    done(&f);

    /* at exactly its stop time a backup has finished by then */
    memset(&f, 0, sizeof(f));
    full(&f, "F1", 0, 0x10);
    full(&f, "F2", 24, 0x20);
    full(&f, "F3", 48, 0x30);
    assert_true(plan(&f, keep_since(&p, T0 + 25 * HOUR), &err));
    assert_string_equal(removed(&f), "F1");
    done(&f);
    /* a second earlier F2 had not finished: F1 is the one needed */
    assert_true(plan(&f, keep_since(&p, T0 + 25 * HOUR - 1), &err));
    assert_string_equal(removed(&f), "");
    done(&f);
}

static void test_retain_since_before_any_backup_finished_keeps_all(void **state)
{
    fixture f = {0};
    retention_policy p;
    pgd_error err = {0};

    (void)state;
    full(&f, "F1", 0, 0x10);
    full(&f, "F2", 24, 0x20);
    assert_true(plan(&f, keep_since(&p, T0 + HOUR - 1), &err));
    assert_string_equal(removed(&f), "");
    assert_non_null(strstr(reason(&f, "F1"), "every one is needed"));
    done(&f);
}

static void test_retain_since_anchor_that_is_a_delta_keeps_its_chain(void **state)
{
    fixture f = {0};
    retention_policy p;
    pgd_error err = {0};

    (void)state;
    full(&f, "F0", 0, 0x08);
    full(&f, "F1", 24, 0x10);
    delta(&f, "D1", 30, 0x14, "F1");
    full(&f, "F2", 48, 0x20);
    assert_true(plan(&f, keep_since(&p, T0 + 40 * HOUR), &err));
    assert_string_equal(removed(&f), "F0");
    assert_non_null(strstr(reason(&f, "F1"), "parent of kept backup"));
    done(&f);
}

/* A long backup that finished after TIME is not the anchor; one started later is. */
static void test_retain_since_overlapping_backups(void **state)
{
    fixture f = {0};
    retention_policy p;
    pgd_error err = {0};
    retention_backup *slow;

    (void)state;
    slow = full(&f, "SLOW", 0, 0x10);
    slow->stop_time = T0 + 20 * HOUR;
    full(&f, "QUICK", 2, 0x12); /* stops at 3h */
    full(&f, "F3", 24, 0x20);
    assert_true(plan(&f, keep_since(&p, T0 + 10 * HOUR), &err));
    assert_string_equal(removed(&f), "SLOW");
    done(&f);
}

static void test_retain_full_and_since_keep_what_either_keeps(void **state)
{
    fixture f = {0};
    retention_policy p = {0};
    pgd_error err = {0};

    (void)state;
    full(&f, "F1", 0, 0x10);
    full(&f, "F2", 24, 0x20);
    full(&f, "F3", 48, 0x30);
    full(&f, "F4", 72, 0x40);
    p.retain_full = 1;
    p.retain_since_set = true;
    p.retain_since = T0 + 30 * HOUR; /* keeps F2 on */
    assert_true(plan(&f, &p, &err));
    assert_string_equal(removed(&f), "F1");
    done(&f);
}

/* ---- --backup ID ---- */

static void test_backup_removes_exactly_one(void **state)
{
    fixture f = {0};
    retention_policy p;
    pgd_error err = {0};

    (void)state;
    full(&f, "F1", 0, 0x10);
    full(&f, "F2", 24, 0x20);
    full(&f, "F3", 48, 0x30);
    assert_true(plan(&f, named(&p, &f, "F2", false), &err));
    assert_string_equal(removed(&f), "F2");
    assert_string_equal(f.plan.wal_keep_from, "000000010000000000000010");
    done(&f);
    assert_true(plan(&f, named(&p, &f, "F1", false), &err));
    assert_string_equal(removed(&f), "F1");
    assert_string_equal(f.plan.wal_keep_from, "000000010000000000000020");
    done(&f);
}

static void test_backup_refuses_the_newest_and_unknown_ids(void **state)
{
    fixture f = {0};
    retention_policy p;
    pgd_error err = {0};

    (void)state;
    full(&f, "F1", 0, 0x10);
    full(&f, "F2", 24, 0x20);
    assert_false(plan(&f, named(&p, &f, "F2", false), &err));
    assert_non_null(strstr(err.msg, "is the newest usable backup"));
    err_clear(&err);
    memset(&p, 0, sizeof(p));
    p.backup_id = "20000101T000000F";
    assert_false(plan(&f, &p, &err));
    assert_string_equal(err.msg, "backup \"20000101T000000F\" not found");
    err_clear(&err);
    named(&p, &f, "F1", false);
    p.retain_full = 1;
    assert_false(plan(&f, &p, &err));
    assert_non_null(strstr(err.msg, "cannot be combined"));
}

static void test_backup_with_dependents_needs_the_option(void **state)
{
    fixture f = {0};
    retention_policy p;
    pgd_error err = {0};

    (void)state;
    full(&f, "F1", 0, 0x10);
    delta(&f, "D1", 6, 0x14, "F1");
    delta(&f, "D2", 12, 0x18, "D1");
    full(&f, "F2", 24, 0x20);
    assert_false(plan(&f, named(&p, &f, "F1", false), &err));
    assert_non_null(strstr(err.msg, "has 2 dependent backups"));
    assert_non_null(strstr(err.msg, "--with-dependents"));
    assert_non_null(strstr(err.msg, f.b[1].id));
    err_clear(&err);
    assert_true(plan(&f, named(&p, &f, "F1", true), &err));
    assert_string_equal(removed(&f), "D2 D1 F1");
    assert_non_null(strstr(reason(&f, "D2"), "named by --backup"));
    assert_string_equal(f.plan.wal_keep_from, "000000010000000000000020");
    done(&f);
    /* a delta in the middle: its own dependent goes with it, its parent stays */
    assert_true(plan(&f, named(&p, &f, "D1", true), &err));
    assert_string_equal(removed(&f), "D2 D1");
    done(&f);
}

static void test_backup_with_dependents_never_takes_the_newest(void **state)
{
    fixture f = {0};
    retention_policy p;
    pgd_error err = {0};

    (void)state;
    full(&f, "F1", 0, 0x10);
    delta(&f, "D1", 6, 0x14, "F1");
    assert_false(plan(&f, named(&p, &f, "F1", true), &err));
    assert_non_null(strstr(err.msg, "the newest usable backup"));
}

static void test_backup_may_name_a_damaged_one(void **state)
{
    fixture f = {0};
    retention_policy p;
    pgd_error err = {0};

    (void)state;
    full(&f, "F1", 0, 0x10);
    damaged(&f, "X2", 24);
    full(&f, "F3", 48, 0x30);
    assert_true(plan(&f, named(&p, &f, "X2", false), &err));
    assert_string_equal(removed(&f), "X2");
    done(&f);
}

/* ---- running backups ---- */

static void test_a_running_backup_keeps_all_wal(void **state)
{
    fixture f = {0};
    retention_policy p;
    pgd_error err = {0};

    (void)state;
    full(&f, "F1", 0, 0x10);
    full(&f, "F2", 24, 0x20);
    full(&f, "F3", 48, 0x30);
    running(&f, 50, 'F');
    assert_true(plan(&f, keep_full(&p, 1), &err));
    assert_string_equal(removed(&f), "F2 F1");
    assert_string_equal(f.plan.wal_keep_from, "");
    assert_non_null(strstr(f.plan.wal_note, f.running[0].id));
    assert_non_null(strstr(f.plan.wal_note, "may still be running"));
    done(&f);
}

static void test_a_running_delta_keeps_its_parent(void **state)
{
    fixture f = {0};
    retention_policy p;
    pgd_error err = {0};

    (void)state;
    full(&f, "F1", 0, 0x10);
    full(&f, "F2", 24, 0x20);
    full(&f, "F3", 48, 0x30);
    running(&f, 30, 'D'); /* started after F2, before F3: F2 is its parent */
    assert_true(plan(&f, keep_full(&p, 1), &err));
    assert_string_equal(removed(&f), "F1");
    assert_non_null(strstr(reason(&f, "F2"), "possible parent of running delta backup"));
    done(&f);
    assert_false(plan(&f, named(&p, &f, "F2", false), &err));
    assert_non_null(strstr(err.msg, "cannot be removed"));
    assert_non_null(strstr(err.msg, "running delta"));
}

/* --delta-from an older full: the parent the claim names is kept, not the newest before it. */
static void test_a_running_delta_keeps_the_parent_its_claim_names(void **state)
{
    fixture f = {0};
    retention_policy p;
    pgd_error err = {0};

    (void)state;
    full(&f, "F1", 0, 0x10);
    full(&f, "F2", 24, 0x20);
    full(&f, "F3", 48, 0x30);
    running_on(&f, 50, "F1"); /* started after F3, on F1 */
    assert_true(plan(&f, keep_full(&p, 1), &err));
    assert_string_equal(removed(&f), "F2");
    assert_non_null(strstr(reason(&f, "F1"), "parent of running backup "));
    assert_non_null(strstr(reason(&f, "F1"), f.running[0].id));
    assert_string_equal(f.plan.wal_keep_from, ""); /* and no WAL goes while it runs */
    done(&f);
    assert_true(plan(&f, keep_since(&p, T0 + 49 * HOUR + 1), &err));
    assert_string_equal(removed(&f), "F2");
    done(&f);
    /* --backup of that parent, with or without its dependents, is refused */
    assert_false(plan(&f, named(&p, &f, "F1", false), &err));
    assert_non_null(strstr(err.msg, "cannot be removed: it is the parent of running backup"));
    err_clear(&err);
    assert_false(plan(&f, named(&p, &f, "F1", true), &err));
    assert_non_null(strstr(err.msg, "parent of running backup"));
    err_clear(&err);
    assert_true(plan(&f, named(&p, &f, "F2", false), &err));
    assert_string_equal(removed(&f), "F2");
    done(&f);
}

/* A running delta on a delta keeps that delta's whole chain. */
static void test_a_running_delta_keeps_its_parents_chain(void **state)
{
    fixture f = {0};
    retention_policy p;
    pgd_error err = {0};

    (void)state;
    full(&f, "F1", 0, 0x10);
    delta(&f, "D1", 12, 0x18, "F1");
    full(&f, "F2", 24, 0x20);
    full(&f, "F3", 48, 0x30);
    running_on(&f, 50, "D1");
    assert_true(plan(&f, keep_full(&p, 1), &err));
    assert_string_equal(removed(&f), "F2");
    assert_non_null(strstr(reason(&f, "D1"), "parent of running backup"));
    assert_non_null(strstr(reason(&f, "F1"), "parent of kept backup"));
    done(&f);
    assert_false(plan(&f, named(&p, &f, "F1", true), &err));
    assert_non_null(strstr(err.msg, "cannot be removed"));
}

/* A claim naming a parent that is already gone pins nothing else. */
static void test_a_running_delta_of_a_parent_gone_pins_nothing(void **state)
{
    fixture f = {0};
    retention_policy p;
    pgd_error err = {0};

    (void)state;
    full(&f, "F0", -24, 0x08);
    full(&f, "F1", 0, 0x10);
    full(&f, "F2", 24, 0x20);
    running_on(&f, 30, "F0");
    f.n = 0; /* F0 is gone: rebuild without it */
    full(&f, "F1", 0, 0x10);
    full(&f, "F2", 24, 0x20);
    assert_true(plan(&f, keep_full(&p, 1), &err));
    assert_string_equal(removed(&f), "F1");
    done(&f);
}

/* ---- WAL ---- */

static void test_wal_removable_before_the_oldest_kept_start_on_every_timeline(void **state)
{
    const char *from = "000000010000000200000010";

    (void)state;
    assert_true(retention_wal_removable("00000001000000020000000F", from));
    assert_true(retention_wal_removable("000000010000000100000FFF", from));
    assert_false(retention_wal_removable("000000010000000200000010", from));
    assert_false(retention_wal_removable("000000010000000200000011", from));
    assert_false(retention_wal_removable("000000010000000300000000", from));
    /* other timelines: the same segment numbers */
    assert_true(retention_wal_removable("00000002000000020000000F", from));
    assert_false(retention_wal_removable("000000020000000200000010", from));
    assert_true(retention_wal_removable("00000000000000020000000F", from));
    /* partial segments and backup history files */
    assert_true(retention_wal_removable("00000001000000020000000F.partial", from));
    assert_false(retention_wal_removable("000000010000000200000010.partial", from));
    assert_true(retention_wal_removable("00000001000000020000000F.00000028.backup", from));
    assert_false(retention_wal_removable("000000010000000200000010.00000028.backup", from));
    /* timeline history files stay, and so does anything else */
    assert_false(retention_wal_removable("00000002.history", from));
    assert_false(retention_wal_removable("00000001.history", from));
    assert_false(retention_wal_removable("00000001000000020000000f", from));
    assert_false(retention_wal_removable("README", from));
    assert_false(retention_wal_removable("", from));
    assert_false(retention_wal_removable("00000001000000020000000F", ""));
}

static void test_id_time(void **state)
{
    int64_t t;

    (void)state;
    assert_true(retention_id_time("20270115T080000F", &t));
    assert_int_equal(t, T0);
    assert_true(retention_id_time("20270115T080001D", &t));
    assert_int_equal(t, T0 + 1);
    assert_false(retention_id_time("20270115T0800F", &t));
    assert_false(retention_id_time("2027011XT080000F", &t));
}

/* ---- claims of backups without a sentinel ---- */

static void test_claim_classification(void **state)
{
    retention_claim c = {0};
    char why[RETENTION_REASON_MAX];
    const int64_t age = DAY;

    (void)state;
    assert_int_equal(retention_claim_classify(&c, T0, age, why, sizeof(why)),
                     RETENTION_CLAIM_UNKNOWN);
    assert_non_null(strstr(why, "no claim"));
    c.present = true;
    assert_int_equal(retention_claim_classify(&c, T0, age, why, sizeof(why)),
                     RETENTION_CLAIM_UNKNOWN);
    /* a process that cannot be seen from here (another host): its lease, the age */
    c.readable = true;
    c.process = PROCESS_UNKNOWN;
    snprintf(c.id, sizeof(c.id), "20270115T080000F");
    snprintf(c.process_why, sizeof(c.process_why), "process 42 of host elsewhere");
    c.start_time = T0 - age + 1;
    assert_int_equal(retention_claim_classify(&c, T0, age, why, sizeof(why)),
                     RETENTION_CLAIM_RUNNING);
    assert_non_null(strstr(why, "by process 42 of host elsewhere, less than --garbage-age 1d00h"));
    assert_non_null(strstr(why, "delete --backup 20270115T080000F --garbage-age 0 removes it"));
    c.start_time = T0 - age;
    assert_int_equal(retention_claim_classify(&c, T0, age, why, sizeof(why)), RETENTION_CLAIM_DEAD);
    assert_non_null(strstr(why, "claimed 1d00h ago"));
    /* its process alive here: running, however old */
    c.process = PROCESS_ALIVE;
    assert_int_equal(retention_claim_classify(&c, T0, age, why, sizeof(why)),
                     RETENTION_CLAIM_RUNNING);
    /* its process gone (this host and boot): garbage at once, however young */
    c.process = PROCESS_GONE;
    c.start_time = T0 - 5;
    snprintf(c.process_why, sizeof(c.process_why), "process 42 of this host, which has ended");
    assert_int_equal(retention_claim_classify(&c, T0, age, why, sizeof(why)), RETENTION_CLAIM_DEAD);
    assert_non_null(strstr(why, "which has ended"));
    /* a claim from a clock ahead of ours is young */
    c.process = PROCESS_UNKNOWN;
    c.start_time = T0 + HOUR;
    assert_int_equal(retention_claim_classify(&c, T0, age, why, sizeof(why)),
                     RETENTION_CLAIM_RUNNING);
    /* --garbage-age 0: everything not alive is dead */
    c.start_time = T0;
    assert_int_equal(retention_claim_classify(&c, T0, 0, why, sizeof(why)), RETENTION_CLAIM_DEAD);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_retain_full_keeps_the_newest_n),
        cmocka_unit_test(test_retain_full_more_than_there_are_removes_nothing),
        cmocka_unit_test(test_retain_full_keeps_deltas_of_kept_fulls_and_drops_the_others),
        cmocka_unit_test(test_newest_delta_keeps_its_whole_chain),
        cmocka_unit_test(test_input_order_does_not_matter),
        cmocka_unit_test(test_order_is_by_start_time_not_wal_names),
        cmocka_unit_test(test_equal_start_times_are_ordered_by_lsn_then_id),
        cmocka_unit_test(test_damaged_backup_older_than_the_kept_ones_goes),
        cmocka_unit_test(test_damaged_backup_is_never_counted_as_kept),
        cmocka_unit_test(test_only_damaged_backups_removes_nothing),
        cmocka_unit_test(test_empty_repository),
        cmocka_unit_test(test_delta_of_a_damaged_parent_is_broken_and_kept_when_new),
        cmocka_unit_test(test_broken_chains_missing_parent_and_loops),
        cmocka_unit_test(test_retain_since_keeps_the_backup_finished_by_then_and_after),
        cmocka_unit_test(test_retain_since_before_any_backup_finished_keeps_all),
        cmocka_unit_test(test_retain_since_anchor_that_is_a_delta_keeps_its_chain),
        cmocka_unit_test(test_retain_since_overlapping_backups),
        cmocka_unit_test(test_retain_full_and_since_keep_what_either_keeps),
        cmocka_unit_test(test_backup_removes_exactly_one),
        cmocka_unit_test(test_backup_refuses_the_newest_and_unknown_ids),
        cmocka_unit_test(test_backup_with_dependents_needs_the_option),
        cmocka_unit_test(test_backup_with_dependents_never_takes_the_newest),
        cmocka_unit_test(test_backup_may_name_a_damaged_one),
        cmocka_unit_test(test_a_running_backup_keeps_all_wal),
        cmocka_unit_test(test_a_running_delta_keeps_its_parent),
        cmocka_unit_test(test_a_running_delta_keeps_the_parent_its_claim_names),
        cmocka_unit_test(test_a_running_delta_keeps_its_parents_chain),
        cmocka_unit_test(test_a_running_delta_of_a_parent_gone_pins_nothing),
        cmocka_unit_test(test_wal_removable_before_the_oldest_kept_start_on_every_timeline),
        cmocka_unit_test(test_id_time),
        cmocka_unit_test(test_claim_classification),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
