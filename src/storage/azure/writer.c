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

#include "storage/http/piece_upload.h"
#include "util/digest.h"
#include "util/log.h"
#include "util/xmalloc.h"

#define AZURE_WRITER_ID_BYTES 8 /* 16 hex digits */
#define AZURE_WRITER_HEADERS  9 /* blob type, MD5, condition: pairs, then NULL */

typedef struct azure_writer {
    out_stream base;
    azure_storage *s;
    char *path;
    unsigned flags;
    char writer_id[AZURE_WRITER_ID_BYTES * 2 + 1];
    piece_upload up; /* the blocks */
} azure_writer;

uint64_t azure_writer_block_size(uint64_t block_size, unsigned number)
{
    return piece_upload_size(block_size, number, AZURE_BLOCKS_PER_SIZE, AZURE_BLOCK_MAX);
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

/* An upload thread's block (piece_upload_ops.send). */
static bool azure_writer_put_block(void *owner, const upload_piece *b, pgd_error *err)
{
    azure_writer *w = owner;
    char *id = azure_writer_block_id(w->writer_id, b->number);
    const char *params[] = {"comp", "block", "blockid", id, NULL};
    bool ok = azure_writer_put(w, params, NULL, b->buf, b->len, false, err);

    free(id);
    return ok;
}

/* Blocks need nothing before the first: no begin. */
static const piece_upload_ops azure_writer_blocks = {NULL, azure_writer_put_block};

static bool azure_writer_write(out_stream *os, const void *buf, size_t len, pgd_error *err)
{
    return piece_upload_write(&((azure_writer *)os)->up, buf, len, err);
}

static void azure_writer_free(azure_writer *w)
{
    piece_upload_free(&w->up);
    free(w->path);
    free(w);
}

/* Put Block List of blocks 1..count: the blob appears, whole. */
static bool azure_writer_commit(azure_writer *w, pgd_error *err)
{
    static const char *const params[] = {"comp", "blocklist", NULL};
    unsigned n = w->up.count;
    char **ids = xcalloc(n, sizeof(char *)), *xml;
    size_t len = 0;
    bool ok;

    for (unsigned i = 0; i < n; i++)
        ids[i] = azure_writer_block_id(w->writer_id, i + 1);
    xml = azure_xml_block_list(ids, n, &len);
    for (unsigned i = 0; i < n; i++)
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

    if (!w->up.begun) {
        ok = azure_writer_put(w, NULL, "BlockBlob", w->up.current->buf, w->up.current->len,
                              azure_writer_no_replace(w), err);
    } else {
        ok = piece_upload_finish(&w->up, err) && azure_writer_commit(w, err);
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
    piece_upload_limits lim = {.size = s->block_size,
                               .max_size = AZURE_BLOCK_MAX,
                               .per_size = AZURE_BLOCKS_PER_SIZE,
                               .max_pieces = AZURE_BLOCKS_MAX,
                               .threads = s->upload_concurrency,
                               .unit = "blocks"};

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
    piece_upload_init(&w->up, &azure_writer_blocks, w, w->path, &lim);
    return &w->base;
}
