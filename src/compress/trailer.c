/*
 * trailer.c - compressed objects that carry our CRC-32C of their content
 * (compress.h: compress_out_new_trailed, decompress_in_new_trailed).
 *
 * The trailer is a skippable frame after the codec's frame(s): the lz4 and
 * zstd frame formats reserve the magic numbers 0x184D2A50 to 0x184D2A5F for
 * frames a decoder skips, so `lz4 -d` and `zstd -d` still give the content.
 *
 *   magic 0x184D2A5D (4 bytes, little-endian) | 16 (4 bytes, little-endian) |
 *   "PGDC" | CRC-32C of the content (4, LE) | size of the content (8, LE)
 *
 * The reader keeps the last TRAILER_LEN bytes of the stored stream and the
 * first frame's header: at the end it wants either the trailer, with the
 * CRC and size of what the codec gave, or a single frame with the codec's
 * own content checksum (objects written before the trailer; the codec
 * checked it). Anything else is a damaged object: one cut after its frame ends loses
 * the trailer and is refused, not taken for whole.
 */
#include "compress/compress.h"

#include <stdlib.h>
#include <string.h>

#include "util/crc32c.h"
#include "util/xmalloc.h"

#define TRAILER_MAGIC      0x184D2A5Du
#define TRAILER_BODY       16
#define TRAILER_LEN        (8 + TRAILER_BODY)
#define TRAILER_TAG        "PGDC"
#define LZ4_FRAME_MAGIC    0x184D2204u
#define ZSTD_FRAME_MAGIC   0xFD2FB528u
#define FRAME_HEAD_LEN     5    /* the magic and the flags byte */
#define FRAME_HAS_CHECKSUM 0x04 /* lz4 FLG and zstd Frame_Header_Descriptor: bit 2 */

static void trailer_put_le(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t trailer_get_le(const unsigned char *p, int bytes)
{
    uint64_t v = 0;

    for (int i = bytes - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* ---- writing: crc (head) -> codec -> tail (appends the trailer) -> next ---- */

typedef struct trailer_tail {
    out_stream base;
    out_stream *next;
    unsigned char trailer[TRAILER_LEN];
    bool armed; /* the head set the trailer: a close without it is a bug, not an object */
} trailer_tail;

typedef struct trailer_head {
    out_stream base;
    out_stream *codec;
    trailer_tail *tail; /* owned by the codec's chain */
    uint32_t crc;
    uint64_t size;
} trailer_head;

static bool trailer_tail_write(out_stream *s, const void *buf, size_t len, pgd_error *err)
{
    return out_write(((trailer_tail *)s)->next, buf, len, err);
}

static bool trailer_tail_close(out_stream *s, pgd_error *err)
{
    trailer_tail *t = (trailer_tail *)s;
    out_stream *next = t->next;
    bool armed = t->armed;
    unsigned char trailer[TRAILER_LEN];

    memcpy(trailer, t->trailer, sizeof(trailer));
    free(t);
    if (!armed) {
        out_abort(next);
        return err_set(err, "internal error: a compressed object closed without its trailer");
    }
    if (!out_write(next, trailer, sizeof(trailer), err)) {
        out_abort(next);
        return false;
    }
    return out_close(next, err);
}

static void trailer_tail_abort(out_stream *s)
{
    trailer_tail *t = (trailer_tail *)s;

    out_abort(t->next);
    free(t);
}

static const out_stream_ops trailer_tail_ops = {trailer_tail_write, trailer_tail_close,
                                                trailer_tail_abort};

static bool trailer_head_write(out_stream *s, const void *buf, size_t len, pgd_error *err)
{
    trailer_head *h = (trailer_head *)s;

    h->crc = crc32c_update(h->crc, buf, len);
    h->size += len;
    return out_write(h->codec, buf, len, err);
}

static bool trailer_head_close(out_stream *s, pgd_error *err)
{
    trailer_head *h = (trailer_head *)s;
    unsigned char *p = h->tail->trailer;
    out_stream *codec = h->codec;

    trailer_put_le(p, TRAILER_MAGIC, 4);
    trailer_put_le(p + 4, TRAILER_BODY, 4);
    memcpy(p + 8, TRAILER_TAG, 4);
    trailer_put_le(p + 12, crc32c_final(h->crc), 4);
    trailer_put_le(p + 16, h->size, 8);
    h->tail->armed = true;
    free(h);
    return out_close(codec, err);
}

static void trailer_head_abort(out_stream *s)
{
    trailer_head *h = (trailer_head *)s;

    out_abort(h->codec);
    free(h);
}

static const out_stream_ops trailer_head_ops = {trailer_head_write, trailer_head_close,
                                                trailer_head_abort};

out_stream *compress_out_new_trailed(compress_kind kind, int level, out_stream *next,
                                     const char *name, pgd_error *err)
{
    trailer_tail *t;
    trailer_head *h;
    out_stream *codec;

    if (kind == COMPRESS_NONE)
        return next; /* a plain copy stays a plain copy */
    t = xcalloc(1, sizeof(*t));
    h = xcalloc(1, sizeof(*h));
    t->base.ops = &trailer_tail_ops;
    t->next = next;
    if ((codec = compress_out_new(kind, level, &t->base, name, err)) == NULL) {
        free(h); /* the codec's constructor aborted the chain it was given */
        return NULL;
    }
    h->base.ops = &trailer_head_ops;
    h->codec = codec;
    h->tail = t;
    h->crc = CRC32C_INIT;
    return &h->base;
}

/* ---- reading: src -> tap (keeps the stored stream's ends) -> codec -> check ---- */

typedef struct trailer_tap {
    in_stream base;
    in_stream *src;
    unsigned char head[FRAME_HEAD_LEN];
    unsigned char last[TRAILER_LEN]; /* the last bytes read, oldest first */
    uint64_t bytes;
} trailer_tap;

typedef struct trailer_check {
    in_stream base;
    in_stream *codec;
    trailer_tap *tap; /* owned by the codec's chain */
    compress_kind kind;
    uint32_t crc;
    uint64_t size;
    bool checked, passed;
    char *name;
} trailer_check;

static bool trailer_tap_read(in_stream *s, void *buf, size_t len, size_t *n, pgd_error *err)
{
    trailer_tap *t = (trailer_tap *)s;
    const unsigned char *p = buf;

    if (!in_read(t->src, buf, len, n, err))
        return false;
    for (size_t i = 0; i < *n && t->bytes + i < FRAME_HEAD_LEN; i++)
        t->head[t->bytes + i] = p[i];
    if (*n >= TRAILER_LEN) {
        memcpy(t->last, p + *n - TRAILER_LEN, TRAILER_LEN);
    } else if (*n > 0) {
        memmove(t->last, t->last + *n, TRAILER_LEN - *n);
        memcpy(t->last + TRAILER_LEN - *n, p, *n);
    }
    t->bytes += *n;
    return true;
}

static void trailer_tap_close(in_stream *s)
{
    trailer_tap *t = (trailer_tap *)s;

    in_close(t->src);
    free(t);
}

static const in_stream_ops trailer_tap_ops = {trailer_tap_read, trailer_tap_close};

static unsigned trailer_frames(const trailer_check *c)
{
    return c->kind == COMPRESS_LZ4 ? lz4_in_frames(c->codec) : zstd_in_frames(c->codec);
}

/* The end of the stream: the trailer's word, or one frame with the codec's own checksum. */
static bool trailer_check_end(trailer_check *c, pgd_error *err)
{
    const trailer_tap *t = c->tap;
    uint64_t magic = trailer_get_le(t->head, 4);
    bool has_trailer = t->bytes >= TRAILER_LEN && trailer_get_le(t->last, 4) == TRAILER_MAGIC &&
                       trailer_get_le(t->last + 4, 4) == TRAILER_BODY &&
                       memcmp(t->last + 8, TRAILER_TAG, 4) == 0;

    if (has_trailer) {
        uint32_t want_crc = (uint32_t)trailer_get_le(t->last + 12, 4);
        uint64_t want_size = trailer_get_le(t->last + 16, 8);

        if (c->size != want_size)
            return err_set(err, "\"%s\" is corrupt: %llu bytes of content, its trailer says %llu",
                           c->name, (unsigned long long)c->size, (unsigned long long)want_size);
        if (crc32c_final(c->crc) != want_crc)
            return err_set(err,
                           "\"%s\" is corrupt: the CRC-32C of its content is %08x, its trailer "
                           "says %08x",
                           c->name, crc32c_final(c->crc), want_crc);
        return true;
    }
    if (t->bytes < FRAME_HEAD_LEN ||
        magic != (c->kind == COMPRESS_LZ4 ? LZ4_FRAME_MAGIC : ZSTD_FRAME_MAGIC))
        return err_set(err,
                       "\"%s\" is corrupt or cut short: it ends without pgdirect's CRC-32C trailer "
                       "and does not begin with the %s frame magic",
                       c->name, compress_name(c->kind));
    if ((t->head[4] & FRAME_HAS_CHECKSUM) == 0)
        return err_set(err,
                       "\"%s\" is corrupt or cut short: it ends without pgdirect's CRC-32C trailer "
                       "and its %s frame has no content checksum",
                       c->name, compress_name(c->kind));
    /* only the first frame's flags were seen: a second one could lack the checksum */
    if (trailer_frames(c) != 1)
        return err_set(err,
                       "\"%s\" is corrupt: it ends without pgdirect's CRC-32C trailer and holds "
                       "more than one frame (without the trailer an object must be one %s frame "
                       "with a content checksum)",
                       c->name, compress_name(c->kind));
    return true; /* written before the trailer: the codec checked its content checksum */
}

static bool trailer_check_read(in_stream *s, void *buf, size_t len, size_t *n, pgd_error *err)
{
    trailer_check *c = (trailer_check *)s;

    if (!in_read(c->codec, buf, len, n, err))
        return false;
    c->crc = crc32c_update(c->crc, buf, *n);
    c->size += *n;
    if (*n == 0 && len > 0 && !c->checked) {
        c->checked = true;
        c->passed = trailer_check_end(c, err);
        return c->passed;
    }
    return true;
}

static void trailer_check_close(in_stream *s)
{
    trailer_check *c = (trailer_check *)s;

    in_close(c->codec);
    free(c->name);
    free(c);
}

static const in_stream_ops trailer_check_ops = {trailer_check_read, trailer_check_close};

bool decompress_in_is_trailed(const in_stream *s)
{
    return s->ops == &trailer_check_ops;
}

bool decompress_in_trailed_sum(const in_stream *s, uint32_t *crc, uint64_t *size)
{
    const trailer_check *c = (const trailer_check *)s;

    if (s->ops != &trailer_check_ops || !c->passed)
        return false;
    *crc = crc32c_final(c->crc);
    *size = c->size;
    return true;
}

in_stream *decompress_in_new_trailed(compress_kind kind, in_stream *src, const char *name,
                                     pgd_error *err)
{
    trailer_tap *t;
    trailer_check *c;
    in_stream *codec;

    if (kind == COMPRESS_NONE)
        return src;
    t = xcalloc(1, sizeof(*t));
    c = xcalloc(1, sizeof(*c));
    c->name = xstrdup(name);
    t->base.ops = &trailer_tap_ops;
    t->src = src;
    if ((codec = decompress_in_new(kind, &t->base, name, err)) == NULL) {
        free(c->name);
        free(c);
        return NULL;
    }
    c->base.ops = &trailer_check_ops;
    c->codec = codec;
    c->tap = t;
    c->kind = kind;
    c->crc = CRC32C_INIT;
    return &c->base;
}
