/*
 * listing.c - a "directory" of the repository listed with ListObjectsV2
 * (delimiter '/', every page followed), and objects removed one by one
 * (DELETE) or a thousand at a time (DeleteObjects).
 *
 * A listing is complete or it is an error: a page that says it is truncated
 * without saying where it continues, a token that repeats, or an entry
 * outside the directory asked for stops it. DeleteObjects answers 200 even
 * when keys failed: every failed key is named.
 */
#define _GNU_SOURCE
#include "storage/s3/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/s3/sigv4.h"
#include "util/xmalloc.h"

#define S3_FAILURES_ROOM (PGD_ERROR_MAX - 96) /* what the failed keys may take of a message */

char *s3_listing_prefix(const s3_storage *s, const char *dir)
{
    char *key = s3_request_key(s, dir), *out;
    size_t len = strlen(key);

    while (len > 0 && key[len - 1] == '/')
        key[--len] = '\0';
    out = xasprintf("%s%s", key, len ? "/" : "");
    free(key);
    return out;
}

static char *s3_listing_query(const char *list_prefix, const char *token, unsigned page)
{
    char *enc_prefix = sigv4_uri_encode(list_prefix, false);
    char *enc_token = token ? sigv4_uri_encode(token, false) : NULL;
    char max_keys[32] = "";
    char *query;

    if (page > 0)
        snprintf(max_keys, sizeof(max_keys), "&max-keys=%u", page);
    query = xasprintf("list-type=2%s&delimiter=%%2F&prefix=%s%s%s", max_keys, enc_prefix,
                      token ? "&continuation-token=" : "", token ? enc_token : "");

    free(enc_prefix);
    free(enc_token);
    return query;
}

bool s3_listing_deliver(const s3_storage *s, const char *dir, const char *list_prefix,
                        const s3_xml_listing *page, storage_list_cb cb, void *arg, pgd_error *err)
{
    size_t plen = strlen(list_prefix);

    for (size_t i = 0; i < page->n; i++) {
        const s3_xml_entry *e = &page->entries[i];
        char *name;
        size_t nlen;
        bool ok;
        if (strncmp(e->name, list_prefix, plen) != 0)
            return err_set(err, "listing \"%s\" in s3://%s returned \"%s\", which is not under it",
                           dir, s->bucket, e->name);
        if (!e->is_prefix && e->name[plen] == '\0')
            continue; /* a "directory" marker object */
        nlen = strlen(e->name + plen) - (e->is_prefix ? 1 : 0);
        if (nlen == 0 || memchr(e->name + plen, '/', nlen) != NULL ||
            (e->is_prefix && e->name[plen + nlen] != '/'))
            return err_set(err,
                           "listing \"%s\" in s3://%s returned \"%s\", which is not directly "
                           "under it (does the server ignore the delimiter?)",
                           dir, s->bucket, e->name);
        name = xstrndup(e->name + plen, nlen);
        ok = cb(arg, name, e->size, e->is_prefix, err);
        free(name);
        if (!ok)
            return false;
    }
    return true;
}

bool s3_listing_list(storage *st, const char *dir, storage_list_cb cb, void *arg, pgd_error *err)
{
    s3_storage *s = (s3_storage *)st;
    char *list_prefix = s3_listing_prefix(s, dir), *token = NULL, *what = xasprintf("%s/", dir);
    bool ok;

    for (;;) {
        char *query = s3_listing_query(list_prefix, token, s->list_page);
        s3_answer a;
        s3_xml_listing page;
        pgd_error perr = {0};
        s3_call call = {.method = "GET", .path = NULL, .what = what, .query = query};
        ok = s3_request(s, &call, &a, err);
        free(query);
        if (ok && !s3_xml_listing_parse(a.http.body, a.http.body_len, &page, &perr))
            ok = err_set(err, "listing \"%s\" in s3://%s failed: %s", dir, s->bucket, perr.msg);
        s3_answer_free(&a);
        if (!ok)
            break;
        ok = s3_listing_deliver(s, dir, list_prefix, &page, cb, arg, err);
        if (ok && page.truncated && token != NULL && strcmp(token, page.next_token) == 0)
            ok = err_set(err,
                         "listing \"%s\" in s3://%s failed: the server gave the same "
                         "continuation token twice",
                         dir, s->bucket);
        free(token);
        token = NULL;
        if (ok && page.truncated) {
            token = page.next_token;
            page.next_token = NULL;
        }
        s3_xml_listing_free(&page);
        if (!ok || token == NULL)
            break;
    }
    free(token);
    free(list_prefix);
    free(what);
    return ok;
}

bool s3_listing_remove(storage *st, const char *path, pgd_error *err)
{
    s3_answer a;
    s3_call call = {.method = "DELETE", .path = path, .expect_missing = true};
    bool ok = s3_request((s3_storage *)st, &call, &a, err);

    s3_answer_free(&a);
    return ok;
}

char *s3_listing_delete_body(const s3_storage *s, const char *const *paths, size_t n, size_t *len)
{
    char *xml = NULL;
    FILE *f = open_memstream(&xml, len); /* the C library's own malloc: its failures are checked */

    if (f == NULL)
        return NULL;
    fputs("<Delete><Quiet>true</Quiet>", f);
    for (size_t i = 0; i < n; i++) {
        char *key = s3_request_key(s, paths[i]);
        char *escaped = s3_xml_escape(key);
        fprintf(f, "<Object><Key>%s</Key></Object>", escaped);
        free(key);
        free(escaped);
    }
    fputs("</Delete>", f);
    if (fclose(f) != 0) {
        free(xml);
        return NULL;
    }
    return xml;
}

/* "could not delete 2 objects from s3://b/p: "x" (AccessDenied: ...), ..." */
static bool s3_listing_report_failures(const s3_storage *s, const s3_xml_delete_failure *f,
                                       size_t n, pgd_error *err)
{
    char list[S3_FAILURES_ROOM] = "";
    size_t used = 0, shown = 0, plen = strlen(s->prefix);

    for (size_t i = 0; i < n; i++) {
        const char *key = f[i].key;
        char one[S3_FAILURES_ROOM];
        int len;
        if (plen > 0 && strncmp(key, s->prefix, plen) == 0 && key[plen] == '/')
            key += plen + 1;
        len = snprintf(one, sizeof(one), "%s\"%s\" (%s%s%s)", i ? ", " : "", key,
                       f[i].fault.code[0] ? f[i].fault.code : "no code",
                       f[i].fault.message[0] ? ": " : "", f[i].fault.message);
        if (len < 0 || used + (size_t)len >= sizeof(list))
            break;
        memcpy(list + used, one, (size_t)len + 1);
        used += (size_t)len;
        shown++;
    }
    if (shown < n)
        return err_set(err, "could not delete %zu objects from %s: %s and %zu more", n, s->base.uri,
                       list, n - shown);
    return err_set(err, "could not delete %zu object%s from %s: %s", n, n == 1 ? "" : "s",
                   s->base.uri, list);
}

/* DeleteObjects, 1,000 keys a request (S3's limit); Content-MD5 is mandatory there. */
bool s3_listing_remove_many(storage *st, const char *const *paths, size_t n, pgd_error *err)
{
    s3_storage *s = (s3_storage *)st;

    for (size_t start = 0; start < n; start += S3_DELETE_BATCH) {
        size_t count = n - start < S3_DELETE_BATCH ? n - start : S3_DELETE_BATCH, len, nfail = 0;
        char *xml = s3_listing_delete_body(s, paths + start, count, &len);
        s3_xml_delete_failure *failures = NULL;
        pgd_error perr = {0};
        s3_answer a;
        bool ok;

        if (xml == NULL)
            return err_set(err, "out of memory");
        s3_call call = {.method = "POST",
                        .what = "(DeleteObjects)",
                        .query = "delete",
                        .body = xml,
                        .body_len = len};
        ok = s3_request(s, &call, &a, err);
        free(xml);
        if (ok && !s3_xml_delete_result(a.http.body, a.http.body_len, &failures, &nfail, &perr))
            ok = err_set(err, "deleting %zu objects from %s failed: %s", count, s->base.uri,
                         perr.msg);
        s3_answer_free(&a);
        if (ok && nfail > 0)
            ok = s3_listing_report_failures(s, failures, nfail, err);
        s3_xml_delete_failures_free(failures, nfail);
        if (!ok)
            return false;
    }
    return true;
}
