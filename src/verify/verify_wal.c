/*
 * verify_wal.c - the WAL a backup needs, checked in the repository (see
 * verify_wal.h): the timeline's segments listed once, each segment from
 * the backup's start on read and checked as wal-fetch would check it
 * (pg/wal_segment.h), the segment size taken from the segments
 * themselves.
 */
#define _GNU_SOURCE
#include "verify/verify_wal.h"

#include <inttypes.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compress/compress.h"
#include "pg/lsn.h"
#include "pg/wal_name.h"
#include "pg/wal_segment.h"
#include "repo/layout.h"
#include "repo/backup_read.h"
#include "restore/timeline.h"
#include "util/work_pool.h"
#include "util/xmalloc.h"

#define VERIFY_CHUNK (1024 * 1024)
/* PostgreSQL's default segment size, taken when nothing else tells the size */
#define VERIFY_DEFAULT_SEG_SIZE (16u * 1024 * 1024)
#define VERIFY_SEG_HEADER_LEN   (WAL_PAGE_SEG_SIZE_OFF + 4) /* through xlp_seg_size */
/* window segments read per batch, per thread: enough to keep each busy between batches */
#define VERIFY_WAL_BATCH_PER_THREAD 8

typedef struct verify_wal_list {
    uint32_t tli;
    uint64_t seg_size;
    char **names; /* object names of segments on the timeline, as listed */
    size_t n, cap;
} verify_wal_list;

/*
 * A timeline of the way recovery follows after the stop (restore/timeline.h),
 * its segments listed, read from first_seg on (the segment where it begins
 * is read from it, as PostgreSQL does). The backup's own comes first.
 */
typedef struct verify_wal_leg {
    verify_wal_list list;
    uint64_t first_seg;
} verify_wal_leg;

/* The legs of the way after the stop, the backup's own first. */
typedef struct verify_wal_way {
    verify_wal_leg *legs;
    size_t n;
} verify_wal_way;

/* A stored segment: 24 hex digits and a codec suffix, nothing else (not .partial, not a temp). */
static bool verify_wal_is_segment_object(const char *name)
{
    const char *suffix = name + WAL_FILE_NAME_LEN;

    if (!wal_name_starts_with_segment(name))
        return false;
    return suffix[0] == '\0' || strcmp(suffix, compress_suffix(COMPRESS_LZ4)) == 0 ||
           strcmp(suffix, compress_suffix(COMPRESS_ZSTD)) == 0;
}

static bool verify_wal_list_cb(void *arg, const char *name, uint64_t size, bool is_dir,
                               pgd_error *err)
{
    verify_wal_list *l = arg;

    (void)size;
    (void)err;
    if (is_dir || !verify_wal_is_segment_object(name))
        return true;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        l->names = xrealloc(l->names, cap * sizeof(*l->names));
        l->cap = cap;
    }
    l->names[l->n++] = xstrdup(name);
    return true;
}

/* The segment number of a segment name checked before, its last part as it is. */
static uint64_t verify_wal_segno(const char *name, uint64_t seg_size)
{
    uint32_t tli = 0, log = 0, seg = 0;

    wal_name_parts(name, &tli, &log, &seg);
    return (uint64_t)log * wal_name_segs_per_log(seg_size) + seg;
}

static void verify_wal_seg_name(uint32_t tli, uint64_t segno, uint64_t seg_size,
                                char out[VERIFY_WAL_NAME])
{
    if (!wal_name_from_segno(tli, segno, seg_size, out))
        out[0] = '\0';
}

/* The stored object of segment number `segno`, or NULL. Names sort as segment numbers do. */
static const char *verify_wal_object(const verify_wal_list *l, uint64_t segno)
{
    char want[VERIFY_WAL_NAME];
    size_t lo = 0, hi = l->n;

    verify_wal_seg_name(l->tli, segno, l->seg_size, want);
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strncmp(l->names[mid], want, WAL_FILE_NAME_LEN);
        if (c == 0)
            return l->names[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* The leg segment `segno` is read from: the last one that begins at or before it. */
static const verify_wal_leg *verify_wal_leg_of(const verify_wal_way *w, uint64_t segno)
{
    for (size_t i = w->n; i-- > 1;)
        if (w->legs[i].first_seg <= segno)
            return &w->legs[i];
    return &w->legs[0];
}

/*
 * The object recovery reads for segment `segno`, as PostgreSQL's
 * XLogFileReadAnyTLI() finds it: from the newest leg that begins at or
 * before it and holds it (an older timeline's copy when the newer one has
 * none); NULL when none does. *list gets that leg's list.
 */
static const char *verify_wal_pick(const verify_wal_way *w, uint64_t segno,
                                   const verify_wal_list **list)
{
    for (size_t i = w->n; i-- > 0;) {
        const char *object;

        if (i > 0 && w->legs[i].first_seg > segno)
            continue;
        if ((object = verify_wal_object(&w->legs[i].list, segno)) != NULL) {
            *list = &w->legs[i].list;
            return object;
        }
    }
    return NULL;
}

static int verify_wal_cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* An archived WAL object, whole, through its codec and the segment check wal-fetch makes. */
static bool verify_wal_read_wal(storage *repo, const char *object, unsigned char *head,
                                size_t headlen, char *buf, bool *operational, pgd_error *err)
{
    char path[LAYOUT_PATH_MAX], name[VERIFY_WAL_NAME];
    in_stream *in;
    bool missing, ok = true;
    size_t got = 0;

    snprintf(name, sizeof(name), "%.*s", WAL_FILE_NAME_LEN, object);
    layout_wal_dir(name, path, sizeof(path));
    snprintf(path + strlen(path), sizeof(path) - strlen(path), "/%s", object);
    in = storage_read_open(repo, path, &missing, err);
    *operational = in == NULL && !missing;
    if (in == NULL)
        return missing ? err_set(err, "WAL segment %s is missing from the repository", name)
                       : false;
    in = decompress_in_new_trailed(compress_from_suffix(object), in, path, err);
    if (in != NULL)
        in = wal_segment_check_in_new(in, name, err);
    if (in == NULL)
        return false;
    while (ok) {
        size_t n = 0;
        ok = in_read(in, buf, VERIFY_CHUNK, &n, err);
        if (n == 0)
            break;
        if (got < headlen) {
            size_t take = n < headlen - got ? n : headlen - got;
            memcpy(head + got, buf, take);
            got += take;
        }
    }
    in_close(in);
    return ok;
}

/*
 * The segment's long page header names the system it belongs to: a
 * segment of another cluster under the same name (a repository shared by
 * mistake, an archive_command pointing elsewhere) would pass every other
 * check here, and PostgreSQL would refuse it at recovery. False (and a
 * problem noted) when it is another system's.
 */
static bool verify_wal_system_check(const backup_info *bi, const char *name, uint64_t sysid,
                                    char *why, size_t whylen)
{
    char text[PG_SYSID_TEXT_MAX];

    snprintf(text, sizeof(text), "%" PRIu64, sysid);
    if (strcmp(text, bi->system_identifier) == 0)
        return true;
    snprintf(why, whylen,
             "WAL segment %s in the repository is of another system (system identifier %s, not "
             "the backup's %s)",
             name, text, bi->system_identifier);
    return false;
}

static uint64_t verify_wal_head_sysid(const unsigned char *head)
{
    uint64_t sysid;

    memcpy(&sysid, head + WAL_PAGE_SYSID_OFF, sizeof(sysid));
    return sysid;
}

static bool verify_wal_same_system(verify_result *r, const backup_info *bi, const char *name,
                                   const unsigned char *head)
{
    char why[256];

    if (verify_wal_system_check(bi, name, verify_wal_head_sysid(head), why, sizeof(why)))
        return true;
    verify_problem(r, "%s", why);
    return false;
}

/* Where `object` is, or belongs, in the memo's sorted names. */
static size_t verify_wal_memo_find(const verify_wal_memo *m, const char *object, bool *found)
{
    size_t lo = 0, hi = m->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(m->names[mid], object);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

static void verify_wal_memo_add(verify_wal_memo *m, const char *object, const char *why,
                                uint64_t sysid)
{
    bool found;
    size_t at = verify_wal_memo_find(m, object, &found);
    char *name, *reason = NULL;

    if (found)
        return;
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;

        m->names = xrealloc(m->names, cap * sizeof(*m->names));
        m->why = xrealloc(m->why, cap * sizeof(*m->why));
        m->sysid = xrealloc(m->sysid, cap * sizeof(*m->sysid));
        m->cap = cap;
    }
    name = xstrdup(object);
    if (why != NULL)
        reason = xstrdup(why);
    memmove(m->names + at + 1, m->names + at, (m->n - at) * sizeof(*m->names));
    memmove(m->why + at + 1, m->why + at, (m->n - at) * sizeof(*m->why));
    memmove(m->sysid + at + 1, m->sysid + at, (m->n - at) * sizeof(*m->sysid));
    m->names[at] = name;
    m->why[at] = reason;
    m->sysid[at] = sysid;
    m->n++;
}

/*
 * The memo's word on `object`: *known, and then *why (a malloc'd copy) when
 * it did not decode or pass the checks, else *sysid.
 */
static void verify_wal_memo_lookup(const verify_wal_memo *m, const char *object, bool *known,
                                   char **why, uint64_t *sysid)
{
    size_t at;

    *known = false;
    *why = NULL;
    if (m == NULL)
        return;
    at = verify_wal_memo_find(m, object, known);
    if (*known)
        *sysid = m->sysid[at];
    if (*known && m->why[at] != NULL)
        *why = xstrdup(m->why[at]);
}

/*
 * Does the segment after the stop stored as `object` decode and pass
 * wal-fetch's checks? *why is set (malloc'd) when it does not, else *sysid
 * to the system in its long page header (the memo keeps both: whose system
 * it must be depends on the backup). False only when the check could not be
 * made (err). Safe on several threads at once.
 */
static bool verify_wal_window_segment(const verify_request *req, const char *object, char *buf,
                                      char **why, uint64_t *sysid, pgd_error *err)
{
    unsigned char head[VERIFY_SEG_HEADER_LEN];
    pgd_error e = {0};
    bool operational = false;

    *why = NULL;
    *sysid = 0;
    if (verify_wal_read_wal(req->repo, object, head, sizeof(head), buf, &operational, &e)) {
        *sysid = verify_wal_head_sysid(head);
        return true;
    }
    if (err_is(&e, PGD_ERR_TRANSIENT) || operational) {
        *err = e;
        return false;
    }
    *why = xstrdup(e.msg);
    return true;
}

/* A segment of the window, and what its check found. */
typedef struct verify_wal_item {
    const char *object; /* in the timeline's listing */
    uint32_t tli;       /* of that timeline */
    char name[VERIFY_WAL_NAME];
    bool known;      /* the memo knew it: not read again */
    char *why;       /* malloc'd: it did not decode or pass the checks */
    uint64_t sysid;  /* else: the system it is of */
    bool skipped;    /* not read: an earlier one of the batch already ends the window */
    pgd_error error; /* the check could not be made (counts only before a damaged one) */
} verify_wal_item;

/* A thread reading window segments. */
typedef struct verify_wal_reader {
    const verify_request *req;
    verify_wal_item *items;
    atomic_size_t *stop_at; /* the batch's first item found damaged or unreadable so far */
    char *buf;
} verify_wal_reader;

/* Lower *stop_at to `task` if it is below it. */
static void verify_wal_stop_at(atomic_size_t *stop_at, size_t task)
{
    size_t cur = atomic_load(stop_at);

    while (task < cur && !atomic_compare_exchange_weak(stop_at, &cur, task))
        ;
}

static bool verify_wal_reader_run(work_pool *pool, void *worker, size_t task, pgd_error *err)
{
    verify_wal_reader *w = worker;
    verify_wal_item *it = &w->items[task];
    char text[PGD_ERROR_MAX];

    (void)pool;
    (void)err; /* what a segment's check finds is kept in it->error */
    if (it->known)
        return true;
    /* a serial read would not get here: the window ends before */
    if (task > atomic_load(w->stop_at)) {
        it->skipped = true;
        return true;
    }
    if (w->buf == NULL)
        w->buf = xmalloc(VERIFY_CHUNK);
    /* kept with the segment: it fails the run only if no damaged segment comes before it */
    verify_wal_window_segment(w->req, it->object, w->buf, &it->why, &it->sysid, &it->error);
    if (it->error.set || it->why != NULL ||
        !verify_wal_system_check(w->req->bi, it->name, it->sysid, text, sizeof(text)))
        verify_wal_stop_at(w->stop_at, task);
    return true;
}

/*
 * Where the window ends without a damaged segment at segment segno: the
 * segment recovery looked for first (on the newest timeline that begins at
 * or before it) is missing, and said as a gap in r when later WAL exists:
 * the next one on that timeline, or `unreachable`, a newer timeline's
 * segment that cannot follow the older timeline's copy read for `missing`.
 */
static void verify_wal_gap(const verify_wal_way *w, uint64_t segno, const char *unreachable,
                           const char *missing, verify_result *r)
{
    const verify_wal_list *l = &verify_wal_leg_of(w, segno)->list;

    if (unreachable != NULL) {
        snprintf(r->gap_wal, sizeof(r->gap_wal), "%s", missing);
        snprintf(r->gap_resume_wal, sizeof(r->gap_resume_wal), "%.*s", WAL_FILE_NAME_LEN,
                 unreachable);
        return;
    }
    verify_wal_seg_name(l->tli, segno, l->seg_size, r->gap_wal);
    for (size_t i = 0; i < l->n; i++)
        if (strncmp(l->names[i], r->gap_wal, WAL_FILE_NAME_LEN) > 0) {
            snprintf(r->gap_resume_wal, sizeof(r->gap_resume_wal), "%.*s", WAL_FILE_NAME_LEN,
                     l->names[i]);
            return;
        }
    r->gap_wal[0] = '\0'; /* the end of the archive, not a gap */
}

/*
 * The point-in-time window: the unbroken run of intact segments after
 * stop_seg along the way w, each read and checked as wal-fetch would, each
 * the copy recovery reads (verify_wal_pick), and a later timeline's copy of
 * the stop segment itself when it has one; *end_seg is its last, *end_tli
 * the timeline of that segment's copy. A damaged segment ends it as surely
 * as a missing one, and is said in r.
 * The segments are read --concurrency at a time, in batches taken in order
 * (an archive holds weeks of WAL, and on S3 each read waits on the
 * network); a batch is judged in order once read, so the window is the
 * same as one read a segment at a time.
 */
static bool verify_wal_window(const verify_request *req, const verify_wal_way *w, uint64_t stop_seg,
                              verify_result *r, uint64_t *end_seg, uint32_t *end_tli,
                              bool *stop_copy_damaged, pgd_error *err)
{
    unsigned threads = req->concurrency < 1 ? 1u : (unsigned)req->concurrency;
    size_t batch = (size_t)threads * VERIFY_WAL_BATCH_PER_THREAD;
    verify_wal_item *items = xcalloc(batch, sizeof(*items));
    verify_wal_reader *readers = xcalloc(threads, sizeof(*readers));
    uint64_t next = stop_seg + 1;
    uint32_t last_tli = w->legs[0].list.tli; /* of the segment read before */
    uint32_t fell_back_to = UINT32_MAX;      /* an older timeline read where a newer one begun */
    char missing[VERIFY_WAL_NAME];           /* the newer one's segment it stood in for */
    bool ok = true, listed_end = false, ended = false;
    char text[PGD_ERROR_MAX];
    const verify_wal_list *stop_list = NULL;

    *end_seg = stop_seg;
    *end_tli = last_tli;
    *stop_copy_damaged = false;
    r->gap_wal[0] = r->gap_resume_wal[0] = missing[0] = '\0';
    /*
     * A timeline that begins in the stop segment has its own copy of it,
     * which recovery reads; without one, recovery reads the backup's
     * timeline's copy there and cannot go on to the newer one.
     */
    if (verify_wal_pick(w, stop_seg, &stop_list) != NULL && stop_list != &w->legs[0].list)
        next = stop_seg;
    else if (verify_wal_leg_of(w, stop_seg) != &w->legs[0]) {
        fell_back_to = w->legs[0].list.tli;
        verify_wal_seg_name(verify_wal_leg_of(w, stop_seg)->list.tli, stop_seg,
                            w->legs[0].list.seg_size, missing);
    }
    while (ok && !listed_end && !ended) {
        size_t n = 0, unread = 0, known_bad = SIZE_MAX;

        for (; n < batch; n++) {
            const verify_wal_list *l = NULL;
            const char *object = verify_wal_pick(w, next + n, &l);

            /*
             * PostgreSQL ends there: none; an older timeline's after a newer
             * one's ("out-of-sequence timeline ID"); a newer one's after an
             * older timeline's copy was read in its stead (replay went on
             * along the older one: "incorrect prev-link").
             */
            if (object == NULL || l->tli < last_tli || l->tli > fell_back_to) {
                verify_wal_gap(w, next + n, object != NULL && l->tli > fell_back_to ? object : NULL,
                               missing, r);
                listed_end = true;
                break;
            }
            if (l != &verify_wal_leg_of(w, next + n)->list && fell_back_to == UINT32_MAX) {
                fell_back_to = l->tli;
                verify_wal_seg_name(verify_wal_leg_of(w, next + n)->list.tli, next + n, l->seg_size,
                                    missing);
            }
            last_tli = l->tli;
            items[n] = (verify_wal_item){.object = object, .tli = l->tli};
            verify_wal_seg_name(l->tli, next + n, l->seg_size, items[n].name);
            verify_wal_memo_lookup(req->memo, object, &items[n].known, &items[n].why,
                                   &items[n].sysid);
            unread += !items[n].known;
            if (items[n].known && known_bad == SIZE_MAX &&
                (items[n].why != NULL ||
                 !verify_wal_system_check(req->bi, items[n].name, items[n].sysid, text,
                                          sizeof(text))))
                known_bad = n;
        }
        if (ok && unread > 0) {
            atomic_size_t stop_at = known_bad;
            work_pool_job job = {.threads = unread < threads ? (unsigned)unread : threads,
                                 .ntasks = n,
                                 .workers = readers,
                                 .worker_size = sizeof(*readers),
                                 .run = verify_wal_reader_run,
                                 .thread_name = "WAL reader",
                                 .cancel = req->cancel};

            for (unsigned i = 0; i < threads; i++) {
                readers[i].req = req;
                readers[i].items = items;
                readers[i].stop_at = &stop_at;
            }
            ok = work_pool_run(&job, NULL, err);
        }
        for (size_t i = 0; i < n; i++) {
            verify_wal_item *it = &items[i];

            if (ok && !ended && it->error.set) {
                *err = it->error;
                ok = false;
            }
            if (ok && !it->known && !it->skipped && !it->error.set && req->memo != NULL)
                verify_wal_memo_add(req->memo, it->object, it->why, it->sysid);
            if (ok && !ended && it->why == NULL &&
                !verify_wal_system_check(req->bi, it->name, it->sysid, text, sizeof(text)))
                it->why = xstrdup(text);
            if (ok && !ended && it->why != NULL) {
                *stop_copy_damaged = next + i == stop_seg;
                snprintf(r->damaged_wal, sizeof(r->damaged_wal), "%s", it->name);
                r->damaged_wal_why = it->why;
                it->why = NULL;
                ended = true;
            }
            if (ok && !ended) {
                *end_seg = next + i;
                *end_tli = it->tli;
            }
            free(it->why);
            it->why = NULL;
        }
        next += n;
    }
    if (ended) /* the window ends before a damaged segment, not at a gap after it */
        r->gap_wal[0] = r->gap_resume_wal[0] = '\0';
    for (unsigned i = 0; readers != NULL && i < threads; i++)
        free(readers[i].buf);
    free(readers);
    free(items);
    return ok;
}

/* The stored segments of timeline tli, sorted. */
static bool verify_wal_list_timeline(storage *repo, uint32_t tli, verify_wal_list *l,
                                     pgd_error *err)
{
    char name[VERIFY_WAL_NAME], dir[LAYOUT_PATH_MAX];

    l->tli = tli;
    wal_name_timeline_text(tli, name);
    layout_wal_dir(name, dir, sizeof(dir));
    if (!storage_list(repo, dir, verify_wal_list_cb, l, err))
        return false;
    if (l->n > 0)
        qsort(l->names, l->n, sizeof(*l->names), verify_wal_cmp_names);
    return true;
}

static void verify_wal_list_free(verify_wal_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->names[i]);
    free(l->names);
    memset(l, 0, sizeof(*l));
}

/*
 * The way recovery goes after the stop into *w, its first leg taking over
 * *own: the timeline a default restore follows (restore/timeline.h), each
 * later timeline listed. When such a restore would be refused, r says why
 * and the way is the backup's own timeline (what --target-timeline current
 * gives). False only when the repository could not be read.
 */
static bool verify_wal_way_build(const verify_request *req, verify_wal_list *own, verify_result *r,
                                 verify_wal_way *w, pgd_error *err)
{
    timeline_choice c = {.goal = TIMELINE_DEFAULT};
    timeline_path p;
    pgd_error e = {0};
    size_t n = 1;

    if (!timeline_resolve(req->repo, req->bi, &c, &p, &e)) {
        if (p.failure == TIMELINE_UNREADABLE) {
            *err = e;
            return false;
        }
        r->timeline_problem = xstrdup(e.msg);
        r->timeline_damaged = p.failure == TIMELINE_DAMAGED;
    } else {
        n = p.nlegs;
    }
    w->legs = xcalloc(n, sizeof(*w->legs));
    w->legs[0].list = *own;
    memset(own, 0, sizeof(*own));
    w->n = 1;
    for (size_t i = 1; i < n; i++) {
        verify_wal_leg *leg = &w->legs[w->n++];
        leg->list.seg_size = w->legs[0].list.seg_size;
        leg->first_seg = p.legs[i].begin / w->legs[0].list.seg_size;
        if (!verify_wal_list_timeline(req->repo, p.legs[i].tli, &leg->list, err)) {
            timeline_path_free(&p);
            return false;
        }
    }
    timeline_path_free(&p);
    return true;
}

/*
 * The segment size: the one for which the sentinel's start and stop LSNs
 * fall in its start and stop segments. Small LSNs fit several sizes; then
 * the start segment's own long page header says.
 */
static uint64_t verify_wal_seg_size(const backup_info *bi, uint32_t tli, const unsigned char *head,
                                    bool have_head)
{
    uint64_t found = 0;
    int matches = 0;
    char name[VERIFY_WAL_NAME];

    if (have_head) {
        uint32_t size;
        memcpy(&size, head + WAL_PAGE_SEG_SIZE_OFF, sizeof(size));
        if (wal_name_seg_size_valid(size))
            return size;
    }
    for (uint64_t size = WAL_SEG_SIZE_MIN; size <= WAL_SEG_SIZE_MAX; size *= 2) {
        wal_name_of_lsn(tli, bi->start_lsn, size, false, name);
        if (strcmp(name, bi->start_wal) != 0)
            continue;
        wal_name_of_lsn(tli, bi->stop_lsn, size, true, name);
        if (strcmp(name, bi->stop_wal) != 0)
            continue;
        if (size == VERIFY_DEFAULT_SEG_SIZE)
            return size;
        found = size;
        matches++;
    }
    return matches == 1 ? found : 0;
}

bool verify_wal(const verify_request *req, verify_result *r, pgd_error *err)
{
    const backup_info *bi = req->bi;
    verify_wal_list l = {0};
    verify_wal_way way = {0};
    uint64_t seg_size;
    uint32_t start_tli = 0, end_tli;
    bool stop_copy_damaged;
    char name[VERIFY_WAL_NAME];
    unsigned char head[VERIFY_SEG_HEADER_LEN];
    char *buf = NULL;
    const char *first;
    uint64_t start_seg, stop_seg, end_seg, seg;
    bool ok = true, have_head = false, operational = false, other_system = false;

    if (wal_name_kind(bi->start_wal) != WAL_FILE_SEGMENT ||
        wal_name_kind(bi->stop_wal) != WAL_FILE_SEGMENT) {
        verify_problem(r, "the sentinel names no valid start and stop WAL segment");
        return true;
    }
    wal_name_timeline(bi->start_wal, &start_tli);
    if (!verify_wal_list_timeline(req->repo, start_tli, &l, err))
        goto out;
    buf = xmalloc(VERIFY_CHUNK);
    /* the start segment first: its header tells the segment size */
    first = NULL;
    for (size_t i = 0; i < l.n; i++)
        if (strncmp(l.names[i], bi->start_wal, WAL_FILE_NAME_LEN) == 0)
            first = l.names[i];
    if (first != NULL) {
        pgd_error e = {0};
        have_head =
            verify_wal_read_wal(req->repo, first, head, sizeof(head), buf, &operational, &e);
        if (!have_head && (err_is(&e, PGD_ERR_TRANSIENT) || operational)) {
            *err = e;
            ok = false;
            goto out;
        }
        if (!have_head)
            verify_problem(r, "%s", e.msg);
        else if (!verify_wal_same_system(r, bi, bi->start_wal, head))
            other_system = true;
    }
    l.seg_size = verify_wal_seg_size(bi, l.tli, head, have_head);
    if (l.seg_size == 0) {
        verify_problem(r,
                       "the WAL segment size cannot be told from the start segment %s or the "
                       "sentinel's LSNs",
                       bi->start_wal);
        goto out;
    }
    r->wal_segment_size = l.seg_size;
    start_seg = verify_wal_segno(bi->start_wal, l.seg_size);
    stop_seg = verify_wal_segno(bi->stop_wal, l.seg_size);
    if (stop_seg < start_seg || strncmp(bi->start_wal, bi->stop_wal, WAL_TLI_NAME_LEN) != 0) {
        verify_problem(r, "the sentinel's stop segment %s is not after its start segment %s",
                       bi->stop_wal, bi->start_wal);
        goto out;
    }
    r->restorable = true;
    if (first == NULL) {
        verify_problem(r, "WAL segment %s (the backup's start) is missing from the repository",
                       bi->start_wal);
        r->restorable = false;
    } else if (!have_head || other_system) {
        r->restorable = false;
    }
    /* every segment after the start up to the stop, read and checked */
    for (seg = start_seg + 1; seg <= stop_seg; seg++) {
        const char *object = verify_wal_object(&l, seg);
        pgd_error e = {0};
        verify_wal_seg_name(l.tli, seg, l.seg_size, name);
        if (object == NULL) {
            verify_problem(r,
                           "WAL segment %s (between the backup's start %s and stop %s) is "
                           "missing from the repository",
                           name, bi->start_wal, bi->stop_wal);
            r->restorable = false;
            continue;
        }
        if (!verify_wal_read_wal(req->repo, object, head, sizeof(head), buf, &operational, &e)) {
            if (err_is(&e, PGD_ERR_TRANSIENT) || operational) {
                *err = e;
                ok = false;
                goto out;
            }
            verify_problem(r, "%s", e.msg);
            r->restorable = false;
        } else if (!verify_wal_same_system(r, bi, name, head)) {
            r->restorable = false;
        }
    }
    if (!r->restorable)
        goto out;
    /*
     * Onwards: the unbroken run of intact segments after the stop, along the
     * timelines a default restore follows, is how far recovery can go. Each
     * is read and checked as wal-fetch would: a damaged one ends the window
     * as surely as a missing one, and is said.
     */
    if (!verify_wal_way_build(req, &l, r, &way, err) ||
        !verify_wal_window(req, &way, stop_seg, r, &end_seg, &end_tli, &stop_copy_damaged, err)) {
        ok = false;
        goto out;
    }
    /*
     * A later timeline's copy of the stop segment is the first segment a
     * restore the default way reads: damaged, that restore does not start.
     * Along the backup's own timeline it does: that window is the one to give.
     */
    if (stop_copy_damaged) {
        r->timeline_problem = xasprintf("the copy of the stop segment on a newer timeline, %s, is "
                                        "damaged (recovery reads it first): %s",
                                        r->damaged_wal, r->damaged_wal_why);
        free(r->damaged_wal_why);
        r->damaged_wal_why = NULL;
        r->damaged_wal[0] = '\0';
        for (size_t i = 1; i < way.n; i++)
            verify_wal_list_free(&way.legs[i].list);
        way.n = 1;
        if (!verify_wal_window(req, &way, stop_seg, r, &end_seg, &end_tli, &stop_copy_damaged,
                               err)) {
            ok = false;
            goto out;
        }
    }
    seg_size = way.legs[0].list.seg_size;
    verify_wal_seg_name(end_tli, end_seg, seg_size, r->window_end_wal);
    lsn_format((end_seg + 1) * seg_size, r->window_end_lsn);
out:
    for (size_t i = 0; i < way.n; i++)
        verify_wal_list_free(&way.legs[i].list);
    free(way.legs);
    verify_wal_list_free(&l);
    free(buf);
    return ok;
}
