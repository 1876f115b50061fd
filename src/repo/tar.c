/*
 * tar.c - pax tar writer and a strict reader.
 */
#define _GNU_SOURCE
#include "repo/tar.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/xmalloc.h"

#define USTAR_NAME_LEN  100
#define USTAR_SIZE_MAX  077777777777ULL /* 11 octal digits */
#define PAX_RECORDS_MAX (64 * 1024)
#define SKIP_CHUNK      (64 * 1024)
/* an entry's data plus padding must fit in the 64-bit counters (and off_t) */
#define TAR_SIZE_MAX ((uint64_t)INT64_MAX - TAR_BLOCK)

typedef struct ustar_header {
    char name[100];
    char mode[8];
    char uid[8];
    char gid[8];
    char size[12];
    char mtime[12];
    char chksum[8];
    char typeflag;
    char linkname[100];
    char magic[6];
    char version[2];
    char uname[32];
    char gname[32];
    char devmajor[8];
    char devminor[8];
    char prefix[155];
    char pad[12];
} ustar_header;

_Static_assert(sizeof(ustar_header) == TAR_BLOCK, "ustar header is one block");

static const char tar_zero_block[TAR_BLOCK];

void tar_entry_free(tar_entry *e)
{
    free(e->path);
    free(e->linkpath);
    memset(e, 0, sizeof(*e));
}

/* width-1 zero-padded octal digits and a NUL; the caller keeps value in range */
static void tar_put_octal(char *field, size_t width, uint64_t value)
{
    field[width - 1] = '\0';
    for (size_t i = width - 1; i-- > 0;) {
        field[i] = (char)('0' + (value & 7));
        value >>= 3;
    }
}

/* A ustar name field need not be NUL-terminated when full. */
static void tar_put_name(char *field, size_t width, const char *s)
{
    size_t len = strlen(s);

    memcpy(field, s, len < width ? len : width);
}

static unsigned tar_header_checksum(const ustar_header *h)
{
    const unsigned char *p = (const unsigned char *)h;
    unsigned sum = 0;

    for (size_t i = 0; i < TAR_BLOCK; i++)
        sum += (i >= offsetof(ustar_header, chksum) && i < offsetof(ustar_header, typeflag)) ? ' '
                                                                                             : p[i];
    return sum;
}

/* Append one "LEN key=value\n" record; LEN counts the whole record, itself included. */
static bool tar_pax_append(char *buf, size_t *used, const char *key, const char *value)
{
    size_t body = strlen(key) + strlen(value) + 3; /* ' ' '=' '\n' */
    size_t digits = 1, total;

    for (;;) {
        char tmp[24];
        total = body + digits;
        if ((size_t)snprintf(tmp, sizeof(tmp), "%zu", total) == digits)
            break;
        digits++;
    }
    if (*used + total > PAX_RECORDS_MAX)
        return false;
    snprintf(buf + *used, total + 1, "%zu %s=%s\n", total, key, value);
    *used += total;
    return true;
}

static bool tar_write_block_header(out_stream *out, char type, const char *name, const char *link,
                                   uint64_t size, uint32_t mode, int64_t mtime, pgd_error *err)
{
    ustar_header h;

    memset(&h, 0, sizeof(h));
    tar_put_name(h.name, sizeof(h.name), name);
    if (link != NULL)
        tar_put_name(h.linkname, sizeof(h.linkname), link);
    tar_put_octal(h.mode, sizeof(h.mode), mode & 07777);
    tar_put_octal(h.uid, sizeof(h.uid), 0);
    tar_put_octal(h.gid, sizeof(h.gid), 0);
    tar_put_octal(h.size, sizeof(h.size), size > USTAR_SIZE_MAX ? 0 : size);
    tar_put_octal(h.mtime, sizeof(h.mtime), mtime < 0 ? 0 : (uint64_t)mtime);
    h.typeflag = type;
    memcpy(h.magic, "ustar", 6);
    memcpy(h.version, "00", 2);
    tar_put_octal(h.chksum, 7, tar_header_checksum(&h));
    h.chksum[7] = ' ';
    return out_write(out, &h, sizeof(h), err);
}

bool tar_write_header(out_stream *out, const tar_entry *e, pgd_error *err)
{
    bool long_name = strlen(e->path) >= USTAR_NAME_LEN;
    bool long_link = e->linkpath != NULL && strlen(e->linkpath) >= USTAR_NAME_LEN;
    bool big = e->size > USTAR_SIZE_MAX;

    if (long_name || long_link || big) {
        char *records = xmalloc(PAX_RECORDS_MAX);
        size_t used = 0;
        char num[32];
        bool ok = true;

        if (long_name)
            ok = tar_pax_append(records, &used, "path", e->path);
        if (ok && long_link)
            ok = tar_pax_append(records, &used, "linkpath", e->linkpath);
        if (ok && big) {
            snprintf(num, sizeof(num), "%llu", (unsigned long long)e->size);
            ok = tar_pax_append(records, &used, "size", num);
        }
        if (!ok) {
            free(records);
            return err_set(err, "could not build pax header for \"%s\"", e->path);
        }
        ok = tar_write_block_header(out, 'x', "././@PaxHeader", NULL, used, 0644, e->mtime, err) &&
             out_write(out, records, used, err) && tar_write_zeros(out, tar_padding(used), err);
        free(records);
        if (!ok)
            return false;
    }
    return tar_write_block_header(out, e->type, e->path, e->linkpath, e->size, e->mode, e->mtime,
                                  err);
}

bool tar_write_zeros(out_stream *out, uint64_t count, pgd_error *err)
{
    while (count > 0) {
        size_t n = count < TAR_BLOCK ? (size_t)count : TAR_BLOCK;
        if (!out_write(out, tar_zero_block, n, err))
            return false;
        count -= n;
    }
    return true;
}

bool tar_write_end(out_stream *out, pgd_error *err)
{
    return tar_write_zeros(out, 2 * TAR_BLOCK, err);
}

/* ---- reader ---- */

void tar_reader_init(tar_reader *r, in_stream *in, const char *name)
{
    memset(r, 0, sizeof(*r));
    r->in = in;
    r->name = name;
}

static bool tar_parse_octal(const char *field, size_t width, uint64_t *out)
{
    uint64_t v = 0;
    size_t i = 0;

    while (i < width && field[i] == ' ')
        i++;
    if (i == width || field[i] < '0' || field[i] > '7')
        return false;
    for (; i < width && field[i] >= '0' && field[i] <= '7'; i++) {
        if (v > (UINT64_MAX >> 3))
            return false;
        v = (v << 3) | (uint64_t)(field[i] - '0');
    }
    for (; i < width; i++)
        if (field[i] != ' ' && field[i] != '\0')
            return false;
    *out = v;
    return true;
}

/* Device numbers: writers leave them empty (NUL or spaces) or write octal. */
static bool tar_parse_octal_or_blank(const char *field, size_t width, uint64_t *out)
{
    size_t i = 0;

    while (i < width && (field[i] == ' ' || field[i] == '\0'))
        i++;
    if (i == width) {
        *out = 0;
        return true;
    }
    return tar_parse_octal(field, width, out);
}

/* Decimal digits only (no sign, space or base prefix), no overflow. */
static bool tar_parse_decimal(const char *s, size_t len, uint64_t *out)
{
    uint64_t v = 0;

    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9' || v > (UINT64_MAX - (uint64_t)(s[i] - '0')) / 10)
            return false;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    *out = v;
    return true;
}

static bool tar_read_exact(tar_reader *r, void *buf, size_t len, pgd_error *err)
{
    size_t n;

    if (!in_read_full(r->in, buf, len, &n, err))
        return false;
    if (n != len)
        return err_set(err, "tar archive \"%s\" is truncated", r->name);
    return true;
}

static bool tar_skip_bytes(tar_reader *r, uint64_t count, pgd_error *err)
{
    char buf[SKIP_CHUNK];

    while (count > 0) {
        size_t n = count < sizeof(buf) ? (size_t)count : sizeof(buf);
        if (!tar_read_exact(r, buf, n, err))
            return false;
        count -= n;
    }
    return true;
}

static char *tar_dup_field(const char *field, size_t width)
{
    return xstrndup(field, width);
}

/* Parse pax records into overrides of path/linkpath/size. */
static bool tar_parse_pax(tar_reader *r, char *rec, size_t len, char **path, char **link,
                          uint64_t *size, bool *has_size, pgd_error *err)
{
    size_t pos = 0;

    while (pos < len) {
        size_t digits = strspn(rec + pos, "0123456789");
        uint64_t reclen;
        char *key, *eq, *value;

        if (!tar_parse_decimal(rec + pos, digits, &reclen) || rec[pos + digits] != ' ' ||
            reclen <= digits + 1 || reclen > len - pos || rec[pos + reclen - 1] != '\n')
            return err_set(err, "tar archive \"%s\" has a malformed pax header", r->name);
        rec[pos + reclen - 1] = '\0';
        key = rec + pos + digits + 1;
        eq = strchr(key, '=');
        if (eq == NULL)
            return err_set(err, "tar archive \"%s\" has a malformed pax record", r->name);
        *eq = '\0';
        value = eq + 1;
        if (strcmp(key, "path") == 0) {
            free(*path);
            *path = xstrdup(value);
        } else if (strcmp(key, "linkpath") == 0) {
            free(*link);
            *link = xstrdup(value);
        } else if (strcmp(key, "size") == 0) {
            if (!tar_parse_decimal(value, strlen(value), size) || *size > TAR_SIZE_MAX)
                return err_set(err, "tar archive \"%s\" has an invalid pax size \"%s\"", r->name,
                               value);
            *has_size = true;
        }
        pos += reclen;
    }
    return true;
}

bool tar_reader_next(tar_reader *r, tar_entry *e, bool *end, pgd_error *err)
{
    char *pax_path = NULL, *pax_link = NULL;
    uint64_t pax_size = 0;
    bool has_pax_size = false;
    bool ok = false;

    memset(e, 0, sizeof(*e));
    *end = false;
    if (!tar_skip_bytes(r, r->data_left + r->pad_left, err))
        return false;
    r->data_left = r->pad_left = 0;

    for (;;) {
        ustar_header h;
        uint64_t size, mode, mtime, sum, id, dev;

        if (!tar_read_exact(r, &h, sizeof(h), err))
            goto done;
        if (memcmp(&h, tar_zero_block, TAR_BLOCK) == 0) {
            *end = true;
            ok = true;
            goto done;
        }
        if (!tar_parse_octal(h.chksum, sizeof(h.chksum), &sum) || sum != tar_header_checksum(&h)) {
            err_set(err, "tar archive \"%s\" has a corrupt header (bad checksum)", r->name);
            goto done;
        }
        /* every numeric field must parse, those we do not use too: a sign of a forged header */
        if (!tar_parse_octal(h.size, sizeof(h.size), &size) ||
            !tar_parse_octal(h.mode, sizeof(h.mode), &mode) ||
            !tar_parse_octal(h.mtime, sizeof(h.mtime), &mtime) ||
            !tar_parse_octal(h.uid, sizeof(h.uid), &id) ||
            !tar_parse_octal(h.gid, sizeof(h.gid), &id) ||
            !tar_parse_octal_or_blank(h.devmajor, sizeof(h.devmajor), &dev) ||
            !tar_parse_octal_or_blank(h.devminor, sizeof(h.devminor), &dev) ||
            size > TAR_SIZE_MAX) {
            err_set(err, "tar archive \"%s\" has a corrupt header (bad number)", r->name);
            goto done;
        }
        if (h.typeflag == 'x' || h.typeflag == 'g' || h.typeflag == 'L' || h.typeflag == 'K') {
            char *rec;
            if (size > PAX_RECORDS_MAX) {
                err_set(err, "tar archive \"%s\" has an oversized extended header", r->name);
                goto done;
            }
            rec = xmalloc(size + 1);
            if (!tar_read_exact(r, rec, size, err) || !tar_skip_bytes(r, tar_padding(size), err)) {
                free(rec);
                goto done;
            }
            rec[size] = '\0';
            if (h.typeflag == 'x' &&
                !tar_parse_pax(r, rec, size, &pax_path, &pax_link, &pax_size, &has_pax_size, err)) {
                free(rec);
                goto done;
            }
            if (h.typeflag == 'L') {
                free(pax_path);
                pax_path = xstrdup(rec);
            } else if (h.typeflag == 'K') {
                free(pax_link);
                pax_link = xstrdup(rec);
            }
            free(rec);
            continue;
        }
        e->type = h.typeflag == '\0' ? TAR_FILE : h.typeflag;
        if (pax_path != NULL) {
            e->path = pax_path;
            pax_path = NULL;
        } else if (h.prefix[0] != '\0' && memcmp(h.magic, "ustar", 5) == 0) {
            char *prefix = tar_dup_field(h.prefix, sizeof(h.prefix));
            char *name = tar_dup_field(h.name, sizeof(h.name));
            e->path = xasprintf("%s/%s", prefix, name);
            free(prefix);
            free(name);
        } else {
            e->path = tar_dup_field(h.name, sizeof(h.name));
        }
        if (pax_link != NULL) {
            e->linkpath = pax_link;
            pax_link = NULL;
        } else if (h.linkname[0] != '\0') {
            e->linkpath = tar_dup_field(h.linkname, sizeof(h.linkname));
        }
        e->size = has_pax_size ? pax_size : size;
        e->mode = (uint32_t)(mode & 07777);
        e->mtime = (int64_t)mtime;
        if (e->type != TAR_FILE)
            e->size = e->type == TAR_DIR || e->type == TAR_SYMLINK || e->type == TAR_HARDLINK
                          ? 0
                          : e->size;
        r->data_left = e->size;
        r->pad_left = tar_padding(e->size);
        ok = true;
        goto done;
    }
done:
    free(pax_path);
    free(pax_link);
    if (!ok)
        tar_entry_free(e);
    return ok;
}

bool tar_reader_data(tar_reader *r, void *buf, size_t len, size_t *n, pgd_error *err)
{
    size_t want = r->data_left < len ? (size_t)r->data_left : len;

    *n = 0;
    if (want == 0)
        return true;
    if (!tar_read_exact(r, buf, want, err))
        return false;
    r->data_left -= want;
    *n = want;
    return true;
}
