/*
 * report.c - collect per-relation residency: PostgreSQL for the relation
 * files and shared_buffers, the kernel for the page cache.
 */
#define _GNU_SOURCE
#include "cache/report.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache/residency.h"
#include "pg/relations.h"
#include "util/work_pool.h"
#include "util/xmalloc.h"

static const char *const fork_suffix[] = {"", "_fsm", "_vm", "_init"};
static const char *const fork_name[] = {"main", "fsm", "vm", "init"};
#define NFORKS 4

void cache_add_segment(cache_figures *f, uint64_t size, const unsigned char *os_vec,
                       size_t os_page_size, const unsigned char *sb)
{
    uint64_t os_pages = pages_for(size, os_page_size);
    uint64_t blocks = pages_for(size, PG_PAGE_SIZE);
    uint64_t per_block = PG_PAGE_SIZE / os_page_size;

    f->size += size;
    for (uint64_t p = 0; os_vec != NULL && p < os_pages; p++)
        if (os_vec[p] & 1)
            f->os_cache += (p + 1) * os_page_size > size ? size - p * os_page_size : os_page_size;
    for (uint64_t b = 0; b < blocks; b++) {
        uint64_t bytes = (b + 1) * PG_PAGE_SIZE > size ? size - b * PG_PAGE_SIZE : PG_PAGE_SIZE;
        bool in_os = false;
        for (uint64_t k = 0; os_vec != NULL && k < per_block && b * per_block + k < os_pages; k++)
            in_os |= (os_vec[b * per_block + k] & 1) != 0;
        if (sb != NULL && sb[b])
            f->shared_buffers += PG_PAGE_SIZE;
        else if (!in_os)
            f->disk_only += bytes;
    }
}

static void cache_add_note(cache_report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void cache_add_note(cache_report *r, const char *fmt, ...)
{
    va_list ap;

    r->notes = xrealloc(r->notes, (r->nnotes + 1) * sizeof(char *));
    va_start(ap, fmt);
    r->notes[r->nnotes++] = xvasprintf(fmt, ap);
    va_end(ap);
}

static cache_row *cache_new_row(cache_report *r)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 256;
        r->rows = xrealloc(r->rows, cap * sizeof(*r->rows));
        r->cap = cap;
    }
    memset(&r->rows[r->n], 0, sizeof(r->rows[0]));
    return &r->rows[r->n++];
}

/* Order of cache_sort_buffers: tablespace, then relfilenode, fork, block. */
static int cache_buffer_cmp(const pg_buffer *a, const pg_buffer *b)
{
    if (a->tablespace != b->tablespace)
        return a->tablespace < b->tablespace ? -1 : 1;
    if (a->filenode != b->filenode)
        return a->filenode < b->filenode ? -1 : 1;
    if (a->fork != b->fork)
        return a->fork < b->fork ? -1 : 1;
    if (a->block != b->block)
        return a->block < b->block ? -1 : 1;
    return 0;
}

static int cache_buffer_qsort_cmp(const void *a, const void *b)
{
    return cache_buffer_cmp(a, b);
}

void cache_sort_buffers(pg_buffer *bufs, size_t nbufs)
{
    if (nbufs > 1)
        qsort(bufs, nbufs, sizeof(*bufs), cache_buffer_qsort_cmp);
}

/*
 * shared_buffers blocks of one fork as a per-block byte map (NULL when none), from buffers sorted
 * by cache_sort_buffers: a binary search to the fork's first buffer, then its run. A scan of every
 * buffer for every fork made the report quadratic (relations x shared_buffers).
 */
unsigned char *cache_sb_map(const pg_buffer *bufs, size_t nbufs, uint32_t tablespace,
                            uint32_t filenode, int fork, uint64_t first_block, uint64_t blocks)
{
    pg_buffer key = {.filenode = filenode, .fork = fork, .block = 0, .tablespace = tablespace};
    uint64_t end = first_block + blocks;
    unsigned char *map = NULL;
    size_t lo = 0, hi = nbufs;

    if (first_block > UINT32_MAX)
        return NULL; /* past any block number */
    key.block = (uint32_t)first_block;
    while (lo < hi) { /* first buffer not below key */
        size_t mid = lo + (hi - lo) / 2;
        if (cache_buffer_cmp(&bufs[mid], &key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i < nbufs && bufs[i].filenode == filenode && bufs[i].fork == fork &&
                        bufs[i].tablespace == tablespace && bufs[i].block < end;
         i++) {
        if (map == NULL)
            map = xcalloc(blocks, 1);
        map[bufs[i].block - first_block] = 1;
    }
    return map;
}

static cache_row *cache_fork_row(cache_report *r, const char *db, const pg_relation *rel, int fork)
{
    cache_row *row = cache_new_row(r);

    row->database = rel->shared ? "(shared)" : db;
    row->name = rel->name;
    row->kind = rel->kind;
    row->fork = fork_name[fork];
    return row;
}

/*
 * The directory of the relations being examined, kept open: files are opened relative to it, one
 * path component to look up instead of the whole path (path lookups were the largest cost of a
 * report over 100,000 relations). Relations of one database share it.
 */
typedef struct cache_dir {
    char rel[PATH_MAX]; /* relative to PGDATA */
    int fd;             /* AT_FDCWD when it could not be opened: full paths then */
    char **names;       /* its entries, sorted; NULL when they could not be listed */
    size_t n;
} cache_dir;

static void cache_dir_close(cache_dir *d)
{
    if (d->fd >= 0)
        close(d->fd);
    for (size_t i = 0; i < d->n; i++)
        free(d->names[i]);
    free(d->names);
    d->names = NULL;
    d->n = 0;
    d->fd = AT_FDCWD;
    d->rel[0] = '\0';
}

static int cache_name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * List the open directory once: most forks do not exist (an index has no vm, few relations have
 * an init fork), and a failed open per missing fork per relation cost more than everything else.
 * Leaves names NULL when the listing fails; every file is then tried.
 */
static void cache_dir_list(cache_dir *d)
{
    int fd = dup(d->fd);
    DIR *dh = fd >= 0 ? fdopendir(fd) : NULL;
    size_t cap = 0;
    struct dirent *de;

    if (dh == NULL) {
        if (fd >= 0)
            close(fd);
        return;
    }
    /* plain realloc and strdup: the listing only saves failed opens, and without it every file
       is tried (below), so running short of memory here is no reason to end the process */
    while ((de = readdir(dh)) != NULL) {
        if (d->n == cap) {
            size_t grown_cap = cap ? cap * 2 : 1024;
            char **grown = realloc(d->names, grown_cap * sizeof(*grown));
            if (grown == NULL)
                break;
            d->names = grown;
            cap = grown_cap;
        }
        if ((d->names[d->n] = strdup(de->d_name)) == NULL)
            break;
        d->n++;
    }
    closedir(dh);
    if (de != NULL) { /* no memory for the listing: try every file */
        int keep = d->fd;
        d->fd = -1;
        cache_dir_close(d);
        d->fd = keep;
        return;
    }
    if (d->n > 1)
        qsort(d->names, d->n, sizeof(*d->names), cache_name_cmp);
}

/* Could `name` exist in the directory? (true when it could not be listed) */
static bool cache_dir_has(const cache_dir *d, const char *name)
{
    if (d->names == NULL)
        return true;
    return bsearch(&name, d->names, d->n, sizeof(*d->names), cache_name_cmp) != NULL;
}

/* Point d at the directory of relation file `filepath`; returns its base name. */
static const char *cache_dir_of(cache_dir *d, const char *pgdata, const char *filepath)
{
    const char *slash = strrchr(filepath, '/');
    size_t len = slash ? (size_t)(slash - filepath) : 0;
    char abs[PATH_MAX];

    if (d->fd != AT_FDCWD && strlen(d->rel) == len && strncmp(d->rel, filepath, len) == 0)
        return slash ? slash + 1 : filepath;
    cache_dir_close(d);
    if (len >= sizeof(d->rel))
        return NULL;
    memcpy(d->rel, filepath, len);
    d->rel[len] = '\0';
    if ((size_t)snprintf(abs, sizeof(abs), "%s/%s", pgdata, d->rel) >= sizeof(abs))
        return NULL; /* full paths then, which name the problem */
    d->fd = open(abs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d->fd < 0) {
        d->fd = AT_FDCWD;
        return NULL;
    }
    cache_dir_list(d);
    return slash ? slash + 1 : filepath;
}

/*
 * One fork: walk its segment files, one open each (size, page residency and evictions together;
 * the shared_buffers map of the segment's block range). A fork whose first segment does not exist
 * has no row, except the main fork, which every relation with storage has.
 */
static void cache_collect_fork(cache_report *r, const char *pgdata, cache_dir *dir, const char *db,
                               const pg_relation *rel, int fork, const pg_buffer *bufs,
                               size_t nbufs, bool *unreadable)
{
    size_t os_page = (size_t)sysconf(_SC_PAGESIZE);
    const char *base = cache_dir_of(dir, pgdata, rel->filepath);
    cache_row *row = NULL;
    char path[PATH_MAX], name[PATH_MAX];

    for (unsigned seg = 0;; seg++) {
        residency_pages res;
        unsigned char *sb;
        bool missing;
        pgd_error ferr = {0};
        struct stat st;

        snprintf(path, sizeof(path), seg ? "%s/%s%s.%u" : "%s/%s%s", pgdata, rel->filepath,
                 fork_suffix[fork], seg);
        /* relative to the open directory when there is one, else the whole path */
        if (base != NULL) {
            snprintf(name, sizeof(name), seg ? "%s%s.%u" : "%s%s", base, fork_suffix[fork], seg);
            if (!cache_dir_has(dir, name))
                break; /* listed as absent: the segments end (or the fork does not exist) */
        }
        if (!residency_pages_of_file(base ? dir->fd : AT_FDCWD, base ? name : path, path, &res,
                                     &missing, &ferr)) {
            if (missing)
                break; /* the segments end (or the fork does not exist) */
            /*
             * Unreadable. Its size is still known when the directory can be searched, and the
             * next segment is then worth a look; when it cannot (an OS user without access to
             * PGDATA), nothing more is: stop, as every further segment would fail the same way.
             */
            *unreadable = true;
            if (stat(path, &st) != 0)
                break;
            if (row == NULL)
                row = cache_fork_row(r, db, rel, fork);
            cache_add_segment(&row->f, (uint64_t)st.st_size, NULL, os_page, NULL);
            continue;
        }
        if (row == NULL)
            row = cache_fork_row(r, db, rel, fork);
        sb = cache_sb_map(bufs, nbufs, rel->tablespace_oid, rel->filenode, fork,
                          (uint64_t)seg * PG_SEGMENT_PAGES, pages_for(res.size, PG_PAGE_SIZE));
        cache_add_segment(&row->f, res.size, res.vec, os_page, sb);
        if (res.from_cachestat)
            row->f.evicted_pages += res.evicted;
        free(sb);
        free(res.vec);
    }
    if (row == NULL && fork == 0)
        cache_fork_row(r, db, rel, fork);
}

/*
 * The files of one database's relations are examined by CACHE_THREADS threads
 * (the work is system calls: open, cachestat or mincore, close, about four per
 * file), each taking the next CACHE_CHUNK relations with its own open
 * directory; rows are appended in the relations' order afterwards, so the
 * report is the same whatever the threads' timing.
 */
#define CACHE_THREADS 2
#define CACHE_CHUNK   512

typedef struct cache_files_job {
    const char *pgdata, *db;
    const pg_relation *rels;
    size_t nrels;
    bool include_shared;
    const pg_buffer *bufs;
    size_t nbufs;
    cache_report *chunks; /* one per task: its rows */
} cache_files_job;

typedef struct cache_files_worker {
    const cache_files_job *job;
    cache_dir dir;
    bool unreadable;
} cache_files_worker;

static bool cache_files_chunk(work_pool *pool, void *arg, size_t task, pgd_error *err)
{
    cache_files_worker *w = arg;
    const cache_files_job *job = w->job;
    size_t end = (task + 1) * CACHE_CHUNK < job->nrels ? (task + 1) * CACHE_CHUNK : job->nrels;

    (void)pool;
    (void)err;
    for (size_t i = task * CACHE_CHUNK; i < end; i++) {
        if (job->rels[i].shared && !job->include_shared)
            continue;
        for (int fork = 0; fork < NFORKS; fork++)
            cache_collect_fork(&job->chunks[task], job->pgdata, &w->dir, job->db, &job->rels[i],
                               fork, job->bufs, job->nbufs, &w->unreadable);
    }
    return true;
}

static bool cache_files_finish(work_pool *pool, void *arg, bool ok, pgd_error *err)
{
    cache_files_worker *w = arg;

    (void)pool;
    (void)err;
    cache_dir_close(&w->dir);
    return ok;
}

/* Rows of every fork file of rels into r, in their order; *unreadable when some file was. */
static bool cache_collect_files(cache_report *r, const char *pgdata, const char *db,
                                const pg_relation *rels, size_t nrels, bool include_shared,
                                const pg_buffer *bufs, size_t nbufs, bool *unreadable,
                                pgd_error *err)
{
    size_t ntasks = (nrels + CACHE_CHUNK - 1) / CACHE_CHUNK, rows = r->n;
    cache_files_job job = {pgdata, db, rels, nrels, include_shared, bufs, nbufs, NULL};
    cache_files_worker workers[CACHE_THREADS];
    work_pool_job pj = {.threads = ntasks < CACHE_THREADS ? (unsigned)ntasks : CACHE_THREADS,
                        .ntasks = ntasks,
                        .workers = workers,
                        .worker_size = sizeof(workers[0]),
                        .run = cache_files_chunk,
                        .finish = cache_files_finish,
                        .thread_name = "cache thread"};
    bool ok;

    if (ntasks == 0)
        return true;
    job.chunks = xcalloc(ntasks, sizeof(*job.chunks));
    for (unsigned i = 0; i < CACHE_THREADS; i++)
        workers[i] = (cache_files_worker){.job = &job, .dir = {.fd = AT_FDCWD}};
    ok = work_pool_run(&pj, NULL, err);
    for (unsigned i = 0; i < CACHE_THREADS; i++)
        *unreadable = *unreadable || workers[i].unreadable;
    for (size_t t = 0; ok && t < ntasks; t++)
        rows += job.chunks[t].n;
    if (ok && rows > r->cap) {
        r->rows = xrealloc(r->rows, rows * sizeof(*r->rows));
        r->cap = rows;
    }
    for (size_t t = 0; t < ntasks; t++) {
        if (ok && job.chunks[t].n > 0) {
            memcpy(&r->rows[r->n], job.chunks[t].rows, job.chunks[t].n * sizeof(cache_row));
            r->n += job.chunks[t].n;
        }
        free(job.chunks[t].rows);
    }
    free(job.chunks);
    return ok;
}

/*
 * Room for one more relation list and database name in r, which the rows point into; the name is
 * copied. Returns the copy.
 */
static const char *cache_keep_database(cache_report *r, const char *db)
{
    r->lists = xrealloc(r->lists, (r->nlists + 1) * sizeof(*r->lists));
    r->databases = xrealloc(r->databases, (r->ndatabases + 1) * sizeof(*r->databases));
    r->databases[r->ndatabases] = xstrdup(db);
    return r->databases[r->ndatabases++];
}

static bool cache_collect_database(cache_report *r, const cache_request *req, const char *pgdata,
                                   const char *db_name, bool include_shared, pgd_error *err)
{
    const char *db = cache_keep_database(r, db_name);
    PGconn *conn;
    pg_relation_list *rels;
    pg_buffer *bufs = NULL;
    size_t nbufs = 0;
    buffercache_status bstatus;
    bool unreadable = false, ok = false;

    if ((conn = pg_connect_db(req->conninfo, db, err)) == NULL)
        return false;
    rels = &r->lists[r->nlists];
    if (!pg_relations_list(conn, req->like, rels, err))
        goto done;
    r->nlists++; /* the report owns it now */
    if (!pg_buffercache_read(conn, &bufs, &nbufs, &bstatus, err))
        goto done;
    cache_sort_buffers(bufs, nbufs);
    if (bstatus == BUFFERCACHE_OK)
        r->shared_buffers_known = true;
    else if (bstatus == BUFFERCACHE_NOT_INSTALLED)
        cache_add_note(r,
                       "pg_buffercache is not installed in database \"%s\": its shared_buffers "
                       "column is empty (CREATE EXTENSION pg_buffercache)",
                       db);
    else
        cache_add_note(r,
                       "no permission to read pg_buffercache in database \"%s\": its "
                       "shared_buffers column is empty (GRANT pg_monitor)",
                       db);
    if (!cache_collect_files(r, pgdata, db, rels->rels, rels->n, include_shared, bufs, nbufs,
                             &unreadable, err))
        goto done;
    if (unreadable)
        cache_add_note(r,
                       "some relation files of database \"%s\" under \"%s\" could not be read: "
                       "their OS page cache column is empty (run as the postgres OS user or root)",
                       db, pgdata);
    else if (rels->n > 0)
        r->os_known = true;
    ok = true;
done:
    free(bufs);
    PQfinish(conn);
    return ok;
}

bool cache_collect(const cache_request *req, cache_report *out, pgd_error *err)
{
    char pgdata[PATH_MAX] = "";
    char **dbs = NULL;
    size_t ndbs = 0;
    PGconn *conn;
    bool ok = true;

    memset(out, 0, sizeof(*out));
    conn = pg_connect_db(req->conninfo, NULL, err);
    if (conn == NULL)
        return false;
    if (req->pgdata != NULL)
        snprintf(pgdata, sizeof(pgdata), "%s", req->pgdata);
    else if (!pg_data_directory(conn, pgdata, sizeof(pgdata), err))
        ok = false;
    if (ok && pgdata[0] == '\0')
        ok = err_set(err, "could not read the server's data_directory (the role needs "
                          "pg_read_all_settings): give --pgdata");
    if (ok && req->databases == NULL)
        ok = pg_databases(conn, &dbs, &ndbs, err);
    PQfinish(conn);
    if (ok && req->databases != NULL) {
        for (size_t i = 0; ok && i < req->ndatabases; i++)
            ok = cache_collect_database(out, req, pgdata, req->databases[i], i == 0, err);
    } else {
        for (size_t i = 0; ok && i < ndbs; i++)
            ok = cache_collect_database(out, req, pgdata, dbs[i], i == 0, err);
    }
    for (size_t i = 0; i < ndbs; i++)
        free(dbs[i]);
    free(dbs);
    if (!ok)
        cache_report_free(out);
    return ok;
}

void cache_report_free(cache_report *r)
{
    for (size_t i = 0; i < r->nnotes; i++)
        free(r->notes[i]);
    free(r->notes);
    free(r->rows);
    for (size_t i = 0; i < r->nlists; i++)
        pg_relation_list_free(&r->lists[i]);
    free(r->lists);
    for (size_t i = 0; i < r->ndatabases; i++)
        free(r->databases[i]);
    free(r->databases);
    memset(r, 0, sizeof(*r));
}

static int cache_size_desc(const void *a, const void *b)
{
    const cache_row *ra = a, *rb = b;

    if (ra->f.size != rb->f.size)
        return ra->f.size < rb->f.size ? 1 : -1;
    return strcmp(ra->name, rb->name);
}

void cache_sort_by_size(cache_report *r)
{
    if (r->n > 1)
        qsort(r->rows, r->n, sizeof(*r->rows), cache_size_desc);
}

cache_figures cache_totals(const cache_report *r)
{
    cache_figures t = {0};

    for (size_t i = 0; i < r->n; i++) {
        t.size += r->rows[i].f.size;
        t.shared_buffers += r->rows[i].f.shared_buffers;
        t.os_cache += r->rows[i].f.os_cache;
        t.disk_only += r->rows[i].f.disk_only;
        t.evicted_pages += r->rows[i].f.evicted_pages;
    }
    return t;
}
