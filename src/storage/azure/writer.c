/*
 * writer.c - a blob written as a stream: smaller than one block, it is one
 * Put Blob; larger, blocks (of block_size, doubled every 5,000 blocks so no
 * blob needs more than Azure's 50,000) go out upload_concurrency at a time
 * from that many buffers and are committed with one Put Block List. Memory
 * per open writer is bounded by (upload_concurrency + 1) x block_size
 * whatever the blob's size, as the S3 multipart upload. Every body carries
 * Content-MD5, so the service rejects a corrupted transfer.
 *
 * Uncommitted blocks are invisible: a blob appears, whole, with the request
 * that commits it. A writer that fails or is killed leaves at most
 * uncommitted blocks, which no listing or read shows and which Azure
 * discards after a week; their ids carry a random writer id, so two writers
 * of one name never commit each other's blocks.
 *
 * STORAGE_WRITE_NO_REPLACE sends If-None-Match: * with the request that
 * makes the blob visible (Put Blob or Put Block List): of two writers of
 * one name exactly one wins, and closing the other fails.
 */
#define _GNU_SOURCE
#include "storage/azure/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "util/big_buffer.h"
#include "util/digest.h"
#include "util/log.h"
#include "util/threads.h"
#include "util/xmalloc.h"

#define AZURE_WRITER_ID_BYTES 8 /* 16 hex digits */
#define AZURE_WRITER_HEADERS  9 /* blob type, MD5, condition: pairs, then NULL */

typedef struct azure_block {
    char *buf;
    size_t len;
    unsigned number;
    bool busy;
} azure_block;

typedef struct azure_writer {
    out_stream base;
    azure_storage *s;
    char *path;
    unsigned flags;
    char writer_id[AZURE_WRITER_ID_BYTES * 2 + 1];
    azure_block *blocks; /* upload_concurrency + 1 buffers */
    unsigned nbuf;
    azure_block *current;
    uint64_t block_cap; /* size of the block being filled */
    unsigned next_number;
    bool in_blocks; /* the upload threads run: the blob is being written as blocks */
    pthread_mutex_t lock;
    pthread_cond_t changed;
    unsigned inflight;
    pgd_error err; /* first upload error */
    pthread_t *threads;
    unsigned nthreads; /* started */
    azure_block **queue;
    unsigned qlen;
    bool stopping;
} azure_writer;

uint64_t azure_writer_block_size(uint64_t block_size, unsigned number)
{
    unsigned doublings = number > 0 ? (number - 1) / AZURE_BLOCKS_PER_SIZE : 0;

    while (doublings-- > 0 && block_size < AZURE_BLOCK_MAX)
        block_size *= 2;
    return block_size < AZURE_BLOCK_MAX ? block_size : AZURE_BLOCK_MAX;
}

char *azure_writer_block_id(const char *writer_id, unsigned number)
{
    char raw[64];
    int n = snprintf(raw, sizeof(raw), "%s-%06u", writer_id, number);

    return azure_sign_base64((const unsigned char *)raw, (size_t)n);
}

/* Content-MD5 of a body, base64; NULL when libcrypto made none. */
static char *azure_writer_md5(const void *data, size_t len)
{
    unsigned char md[DIGEST_MD5_LEN];

    if (!digest_md5(data, len, md))
        return NULL;
    return azure_sign_base64(md, sizeof(md));
}

static bool azure_writer_no_replace(const azure_writer *w)
{
    return (w->flags & STORAGE_WRITE_NO_REPLACE) != 0;
}

/* PUT of a body with its Content-MD5 and headers (pairs, NULL-ended), params as given. */
static bool azure_writer_put(azure_writer *w, const char *const *params, const char *blob_type,
                             const void *body, size_t len, bool no_replace, pgd_error *err)
{
    const char *h[AZURE_WRITER_HEADERS];
    char *md5 = azure_writer_md5(body, len);
    azure_answer a;
    int n = 0;
    bool ok;

    if (md5 == NULL)
        return err_set(err, "PUT of \"%s\" in %s failed: libcrypto (%s) made no MD5 of its body",
                       w->path, w->s->base.uri, PGD_LIBCRYPTO_SONAME);
    h[n++] = "content-md5";
    h[n++] = md5;
    if (blob_type != NULL) {
        h[n++] = "x-ms-blob-type";
        h[n++] = blob_type;
    }
    if (no_replace) {
        h[n++] = "if-none-match";
        h[n++] = "*";
    }
    h[n] = NULL;
    azure_call call = {.method = "PUT",
                       .path = w->path,
                       .params = params,
                       .body = body,
                       .body_len = len,
                       .headers = h,
                       .no_replace = no_replace};
    ok = azure_request(w->s, &call, &a, err);
    azure_answer_free(&a);
    free(md5);
    return ok;
}

static bool azure_writer_put_block(azure_writer *w, azure_block *b, pgd_error *err)
{
    char *id = azure_writer_block_id(w->writer_id, b->number);
    const char *params[] = {"comp", "block", "blockid", id, NULL};
    bool ok = azure_writer_put(w, params, NULL, b->buf, b->len, false, err);

    free(id);
    return ok;
}

static void *azure_writer_uploader_main(void *arg)
{
    azure_writer *w = arg;

    pthread_mutex_lock(&w->lock);
    for (;;) {
        azure_block *b;
        pgd_error err = {0};
        bool ok;

        while (w->qlen == 0 && !w->stopping)
            pthread_cond_wait(&w->changed, &w->lock);
        if (w->qlen == 0 && w->stopping)
            break;
        b = w->queue[0];
        memmove(w->queue, w->queue + 1, (--w->qlen) * sizeof(azure_block *));
        ok = w->err.set; /* after a failure the rest is not sent */
        pthread_mutex_unlock(&w->lock);
        ok = ok || azure_writer_put_block(w, b, &err);
        pthread_mutex_lock(&w->lock);
        if (!ok && !w->err.set)
            w->err = err;
        b->busy = false;
        w->inflight--;
        pthread_cond_broadcast(&w->changed);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

static bool azure_writer_start_blocks(azure_writer *w, pgd_error *err)
{
    w->threads = xcalloc(w->s->upload_concurrency, sizeof(pthread_t));
    w->queue = xcalloc(w->nbuf, sizeof(azure_block *));
    w->in_blocks = true;
    return threads_start(w->threads, w->s->upload_concurrency, azure_writer_uploader_main, w,
                         "upload thread", &w->nthreads, err);
}

static void azure_writer_enqueue(azure_writer *w, azure_block *b)
{
    pthread_mutex_lock(&w->lock);
    b->busy = true;
    w->queue[w->qlen++] = b;
    w->inflight++;
    pthread_cond_broadcast(&w->changed);
    pthread_mutex_unlock(&w->lock);
}

/* Hand the current block to the uploaders and take a free buffer (waits for one). */
static bool azure_writer_ship_current(azure_writer *w, pgd_error *err)
{
    azure_block *b = w->current;

    if (!w->in_blocks && !azure_writer_start_blocks(w, err))
        return false;
    azure_writer_enqueue(w, b);
    pthread_mutex_lock(&w->lock);
    w->current = NULL;
    while (w->current == NULL && !w->err.set) {
        for (unsigned i = 0; i < w->nbuf; i++) {
            if (!w->blocks[i].busy && &w->blocks[i] != b) {
                w->current = &w->blocks[i];
                break;
            }
        }
        if (w->current == NULL)
            pthread_cond_wait(&w->changed, &w->lock);
    }
    if (w->err.set) {
        pgd_error e = w->err;
        pthread_mutex_unlock(&w->lock);
        *err = e;
        return false;
    }
    pthread_mutex_unlock(&w->lock);
    w->current->len = 0;
    w->current->number = ++w->next_number;
    w->block_cap = azure_writer_block_size(w->s->block_size, w->current->number);
    if (w->current->number > AZURE_BLOCKS_MAX)
        return err_set(err, "\"%s\" would need more than %d blocks", w->path, AZURE_BLOCKS_MAX);
    if (w->current->buf == NULL || w->block_cap > w->s->block_size)
        w->current->buf = w->current->buf == NULL ? big_buffer_alloc(w->block_cap)
                                                  : xrealloc(w->current->buf, w->block_cap);
    return true;
}

static bool azure_writer_write(out_stream *os, const void *buf, size_t len, pgd_error *err)
{
    azure_writer *w = (azure_writer *)os;
    const char *p = buf;

    while (len > 0) {
        size_t room = (size_t)(w->block_cap - w->current->len), n = len < room ? len : room;
        memcpy(w->current->buf + w->current->len, p, n);
        w->current->len += n;
        p += n;
        len -= n;
        if (w->current->len == w->block_cap && !azure_writer_ship_current(w, err))
            return false;
    }
    return true;
}

static void azure_writer_stop_uploaders(azure_writer *w)
{
    if (w->threads == NULL)
        return;
    pthread_mutex_lock(&w->lock);
    while (w->inflight > 0)
        pthread_cond_wait(&w->changed, &w->lock);
    pthread_mutex_unlock(&w->lock);
    threads_stop(&w->lock, &w->changed, &w->stopping, w->threads, w->nthreads);
    free(w->threads);
    w->threads = NULL;
}

static void azure_writer_free(azure_writer *w)
{
    azure_writer_stop_uploaders(w);
    for (unsigned i = 0; i < w->nbuf; i++)
        free(w->blocks[i].buf);
    free(w->blocks);
    free(w->queue);
    free(w->path);
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->changed);
    free(w);
}

/* Put Block List of blocks 1..next_number: the blob appears, whole. */
static bool azure_writer_commit(azure_writer *w, pgd_error *err)
{
    static const char *const params[] = {"comp", "blocklist", NULL};
    char **ids = xcalloc(w->next_number, sizeof(char *)), *xml;
    size_t len = 0;
    bool ok;

    for (unsigned i = 0; i < w->next_number; i++)
        ids[i] = azure_writer_block_id(w->writer_id, i + 1);
    xml = azure_xml_block_list(ids, w->next_number, &len);
    for (unsigned i = 0; i < w->next_number; i++)
        free(ids[i]);
    free(ids);
    if (xml == NULL)
        return err_set(err, "out of memory");
    ok = azure_writer_put(w, params, NULL, xml, len, azure_writer_no_replace(w), err);
    free(xml);
    return ok;
}

static bool azure_writer_close(out_stream *os, pgd_error *err)
{
    azure_writer *w = (azure_writer *)os;
    bool ok;

    if (!w->in_blocks) {
        ok = azure_writer_put(w, NULL, "BlockBlob", w->current->buf, w->current->len,
                              azure_writer_no_replace(w), err);
    } else {
        if (w->current->len > 0)
            azure_writer_enqueue(w, w->current);
        else
            w->next_number--; /* the empty last buffer is not a block */
        azure_writer_stop_uploaders(w);
        ok = !w->err.set || (*err = w->err, false);
        ok = ok && azure_writer_commit(w, err);
        if (!ok)
            log_debug("the uncommitted blocks of \"%s\" are left to Azure, which discards them",
                      w->path);
    }
    azure_writer_free(w);
    return ok;
}

static void azure_writer_abort(out_stream *os)
{
    azure_writer_free((azure_writer *)os);
}

static const out_stream_ops azure_writer_ops = {azure_writer_write, azure_writer_close,
                                                azure_writer_abort};

out_stream *azure_writer_open(storage *st, const char *path, unsigned flags, pgd_error *err)
{
    azure_storage *s = (azure_storage *)st;
    azure_writer *w = xcalloc(1, sizeof(*w));
    unsigned char id[AZURE_WRITER_ID_BYTES];

    (void)err; /* never NULL: the signature is that of every driver's write_open */
    if (getrandom(id, sizeof(id), GRND_NONBLOCK) != (ssize_t)sizeof(id)) {
        /* any distinct id will do: it only keeps two writers' blocks apart */
        uint64_t v = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)w;
        memcpy(id, &v, sizeof(id));
    }
    for (size_t i = 0; i < sizeof(id); i++)
        snprintf(w->writer_id + 2 * i, 3, "%02x", id[i]);
    w->base.ops = &azure_writer_ops;
    w->s = s;
    w->flags = flags;
    w->path = xstrdup(path);
    w->nbuf = s->upload_concurrency + 1;
    w->blocks = xcalloc(w->nbuf, sizeof(azure_block));
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->changed, NULL);
    w->current = &w->blocks[0];
    w->current->number = w->next_number = 1;
    w->block_cap = s->block_size;
    w->current->buf = big_buffer_alloc(w->block_cap);
    return &w->base;
}
