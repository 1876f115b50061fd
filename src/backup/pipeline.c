/*
 * pipeline.c - worker threads that read with O_DIRECT and write compressed
 * tar partitions. See pipeline.h for the shape and the rules on files that
 * change during the backup.
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
#include <sys/stat.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>

#include "io/rate_limit.h"
#include "repo/layout.h"
#include "repo/tar.h"
#include "util/crc32c.h"
#include "util/log.h"
#include "util/progress.h"

typedef struct shared {
    const pipeline_config *cfg;
    pipeline_file *files;
    size_t nfiles;
    size_t max_read; /* largest read size of any file */
    atomic_size_t next_file;
    atomic_uint next_partition;
    atomic_uint_fast64_t bytes_read;
    atomic_uint_fast64_t bytes_stored;
    atomic_uint read_modes;
    atomic_bool failed;
    atomic_int workers_running;
    rate_limit rate;
    pthread_mutex_t lock; /* guards err and partitions */
    pgd_error err;
    pipeline_partition *partitions;
    size_t npartitions;
} shared;

/* One read in flight: its request, and for cache-neutral reads what was cached before. */
typedef struct slot {
    io_request req;
    bool done;
    unsigned char *was_cached; /* per OS page of the range */
} slot;

typedef struct worker {
    shared *sh;
    pthread_t thread;
    io_engine *engine;
    slot *slots; /* depth of them, used as a ring */
    int depth;
    /* the open partition */
    out_stream *out;
    uint32_t part_number;
    uint64_t part_bytes; /* uncompressed tar bytes */
    uint64_t part_stored;
    uint32_t part_crc;
    char part_name[64];
    pgd_error err;
} worker;

static bool partition_open(worker *w)
{
    shared *sh = w->sh;
    char path[LAYOUT_PATH_MAX];
    out_stream *out;

    w->part_number = atomic_fetch_add(&sh->next_partition, 1) + 1;
    layout_partition_name(w->part_number, sh->cfg->compression, w->part_name, sizeof(w->part_name));
    layout_backup_object(sh->cfg->backup_id, w->part_name, path, sizeof(path));
    out = storage_write_open(sh->cfg->repo, path, 0, &w->err);
    if (out != NULL)
        out = crc_out_new(out, &w->part_stored, &w->part_crc, &w->err);
    if (out != NULL)
        out =
            compress_out_new(sh->cfg->compression, sh->cfg->compression_level, out, path, &w->err);
    w->out = out;
    w->part_bytes = 0;
    return out != NULL;
}

static bool partition_close(worker *w)
{
    shared *sh = w->sh;
    out_stream *out = w->out;
    pipeline_partition *grown;

    w->out = NULL;
    if (!tar_write_end(out, &w->err)) {
        out_abort(out);
        return false;
    }
    if (!out_close(out, &w->err))
        return false;
    atomic_fetch_add(&sh->bytes_stored, w->part_stored);
    pthread_mutex_lock(&sh->lock);
    grown = realloc(sh->partitions, (sh->npartitions + 1) * sizeof(*grown));
    if (grown != NULL) {
        sh->partitions = grown;
        grown[sh->npartitions].number = w->part_number;
        snprintf(grown[sh->npartitions].name, sizeof(grown[sh->npartitions].name), "%s",
                 w->part_name);
        grown[sh->npartitions].size = w->part_stored;
        grown[sh->npartitions].crc = w->part_crc;
        sh->npartitions++;
    }
    pthread_mutex_unlock(&sh->lock);
    return grown != NULL || err_set(&w->err, "out of memory");
}

static bool write_entry(worker *w, const pipeline_file *f, uint64_t size)
{
    tar_entry e = {.path = (char *)f->path,
                   .linkpath = (char *)f->link,
                   .size = size,
                   .mode = f->mode,
                   .mtime = f->mtime,
                   .type = f->is_dir         ? TAR_DIR
                           : f->link != NULL ? TAR_SYMLINK
                                             : TAR_FILE};

    w->part_bytes += TAR_BLOCK;
    return tar_write_header(w->out, &e, &w->err);
}

/* The file being read: its descriptor, its mapping (for residency), the ring state. */
typedef struct reading {
    dio_file df;
    pipeline_file *f;
    uint64_t declared;    /* bytes promised in the tar header */
    uint64_t next_offset; /* next read to submit */
    uint64_t consumed;    /* bytes written to the partition */
    size_t read_size;
    int head, count; /* ring of in-flight slots */
    bool eof;
    uint32_t crc;
    void *map; /* whole-file mapping for mincore, cache-neutral mode only */
    size_t map_len;
} reading;

static size_t os_page(void)
{
    static size_t page;

    if (page == 0)
        page = (size_t)sysconf(_SC_PAGESIZE);
    return page;
}

static bool submit_next(worker *w, reading *rd)
{
    slot *s = &w->slots[(rd->head + rd->count) % w->depth];
    uint64_t left = rd->declared - rd->next_offset;
    size_t len = left >= rd->read_size ? rd->read_size
                                       : (size_t)((left + DIO_ALIGN - 1) / DIO_ALIGN * DIO_ALIGN);

    rate_limit_acquire(&w->sh->rate, len);
    s->req.fd = rd->df.fd;
    s->req.len = len;
    s->req.offset = rd->next_offset;
    s->req.user = s;
    s->done = false;
    if (rd->map != NULL) { /* note what was cached before we read it */
        size_t span = rd->next_offset + len > rd->map_len ? rd->map_len - rd->next_offset : len;
        memset(s->was_cached, 1, (len + os_page() - 1) / os_page());
        if (span > 0)
            mincore((char *)rd->map + rd->next_offset, span, s->was_cached);
    }
    if (!io_engine_submit(w->engine, &s->req, &w->err))
        return false;
    rd->next_offset += len;
    rd->count++;
    return true;
}

/* Drop the pages of a consumed range that were not cached before we read it. */
static void drop_new_pages(reading *rd, const slot *s, size_t n)
{
    size_t page = os_page(), pages = (n + page - 1) / page, run = 0;

    for (size_t i = 0; i <= pages; i++) {
        if (i < pages && !(s->was_cached[i] & 1)) {
            run++;
            continue;
        }
        if (run > 0)
            posix_fadvise(rd->df.fd, (off_t)(s->req.offset + (i - run) * page), (off_t)(run * page),
                          POSIX_FADV_DONTNEED);
        run = 0;
    }
}

/* A read that came back short before the end: finish it synchronously. */
static bool complete_short(worker *w, reading *rd, slot *s, size_t *n)
{
    while (*n < s->req.len && s->req.offset + *n < rd->declared) {
        ssize_t got =
            pread(rd->df.fd, (char *)s->req.buf + *n, s->req.len - *n, (off_t)(s->req.offset + *n));
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return err_errno(&w->err, errno, "could not read file \"%s\" at offset %llu",
                             rd->f->source, (unsigned long long)(s->req.offset + *n));
        *n += (size_t)got;
        if (got == 0 || (rd->df.mode == READ_MODE_DIRECT && *n % DIO_ALIGN != 0))
            break; /* the end of the file */
    }
    return true;
}

/* Consume the ring's head (waiting for it) into the partition. */
static bool consume_head(worker *w, reading *rd)
{
    shared *sh = w->sh;
    slot *s = &w->slots[rd->head];
    size_t n, pad = 0;

    while (!s->done) {
        io_request *r;
        if (!io_engine_wait(w->engine, &r, &w->err))
            return false;
        ((slot *)r->user)->done = true;
    }
    rd->head = (rd->head + 1) % w->depth;
    rd->count--;
    if (s->req.result < 0)
        return err_errno(&w->err, (int)-s->req.result, "could not read file \"%s\" at offset %llu",
                         rd->f->source, (unsigned long long)s->req.offset);
    if (rd->eof)
        return true; /* past the end: drained, not used */
    n = (size_t)s->req.result;
    if (n < s->req.len && s->req.offset + n < rd->declared && n % DIO_ALIGN == 0 && n > 0 &&
        !complete_short(w, rd, s, &n))
        return false;
    if (s->req.offset + n < rd->declared && n < s->req.len)
        rd->eof = true; /* shrank after open */
    if (s->req.offset + n > rd->declared)
        n = (size_t)(rd->declared - s->req.offset); /* grew after open */
    rd->crc = crc32c_update(rd->crc, s->req.buf, n);
    if (rd->consumed + n == rd->declared) { /* pad the tar entry in the buffer itself */
        pad = (size_t)tar_padding(rd->declared);
        memset((char *)s->req.buf + n, 0, pad);
    }
    if (!out_write(w->out, s->req.buf, n + pad, &w->err))
        return false;
    if (rd->map != NULL)
        drop_new_pages(rd, s, n);
    rd->consumed += n;
    w->part_bytes += n + pad;
    atomic_fetch_add(&sh->bytes_read, n);
    return true;
}

/* Wait for every read still in flight (their buffers and fd must outlive them). */
static void drain(worker *w, reading *rd)
{
    while (rd->count > 0) {
        slot *s = &w->slots[rd->head];
        pgd_error ignore = {0};
        while (!s->done) {
            io_request *r;
            if (!io_engine_wait(w->engine, &r, &ignore))
                return;
            ((slot *)r->user)->done = true;
        }
        rd->head = (rd->head + 1) % w->depth;
        rd->count--;
    }
}

static void reading_close(reading *rd)
{
    if (rd->map != NULL)
        munmap(rd->map, rd->map_len);
    dio_file_close(&rd->df);
}

/* Read one file into the open partition, `depth` reads ahead. */
static bool backup_file(worker *w, pipeline_file *f)
{
    shared *sh = w->sh;
    reading rd = {.f = f, .crc = CRC32C_INIT};
    struct stat st;
    bool missing;

    rd.read_size = f->read_size ? f->read_size : sh->cfg->read_size;
    if (!dio_file_open(&rd.df, f->source, sh->cfg->mode, &missing, &w->err)) {
        if (missing) {
            log_info("skipping \"%s\": removed during the backup", f->source);
            return true;
        }
        return false;
    }
    if (fstat(rd.df.fd, &st) != 0) {
        err_errno(&w->err, errno, "could not stat file \"%s\"", f->source);
        reading_close(&rd);
        return false;
    }
    /* opened only now, so a file that vanished leaves no empty partition */
    if (w->out == NULL && !partition_open(w))
        goto fail;
    if (rd.df.mode == READ_MODE_FALLBACK &&
        !(atomic_fetch_or(&sh->read_modes, 1u << rd.df.mode) & (1u << rd.df.mode)))
        log_warn("O_DIRECT refused for \"%s\": reading cache-neutral (buffered, dropping only "
                 "what was not cached before)",
                 f->source);
    atomic_fetch_or(&sh->read_modes, 1u << rd.df.mode);
    /* grew: read what existed at walk time; shrank: what is there now */
    rd.declared = (uint64_t)st.st_size < f->size ? (uint64_t)st.st_size : f->size;
    f->mtime = st.st_mtime;
    if (read_mode_cache_neutral(rd.df.mode) && rd.declared > 0) {
        /* no readahead: pages beyond what we asked for would look cached-before later */
        posix_fadvise(rd.df.fd, 0, 0, POSIX_FADV_RANDOM);
        rd.map_len = (size_t)st.st_size;
        rd.map = mmap(NULL, rd.map_len, PROT_READ, MAP_SHARED, rd.df.fd, 0);
        if (rd.map == MAP_FAILED) {
            rd.map = NULL;
            err_errno(&w->err, errno, "could not map file \"%s\" to check its residency",
                      f->source);
            goto fail;
        }
    }
    if (!write_entry(w, f, rd.declared))
        goto fail;
    while (rd.consumed < rd.declared && !rd.eof) {
        while (rd.count < w->depth && rd.next_offset < rd.declared && !rd.eof)
            if (!submit_next(w, &rd))
                goto fail;
        if (!consume_head(w, &rd))
            goto fail;
        if (atomic_load(&sh->failed))
            goto fail;
    }
    drain(w, &rd);
    if (rd.consumed < rd.declared) { /* shrank while we read: keep the tar entry whole */
        uint64_t zeros = rd.declared - rd.consumed + tar_padding(rd.declared);
        log_info("\"%s\" shrank during the backup (%llu -> %llu bytes)", f->source,
                 (unsigned long long)rd.declared, (unsigned long long)rd.consumed);
        if (!tar_write_zeros(w->out, zeros, &w->err))
            goto fail;
        w->part_bytes += zeros;
    }
    reading_close(&rd);
    f->done = true;
    f->stored_size = rd.consumed;
    f->crc = crc32c_final(rd.crc);
    f->partition = w->part_number;
    return true;
fail:
    drain(w, &rd);
    reading_close(&rd);
    return false;
}

/* Record the first error (under the lock: workers and the starting thread race) and stop all. */
static void pipeline_fail(shared *sh, const pgd_error *err)
{
    pthread_mutex_lock(&sh->lock);
    if (!sh->err.set)
        sh->err = *err;
    pthread_mutex_unlock(&sh->lock);
    atomic_store(&sh->failed, true);
}

static void worker_fail(worker *w)
{
    /* a worker that stopped because another failed has nothing to add */
    if (!w->err.set && !atomic_load(&w->sh->failed))
        err_set(&w->err, "reader thread stopped without saying why");
    if (w->err.set)
        pipeline_fail(w->sh, &w->err);
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    shared *sh = w->sh;
    bool ok = true;

    while (ok && !atomic_load(&sh->failed)) {
        size_t idx = atomic_fetch_add(&sh->next_file, 1);
        pipeline_file *f;

        if (idx >= sh->nfiles)
            break;
        f = &sh->files[idx];
        if (f->is_dir || f->link != NULL) {
            ok = (w->out != NULL || partition_open(w)) && write_entry(w, f, 0);
            f->done = ok;
            f->partition = w->part_number;
        } else {
            ok = backup_file(w, f);
        }
        if (ok && w->out != NULL && w->part_bytes >= sh->cfg->partition_size)
            ok = partition_close(w);
    }
    if (ok && w->out != NULL && !atomic_load(&sh->failed))
        ok = partition_close(w);
    if (!ok)
        worker_fail(w);
    out_abort(w->out); /* only when something failed */
    w->out = NULL;
    atomic_fetch_sub(&sh->workers_running, 1);
    return NULL;
}

/* The engine and `depth` aligned buffers (+ residency maps) of one worker. */
static bool worker_setup(worker *w, shared *sh, pgd_error *err)
{
    const pipeline_config *cfg = sh->cfg;
    size_t pages = sh->max_read / os_page() + 1;

    w->sh = sh;
    w->depth = cfg->depth;
    w->slots = calloc((size_t)w->depth, sizeof(*w->slots));
    if (w->slots == NULL)
        return err_set(err, "out of memory");
    for (int d = 0; d < w->depth; d++) {
        /* headroom for the tar padding written from the same buffer */
        w->slots[d].req.buf = dio_buffer_alloc(sh->max_read + DIO_ALIGN, err);
        if (w->slots[d].req.buf == NULL)
            return false;
        if (cfg->mode != READ_MODE_BUFFERED && (w->slots[d].was_cached = malloc(pages)) == NULL)
            return err_set(err, "out of memory");
    }
    w->engine = io_engine_new(cfg->engine, (unsigned)w->depth, err);
    return w->engine != NULL;
}

static void worker_teardown(worker *w)
{
    io_engine_free(w->engine);
    for (int d = 0; w->slots != NULL && d < w->depth; d++) {
        free(w->slots[d].req.buf);
        free(w->slots[d].was_cached);
    }
    free(w->slots);
}

static int partition_cmp(const void *a, const void *b)
{
    const pipeline_partition *pa = a, *pb = b;

    return (pa->number > pb->number) - (pa->number < pb->number);
}

static uint64_t total_bytes(const pipeline_file *files, size_t n)
{
    uint64_t total = 0;

    for (size_t i = 0; i < n; i++)
        total += files[i].size;
    return total;
}

bool pipeline_run(const pipeline_config *cfg, pipeline_file *files, size_t nfiles,
                  pipeline_result *result, pgd_error *err)
{
    shared sh = {.cfg = cfg, .files = files, .nfiles = nfiles};
    worker *workers = calloc((size_t)cfg->workers, sizeof(*workers));
    progress_meter meter;
    int started = 0;

    memset(result, 0, sizeof(*result));
    if (workers == NULL)
        return err_set(err, "out of memory");
    pthread_mutex_init(&sh.lock, NULL);
    sh.max_read = cfg->read_size;
    for (size_t i = 0; i < nfiles; i++)
        if (files[i].read_size > sh.max_read)
            sh.max_read = files[i].read_size;
    rate_limit_init(&sh.rate, cfg->max_rate,
                    sh.max_read > cfg->max_rate / 10 ? sh.max_read : cfg->max_rate / 10);
    /*
     * Every worker's engine and buffers before any thread starts: a worker
     * that cannot start must not leave the others to read the whole
     * cluster before the failure is noticed.
     */
    for (int i = 0; i < cfg->workers; i++) {
        pgd_error setup_err = {0};
        if (!worker_setup(&workers[i], &sh, &setup_err)) {
            err_prefix(&setup_err, "could not set up reader thread %d", i + 1);
            pipeline_fail(&sh, &setup_err);
            break;
        }
    }
    progress_start(&meter, cfg->progress, total_bytes(files, nfiles));
    for (int i = 0; i < cfg->workers && !atomic_load(&sh.failed); i++) {
        int rc;
        atomic_fetch_add(&sh.workers_running, 1);
        rc = pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]);
        if (rc != 0) {
            pgd_error start_err = {0};
            atomic_fetch_sub(&sh.workers_running, 1);
            err_errno(&start_err, rc, "could not start reader thread %d", i + 1);
            pipeline_fail(&sh, &start_err);
            break;
        }
        started++;
    }
    while (atomic_load(&sh.workers_running) > 0) {
        struct timespec ts = {0, 10 * 1000 * 1000}; /* progress and prompt exit */
        nanosleep(&ts, NULL);
        progress_update(&meter, atomic_load(&sh.bytes_read));
        if (cfg->interrupted != NULL && *cfg->interrupted != 0 && !atomic_load(&sh.failed)) {
            pgd_error stop = {0};
            err_set(&stop, "interrupted");
            pipeline_fail(&sh, &stop);
        }
    }
    for (int i = 0; i < started; i++)
        pthread_join(workers[i].thread, NULL);
    for (int i = 0; i < cfg->workers; i++)
        worker_teardown(&workers[i]);
    free(workers);
    rate_limit_destroy(&sh.rate);
    progress_finish(&meter);
    pthread_mutex_destroy(&sh.lock);

    /* the partitions already written stay: the caller owns the backup id and removes them */
    if (atomic_load(&sh.failed) || sh.err.set) {
        if (!sh.err.set)
            err_set(&sh.err, "the reader threads stopped without saying why");
        *err = sh.err;
        free(sh.partitions);
        return false;
    }
    if (sh.npartitions > 1)
        qsort(sh.partitions, sh.npartitions, sizeof(*sh.partitions), partition_cmp);
    result->partitions = sh.partitions;
    result->npartitions = sh.npartitions;
    result->bytes_read = atomic_load(&sh.bytes_read);
    result->bytes_stored = atomic_load(&sh.bytes_stored);
    result->read_modes = atomic_load(&sh.read_modes);
    return true;
}

void pipeline_result_free(pipeline_result *result)
{
    free(result->partitions);
    memset(result, 0, sizeof(*result));
}
