/*
 * wal_segment.c - checks of archived WAL files against their names (what is
 * checked, and why, is in wal_segment.h); the text files, .history and
 * .backup, are checked by wal_history.c once they are complete.
 *
 * Over 500 lines on purpose: the segment walk is one state machine (page
 * headers, record headers, record data under the CRC, padding) over one
 * struct; cutting it in two would put that struct in a shared header for
 * no reader's benefit.
 *
 * A segment is checked as a stream, so a 1 GiB segment never has to be in
 * memory: page headers and record headers are collected in small buffers,
 * record data only passes through the CRC. The walk mirrors how
 * PostgreSQL's xlogreader.c reads a segment, with one difference: an
 * archived segment is complete (PostgreSQL archives a segment once it is
 * full or switched away from), so records run without a gap up to the end
 * or to an XLOG_SWITCH record; anything else where a record should be is
 * corruption, not the end of WAL.
 */
#include "pg/wal_segment.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg/lsn.h"
#include "pg/wal_history.h"
#include "pg/wal_name.h"
#include "util/crc32c.h"
#include "util/xmalloc.h"

/* XLogPageHeaderData, XLogLongPageHeaderData (xlog_internal.h) */
#define PAGE_MAGIC_OFF    0  /* uint16 xlp_magic */
#define PAGE_INFO_OFF     2  /* uint16 xlp_info */
#define PAGE_TLI_OFF      4  /* uint32 xlp_tli: timeline of the first record on the page */
#define PAGE_ADDR_OFF     8  /* uint64 xlp_pageaddr: LSN of the page */
#define PAGE_REM_LEN_OFF  16 /* uint32 xlp_rem_len: bytes left of a record from before */
#define PAGE_SHORT_HEADER 24 /* MAXALIGN(sizeof(XLogPageHeaderData)) */
#define PAGE_BLCKSZ_OFF   36 /* uint32 xlp_xlog_blcksz */

/*
 * xlp_info. XLP_FIRST_IS_OVERWRITE_CONTRECORD came with 14 and the 2021
 * minor releases of 10-13 (it marks a page where a record that was cut off
 * by a crash is replaced); before, the bit was never set.
 */
#define XLP_FIRST_IS_CONTRECORD           0x0001
#define XLP_LONG_HEADER                   0x0002
#define XLP_FIRST_IS_OVERWRITE_CONTRECORD 0x0008
#define XLP_ALL_FLAGS                     0x000F

/* configure --with-wal-blocksize takes 1 to 64 kB */
#define WAL_PAGE_SIZE_MIN 1024u
#define WAL_PAGE_SIZE_MAX 65536u

/* XLogRecord (xlogrecord.h) */
#define REC_TOT_LEN_OFF 0  /* uint32 xl_tot_len */
#define REC_PREV_OFF    8  /* uint64 xl_prev: LSN of the previous record */
#define REC_INFO_OFF    16 /* uint8 xl_info */
#define REC_RMID_OFF    17 /* uint8 xl_rmid */
#define REC_CRC_OFF     20 /* uint32 xl_crc: the data, then the header up to here */
#define REC_HEADER_SIZE 24 /* SizeOfXLogRecord */
#define REC_ALIGN       8  /* MAXALIGN: records start at multiples of it */
#define RM_XLOG_ID      0
#define XLOG_SWITCH     0x40
#define XLR_INFO_MASK   0x0F

/*
 * XLOG_PAGE_MAGIC of each major version whose WAL we know, read in
 * src/include/access/xlog_internal.h of its branch. A version we do not
 * know is refused: its page and record layout may differ (19 already
 * renumbers the xlp_info flags).
 */
static const struct {
    uint16_t magic;
    int major;
} wal_versions[] = {
    {0xD101, 12}, {0xD106, 13}, {0xD10D, 14}, {0xD110, 15},
    {0xD113, 16}, {0xD116, 17}, {0xD118, 18},
};
#define WAL_VERSIONS_KNOWN "PostgreSQL 12 to 18"

/* History and backup history files are a few short lines; more is not one. */
#define WAL_TEXT_MAX (1024u * 1024u)

typedef enum {
    WSC_PAGE0,     /* the first page header is not complete yet */
    WSC_CONT,      /* passing the end of a record that began in an earlier segment */
    WSC_RECORD,    /* in a record: its header, then its data under the CRC */
    WSC_PAD,       /* alignment bytes after a record */
    WSC_UNCHECKED, /* the rest is not checked (after XLOG_SWITCH; in a .partial) */
} wsc_state;

struct wal_segment_check {
    char name[48];
    wal_file_kind kind;
    uint64_t size; /* bytes seen: the offset in the file of the next byte */
    bool failed;

    /* segments and .partial */
    uint32_t name_tli, name_log, name_seg;
    wsc_state state;
    uint16_t magic;
    uint32_t seg_size, page_size;
    uint64_t seg_lsn;  /* LSN of the segment's first byte */
    uint32_t page_tli; /* of the last page: timelines never go back */
    unsigned char page[WAL_PAGE_LONG_HEADER];
    size_t page_have;
    uint32_t cont_left; /* WSC_CONT: bytes of the earlier record still to pass */
    unsigned char rec[REC_HEADER_SIZE];
    size_t rec_have;
    uint32_t rec_left; /* data bytes of the record still to come */
    uint32_t crc;
    uint64_t rec_lsn, prev_lsn;
    bool prev_known;

    /* .history and .backup */
    char *text;
    size_t text_len;
};

static uint16_t wal_segment_get16(const unsigned char *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

static uint32_t wal_segment_get32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

static uint64_t wal_segment_get64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

/* Fail the check: "WAL segment "NAME" <what>". The first failure is final. */
static bool wal_segment_fail(wal_segment_check *c, pgd_error *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static bool wal_segment_fail(wal_segment_check *c, pgd_error *err, const char *fmt, ...)
{
    char what[PGD_ERROR_MAX];
    const char *noun = c->kind == WAL_FILE_HISTORY  ? "timeline history file"
                       : c->kind == WAL_FILE_BACKUP ? "backup history file"
                                                    : "WAL segment";
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    c->failed = true;
    return err_set(err, "%s \"%s\" %s", noun, c->name, what);
}

wal_segment_check *wal_segment_check_new(const char *name, pgd_error *err)
{
    wal_file_kind kind = wal_name_kind(name);
    wal_segment_check *c;

    if (kind == WAL_FILE_UNKNOWN) {
        err_set(err,
                "\"%s\" is not a WAL file name (expected a segment, .partial, .history or "
                ".backup file)",
                name);
        return NULL;
    }
    c = xcalloc(1, sizeof(*c));
    snprintf(c->name, sizeof(c->name), "%s", name);
    c->kind = kind;
    wal_name_parts(name, &c->name_tli, &c->name_log, &c->name_seg);
    c->state = WSC_PAGE0;
    return c;
}

void wal_segment_check_free(wal_segment_check *c)
{
    if (c == NULL)
        return;
    free(c->text);
    free(c);
}

/* ---- segments: page headers ---- */

/* The long header of the first page: the segment's identity. */
static bool wal_segment_first_page(wal_segment_check *c, pgd_error *err)
{
    const unsigned char *p = c->page;
    uint16_t info = wal_segment_get16(p + PAGE_INFO_OFF);
    uint32_t tli = wal_segment_get32(p + PAGE_TLI_OFF);
    uint64_t addr = wal_segment_get64(p + PAGE_ADDR_OFF);
    uint64_t per_log;
    bool known = false;

    c->magic = wal_segment_get16(p + PAGE_MAGIC_OFF);
    for (size_t i = 0; i < sizeof(wal_versions) / sizeof(wal_versions[0]); i++)
        known = known || wal_versions[i].magic == c->magic;
    if (!known)
        return wal_segment_fail(c, err,
                                "is not WAL of a version this pgdirect knows (" WAL_VERSIONS_KNOWN
                                "): page magic 0x%04X",
                                c->magic);
    if ((info & ~XLP_ALL_FLAGS) != 0 || !(info & XLP_LONG_HEADER))
        return wal_segment_fail(c, err, "is corrupt: invalid flags 0x%04X in its first page header",
                                info);
    c->seg_size = wal_segment_get32(p + WAL_PAGE_SEG_SIZE_OFF);
    c->page_size = wal_segment_get32(p + PAGE_BLCKSZ_OFF);
    if (!wal_name_seg_size_valid(c->seg_size))
        return wal_segment_fail(
            c, err,
            "is corrupt: segment size %u in its header is not a power of two from "
            "1 MiB to 1 GiB",
            c->seg_size);
    if (c->page_size < WAL_PAGE_SIZE_MIN || c->page_size > WAL_PAGE_SIZE_MAX ||
        (c->page_size & (c->page_size - 1)) != 0)
        return wal_segment_fail(
            c, err,
            "is corrupt: WAL page size %u in its header is not a power of two from "
            "1 kB to 64 kB",
            c->page_size);
    per_log = wal_name_segs_per_log(c->seg_size);
    if (c->name_seg >= per_log)
        return wal_segment_fail(c, err,
                                "is not the segment its name says: a name's last 8 digits "
                                "count segments of %u bytes, there are only %" PRIu64 " per log",
                                c->seg_size, per_log);
    c->seg_lsn = ((uint64_t)c->name_log << 32) + (uint64_t)c->name_seg * c->seg_size;
    if (addr != c->seg_lsn)
        return wal_segment_fail(c, err,
                                "is not the segment its name says: its first page is at " LSN_FORMAT
                                ", the name says " LSN_FORMAT,
                                LSN_ARGS(addr), LSN_ARGS(c->seg_lsn));
    /*
     * The first segment of a new timeline starts with a copy of its
     * parent's last segment, pages that keep the parent's (lower) timeline.
     */
    if (tli == 0 || tli > c->name_tli)
        return wal_segment_fail(
            c, err,
            "is not the segment its name says: its first page is on timeline %u, "
            "the name says %u",
            tli, c->name_tli);
    c->page_tli = tli;
    if (c->kind == WAL_FILE_PARTIAL) {
        c->state = WSC_UNCHECKED; /* records stop anywhere in a .partial */
    } else if (info & XLP_FIRST_IS_CONTRECORD) {
        c->cont_left = wal_segment_get32(p + PAGE_REM_LEN_OFF);
        c->state = WSC_CONT;
    } else {
        c->state = WSC_RECORD;
    }
    return true;
}

/* Bytes of the open record still to come, header included (xlp_rem_len). */
static uint32_t wal_segment_record_remaining(const wal_segment_check *c)
{
    if (c->rec_have < REC_HEADER_SIZE)
        return wal_segment_get32(c->rec + REC_TOT_LEN_OFF) - (uint32_t)c->rec_have;
    return c->rec_left;
}

/* A page header after the first: the same segment, and what it says about records. */
static bool wal_segment_next_page(wal_segment_check *c, pgd_error *err)
{
    const unsigned char *p = c->page;
    uint64_t page_lsn = c->seg_lsn + c->size - PAGE_SHORT_HEADER;
    uint16_t magic = wal_segment_get16(p + PAGE_MAGIC_OFF);
    uint16_t info = wal_segment_get16(p + PAGE_INFO_OFF);
    uint32_t tli = wal_segment_get32(p + PAGE_TLI_OFF);
    uint64_t addr = wal_segment_get64(p + PAGE_ADDR_OFF);
    uint32_t rem = wal_segment_get32(p + PAGE_REM_LEN_OFF);
    bool cont = (info & XLP_FIRST_IS_CONTRECORD) != 0;
    bool open = c->state == WSC_CONT || (c->state == WSC_RECORD && c->rec_have > 0);

    if (magic != c->magic || (info & ~XLP_ALL_FLAGS) != 0 || (info & XLP_LONG_HEADER))
        return wal_segment_fail(c, err,
                                "is corrupt: invalid page header at " LSN_FORMAT
                                " (magic 0x%04X, flags 0x%04X)",
                                LSN_ARGS(page_lsn), magic, info);
    if (addr != page_lsn)
        return wal_segment_fail(c, err,
                                "is corrupt: the page at " LSN_FORMAT " says it is at " LSN_FORMAT,
                                LSN_ARGS(page_lsn), LSN_ARGS(addr));
    if (tli < c->page_tli || tli > c->name_tli)
        return wal_segment_fail(
            c, err,
            "is corrupt: the page at " LSN_FORMAT
            " is on timeline %u, after pages on %u, in a segment of timeline %u",
            LSN_ARGS(page_lsn), tli, c->page_tli, c->name_tli);
    c->page_tli = tli;
    if (open && (info & XLP_FIRST_IS_OVERWRITE_CONTRECORD)) {
        /* the open record was cut off by a crash; records restart here */
        c->state = WSC_RECORD;
        c->rec_have = 0;
        c->prev_known = false;
        return true;
    }
    if (!open && cont)
        return wal_segment_fail(c, err,
                                "is corrupt: the page at " LSN_FORMAT
                                " continues a record, but none is open before it",
                                LSN_ARGS(page_lsn));
    if (!open)
        return true;
    if (c->state == WSC_RECORD && c->rec_have < sizeof(uint32_t))
        return wal_segment_fail(
            c, err, "is corrupt: the record at " LSN_FORMAT " is cut by a page boundary",
            LSN_ARGS(c->rec_lsn));
    if (!cont || rem != (c->state == WSC_CONT ? c->cont_left : wal_segment_record_remaining(c)))
        return wal_segment_fail(
            c, err,
            "is corrupt: the page at " LSN_FORMAT " does not continue the record before it "
            "(%u bytes to go, the page says %u)",
            LSN_ARGS(page_lsn),
            c->state == WSC_CONT ? c->cont_left : wal_segment_record_remaining(c), cont ? rem : 0);
    return true;
}

/* ---- segments: records ---- */

/* The record header is complete: check what can be checked before its data. */
static bool wal_segment_record_header(wal_segment_check *c, pgd_error *err)
{
    uint32_t tot_len = wal_segment_get32(c->rec + REC_TOT_LEN_OFF);
    uint64_t prev = wal_segment_get64(c->rec + REC_PREV_OFF);

    if (c->prev_known && prev != c->prev_lsn)
        return wal_segment_fail(c, err,
                                "is corrupt: the record at " LSN_FORMAT " links back to " LSN_FORMAT
                                " instead of the record before it at " LSN_FORMAT,
                                LSN_ARGS(c->rec_lsn), LSN_ARGS(prev), LSN_ARGS(c->prev_lsn));
    c->rec_left = tot_len - REC_HEADER_SIZE;
    c->crc = CRC32C_INIT;
    return true;
}

/* The record's last byte has passed: its CRC, and whether the segment ends here. */
static bool wal_segment_record_end(wal_segment_check *c, pgd_error *err)
{
    uint32_t crc = crc32c_final(crc32c_update(c->crc, c->rec, REC_CRC_OFF));
    uint8_t info = c->rec[REC_INFO_OFF], rmid = c->rec[REC_RMID_OFF];

    if (crc != wal_segment_get32(c->rec + REC_CRC_OFF))
        return wal_segment_fail(c, err,
                                "is corrupt: incorrect checksum of the record at " LSN_FORMAT,
                                LSN_ARGS(c->rec_lsn));
    c->prev_lsn = c->rec_lsn;
    c->prev_known = true;
    c->rec_have = 0;
    /* after XLOG_SWITCH the segment is zeroes, page headers included */
    c->state =
        rmid == RM_XLOG_ID && (info & ~XLR_INFO_MASK) == XLOG_SWITCH ? WSC_UNCHECKED : WSC_PAD;
    return true;
}

/* Consume up to n bytes of record data or header at the current offset; returns bytes used. */
static size_t wal_segment_record_bytes(wal_segment_check *c, const unsigned char *p, size_t n,
                                       pgd_error *err)
{
    size_t used = 0;

    if (c->rec_have == 0)
        c->rec_lsn = c->seg_lsn + c->size;
    if (c->rec_have < REC_HEADER_SIZE) {
        size_t k = REC_HEADER_SIZE - c->rec_have;
        bool had_len = c->rec_have >= sizeof(uint32_t);

        if (k > n)
            k = n;
        memcpy(c->rec + c->rec_have, p, k);
        c->rec_have += k;
        used = k;
        if (!had_len && c->rec_have >= sizeof(uint32_t) &&
            wal_segment_get32(c->rec + REC_TOT_LEN_OFF) < REC_HEADER_SIZE) {
            wal_segment_fail(c, err, "is corrupt: invalid record length %u at " LSN_FORMAT,
                             wal_segment_get32(c->rec + REC_TOT_LEN_OFF), LSN_ARGS(c->rec_lsn));
            return 0;
        }
        if (c->rec_have < REC_HEADER_SIZE)
            return used;
        if (!wal_segment_record_header(c, err))
            return 0;
    }
    if (used < n && c->rec_left > 0) {
        size_t k = n - used < c->rec_left ? n - used : c->rec_left;
        c->crc = crc32c_update(c->crc, p + used, k);
        c->rec_left -= (uint32_t)k;
        used += k;
    }
    if (c->rec_left == 0 && !wal_segment_record_end(c, err))
        return 0;
    return used;
}

/*
 * Feed n bytes that all lie in one page, after its header, at c->size.
 * Returns false on corruption.
 */
static bool wal_segment_page_data(wal_segment_check *c, const unsigned char *p, size_t n,
                                  pgd_error *err)
{
    while (n > 0) {
        size_t k;

        switch (c->state) {
        case WSC_CONT:
            k = n < c->cont_left ? n : c->cont_left;
            c->cont_left -= (uint32_t)k;
            if (c->cont_left == 0)
                c->state = WSC_PAD;
            break;
        case WSC_PAD:
            k = (REC_ALIGN - c->size % REC_ALIGN) % REC_ALIGN;
            if (k > n)
                k = n;
            if (k == 0 || (c->size + k) % REC_ALIGN == 0)
                c->state = WSC_RECORD;
            break;
        case WSC_RECORD:
            k = wal_segment_record_bytes(c, p, n, err);
            if (c->failed)
                return false;
            break;
        default:
            k = n; /* unchecked */
            break;
        }
        c->size += k;
        p += k;
        n -= k;
    }
    return true;
}

static bool wal_segment_update_segment(wal_segment_check *c, const unsigned char *p, size_t len,
                                       pgd_error *err)
{
    while (len > 0) {
        uint64_t in_page;
        size_t header, k;

        if (c->state == WSC_UNCHECKED || (c->seg_size != 0 && c->size >= c->seg_size)) {
            c->size += len; /* the size is judged at the end */
            return true;
        }
        in_page = c->state == WSC_PAGE0 ? c->size : c->size % c->page_size;
        header = c->size < WAL_PAGE_LONG_HEADER ? WAL_PAGE_LONG_HEADER : PAGE_SHORT_HEADER;
        if (in_page < header) {
            k = header - in_page < len ? header - in_page : len;
            memcpy(c->page + in_page, p, k);
            c->size += k;
            p += k;
            len -= k;
            if (in_page + k == header &&
                !(header == WAL_PAGE_LONG_HEADER ? wal_segment_first_page(c, err)
                                                 : wal_segment_next_page(c, err)))
                return false;
            continue;
        }
        k = c->page_size - in_page < len ? c->page_size - in_page : len;
        if (!wal_segment_page_data(c, p, k, err))
            return false;
        p += k;
        len -= k;
    }
    return true;
}

static bool wal_segment_finish_segment(wal_segment_check *c, pgd_error *err)
{
    if (c->seg_size == 0)
        return wal_segment_fail(
            c, err, "is truncated: %" PRIu64 " bytes, not even its first page header", c->size);
    if (c->size < c->seg_size)
        return wal_segment_fail(c, err, "is truncated: %" PRIu64 " bytes of a %u-byte segment",
                                c->size, c->seg_size);
    if (c->size > c->seg_size)
        return wal_segment_fail(
            c, err, "has %" PRIu64 " bytes, more than the segment size %u in its header", c->size,
            c->seg_size);
    /* a record still open runs on into the next segment: checked with that one by PostgreSQL */
    return true;
}

static bool wal_segment_update_text(wal_segment_check *c, const void *data, size_t len,
                                    pgd_error *err)
{
    if (c->text_len + len > WAL_TEXT_MAX)
        return wal_segment_fail(c, err, "is larger than %u bytes", WAL_TEXT_MAX);
    c->text = xrealloc(c->text, c->text_len + len + 1);
    memcpy(c->text + c->text_len, data, len);
    c->text_len += len;
    c->text[c->text_len] = '\0';
    if (memchr(data, '\0', len) != NULL)
        return wal_segment_fail(c, err, "is corrupt: it holds a NUL byte");
    return true;
}

/* ---- interface ---- */

bool wal_segment_check_update(wal_segment_check *c, const void *data, size_t len, pgd_error *err)
{
    if (c->failed)
        return err_set(err, "WAL file \"%s\" failed its check already", c->name);
    if (c->kind == WAL_FILE_HISTORY || c->kind == WAL_FILE_BACKUP)
        return wal_segment_update_text(c, data, len, err);
    return wal_segment_update_segment(c, data, len, err);
}

bool wal_segment_check_finish(wal_segment_check *c, pgd_error *err)
{
    if (c->failed)
        return err_set(err, "WAL file \"%s\" failed its check already", c->name);
    switch (c->kind) {
    case WAL_FILE_HISTORY:
        c->failed = !wal_history_check(c->name, c->name_tli, c->text, c->text_len, err);
        return !c->failed;
    case WAL_FILE_BACKUP:
        c->failed = !wal_backup_history_check(c->name, c->text, c->text_len, err);
        return !c->failed;
    default:
        return wal_segment_finish_segment(c, err);
    }
}

bool wal_segment_check_buffer(const char *name, const void *data, size_t len, pgd_error *err)
{
    wal_segment_check *c = wal_segment_check_new(name, err);
    bool ok;

    if (c == NULL)
        return false;
    ok = wal_segment_check_update(c, data, len, err) && wal_segment_check_finish(c, err);
    wal_segment_check_free(c);
    return ok;
}

/* ---- stream filter ---- */

typedef struct wsc_in {
    in_stream base;
    in_stream *src;
    wal_segment_check *check;
    bool done;
} wsc_in;

static bool wal_segment_in_read(in_stream *s, void *buf, size_t len, size_t *n, pgd_error *err)
{
    wsc_in *w = (wsc_in *)s;

    *n = 0;
    if (w->done)
        return true;
    if (!in_read(w->src, buf, len, n, err))
        return false;
    if (*n > 0)
        return wal_segment_check_update(w->check, buf, *n, err);
    w->done = true;
    return wal_segment_check_finish(w->check, err);
}

static void wal_segment_in_close(in_stream *s)
{
    wsc_in *w = (wsc_in *)s;

    in_close(w->src);
    wal_segment_check_free(w->check);
    free(w);
}

static const in_stream_ops wsc_in_ops = {wal_segment_in_read, wal_segment_in_close};

in_stream *wal_segment_check_in_new(in_stream *src, const char *name, pgd_error *err)
{
    wsc_in *w = xcalloc(1, sizeof(*w));

    w->base.ops = &wsc_in_ops;
    w->src = src;
    w->check = wal_segment_check_new(name, err);
    if (w->check == NULL) {
        in_close(src);
        free(w);
        return NULL;
    }
    return &w->base;
}
