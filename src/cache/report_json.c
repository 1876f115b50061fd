/*
 * report_json.c - the cache report as JSON, streamed row by row (the layout
 * is documented in report_json.h).
 */
#define _GNU_SOURCE
#include "cache/report_json.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

/* What stands for a byte that is not part of valid UTF-8: U+FFFD, the replacement character. */
static const char cache_report_json_replacement[] = "\xef\xbf\xbd";

/*
 * Length of the valid UTF-8 sequence at s (1 to 4), or 0 when s does not start one: no
 * overlong forms, no surrogates, nothing past U+10FFFF (the rules jansson checks strings by).
 */
static size_t cache_report_json_utf8_len(const unsigned char *s)
{
    uint32_t cp;
    size_t len;

    if (s[0] < 0x80)
        return 1;
    if (s[0] < 0xc2)
        return 0; /* a continuation byte, or an overlong two-byte form */
    if (s[0] < 0xe0) {
        len = 2;
        cp = s[0] & 0x1f;
    } else if (s[0] < 0xf0) {
        len = 3;
        cp = s[0] & 0x0f;
    } else if (s[0] < 0xf5) {
        len = 4;
        cp = s[0] & 0x07;
    } else {
        return 0;
    }
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0; /* includes the terminating NUL */
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

/*
 * s as a JSON string, escaped as jansson escapes: quote and backslash, \b \f \n \r \t, other
 * control characters as \u00XX; everything else, UTF-8 included, as it is. jansson refused
 * invalid UTF-8 (the row went missing from the output); its bytes are U+FFFD here.
 */
static void cache_report_json_string(FILE *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)s, *run = p;

    putc_unlocked('"', out);
    while (*p) {
        size_t len = cache_report_json_utf8_len(p);
        char esc[8];

        if (len > 1) {
            p += len;
            continue;
        }
        if (len == 1 && *p >= 0x20 && *p != '"' && *p != '\\') {
            p++;
            continue;
        }
        fwrite_unlocked(run, 1, (size_t)(p - run), out);
        if (len == 0)
            fputs_unlocked(cache_report_json_replacement, out);
        else if (*p == '"' || *p == '\\') {
            putc_unlocked('\\', out);
            putc_unlocked(*p, out);
        } else {
            switch (*p) {
            case '\b':
                fputs_unlocked("\\b", out);
                break;
            case '\f':
                fputs_unlocked("\\f", out);
                break;
            case '\n':
                fputs_unlocked("\\n", out);
                break;
            case '\r':
                fputs_unlocked("\\r", out);
                break;
            case '\t':
                fputs_unlocked("\\t", out);
                break;
            default:
                snprintf(esc, sizeof(esc), "\\u%04X", *p);
                fputs_unlocked(esc, out);
            }
        }
        run = ++p;
    }
    fwrite_unlocked(run, 1, (size_t)(p - run), out);
    putc_unlocked('"', out);
}

/* A figure as jansson printed it: a signed 64-bit integer (json_int_t). */
static void cache_report_json_number(FILE *out, uint64_t v)
{
    char digits[24], *d = digits + sizeof(digits);
    uint64_t mag = v > INT64_MAX ? (uint64_t)0 - v : v; /* json_int_t wraps above INT64_MAX */

    *--d = '\0';
    do {
        *--d = (char)('0' + mag % 10);
        mag /= 10;
    } while (mag > 0);
    if (v > INT64_MAX)
        *--d = '-';
    fputs_unlocked(d, out);
}

/* `"key": value` of one figure, or null when it is not known. */
static void cache_report_json_figure(FILE *out, const char *indent, const char *key, uint64_t v,
                                     bool known, bool last)
{
    fputs_unlocked(indent, out);
    putc_unlocked('"', out);
    fputs_unlocked(key, out);
    fputs_unlocked("\": ", out);
    if (known)
        cache_report_json_number(out, v);
    else
        fputs_unlocked("null", out);
    fputs_unlocked(last ? "\n" : ",\n", out);
}

static void cache_report_json_figures(FILE *out, const char *indent, const cache_figures *f,
                                      const cache_report *r)
{
    cache_report_json_figure(out, indent, "size", f->size, true, false);
    cache_report_json_figure(out, indent, "shared_buffers", f->shared_buffers,
                             r->shared_buffers_known, false);
    cache_report_json_figure(out, indent, "os_cache", f->os_cache, r->os_known, false);
    cache_report_json_figure(out, indent, "disk_only", f->disk_only, r->os_known, false);
    cache_report_json_figure(out, indent, "evicted_pages", f->evicted_pages, true, true);
}

/* `"key": "value",` of one text field of a row. */
static void cache_report_json_text(FILE *out, const char *key, const char *value)
{
    fputs_unlocked("   \"", out);
    fputs_unlocked(key, out);
    fputs_unlocked("\": ", out);
    cache_report_json_string(out, value);
    fputs_unlocked(",\n", out);
}

bool cache_report_write_json(FILE *out, const cache_report *r, size_t top, pgd_error *err)
{
    cache_figures t = cache_totals(r);
    size_t n = top && top < r->n ? top : r->n;

    flockfile(out);
    fputs_unlocked(n ? "{\n \"relations\": [\n" : "{\n \"relations\": [],\n", out);
    for (size_t i = 0; i < n; i++) {
        const cache_row *row = &r->rows[i];

        fputs_unlocked("  {\n", out);
        cache_report_json_text(out, "database", row->database);
        cache_report_json_text(out, "relation", row->name);
        cache_report_json_text(out, "kind", row->kind);
        cache_report_json_text(out, "fork", row->fork);
        cache_report_json_figures(out, "   ", &row->f, r);
        fputs_unlocked(i + 1 < n ? "  },\n" : "  }\n ],\n", out);
    }
    fputs_unlocked(" \"totals\": {\n", out);
    cache_report_json_figures(out, "  ", &t, r);
    fputs_unlocked(r->nnotes ? " },\n \"notes\": [\n" : " },\n \"notes\": []\n", out);
    for (size_t i = 0; i < r->nnotes; i++) {
        fputs_unlocked("  ", out);
        cache_report_json_string(out, r->notes[i]);
        fputs_unlocked(i + 1 < r->nnotes ? ",\n" : "\n ]\n", out);
    }
    fputs_unlocked("}\n", out);
    funlockfile(out);
    if (fflush(out) != 0 || ferror(out))
        return err_errno(err, errno, "could not write the cache report");
    return true;
}
