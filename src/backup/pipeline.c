/*
 * pipeline.c - reader threads that read with O_DIRECT and write compressed
 * tar partitions. See pipeline.h for the shape and the rules on files that
 * change during the backup.
 *
 * About 700 lines: a worker's ring of reads in flight (whole files, or a
 * delta's planned block runs, across the files it has opened), its filter
 * chain and the partition it writes share one state (pipeline_worker), and
 * the steps over it read best in one place; the per-buffer work is in the
 * filters (backup/file_filter.h), which blocks a sparse read takes in
 * backup/block_plan.h, the reads in io/ and the tar format in repo/.
 */
#define _GNU_SOURCE
#include "backup/pipeline.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backup/block_plan.h"
#include "backup/filter_crc.h"
#include "backup/filter_tar.h"
#include "cache/residency.h"
#include "io/page_residency.h"
#include "io/politeness.h"
#include "io/rate_limit.h"
#include "repo/layout.h"
#include "util/log.h"
#include "util/work_pool.h"
#include "util/xmalloc.h"

/* --max-rate is enforced in bursts of at most a tenth of a second of reading */
#define PIPELINE_RATE_BURSTS_PER_S  10
#define PIPELINE_CONTROL_INTERVAL_S 0.25 /* how often the deadline and CPU controllers look */

typedef struct pipeline_shared {
    const pipeline_config *cfg;
    pipeline_file *files;
    size_t max_read; /* largest read size of any file */
    atomic_uint next_partition;
    atomic_uint_fast64_t bytes_stored;
    atomic_uint read_modes;
    atomic_uint idle_failed; /* threads that could not enter the idle CPU class */
    atomic_uint moved_idle;  /* --cpu-class auto: threads that moved to the idle class */
    unsigned moved_logged;   /* of them, those the log told (the controller's) */
    atomic_bool pressing;    /* a deadline released reserve threads: no thread moves then */
    /* pages of the files read that reclaim evicted while they were open; unknown: no cachestat */
    atomic_uint_fast64_t pages_evicted;
    atomic_bool evicted_unknown;
    rate_limit rate;
    pthread_mutex_t lock; /* guards partitions */
    pipeline_partition *partitions;
    size_t npartitions;
} pipeline_shared;

/* One read in flight: its request, and for cache-neutral reads what was cached before. */
typedef struct pipeline_slot {
    io_request req;
    bool done;
    unsigned char *was_cached; /* per OS page of the range */
} pipeline_slot;

/* A file opened for reading: its descriptor, its residency (cache-neutral), what is read of it. */
typedef struct pipeline_reading {
    dio_file df;
    pipeline_file *f;
    bool entry;             /* a directory or a link: a tar entry, nothing to read */
    uint64_t declared;      /* bytes promised in the tar header */
    uint64_t next_offset;   /* next read to submit */
    uint64_t consumed;      /* bytes handed to the filters */
    uint64_t planned;       /* bytes to hand them: declared, or a sparse plan's within it */
    const block_plan *plan; /* SPARSE: read only its runs */
    size_t run;             /* the plan's run the next read is in */
    uint32_t run_done;      /* pages of that run already submitted */
    size_t read_size;
    size_t read_size_now; /* of the next planned read */
    int inflight;         /* its reads in the ring */
    bool eof;
    bool cache_neutral;
    page_residency residency;
    uint64_t evicted_at_open; /* cachestat's evicted pages of the file when it was opened */
    bool evicted_known;
} pipeline_reading;

typedef struct pipeline_worker {
    pipeline_shared *sh;
    bool normal;               /* --cpu-class auto: at normal priority until it waits for CPU */
    cpu_contention contention; /* and how much it waited (io/cpu_room.h) */
    io_engine *engine;
    /* reads in flight, consumed in submission order: a ring of depth slots */
    pipeline_slot *slots;
    char *buffers; /* the slots' read buffers, one allocation (big_buffer.h) */
    int depth;
    int head, count;
    /* files opened, consumed in this order; all but the last have every read submitted */
    pipeline_reading *open;
    int open_cap, open_head, open_count;
    int files_in_flight_max; /* most files with reads in the ring at once */
    file_filter *chain;      /* the file filters, ending at tar */
    file_filter *tar;        /* the chain's end, writing into `out` */
    /* the open partition */
    out_stream *out;
    uint32_t part_number;
    uint32_t part_group; /* the group of the files it holds (pipeline_file.group) */
    uint64_t part_bytes; /* uncompressed tar bytes */
    uint64_t part_stored;
    uint32_t part_crc;
    char part_name[64];
    pipeline_file **part_files; /* what the open partition holds, in order */
    size_t npart_files, cap_part_files;
} pipeline_worker;

/* A file or entry written into the open partition, for cfg->partition_stored. */
static void pipeline_partition_add(pipeline_worker *w, pipeline_file *f)
{
    if (w->npart_files == w->cap_part_files) {
        w->cap_part_files = w->cap_part_files ? 2 * w->cap_part_files : 64;
        w->part_files = xrealloc(w->part_files, w->cap_part_files * sizeof(*w->part_files));
    }
    w->part_files[w->npart_files++] = f;
}

static bool pipeline_partition_open(pipeline_worker *w, pgd_error *err)
{
    pipeline_shared *sh = w->sh;
    char path[LAYOUT_PATH_MAX];
    out_stream *out;

    w->part_number = atomic_fetch_add(&sh->next_partition, 1) + 1;
    layout_partition_name(w->part_number, sh->cfg->compression, w->part_name, sizeof(w->part_name));
    layout_backup_object(sh->cfg->backup_id, w->part_name, path, sizeof(path));
    out = storage_write_open(sh->cfg->repo, path, 0, err);
    if (out != NULL) {
        out = crc_out_new(out, &w->part_stored, &w->part_crc);
        out = compress_out_new(sh->cfg->compression, sh->cfg->compression_level, out, path, err);
    }
    w->out = out;
    w->part_bytes = 0;
    w->npart_files = 0;
    if (out != NULL)
        filter_tar_attach(w->tar, out, &w->part_bytes);
    return out != NULL;
}

static bool pipeline_partition_close(pipeline_worker *w, pgd_error *err)
{
    pipeline_shared *sh = w->sh;
    out_stream *out = w->out;
    pipeline_partition *grown, done;

    w->out = NULL;
    if (!tar_write_end(out, err)) {
        out_abort(out);
        return false;
    }
    if (!out_close(out, err))
        return false;
    done =
        (pipeline_partition){.number = w->part_number, .size = w->part_stored, .crc = w->part_crc};
    snprintf(done.name, sizeof(done.name), "%s", w->part_name);
    if (sh->cfg->partition_stored != NULL &&
        !sh->cfg->partition_stored(sh->cfg->partition_arg, &done, w->part_files, w->npart_files,
                                   err))
        return false;
    atomic_fetch_add(&sh->bytes_stored, w->part_stored);
    pthread_mutex_lock(&sh->lock);
    grown = xrealloc(sh->partitions, (sh->npartitions + 1) * sizeof(*grown));
    sh->partitions = grown;
    grown[sh->npartitions++] = done;
    pthread_mutex_unlock(&sh->lock);
    return true;
}

/* Whether a read is left to submit: bytes before the end, or a sparse plan's runs within it. */
static bool pipeline_more_to_read(const pipeline_reading *rd)
{
    if (rd->entry || rd->eof)
        return false;
    if (rd->plan == NULL)
        return rd->next_offset < rd->declared;
    return rd->run < rd->plan->nruns &&
           ((uint64_t)rd->plan->runs[rd->run].start + rd->run_done) * PG_PAGE_SIZE < rd->declared;
}

/* The next read of a sparse plan: the rest of its run, at most a read size. */
static void pipeline_next_planned(pipeline_reading *rd)
{
    const block_run *run = &rd->plan->runs[rd->run];
    uint32_t pages = run->count - rd->run_done;

    if (pages > rd->read_size / PG_PAGE_SIZE)
        pages = (uint32_t)(rd->read_size / PG_PAGE_SIZE);
    rd->next_offset = ((uint64_t)run->start + rd->run_done) * PG_PAGE_SIZE;
    rd->run_done += pages;
    if (rd->run_done == run->count) {
        rd->run++;
        rd->run_done = 0;
    }
    rd->read_size_now = (size_t)pages * PG_PAGE_SIZE;
}

/* The opened file at position i of the queue (0: the one being consumed). */
static pipeline_reading *pipeline_opened(pipeline_worker *w, int i)
{
    return &w->open[(w->open_head + i) % w->open_cap];
}

/* Files with reads in the ring now, for the most seen at once. */
static void pipeline_note_files_in_flight(pipeline_worker *w)
{
    int files = 0;

    for (int i = 0; i < w->open_count; i++)
        files += pipeline_opened(w, i)->inflight > 0;
    if (files > w->files_in_flight_max)
        w->files_in_flight_max = files;
}

static bool pipeline_submit_next(pipeline_worker *w, pipeline_reading *rd, pgd_error *err)
{
    pipeline_slot *s = &w->slots[(w->head + w->count) % w->depth];
    uint64_t left;
    size_t len, want;

    want = rd->read_size;
    if (rd->plan != NULL) {
        pipeline_next_planned(rd);
        want = rd->read_size_now;
    }
    left = rd->declared - rd->next_offset;
    len = left >= want ? want : (size_t)((left + DIO_ALIGN - 1) / DIO_ALIGN * DIO_ALIGN);

    rate_limit_acquire(&w->sh->rate, len);
    s->req.fd = rd->df.fd;
    s->req.len = len;
    s->req.offset = rd->next_offset;
    s->req.user = s;
    s->done = false;
    if (rd->cache_neutral) /* note what was cached before we read it */
        page_residency_note(&rd->residency, rd->next_offset, len, s->was_cached);
    if (!io_engine_submit(w->engine, &s->req, err))
        return false;
    rd->next_offset += len;
    rd->inflight++;
    w->count++;
    return true;
}

/* A read that came back short before the end: finish it synchronously. */
static bool pipeline_complete_short(pipeline_reading *rd, pipeline_slot *s, size_t *n,
                                    pgd_error *err)
{
    while (*n < s->req.len && s->req.offset + *n < rd->declared) {
        ssize_t got =
            pread(rd->df.fd, (char *)s->req.buf + *n, s->req.len - *n, (off_t)(s->req.offset + *n));
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return err_errno(err, errno, "could not read file \"%s\" at offset %llu", rd->f->source,
                             (unsigned long long)(s->req.offset + *n));
        *n += (size_t)got;
        if (got == 0 || (rd->df.mode == READ_MODE_DIRECT && *n % DIO_ALIGN != 0))
            break; /* the end of the file */
    }
    return true;
}

/* The ring's head, once its read has completed (other reads may complete first). */
static bool pipeline_wait_head(pipeline_worker *w, pgd_error *err)
{
    pipeline_slot *s = &w->slots[w->head];

    while (!s->done) {
        io_request *r;
        if (!io_engine_wait(w->engine, &r, err))
            return false;
        ((pipeline_slot *)r->user)->done = true;
    }
    w->head = (w->head + 1) % w->depth;
    w->count--;
    return true;
}

/*
 * --cpu-class auto: a thread at normal priority that waits for the CPU it holds moves to the
 * idle class. One way: a thread cannot come back without privilege.
 */
static void pipeline_check_class(pipeline_worker *w)
{
    pgd_error ignore = {0};

    /* the deadline's threads take CPU on purpose, and a reader waits for them too */
    if (atomic_load_explicit(&w->sh->pressing, memory_order_relaxed) ||
        !cpu_room_contention_step(&w->contention, clock_seconds()))
        return;
    w->normal = false;
    if (!politeness_thread_idle(&ignore))
        atomic_fetch_add(&w->sh->idle_failed, 1);
    atomic_fetch_add(&w->sh->moved_idle, 1);
}

/*
 * Consume the ring's head (waiting for it), a read of `rd`, the file being
 * consumed: hand its bytes to the file filters.
 */
static bool pipeline_consume_head(pipeline_worker *w, pipeline_reading *rd, work_pool *pool,
                                  pgd_error *err)
{
    pipeline_slot *s = &w->slots[w->head];
    file_chunk chunk;
    size_t n;

    if (rd->inflight == 0) /* the loops below keep one in flight while bytes are due */
        return err_set(err, "no read in flight for \"%s\" at offset %llu", rd->f->source,
                       (unsigned long long)rd->consumed);
    if (!pipeline_wait_head(w, err))
        return false;
    if (w->normal)
        pipeline_check_class(w);
    rd->inflight--;
    if (s->req.result < 0)
        return err_errno(err, (int)-s->req.result, "could not read file \"%s\" at offset %llu",
                         rd->f->source, (unsigned long long)s->req.offset);
    if (rd->eof)
        return true; /* past the end: drained, not used */
    n = (size_t)s->req.result;
    if (n < s->req.len && s->req.offset + n < rd->declared && n % DIO_ALIGN == 0 && n > 0 &&
        !pipeline_complete_short(rd, s, &n, err))
        return false;
    if (rd->plan != NULL && n < s->req.len) { /* shrank after open: the pages asked, zeros */
        memset((char *)s->req.buf + n, 0, s->req.len - n);
        n = s->req.len;
    }
    if (s->req.offset + n < rd->declared && n < s->req.len)
        rd->eof = true; /* shrank after open */
    if (s->req.offset + n > rd->declared)
        n = (size_t)(rd->declared - s->req.offset); /* grew after open */
    /* headroom after the bytes read, for the tar padding (pipeline_worker_setup) */
    chunk = (file_chunk){
        .data = s->req.buf, .len = n, .room = w->sh->max_read + DIO_ALIGN, .offset = s->req.offset};
    if (!file_filter_data(w->chain, &chunk, err))
        return false;
    if (rd->cache_neutral)
        page_residency_drop_new(&rd->residency, s->req.offset, n, s->was_cached);
    rd->consumed += n;
    work_pool_advance(pool, n);
    return true;
}

/* Wait for every read still in flight (their buffers and fds must outlive them). */
static void pipeline_drain(pipeline_worker *w)
{
    pgd_error ignore = {0};

    while (w->count > 0 && pipeline_wait_head(w, &ignore))
        ;
}

/* Open a file for reading; false with *skip (and no error) when it vanished since the walk. */
static bool pipeline_reading_open(pipeline_worker *w, pipeline_reading *rd, pipeline_file *f,
                                  bool *skip, pgd_error *err)
{
    pipeline_shared *sh = w->sh;
    struct stat st;

    *rd = (pipeline_reading){.f = f};
    rd->df.fd = -1;
    if (f->is_dir || f->link != NULL) {
        rd->entry = true;
        return true;
    }
    rd->read_size = pipeline_read_size(f->read_size ? f->read_size : sh->cfg->read_size);
    if (!dio_file_open(&rd->df, f->source, sh->cfg->mode, skip, err)) {
        if (*skip)
            log_info("skipping \"%s\": removed during the backup", f->source);
        return false;
    }
    if (fstat(rd->df.fd, &st) != 0) {
        err_errno(err, errno, "could not stat file \"%s\"", f->source);
        dio_file_close(&rd->df);
        return false;
    }
    if (rd->df.mode == READ_MODE_FALLBACK &&
        !(atomic_fetch_or(&sh->read_modes, 1u << rd->df.mode) & (1u << rd->df.mode)))
        log_warn("O_DIRECT refused for \"%s\": reading cache-neutral (buffered, dropping only "
                 "what was not cached before)",
                 f->source);
    atomic_fetch_or(&sh->read_modes, 1u << rd->df.mode);
    rd->evicted_known = residency_evicted_of_fd(rd->df.fd, &rd->evicted_at_open);
    if (!rd->evicted_known)
        atomic_store(&sh->evicted_unknown, true);
    /* grew: read what existed at walk time; shrank: what is there now */
    rd->declared = (uint64_t)st.st_size < f->size ? (uint64_t)st.st_size : f->size;
    f->mtime = st.st_mtime;
    f->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
    f->ino = (uint64_t)st.st_ino;
    f->dev = (uint64_t)st.st_dev;
    f->opened_at = (int64_t)time(NULL);
    rd->plan = f->plan != NULL && f->plan->kind == BLOCK_PLAN_SPARSE ? f->plan : NULL;
    rd->planned = rd->plan != NULL ? block_plan_bytes_within(rd->plan, rd->declared) : rd->declared;
    rd->cache_neutral = read_mode_cache_neutral(rd->df.mode) && rd->declared > 0;
    if (rd->cache_neutral &&
        !page_residency_open(&rd->residency, rd->df.fd, (uint64_t)st.st_size, f->source, err)) {
        dio_file_close(&rd->df);
        return false;
    }
    return true;
}

static void pipeline_reading_close(pipeline_reading *rd)
{
    page_residency_close(&rd->residency);
    dio_file_close(&rd->df);
}

/* Close the first opened file (consumed, or abandoned when the backup fails). */
static void pipeline_dequeue(pipeline_worker *w)
{
    pipeline_reading *rd = pipeline_opened(w, 0);
    uint64_t evicted;

    /* reclaim's evictions of its pages while it was open; a page read back since is not counted */
    if (rd->evicted_known && residency_evicted_of_fd(rd->df.fd, &evicted) &&
        evicted > rd->evicted_at_open)
        atomic_fetch_add(&w->sh->pages_evicted, evicted - rd->evicted_at_open);
    pipeline_reading_close(rd);
    w->open_head = (w->open_head + 1) % w->open_cap;
    w->open_count--;
}

/* Open file number `task` at the end of the queue; a file that vanished is left out. */
static bool pipeline_enqueue(pipeline_worker *w, size_t task, pgd_error *err)
{
    pipeline_reading *rd = pipeline_opened(w, w->open_count);
    bool skip;

    if (w->sh->files[task].reused) /* stored already (backup --resume) */
        return true;
    if (!pipeline_reading_open(w, rd, &w->sh->files[task], &skip, err))
        return skip;
    w->open_count++;
    return true;
}

/*
 * Fill the ring: the last opened file's next reads, and once it has none
 * left, the next files of the pool, opened and read ahead while the files
 * before them are consumed. A thread reading small files so keeps `depth`
 * reads in flight across files, not one file's worth.
 */
static bool pipeline_fill(pipeline_worker *w, work_pool *pool, pgd_error *err)
{
    while (w->count < w->depth) {
        pipeline_reading *last = w->open_count > 0 ? pipeline_opened(w, w->open_count - 1) : NULL;
        size_t task;

        if (last != NULL && pipeline_more_to_read(last)) {
            if (!pipeline_submit_next(w, last, err))
                return false;
            continue;
        }
        if (w->open_count == w->open_cap || !work_pool_claim(pool, &task))
            break;
        if (!pipeline_enqueue(w, task, err))
            return false;
    }
    pipeline_note_files_in_flight(w);
    return true;
}

/* What the file filters learn about a file before its first byte. */
static file_filter_file pipeline_filter_file(const pipeline_file *f, uint64_t declared)
{
    file_filter_file ff = {.path = f->path,
                           .source = f->source,
                           .size = declared,
                           .mode = f->mode,
                           .mtime = f->mtime,
                           .plan = f->plan};
    relfile rel;

    if (relfile_parse(f->path, &rel)) {
        ff.is_relation = true;
        ff.segment = rel.segment;
    }
    return ff;
}

/*
 * The partition file f goes into: the open one, unless it holds files of another group (closed
 * then), or none is open yet.
 */
static bool pipeline_partition_for(pipeline_worker *w, const pipeline_file *f, pgd_error *err)
{
    if (w->out != NULL && w->part_group != f->group && !pipeline_partition_close(w, err))
        return false;
    if (w->out == NULL && !pipeline_partition_open(w, err))
        return false;
    w->part_group = f->group;
    return true;
}

/* Consume the opened file `rd` through the filters into the open partition. */
static bool pipeline_backup_file(pipeline_worker *w, pipeline_reading *rd, work_pool *pool,
                                 pgd_error *err)
{
    pipeline_file *f = rd->f;
    file_filter_file ff;

    /* opened only now, so a file that vanished leaves no empty partition */
    if (!pipeline_partition_for(w, f, err))
        return false;
    ff = pipeline_filter_file(f, rd->declared);
    if (!file_filter_begin(w->chain, &ff, err))
        return false;
    while (rd->consumed < rd->planned && !rd->eof) {
        if (!pipeline_fill(w, pool, err) || !pipeline_consume_head(w, rd, pool, err) ||
            work_pool_stopping(pool))
            return false;
    }
    while (rd->inflight > 0) /* it ended early: its reads left are past its end */
        if (!pipeline_consume_head(w, rd, pool, err))
            return false;
    if (rd->consumed < rd->planned) /* completed with zeros, which the manifest records */
        log_info("\"%s\" shrank during the backup (%llu -> %llu bytes)", f->source,
                 (unsigned long long)rd->declared, (unsigned long long)rd->consumed);
    if (!file_filter_end(w->chain, &f->result, err))
        return false;
    f->done = true;
    f->partition = w->part_number;
    pipeline_partition_add(w, f);
    return true;
}

/* A directory or a symbolic link: a tar entry without data. */
static bool pipeline_backup_entry(pipeline_worker *w, pipeline_file *f, pgd_error *err)
{
    tar_entry e = {.path = (char *)f->path,
                   .linkpath = (char *)f->link,
                   .mode = f->mode,
                   .mtime = f->mtime,
                   .type = f->is_dir ? TAR_DIR : TAR_SYMLINK};

    if (!pipeline_partition_for(w, f, err) || !filter_tar_entry(w->tar, &e, err))
        return false;
    f->done = true;
    f->partition = w->part_number;
    pipeline_partition_add(w, f);
    return true;
}

/*
 * One task of the work pool: file number `task`, and the files opened
 * after it to keep reads in flight, each consumed in turn; a new partition
 * once the open one is full.
 */
static bool pipeline_task(work_pool *pool, void *worker, size_t task, pgd_error *err)
{
    pipeline_worker *w = worker;
    bool ok = pipeline_enqueue(w, task, err);

    while (ok && w->open_count > 0) {
        pipeline_reading *rd = pipeline_opened(w, 0);

        ok = rd->entry ? pipeline_backup_entry(w, rd->f, err)
                       : pipeline_backup_file(w, rd, pool, err);
        if (!ok)
            break;
        pipeline_dequeue(w);
        if (w->out != NULL && w->part_bytes >= w->sh->cfg->partition_size)
            ok = pipeline_partition_close(w, err);
    }
    if (!ok) { /* the reads in flight use the files' descriptors and the buffers */
        pipeline_drain(w);
        while (w->open_count > 0)
            pipeline_dequeue(w);
    }
    return ok;
}

/* After a thread's last file: its partition is committed, or discarded when the backup fails. */
static bool pipeline_finish(work_pool *pool, void *worker, bool ok, pgd_error *err)
{
    pipeline_worker *w = worker;

    (void)pool;
    if (ok && w->out != NULL)
        return pipeline_partition_close(w, err);
    out_abort(w->out);
    w->out = NULL;
    return true;
}

/* The filters of one thread, last first: tar, size/CRC-32C, then the configured ones. */
static bool pipeline_make_chain(pipeline_worker *w, const pipeline_config *cfg, pgd_error *err)
{
    file_filter *chain = w->tar = filter_tar_new();

    chain = filter_crc_new(chain);
    for (size_t i = cfg->nfilters; chain != NULL && i-- > 0;)
        chain = cfg->filters[i].make(chain, cfg->filters[i].arg, err);
    w->chain = chain;
    return chain != NULL;
}

/*
 * Descriptors a reader thread holds besides the files it reads: its
 * partition (a file, or an S3 upload's connections) and its io_uring ring.
 */
#define PIPELINE_THREAD_FDS 8

/*
 * Files one thread keeps open: enough to fill its ring with one read each,
 * and as many empty ones; but within its share of the descriptors this
 * process may open (RLIMIT_NOFILE), after a quarter of them (at least 64)
 * left to the rest of the process (the repository, libpq) and its own
 * PIPELINE_THREAD_FDS. Under a low limit a thread reads ahead in fewer
 * files, down to one, rather than fail the backup with EMFILE.
 */
static int pipeline_open_cap(int depth, int workers)
{
    struct rlimit rl;
    rlim_t reserve, share;
    int cap = 2 * depth;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return cap;
    reserve = rl.rlim_cur / 4 > 64 ? rl.rlim_cur / 4 : 64;
    share = rl.rlim_cur > reserve ? (rl.rlim_cur - reserve) / (rlim_t)workers : 0;
    share = share > PIPELINE_THREAD_FDS ? share - PIPELINE_THREAD_FDS : 0;
    if (share < (rlim_t)cap)
        cap = share > 1 ? (int)share : 1;
    return cap;
}

/* The engine, `depth` aligned buffers (+ residency vectors) and the filters of one thread. */
static bool pipeline_worker_setup(pipeline_worker *w, pipeline_shared *sh, pgd_error *err)
{
    const pipeline_config *cfg = sh->cfg;
    size_t pages = page_residency_vector_len(sh->max_read);
    /* headroom for the tar padding written from the same buffer */
    size_t stride = (sh->max_read + 2 * DIO_ALIGN - 1) / DIO_ALIGN * DIO_ALIGN;

    w->sh = sh;
    w->depth = cfg->depth;
    w->slots = xcalloc((size_t)w->depth, sizeof(*w->slots));
    w->buffers = dio_buffer_alloc(stride * (size_t)w->depth);
    for (int d = 0; d < w->depth; d++) {
        w->slots[d].req.buf = w->buffers + stride * (size_t)d;
        if (cfg->mode != READ_MODE_BUFFERED)
            w->slots[d].was_cached = xmalloc(pages);
    }
    if (!pipeline_make_chain(w, cfg, err))
        return false;
    w->open_cap = pipeline_open_cap(w->depth, cfg->workers + (int)cfg->reserve);
    w->open = xcalloc((size_t)w->open_cap, sizeof(*w->open));
    w->engine = io_engine_new(cfg->engine, (unsigned)w->depth, err);
    return w->engine != NULL;
}

static void pipeline_worker_teardown(pipeline_worker *w)
{
    io_engine_free(w->engine);
    file_filter_free(w->chain);
    for (int d = 0; w->slots != NULL && d < w->depth; d++)
        free(w->slots[d].was_cached);
    free(w->slots);
    free(w->buffers);
    free(w->open);
    free(w->part_files);
}

static int pipeline_partition_cmp(const void *a, const void *b)
{
    const pipeline_partition *pa = a, *pb = b;

    return (pa->number > pb->number) - (pa->number < pb->number);
}

uint64_t pipeline_bytes_to_read(const pipeline_file *files, size_t n)
{
    uint64_t total = 0;

    for (size_t i = 0; i < n; i++)
        total += files[i].reused ? 0
                 : files[i].plan != NULL && files[i].plan->kind == BLOCK_PLAN_SPARSE
                     ? files[i].plan->pages * PG_PAGE_SIZE
                     : files[i].size;
    return total;
}

/*
 * Every thread's engine, buffers and filters before any thread starts: a
 * thread that cannot start must not leave the others to read the whole
 * cluster before the failure is noticed.
 */
static bool pipeline_setup(pipeline_worker *workers, pipeline_shared *sh, pgd_error *err)
{
    for (int i = 0; i < sh->cfg->workers + (int)sh->cfg->reserve; i++) {
        workers[i].normal = sh->cfg->room != NULL && i >= sh->cfg->workers;
        if (!pipeline_worker_setup(&workers[i], sh, err)) {
            err_prefix(err, "could not set up reader thread %d", i + 1);
            return false;
        }
    }
    return true;
}

/*
 * First thing in each reading thread: the idle CPU class (threads it starts later, S3 uploads,
 * inherit it). The reserve threads stay at normal priority. A system that refuses (a seccomp
 * profile, say) costs politeness, not the backup: counted, and the caller warns.
 */
static void pipeline_thread_start(void *arg, bool reserve)
{
    pipeline_shared *sh = arg;
    pgd_error ignore = {0};

    if (sh->cfg->cpu_idle && !reserve && !politeness_thread_idle(&ignore))
        atomic_fetch_add(&sh->idle_failed, 1);
}

/* The deadline controller: how many reserve threads should read. */
static unsigned pipeline_deadline(deadline_control *c, double now, uint64_t advanced)
{
    unsigned before = c->released, now_released = deadline_step(c, now, advanced);

    if (now_released > before)
        log_info("--deadline: the reading would end too late (%.0f %% read after %.0f s): %u of "
                 "%u more reading threads at normal priority from now on",
                 100.0 * (double)advanced / (double)(c->total ? c->total : 1), now - c->start,
                 now_released, c->reserve);
    return now_released;
}

/* --cpu-class auto: says when reading threads moved to the idle class. */
static void pipeline_cpu_log(pipeline_shared *sh)
{
    unsigned moved = atomic_load(&sh->moved_idle);

    if (moved == sh->moved_logged)
        return;
    sh->moved_logged = moved;
    log_info("politeness: %u reading thread%s waited for a CPU more than %.0f %% of the time %s "
             "wanted one over %.0f s (other processes want the CPUs): %s in the idle CPU class "
             "now, %u of %u at normal priority",
             moved, moved == 1 ? "" : "s", 100 * CPU_ROOM_WAIT, moved == 1 ? "it" : "they",
             CPU_ROOM_WINDOW_S, moved == 1 ? "it is" : "they are", sh->cfg->room->normal - moved,
             sh->cfg->room->normal);
}

/* A reading thread's waits for the CPU, into the result's least and most. */
static void pipeline_note_contention(pipeline_result *result, const cpu_contention *c)
{
    if (c->judged == 0)
        return;
    if (result->windows == 0 || c->wait_min < result->wait_min)
        result->wait_min = c->wait_min;
    if (result->windows == 0 || c->wait_max > result->wait_max)
        result->wait_max = c->wait_max;
    result->windows += c->judged;
}

/* Asked by the work pool at its interval: the room and the CPU log, the deadline's controller. */
static unsigned pipeline_control(void *arg, double now, uint64_t advanced)
{
    pipeline_shared *sh = arg;
    unsigned room = 0, late = 0;

    if (sh->cfg->room != NULL) {
        room = sh->cfg->room->normal;
        pipeline_cpu_log(sh);
    }
    if (sh->cfg->deadline != NULL)
        late = pipeline_deadline(sh->cfg->deadline, now, advanced);
    if (late > room) /* the deadline's own threads (it counts the room's as released) */
        atomic_store(&sh->pressing, true);
    return room > late ? room : late;
}

bool pipeline_run(const pipeline_config *cfg, pipeline_file *files, size_t nfiles,
                  pipeline_result *result, pgd_error *err)
{
    pipeline_shared sh = {.cfg = cfg, .files = files};
    unsigned threads = (unsigned)cfg->workers + cfg->reserve;
    pipeline_worker *workers = xcalloc(threads, sizeof(*workers));
    progress_meter meter;
    work_pool_job job = {.threads = threads,
                         .ntasks = nfiles,
                         .workers = workers,
                         .worker_size = sizeof(*workers),
                         .run = pipeline_task,
                         .finish = pipeline_finish,
                         .thread_name = "reader thread",
                         .cancel = cfg->interrupted,
                         .progress = &meter,
                         .thread_start = pipeline_thread_start,
                         .thread_arg = &sh,
                         .reserve = cfg->reserve,
                         .released = cfg->room != NULL ? cfg->room->normal : 0,
                         .control = cfg->reserve > 0 ? pipeline_control : NULL,
                         .control_arg = &sh,
                         .control_interval_s = PIPELINE_CONTROL_INTERVAL_S};
    bool ok;

    memset(result, 0, sizeof(*result));
    pthread_mutex_init(&sh.lock, NULL);
    atomic_store(&sh.next_partition, cfg->first_partition);
    sh.max_read = pipeline_read_size(cfg->read_size);
    for (size_t i = 0; i < nfiles; i++)
        if (pipeline_read_size(files[i].read_size) > sh.max_read)
            sh.max_read = pipeline_read_size(files[i].read_size);
    rate_limit_init(&sh.rate, cfg->max_rate,
                    sh.max_read > cfg->max_rate / PIPELINE_RATE_BURSTS_PER_S
                        ? sh.max_read
                        : cfg->max_rate / PIPELINE_RATE_BURSTS_PER_S);
    progress_start(&meter, cfg->progress, pipeline_bytes_to_read(files, nfiles));
    ok = pipeline_setup(workers, &sh, err) && work_pool_run(&job, &result->bytes_read, err);
    progress_finish(&meter);
    for (unsigned i = 0; i < threads; i++) {
        if (workers[i].files_in_flight_max > result->files_in_flight)
            result->files_in_flight = workers[i].files_in_flight_max;
        pipeline_note_contention(result, &workers[i].contention);
        pipeline_worker_teardown(&workers[i]);
    }
    free(workers);
    result->idle_failed = atomic_load(&sh.idle_failed);
    if (cfg->room != NULL)
        pipeline_cpu_log(&sh);
    result->moved_idle = atomic_load(&sh.moved_idle);
    rate_limit_destroy(&sh.rate);
    pthread_mutex_destroy(&sh.lock);
    /* the partitions already written stay: the caller owns the backup id and removes them */
    if (!ok) {
        free(sh.partitions);
        memset(result, 0, sizeof(*result));
        return false;
    }
    if (sh.npartitions > 1)
        qsort(sh.partitions, sh.npartitions, sizeof(*sh.partitions), pipeline_partition_cmp);
    result->partitions = sh.partitions;
    result->npartitions = sh.npartitions;
    result->bytes_stored = atomic_load(&sh.bytes_stored);
    result->read_modes = atomic_load(&sh.read_modes);
    result->pages_evicted = atomic_load(&sh.pages_evicted);
    result->evicted_measured = !atomic_load(&sh.evicted_unknown);
    return true;
}

void pipeline_result_free(pipeline_result *result)
{
    free(result->partitions);
    memset(result, 0, sizeof(*result));
}
