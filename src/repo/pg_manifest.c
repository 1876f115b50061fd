/*
 * pg_manifest.c - write a PostgreSQL backup_manifest (format in
 * pg_manifest.h).
 */
#define _GNU_SOURCE
#include "repo/pg_manifest.h"

#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/crc32c.h"

#define SHA256_LEN 32
/* PostgreSQL 17 writes manifest version 2, with the System-Identifier. */
#define PG_VERSION_MANIFEST_V2 170000
#define MANIFEST_V1            1
#define MANIFEST_V2            2

typedef struct text_buf {
    char *data;
    size_t len, cap;
    bool oom;
} text_buf;

static void buf_printf(text_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void buf_printf(text_buf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (b->oom)
        return;
    for (;;) {
        va_start(ap, fmt);
        n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        b->cap = (b->cap + (size_t)(n > 0 ? n : 0) + 1) * 2;
        char *grown = realloc(b->data, b->cap);
        if (grown == NULL) {
            b->oom = true;
            return;
        }
        b->data = grown;
    }
}

/* JSON string body: our paths are ASCII from PGDATA; escape what JSON requires. */
static void buf_json_string(text_buf *b, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            buf_printf(b, "\\%c", c);
        else if (c < 0x20)
            buf_printf(b, "\\u%04x", c);
        else
            buf_printf(b, "%c", c);
    }
}

static void add_file(text_buf *b, bool first, const char *path, uint64_t size, int64_t mtime,
                     uint32_t crc)
{
    char when[32];
    struct tm tm;
    time_t t = (time_t)mtime;

    gmtime_r(&t, &tm);
    strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S GMT", &tm);
    buf_printf(b, "%s{ \"Path\": \"", first ? "" : ",\n");
    buf_json_string(b, path);
    buf_printf(b,
               "\", \"Size\": %llu, \"Last-Modified\": \"%s\", \"Checksum-Algorithm\": "
               "\"CRC32C\", \"Checksum\": \"%02x%02x%02x%02x\" }",
               (unsigned long long)size, when, crc & 0xFF, (crc >> 8) & 0xFF, (crc >> 16) & 0xFF,
               crc >> 24);
}

int pg_manifest_version(int pg_version_num)
{
    return pg_version_num >= PG_VERSION_MANIFEST_V2 ? MANIFEST_V2 : MANIFEST_V1;
}

/*
 * The System-Identifier goes into the manifest as a bare JSON number that
 * PostgreSQL parses with strtou64: digits only, at most 20 of them.
 */
static bool system_identifier_valid(const char *sysid)
{
    size_t n = strspn(sysid, "0123456789");

    return n > 0 && n <= 20 && sysid[n] == '\0';
}

bool pg_manifest_build(const manifest *m, const backup_info *bi, char **out, pgd_error *err)
{
    text_buf b = {0};
    unsigned char digest[SHA256_LEN];
    unsigned int dlen = 0;
    int version = pg_manifest_version(bi->pg_version_num);

    if (version == MANIFEST_V2 && !system_identifier_valid(bi->system_identifier))
        return err_set(err, "invalid system identifier \"%s\" for backup_manifest",
                       bi->system_identifier);
    buf_printf(&b, "{ \"PostgreSQL-Backup-Manifest-Version\": %d,\n", version);
    if (version == MANIFEST_V2)
        buf_printf(&b, "\"System-Identifier\": %s,\n", bi->system_identifier);
    buf_printf(&b, "\"Files\": [\n");
    add_file(&b, true, "backup_label", strlen(m->backup_label), bi->stop_time,
             crc32c(m->backup_label, strlen(m->backup_label)));
    for (size_t i = 0; i < m->nfiles; i++)
        if (!m->files[i].is_dir)
            add_file(&b, false, m->files[i].path, m->files[i].size, m->files[i].mtime,
                     m->files[i].crc);
    buf_printf(&b,
               "\n],\n\"WAL-Ranges\": [\n{ \"Timeline\": %u, \"Start-LSN\": \"%s\", "
               "\"End-LSN\": \"%s\" }\n],\n",
               bi->timeline, bi->start_lsn, bi->stop_lsn);
    if (b.oom) {
        free(b.data);
        return err_set(err, "out of memory");
    }
    if (EVP_Digest(b.data, b.len, digest, &dlen, EVP_sha256(), NULL) != 1 || dlen != SHA256_LEN) {
        free(b.data);
        return err_set(err, "could not compute the SHA-256 of backup_manifest");
    }
    buf_printf(&b, "\"Manifest-Checksum\": \"");
    for (int i = 0; i < SHA256_LEN; i++)
        buf_printf(&b, "%02x", digest[i]);
    buf_printf(&b, "\"}\n");
    if (b.oom) {
        free(b.data);
        return err_set(err, "out of memory");
    }
    *out = b.data;
    return true;
}
