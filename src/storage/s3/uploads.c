/*
 * uploads.c - the S3 driver's temporary objects: multipart uploads that a
 * killed writer never completed nor aborted. They are invisible to readers
 * but their parts are stored (and billed) until aborted.
 *
 * An upload is stale when nothing has written to it for older_than_s: its
 * start (Initiated) is older than that, and so is its latest part
 * (ListParts: a long upload still in progress started long ago, but its
 * last part is recent). Only those are aborted.
 */
#define _GNU_SOURCE
#include "storage/s3/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "storage/s3/sigv4.h"
#include "util/log.h"
#include "util/xmalloc.h"

/* The object path of a full key under the prefix (keys come from a listing of it). */
static const char *s3_uploads_path(const s3_storage *s, const char *key)
{
    size_t plen = strlen(s->prefix);

    return plen == 0 ? key : key + plen + 1;
}

/* The latest write to an upload: its start, or its latest part if later. */
static bool s3_uploads_last_write(s3_storage *s, const s3_xml_upload *u, int64_t *last,
                                  pgd_error *err)
{
    char *marker = NULL, *id = sigv4_uri_encode(u->upload_id, false);
    bool ok = true, truncated = true;

    *last = u->initiated;
    while (ok && truncated) {
        char *enc_marker = marker ? sigv4_uri_encode(marker, false) : NULL;
        char *query = xasprintf("uploadId=%s%s%s", id, marker ? "&part-number-marker=" : "",
                                marker ? enc_marker : "");
        s3_answer a;
        pgd_error perr = {0};
        int64_t latest;
        free(enc_marker);
        free(marker);
        marker = NULL;
        s3_call call = {.method = "GET", .path = s3_uploads_path(s, u->key), .query = query};
        ok = s3_request(s, &call, &a, err);
        if (ok &&
            !s3_xml_parts_parse(a.http.body, a.http.body_len, &latest, &truncated, &marker, &perr))
            ok = err_set(err, "listing the parts of the upload of \"%s\" in s3://%s failed: %s",
                         s3_uploads_path(s, u->key), s->bucket, perr.msg);
        s3_answer_free(&a);
        free(query);
        if (ok && latest > *last)
            *last = latest;
    }
    free(marker);
    free(id);
    return ok;
}

static bool s3_uploads_abort(s3_storage *s, const s3_xml_upload *u, pgd_error *err)
{
    char *id = sigv4_uri_encode(u->upload_id, false), *query = xasprintf("uploadId=%s", id);
    s3_answer a;
    bool ok;

    s3_call call = {.method = "DELETE", .path = s3_uploads_path(s, u->key), .query = query};
    ok = s3_request(s, &call, &a, err);
    s3_answer_free(&a);
    free(query);
    free(id);
    if (ok)
        log_debug("aborted the stale upload of \"%s\"", s3_uploads_path(s, u->key));
    return ok;
}

/* One page of ListMultipartUploads: stale uploads aborted. */
static bool s3_uploads_page(s3_storage *s, const s3_xml_uploads *page, const char *list_prefix,
                            int64_t cutoff, pgd_error *err)
{
    for (size_t i = 0; i < page->n; i++) {
        const s3_xml_upload *u = &page->items[i];
        int64_t last;
        if (strncmp(u->key, list_prefix, strlen(list_prefix)) != 0)
            return err_set(err, "listing uploads under s3://%s/%s returned \"%s\", not under it",
                           s->bucket, list_prefix, u->key);
        if (u->initiated > cutoff)
            continue;
        if (!s3_uploads_last_write(s, u, &last, err))
            return false;
        if (last <= cutoff && !s3_uploads_abort(s, u, err))
            return false;
    }
    return true;
}

static char *s3_uploads_query(const char *list_prefix, const char *key_marker,
                              const char *id_marker)
{
    char *p = sigv4_uri_encode(list_prefix, false);
    char *k = key_marker ? sigv4_uri_encode(key_marker, false) : NULL;
    char *u = id_marker ? sigv4_uri_encode(id_marker, false) : NULL;
    char *query = xasprintf("uploads&prefix=%s%s%s%s%s", p, k ? "&key-marker=" : "", k ? k : "",
                            u ? "&upload-id-marker=" : "", u ? u : "");

    free(p);
    free(k);
    free(u);
    return query;
}

bool s3_uploads_remove_stale(storage *st, const char *dir, int64_t older_than_s, pgd_error *err)
{
    s3_storage *s = (s3_storage *)st;
    char *list_prefix = s3_listing_prefix(s, dir), *key_marker = NULL, *id_marker = NULL;
    int64_t cutoff = (int64_t)time(NULL) - older_than_s;
    bool ok = true, more = true;

    while (ok && more) {
        char *query = s3_uploads_query(list_prefix, key_marker, id_marker);
        s3_xml_uploads page;
        s3_answer a;
        pgd_error perr = {0};
        s3_call call = {.method = "GET", .what = "(uploads)", .query = query};
        ok = s3_request(s, &call, &a, err);
        free(query);
        if (ok && !s3_xml_uploads_parse(a.http.body, a.http.body_len, &page, &perr))
            ok = err_set(err, "listing the uploads under \"%s\" in s3://%s failed: %s", dir,
                         s->bucket, perr.msg);
        s3_answer_free(&a);
        if (!ok)
            break;
        ok = s3_uploads_page(s, &page, list_prefix, cutoff, err);
        more = page.truncated;
        if (ok && more && key_marker != NULL && strcmp(key_marker, page.next_key_marker) == 0 &&
            strcmp(id_marker ? id_marker : "",
                   page.next_upload_id_marker ? page.next_upload_id_marker : "") == 0)
            ok = err_set(err,
                         "listing the uploads under \"%s\" in s3://%s failed: the server "
                         "gave the same markers twice",
                         dir, s->bucket);
        free(key_marker);
        free(id_marker);
        key_marker = page.next_key_marker;
        id_marker = page.next_upload_id_marker;
        page.next_key_marker = page.next_upload_id_marker = NULL;
        s3_xml_uploads_free(&page);
    }
    free(key_marker);
    free(id_marker);
    free(list_prefix);
    return ok;
}
