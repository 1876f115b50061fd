/*
 * pipeline.c - worker threads that read with O_DIRECT and write compressed
 * tar partitions. See pipeline.h for the shape and the rules on files that
 * change during the backup.
 */
#define _GNU_SOURCE
#include "backup/pipeline.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "repo/layout.h"
#include "repo/tar.h"
#include "util/crc32c.h"
#include "util/log.h"
#include "util/progress.h"

typedef struct shared {
    const pipeline_config *cfg;
    pipeline_file *files;
    size_t nfiles;
    atomic_size_t next_file;
    atomic_uint next_partition;
    atomic_uint_fast64_t bytes_read;
    atomic_uint_fast64_t bytes_stored;
    atomic_uint read_modes;
    atomic_bool failed;
    atomic_int workers_running;
    pthread_mutex_t lock; /* guards err and partitions */
    pgd_error err;
    pipeline_partition *partitions;
    size_t npartitions;
} shared;

typedef struct worker {
    shared *sh;
    pthread_t thread;
    char *buf;
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
    layout_partition_name(w->part_number, sh->cfg->compression, w->part_name,
                          sizeof(w->part_name));
    layout_backup_object(sh->cfg->backup_id, w->part_name, path, sizeof(path));
    out = storage_write_open(sh->cfg->repo, path, 0, &w->err);
    if (out != NULL)
        out = crc_out_new(out, &w->part_stored, &w->part_crc, &w->err);
    if (out != NULL)
        out = compress_out_new(sh->cfg->compression, sh->cfg->compression_level, out, path,
                               &w->err);
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
                   .size = size,
                   .mode = f->mode,
                   .mtime = f->mtime,
                   .type = f->is_dir ? TAR_DIR : TAR_FILE};

    w->part_bytes += TAR_BLOCK;
    return tar_write_header(w->out, &e, &w->err);
}

/* Read one file into the open partition. */
static bool backup_file(worker *w, pipeline_file *f)
{
    shared *sh = w->sh;
    size_t read_size = sh->cfg->read_size;
    uint32_t crc = CRC32C_INIT;
    uint64_t declared, done = 0;
    dio_file df;
    struct stat st;
    bool missing;

    if (!dio_file_open(&df, f->source, sh->cfg->direct_io, &missing, &w->err)) {
        if (missing) {
            log_info("skipping \"%s\": removed during the backup", f->source);
            return true;
        }
        return false;
    }
    if (fstat(df.fd, &st) != 0) {
        err_errno(&w->err, errno, "could not stat file \"%s\"", f->source);
        dio_file_close(&df);
        return false;
    }
    /* opened only now, so a file that vanished leaves no empty partition */
    if (w->out == NULL && !partition_open(w))
        goto fail;
    if (df.mode == READ_MODE_FALLBACK && !(atomic_load(&sh->read_modes) & (1u << df.mode)))
        log_warn("O_DIRECT refused for \"%s\": reading buffered", f->source);
    atomic_fetch_or(&sh->read_modes, 1u << df.mode);
    /* grew: read what existed at walk time; shrank: what is there now */
    declared = (uint64_t)st.st_size < f->size ? (uint64_t)st.st_size : f->size;
    f->mtime = st.st_mtime;
    if (!write_entry(w, f, declared))
        goto fail;
    while (done < declared) {
        uint64_t left = declared - done;
        size_t want = left >= read_size ? read_size : (size_t)((left + DIO_ALIGN - 1) / DIO_ALIGN * DIO_ALIGN);
        size_t n, pad = 0;

        if (!dio_file_read(&df, w->buf, want, &n, &w->err))
            goto fail;
        if (n == 0)
            break; /* shrank after open */
        if (n > left)
            n = (size_t)left; /* grew after open */
        crc = crc32c_update(crc, w->buf, n);
        if (done + n == declared) { /* pad the tar entry in the buffer itself */
            pad = (size_t)tar_padding(declared);
            memset(w->buf + n, 0, pad);
        }
        if (!out_write(w->out, w->buf, n + pad, &w->err))
            goto fail;
        done += n;
        w->part_bytes += n + pad;
        atomic_fetch_add(&sh->bytes_read, n);
        if (atomic_load(&sh->failed))
            goto fail;
    }
    if (done < declared) { /* shrank while we read: keep the tar entry whole */
        log_info("\"%s\" shrank during the backup (%llu -> %llu bytes)", f->source,
                 (unsigned long long)declared, (unsigned long long)done);
        if (!tar_write_zeros(w->out, declared - done + tar_padding(declared), &w->err))
            goto fail;
        w->part_bytes += declared - done + tar_padding(declared);
    }
    dio_file_close(&df);
    f->done = true;
    f->stored_size = done;
    f->crc = crc32c_final(crc);
    f->partition = w->part_number;
    return true;
fail:
    dio_file_close(&df);
    return false;
}

static void worker_fail(worker *w)
{
    shared *sh = w->sh;

    pthread_mutex_lock(&sh->lock);
    if (!sh->err.set)
        sh->err = w->err;
    pthread_mutex_unlock(&sh->lock);
    atomic_store(&sh->failed, true);
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
        if (f->is_dir) {
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
    if (!ok && w->err.set)
        worker_fail(w);
    out_abort(w->out); /* only when something failed */
    w->out = NULL;
    atomic_fetch_sub(&sh->workers_running, 1);
    return NULL;
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
    worker *workers = calloc((size_t)cfg->concurrency, sizeof(*workers));
    progress_meter meter;
    int started = 0;

    memset(result, 0, sizeof(*result));
    if (workers == NULL)
        return err_set(err, "out of memory");
    pthread_mutex_init(&sh.lock, NULL);
    progress_start(&meter, cfg->progress, total_bytes(files, nfiles));
    for (int i = 0; i < cfg->concurrency; i++) {
        workers[i].sh = &sh;
        /* headroom for the tar padding written from the same buffer */
        workers[i].buf = dio_buffer_alloc(cfg->read_size + DIO_ALIGN, &sh.err);
        if (workers[i].buf == NULL)
            break;
        atomic_fetch_add(&sh.workers_running, 1);
        if (pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]) != 0) {
            atomic_fetch_sub(&sh.workers_running, 1);
            err_set(&sh.err, "could not start reader thread %d", i);
            atomic_store(&sh.failed, true);
            break;
        }
        started++;
    }
    while (atomic_load(&sh.workers_running) > 0) {
        struct timespec ts = {0, 200 * 1000 * 1000};
        nanosleep(&ts, NULL);
        progress_update(&meter, atomic_load(&sh.bytes_read));
    }
    for (int i = 0; i < started; i++)
        pthread_join(workers[i].thread, NULL);
    for (int i = 0; i < cfg->concurrency; i++)
        free(workers[i].buf);
    free(workers);
    progress_finish(&meter);
    pthread_mutex_destroy(&sh.lock);

    if (sh.err.set || started < cfg->concurrency) {
        if (!sh.err.set)
            err_set(&sh.err, "could not start the reader threads");
        *err = sh.err;
        /* remove the partitions already written: the backup will not exist */
        for (size_t i = 0; i < sh.npartitions; i++) {
            char path[LAYOUT_PATH_MAX];
            pgd_error ignore = {0};
            layout_backup_object(cfg->backup_id, sh.partitions[i].name, path, sizeof(path));
            storage_remove(cfg->repo, path, &ignore);
        }
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
