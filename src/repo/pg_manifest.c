/*
 * pg_manifest.c - write a PostgreSQL backup_manifest (format in
 * pg_manifest.h).
 */
#define _GNU_SOURCE
#include "repo/pg_manifest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/crc32c.h"
#include "util/digest.h"
#include "util/text.h"

/* PostgreSQL 17 writes manifest version 2, with the System-Identifier. */
#define PG_VERSION_MANIFEST_V2 170000
#define MANIFEST_V1            1
#define MANIFEST_V2            2

/* JSON string body: our paths are ASCII from PGDATA; escape what JSON requires. */
static void pg_manifest_json_string(text_buf *b, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            text_buf_printf(b, "\\%c", c);
        else if (c < 0x20)
            text_buf_printf(b, "\\u%04x", c);
        else
            text_buf_printf(b, "%c", c);
    }
}

static void pg_manifest_add_file(text_buf *b, bool first, const char *path, uint64_t size,
                                 int64_t mtime, uint32_t crc)
{
    char when[32];
    struct tm tm;
    time_t t = (time_t)mtime;

    gmtime_r(&t, &tm);
    strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S GMT", &tm);
    text_buf_printf(b, "%s{ \"Path\": \"", first ? "" : ",\n");
    pg_manifest_json_string(b, path);
    text_buf_printf(b,
                    "\", \"Size\": %llu, \"Last-Modified\": \"%s\", \"Checksum-Algorithm\": "
                    "\"CRC32C\", \"Checksum\": \"%02x%02x%02x%02x\" }",
                    (unsigned long long)size, when, crc & 0xFF, (crc >> 8) & 0xFF,
                    (crc >> 16) & 0xFF, crc >> 24);
}

int pg_manifest_version(int pg_version_num)
{
    return pg_version_num >= PG_VERSION_MANIFEST_V2 ? MANIFEST_V2 : MANIFEST_V1;
}

/*
 * The System-Identifier goes into the manifest as a bare JSON number that
 * PostgreSQL parses with strtou64: digits only, at most 20 of them.
 */
static bool pg_manifest_sysid_valid(const char *sysid)
{
    size_t n = strspn(sysid, "0123456789");

    return n > 0 && n <= 20 && sysid[n] == '\0';
}

bool pg_manifest_build(const manifest *m, const backup_info *bi, char **out, pgd_error *err)
{
    text_buf b = {0};
    unsigned char digest[DIGEST_SHA256_LEN];
    int version = pg_manifest_version(bi->pg_version_num);

    if (version == MANIFEST_V2 && !pg_manifest_sysid_valid(bi->system_identifier))
        return err_set(err, "invalid system identifier \"%s\" for backup_manifest",
                       bi->system_identifier);
    text_buf_printf(&b, "{ \"PostgreSQL-Backup-Manifest-Version\": %d,\n", version);
    if (version == MANIFEST_V2)
        text_buf_printf(&b, "\"System-Identifier\": %s,\n", bi->system_identifier);
    text_buf_printf(&b, "\"Files\": [\n");
    pg_manifest_add_file(&b, true, "backup_label", strlen(m->backup_label), bi->stop_time,
                         crc32c(m->backup_label, strlen(m->backup_label)));
    for (size_t i = 0; i < m->nfiles; i++)
        if (!m->files[i].is_dir)
            pg_manifest_add_file(&b, false, m->files[i].path, m->files[i].size, m->files[i].mtime,
                                 m->files[i].crc);
    text_buf_printf(&b,
                    "\n],\n\"WAL-Ranges\": [\n{ \"Timeline\": %u, \"Start-LSN\": \"" LSN_FORMAT
                    "\", \"End-LSN\": \"" LSN_FORMAT "\" }\n],\n",
                    bi->timeline, LSN_ARGS(bi->start_lsn), LSN_ARGS(bi->stop_lsn));
    if (b.failed) { /* vsnprintf failed */
        text_buf_free(&b);
        return err_set(err, "could not format backup_manifest");
    }
    if (!digest_load(err)) {
        text_buf_free(&b);
        err_prefix(err, "could not compute the SHA-256 of backup_manifest");
        return false;
    }
    if (!digest_sha256(b.data, b.len, digest)) {
        text_buf_free(&b);
        return err_set(err,
                       "could not compute the SHA-256 of backup_manifest: libcrypto (%s) refused "
                       "it (its OpenSSL configuration's providers?)",
                       PGD_LIBCRYPTO_SONAME);
    }
    text_buf_printf(&b, "\"Manifest-Checksum\": \"");
    for (int i = 0; i < DIGEST_SHA256_LEN; i++)
        text_buf_printf(&b, "%02x", digest[i]);
    text_buf_printf(&b, "\"}\n");
    if ((*out = text_buf_take(&b)) == NULL)
        return err_set(err, "could not format backup_manifest");
    return true;
}
