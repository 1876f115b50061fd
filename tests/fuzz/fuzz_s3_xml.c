/*
 * fuzz_s3_xml.c - the S3 answers the driver parses (storage/s3/xml.c):
 * errors, listings, multipart uploads and their parts, delete results, object versions,
 * a bucket's Object Lock configuration and versioning, and the times in them. Whoever answers for
 * the endpoint chooses these bytes. The first byte of the input chooses the parser; the rest is the
 * body.
 */
#include "fuzz_common.h"

#include "storage/s3/internal.h"

static void fuzz_s3_xml_fault_ok(const s3_xml_fault *f)
{
    /* the message goes into one log line: no control characters, terminated */
    fuzz_assert(memchr(f->code, '\0', sizeof(f->code)) != NULL);
    fuzz_assert(memchr(f->message, '\0', sizeof(f->message)) != NULL);
    for (const char *p = f->message; *p != '\0'; p++)
        fuzz_assert((unsigned char)*p >= 0x20 && *p != 0x7f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pgd_error err = {0};
    s3_xml_fault fault;
    const char *body;
    size_t len;
    bool ok = true;

    if (size < 1)
        return 0;
    /* a NUL after the body, as curl's buffer has, which the parsers must not need */
    char *text = fuzz_text(data + 1, size - 1);
    body = text;
    len = size - 1;
    memset(&fault, 0, sizeof(fault));
    switch (data[0] % 8) {
    case 0:
        if (s3_xml_error(body, len, &fault))
            fuzz_s3_xml_fault_ok(&fault);
        break;
    case 1: {
        char *id = NULL;

        ok = s3_xml_upload_id(body, len, &id, &err);
        fuzz_assert(!ok || id != NULL);
        free(id);
        break;
    }
    case 2:
        ok = s3_xml_complete(body, len, &fault, &err);
        if (!ok && !err.set)
            fuzz_s3_xml_fault_ok(&fault);
        ok = ok || !err.set;
        break;
    case 3: {
        s3_xml_listing l = {0};

        ok = s3_xml_listing_parse(body, len, &l, &err);
        if (ok) {
            for (size_t i = 0; i < l.n; i++)
                fuzz_assert(l.entries[i].name != NULL);
            fuzz_assert(!l.truncated || l.next_token != NULL);
        }
        s3_xml_listing_free(&l);
        break;
    }
    case 4: {
        s3_xml_delete_failure *f = NULL;
        size_t n = 0;

        ok = s3_xml_delete_result(body, len, &f, &n, &err);
        if (ok)
            for (size_t i = 0; i < n; i++)
                fuzz_s3_xml_fault_ok(&f[i].fault);
        s3_xml_delete_failures_free(f, n);
        break;
    }
    case 5: {
        s3_xml_uploads u = {0};

        s3_xml_versions v = {0};
        pgd_error verr = {0};

        ok = s3_xml_uploads_parse(body, len, &u, &err);
        s3_xml_uploads_free(&u);
        /* ListObjectVersions shares this case: the corpus keeps its choices */
        if (s3_xml_versions_parse(body, len, &v, &verr)) {
            for (size_t i = 0; i < v.n; i++)
                fuzz_assert(v.items[i].key != NULL && v.items[i].version_id != NULL);
            fuzz_assert(!v.truncated || v.next_key_marker != NULL);
        } else {
            fuzz_check_refusal(&verr);
        }
        s3_xml_versions_free(&v);
        break;
    }
    case 6: {
        int64_t latest = 0;
        bool truncated = false;
        char *marker = NULL;

        bool versioned = false;
        pgd_error verr = {0};

        ok = s3_xml_parts_parse(body, len, &latest, &truncated, &marker, &err);
        free(marker);
        /* GetBucketVersioning shares this case */
        if (!s3_xml_versioning(body, len, &versioned, &verr))
            fuzz_check_refusal(&verr);
        break;
    }
    default: {
        int64_t t;
        s3_lock_config lc;

        /* GetObjectLockConfiguration shares this case: the corpus keeps its choices */
        if (!s3_xml_lock_config(body, len, &lc, &err))
            fuzz_check_refusal(&err);
        fuzz_assert(memchr(lc.mode, '\0', sizeof(lc.mode)) != NULL);
        err_clear(&err);
        s3_xml_time(text, &t);
        char *esc = s3_xml_escape(text);

        fuzz_assert(strpbrk(esc, "<>\"'") == NULL);
        free(esc);
        break;
    }
    }
    if (!ok)
        fuzz_check_refusal(&err);
    free(text);
    return 0;
}
