/*
 * xml.c - S3's XML answers, read with libxml2: errors, the upload id of a
 * new multipart upload, the outcome of completing one, a ListObjectsV2 page,
 * a DeleteObjects result, the multipart uploads in progress and their parts;
 * and keys escaped for the DeleteObjects body.
 *
 * Answers are untrusted input, read through the hardened reader of
 * storage/http/xml.h (no network, no entities, no DTD).
 */
#define _GNU_SOURCE
#include "storage/s3/internal.h"
#include "storage/http/http_libs.h"
#include "storage/http/xml.h"
#include "util/xmalloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void s3_xml_fault_from(xmlNodePtr error, s3_xml_fault *f)
{
    http_xml_fault(error, f->code, sizeof(f->code), f->message, sizeof(f->message));
}

/*
 * The document of an answer whose root must be `want` (or `alias`, another
 * server's name for it), with that root in *root; NULL with err set
 * otherwise, an <Error> reported with its code and message.
 */
static xmlDocPtr s3_xml_open(const char *body, size_t len, const char *want, const char *alias,
                             xmlNodePtr *root, pgd_error *err)
{
    xmlDocPtr doc = http_xml_read(body, len, err);

    if (doc == NULL)
        return NULL;
    *root = xmlDocGetRootElement(doc);
    if (http_xml_named(*root, want) || (alias != NULL && http_xml_named(*root, alias)))
        return doc;
    if (http_xml_named(*root, "Error")) {
        s3_xml_fault f;
        s3_xml_fault_from(*root, &f);
        err_set(err, "the answer is an error: %s%s%s", f.code[0] ? f.code : "(no code)",
                f.message[0] ? ": " : "", f.message);
    } else {
        err_set(err, "the answer is a <%s>, not a %s", (const char *)(*root)->name, want);
    }
    xmlFreeDoc(doc);
    return NULL;
}

bool s3_xml_error(const char *body, size_t len, s3_xml_fault *fault)
{
    static bool warned;

    return http_xml_error(body, len, fault->code, sizeof(fault->code), fault->message,
                          sizeof(fault->message), &warned,
                          "S3 error answers are reported without their code");
}

bool s3_xml_upload_id(const char *body, size_t len, char **upload_id, pgd_error *err)
{
    xmlNodePtr root;
    xmlDocPtr doc = s3_xml_open(body, len, "InitiateMultipartUploadResult", NULL, &root, err);

    *upload_id = NULL;
    if (doc == NULL)
        return false;
    *upload_id = http_xml_child_text(root, "UploadId");
    xmlFreeDoc(doc);
    if (*upload_id == NULL || (*upload_id)[0] == '\0') {
        free(*upload_id);
        *upload_id = NULL;
        return err_set(err, "the answer has no UploadId");
    }
    return true;
}

#define S3_XML_DAYS_PER_YEAR 365 /* S3 counts a year of retention as 365 days */

/* Days or Years of a DefaultRetention; empty or 0 is none (moto writes both, one of them 0). */
static char *s3_xml_lock_period(xmlNodePtr def, const char *name)
{
    char *v = http_xml_child_text(def, name);

    if (v != NULL && (v[0] == '\0' || strcmp(v, "0") == 0)) {
        free(v);
        v = NULL;
    }
    return v;
}

bool s3_xml_lock_config(const char *body, size_t len, s3_lock_config *out, pgd_error *err)
{
    xmlNodePtr root, rule, def;
    xmlDocPtr doc = s3_xml_open(body, len, "ObjectLockConfiguration", NULL, &root, err);
    char *enabled, *mode = NULL, *days = NULL, *years = NULL;
    bool ok = true;

    memset(out, 0, sizeof(*out));
    if (doc == NULL)
        return false;
    enabled = http_xml_child_text(root, "ObjectLockEnabled");
    out->enabled = enabled != NULL && strcmp(enabled, "Enabled") == 0;
    rule = http_xml_child(root, "Rule");
    def = rule != NULL ? http_xml_child(rule, "DefaultRetention") : NULL;
    if (def != NULL) {
        char *end = NULL;
        unsigned long n = 0;
        mode = http_xml_child_text(def, "Mode");
        days = s3_xml_lock_period(def, "Days");
        years = s3_xml_lock_period(def, "Years");
        if (mode == NULL || strlen(mode) >= sizeof(out->mode) || (days == NULL) == (years == NULL))
            ok = err_set(err, "the bucket's default retention has no Mode, or not one of Days "
                              "and Years");
        else
            n = strtoul(days ? days : years, &end, 10);
        if (ok && (end == NULL || *end != '\0' || n == 0 || n > UINT32_MAX / S3_XML_DAYS_PER_YEAR))
            ok = err_set(err, "the bucket's default retention has an invalid period \"%s\"",
                         days ? days : years);
        if (ok) {
            snprintf(out->mode, sizeof(out->mode), "%s", mode);
            out->days = (unsigned)(days ? n : n * S3_XML_DAYS_PER_YEAR);
        }
    }
    free(enabled);
    free(mode);
    free(days);
    free(years);
    xmlFreeDoc(doc);
    return ok;
}

bool s3_xml_complete(const char *body, size_t len, s3_xml_fault *fault, pgd_error *err)
{
    xmlDocPtr doc = http_xml_read(body, len, err);
    xmlNodePtr root;
    bool done = false;

    memset(fault, 0, sizeof(*fault));
    if (doc == NULL)
        return false;
    root = xmlDocGetRootElement(doc);
    /* AWS's root is ...Result; moto names it ...Response */
    if (http_xml_named(root, "CompleteMultipartUploadResult") ||
        http_xml_named(root, "CompleteMultipartUploadResponse")) {
        done = true;
    } else if (http_xml_named(root, "Error")) {
        s3_xml_fault_from(root, fault);
        if (fault->code[0] == '\0')
            snprintf(fault->code, sizeof(fault->code), "Error");
    } else {
        err_set(err, "the answer is a <%s>, not a CompleteMultipartUploadResult",
                (const char *)root->name);
    }
    xmlFreeDoc(doc);
    return done;
}

void s3_xml_listing_free(s3_xml_listing *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->entries[i].name);
    free(l->entries);
    free(l->next_token);
    memset(l, 0, sizeof(*l));
}

static void s3_xml_listing_add(s3_xml_listing *l, char *name, uint64_t size, bool is_prefix)
{
    l->entries = xrealloc(l->entries, (l->n + 1) * sizeof(*l->entries));
    l->entries[l->n++] = (s3_xml_entry){name, size, is_prefix};
}

/* One <Contents> or <CommonPrefixes> element into the listing. */
static bool s3_xml_listing_entry(xmlNodePtr c, s3_xml_listing *out, pgd_error *err)
{
    bool is_prefix = http_xml_named(c, "CommonPrefixes");
    char *name = http_xml_child_text(c, is_prefix ? "Prefix" : "Key");
    char *size = is_prefix ? NULL : http_xml_child_text(c, "Size");
    uint64_t bytes = 0;

    if (name == NULL || name[0] == '\0') {
        free(name);
        free(size);
        return err_set(err, "a <%s> has no %s", (const char *)c->name,
                       is_prefix ? "Prefix" : "Key");
    }
    if (!is_prefix && !http_xml_parse_size(size, &bytes)) {
        err_set(err, "key \"%s\" has %s size \"%s\"", name, size ? "an invalid" : "no",
                size ? size : "");
        free(name);
        free(size);
        return false;
    }
    free(size);
    s3_xml_listing_add(out, name, bytes, is_prefix);
    return true;
}

/* IsTruncated, which must be there and be "true" or "false". */
static bool s3_xml_truncated(xmlNodePtr root, bool *truncated, pgd_error *err)
{
    char *t = http_xml_child_text(root, "IsTruncated");
    bool ok = t != NULL && (strcmp(t, "true") == 0 || strcmp(t, "false") == 0);

    if (!ok)
        err_set(err, "IsTruncated is %s%s%s", t ? "\"" : "missing", t ? t : "", t ? "\"" : "");
    else
        *truncated = strcmp(t, "true") == 0;
    free(t);
    return ok;
}

bool s3_xml_listing_parse(const char *body, size_t len, s3_xml_listing *out, pgd_error *err)
{
    xmlNodePtr root;
    xmlDocPtr doc = s3_xml_open(body, len, "ListBucketResult", NULL, &root, err);
    bool ok = true;

    memset(out, 0, sizeof(*out));
    if (doc == NULL)
        return false;
    for (xmlNodePtr c = root->children; c && ok; c = c->next)
        if (http_xml_named(c, "Contents") || http_xml_named(c, "CommonPrefixes"))
            ok = s3_xml_listing_entry(c, out, err);
    if (ok && (ok = s3_xml_truncated(root, &out->truncated, err))) {
        out->next_token = http_xml_child_text(root, "NextContinuationToken");
        /* a page that says there is more must say where it continues */
        if (out->truncated && (out->next_token == NULL || out->next_token[0] == '\0'))
            ok = err_set(err, "IsTruncated is true but there is no NextContinuationToken");
    }
    xmlFreeDoc(doc);
    if (!ok)
        s3_xml_listing_free(out);
    return ok;
}

void s3_xml_delete_failures_free(s3_xml_delete_failure *f, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(f[i].key);
    free(f);
}

bool s3_xml_delete_result(const char *body, size_t len, s3_xml_delete_failure **failures, size_t *n,
                          pgd_error *err)
{
    xmlNodePtr root;
    xmlDocPtr doc = s3_xml_open(body, len, "DeleteResult", NULL, &root, err);

    *failures = NULL;
    *n = 0;
    if (doc == NULL)
        return false;
    for (xmlNodePtr c = root->children; c; c = c->next) {
        s3_xml_delete_failure *grown;
        if (!http_xml_named(c, "Error"))
            continue;
        grown = xrealloc(*failures, (*n + 1) * sizeof(*grown));
        *failures = grown;
        grown[*n].key = http_xml_child_text(c, "Key");
        s3_xml_fault_from(c, &grown[*n].fault);
        (*n)++;
        if (grown[*n - 1].key == NULL)
            grown[*n - 1].key = xstrdup("(no key)");
    }
    xmlFreeDoc(doc);
    return true;
}

bool s3_xml_time(const char *text, int64_t *out)
{
    struct tm tm;
    const char *rest;

    memset(&tm, 0, sizeof(tm));
    if (text == NULL || (rest = strptime(text, "%Y-%m-%dT%H:%M:%S", &tm)) == NULL)
        return false;
    if (*rest == '.')
        for (rest++; *rest >= '0' && *rest <= '9'; rest++)
            ;
    if (strcmp(rest, "Z") != 0)
        return false;
    *out = (int64_t)timegm(&tm);
    return true;
}

void s3_xml_uploads_free(s3_xml_uploads *u)
{
    for (size_t i = 0; i < u->n; i++) {
        free(u->items[i].key);
        free(u->items[i].upload_id);
    }
    free(u->items);
    free(u->next_key_marker);
    free(u->next_upload_id_marker);
    memset(u, 0, sizeof(*u));
}

static bool s3_xml_upload_add(xmlNodePtr c, s3_xml_uploads *out, pgd_error *err)
{
    char *key = http_xml_child_text(c, "Key"), *id = http_xml_child_text(c, "UploadId");
    char *initiated = http_xml_child_text(c, "Initiated");
    int64_t when;
    bool ok = true;

    if (key == NULL || key[0] == '\0' || id == NULL || id[0] == '\0')
        ok = err_set(err, "an <Upload> has no Key or UploadId");
    else if (!s3_xml_time(initiated, &when))
        ok = err_set(err, "upload of \"%s\" has an invalid Initiated \"%s\"", key,
                     initiated ? initiated : "");
    free(initiated);
    if (!ok) {
        free(key);
        free(id);
        return false;
    }
    out->items = xrealloc(out->items, (out->n + 1) * sizeof(*out->items));
    out->items[out->n++] = (s3_xml_upload){key, id, when};
    return true;
}

bool s3_xml_uploads_parse(const char *body, size_t len, s3_xml_uploads *out, pgd_error *err)
{
    xmlNodePtr root;
    xmlDocPtr doc = s3_xml_open(body, len, "ListMultipartUploadsResult", NULL, &root, err);
    bool ok = true;

    memset(out, 0, sizeof(*out));
    if (doc == NULL)
        return false;
    for (xmlNodePtr c = root->children; c && ok; c = c->next)
        if (http_xml_named(c, "Upload"))
            ok = s3_xml_upload_add(c, out, err);
    if (ok)
        ok = s3_xml_truncated(root, &out->truncated, err);
    if (ok && out->truncated) {
        out->next_key_marker = http_xml_child_text(root, "NextKeyMarker");
        out->next_upload_id_marker = http_xml_child_text(root, "NextUploadIdMarker");
        if (out->next_key_marker == NULL || out->next_key_marker[0] == '\0')
            ok = err_set(err, "IsTruncated is true but there is no NextKeyMarker");
    }
    xmlFreeDoc(doc);
    if (!ok)
        s3_xml_uploads_free(out);
    return ok;
}

void s3_xml_versions_free(s3_xml_versions *v)
{
    for (size_t i = 0; i < v->n; i++) {
        free(v->items[i].key);
        free(v->items[i].version_id);
    }
    free(v->items);
    free(v->next_key_marker);
    free(v->next_version_id_marker);
    memset(v, 0, sizeof(*v));
}

bool s3_xml_versions_parse(const char *body, size_t len, s3_xml_versions *out, pgd_error *err)
{
    xmlNodePtr root;
    xmlDocPtr doc = s3_xml_open(body, len, "ListVersionsResult", NULL, &root, err);
    bool ok = true;

    memset(out, 0, sizeof(*out));
    if (doc == NULL)
        return false;
    for (xmlNodePtr c = root->children; c && ok; c = c->next) {
        char *key, *id;
        if (!http_xml_named(c, "Version") && !http_xml_named(c, "DeleteMarker"))
            continue;
        key = http_xml_child_text(c, "Key");
        id = http_xml_child_text(c, "VersionId");
        if (key == NULL || key[0] == '\0' || id == NULL || id[0] == '\0') {
            ok = err_set(err, "a version without a Key or a VersionId");
            free(key);
            free(id);
            break;
        }
        out->items = xrealloc(out->items, (out->n + 1) * sizeof(*out->items));
        out->items[out->n++] = (s3_xml_version){key, id};
    }
    if (ok)
        ok = s3_xml_truncated(root, &out->truncated, err);
    if (ok && out->truncated) {
        out->next_key_marker = http_xml_child_text(root, "NextKeyMarker");
        out->next_version_id_marker = http_xml_child_text(root, "NextVersionIdMarker");
        if (out->next_key_marker == NULL || out->next_key_marker[0] == '\0')
            ok = err_set(err, "IsTruncated is true but there is no NextKeyMarker");
    }
    xmlFreeDoc(doc);
    if (!ok)
        s3_xml_versions_free(out);
    return ok;
}

bool s3_xml_versioning(const char *body, size_t len, bool *versioned, pgd_error *err)
{
    xmlNodePtr root;
    /* AWS's root is VersioningConfiguration; moto names it GetBucketVersioningResponse */
    xmlDocPtr doc = s3_xml_open(body, len, "VersioningConfiguration", "GetBucketVersioningResponse",
                                &root, err);
    char *status;

    *versioned = false;
    if (doc == NULL) {
        pgd_error ignored = {0};
        /* a server that ignores ?versioning (s3rver) answers with the bucket's listing: no
         * versions there */
        if ((doc = s3_xml_open(body, len, "ListBucketResult", NULL, &root, &ignored)) == NULL)
            return false;
        xmlFreeDoc(doc);
        return true;
    }
    status = http_xml_child_text(root, "Status");
    /* a bucket whose versioning was suspended keeps the versions it has, and adds markers */
    *versioned =
        status != NULL && (strcmp(status, "Enabled") == 0 || strcmp(status, "Suspended") == 0);
    free(status);
    xmlFreeDoc(doc);
    return true;
}

bool s3_xml_parts_parse(const char *body, size_t len, int64_t *latest, bool *truncated,
                        char **next_marker, pgd_error *err)
{
    xmlNodePtr root;
    /* AWS's root is ListPartsResult; moto names it ListPartsResponse */
    xmlDocPtr doc = s3_xml_open(body, len, "ListPartsResult", "ListPartsResponse", &root, err);
    bool ok = true;

    *latest = 0;
    *next_marker = NULL;
    if (doc == NULL)
        return false;
    for (xmlNodePtr c = root->children; c && ok; c = c->next) {
        char *t;
        int64_t when;
        if (!http_xml_named(c, "Part"))
            continue;
        t = http_xml_child_text(c, "LastModified");
        if (!s3_xml_time(t, &when))
            ok = err_set(err, "a part has an invalid LastModified \"%s\"", t ? t : "");
        else if (when > *latest)
            *latest = when;
        free(t);
    }
    if (ok)
        ok = s3_xml_truncated(root, truncated, err);
    if (ok && *truncated) {
        *next_marker = http_xml_child_text(root, "NextPartNumberMarker");
        if (*next_marker == NULL || (*next_marker)[0] == '\0')
            ok = err_set(err, "IsTruncated is true but there is no NextPartNumberMarker");
    }
    xmlFreeDoc(doc);
    if (!ok) {
        free(*next_marker);
        *next_marker = NULL;
    }
    return ok;
}

char *s3_xml_escape(const char *text)
{
    size_t len = 0;
    char *out, *p;

    for (const char *c = text; *c; c++)
        len += *c == '&' ? 5 : (*c == '<' || *c == '>') ? 4 : (*c == '"' || *c == '\'') ? 6 : 1;
    out = xmalloc(len + 1);
    p = out;
    for (const char *c = text; *c; c++) {
        const char *rep = *c == '&'    ? "&amp;"
                          : *c == '<'  ? "&lt;"
                          : *c == '>'  ? "&gt;"
                          : *c == '"'  ? "&quot;"
                          : *c == '\'' ? "&apos;"
                                       : NULL;
        if (rep != NULL) {
            memcpy(p, rep, strlen(rep));
            p += strlen(rep);
        } else {
            *p++ = *c;
        }
    }
    *p = '\0';
    return out;
}
