/*
 * listing.c - a "directory" of the repository listed with ListObjectsV2
 * (delimiter '/', every page followed), and objects removed one by one
 * (DELETE) or a thousand at a time (DeleteObjects).
 *
 * A listing is complete or it is an error: a page that says it is truncated
 * without saying where it continues, a token that repeats, or an entry
 * outside the directory asked for stops it. DeleteObjects answers 200 even
 * when keys failed: every failed key is named.
 *
 * In a bucket with Object Lock (which keeps versions), a DELETE without
 * a version only adds a delete marker: the object's data stays, and is
 * billed, and Object Lock never refuses it, so a locked object would be
 * reported removed. There remove_many (what retention and delete --garbage
 * remove: partitions, WAL) deletes every version of its objects (and the
 * markers earlier deletes left) by its id; a version Object Lock still
 * retains is refused by the store, and that refusal is the error, naming the
 * objects and until when the first is retained. Those objects stay whole.
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
    char *where = xasprintf("s3://%s", s->bucket);
    bool ok = storage_list_keys(where, dir, list_prefix, page->entries, page->n, cb, arg, err);

    free(where);
    return ok;
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

/*
 * Does the bucket keep versions under Object Lock? Asked once (GET ?versioning, then for a
 * versioned bucket GET ?object-lock). A server that has no versioning at all (s3rver answers
 * with a listing, others 501 or 400) keeps none.
 */
static bool s3_listing_versioned(s3_storage *s, bool *versioned, pgd_error *err)
{
    s3_call call = {.method = "GET", .what = "the bucket's versioning", .query = "versioning"};
    pgd_error rerr = {0}, perr = {0};
    s3_answer a;
    int known;
    bool ok;

    pthread_mutex_lock(&s->lock);
    known = s->versioned;
    pthread_mutex_unlock(&s->lock);
    *versioned = known > 0;
    if (known != 0)
        return true;
    ok = s3_request(s, &call, &a, &rerr);
    if (ok && !s3_xml_versioning(a.http.body, a.http.body_len, versioned, &perr))
        ok = err_set(err, "reading the versioning of bucket %s failed: %s", s->bucket, perr.msg);
    else if (!ok && (a.http.status == 501 || a.http.status == 400 || a.http.status == 405))
        ok = true, *versioned = false;
    else if (!ok)
        *err = rerr;
    s3_answer_free(&a);
    /*
     * Versions alone (no Object Lock) may be the owner's own safety net, with lifecycle rules
     * for what delete markers hide: left as it is. Object Lock is where a marker misleads.
     */
    if (ok && *versioned) {
        s3_lock_config lc;
        ok = s3_storage_lock_config(&s->base, &lc, err);
        *versioned = ok && lc.enabled;
    }
    if (ok) {
        pthread_mutex_lock(&s->lock);
        s->versioned = *versioned ? 1 : -1;
        pthread_mutex_unlock(&s->lock);
    }
    return ok;
}

static int s3_listing_key_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every version and delete marker of the sorted full keys, listed under their common prefix. */
static bool s3_listing_versions_of(s3_storage *s, char **keys, size_t n, s3_xml_version **out,
                                   size_t *nout, pgd_error *err)
{
    size_t plen = 0;
    char *prefix, *cut, *key_marker = NULL, *id_marker = NULL;
    bool ok = true, more = true;

    while (keys[0][plen] != '\0' && keys[0][plen] == keys[n - 1][plen])
        plen++;
    cut = xstrndup(keys[0], plen);
    prefix = sigv4_uri_encode(cut, false);
    free(cut);
    while (ok && more) {
        char *km = key_marker ? sigv4_uri_encode(key_marker, false) : NULL;
        char *im = id_marker ? sigv4_uri_encode(id_marker, false) : NULL;
        char *query = xasprintf("versions&prefix=%s%s%s%s%s", prefix, km ? "&key-marker=" : "",
                                km ? km : "", im ? "&version-id-marker=" : "", im ? im : "");
        s3_call call = {.method = "GET", .what = "(ListObjectVersions)", .query = query};
        s3_xml_versions page;
        pgd_error perr = {0};
        s3_answer a;

        free(km);
        free(im);
        ok = s3_request(s, &call, &a, err);
        free(query);
        if (ok && !s3_xml_versions_parse(a.http.body, a.http.body_len, &page, &perr))
            ok = err_set(err, "listing the versions of objects in %s failed: %s", s->base.uri,
                         perr.msg);
        s3_answer_free(&a);
        if (!ok)
            break;
        for (size_t i = 0; i < page.n; i++) {
            if (bsearch(&page.items[i].key, keys, n, sizeof(*keys), s3_listing_key_cmp) == NULL)
                continue;
            *out = xrealloc(*out, (*nout + 1) * sizeof(**out));
            (*out)[(*nout)++] = page.items[i];
            page.items[i] = (s3_xml_version){NULL, NULL};
        }
        more = page.truncated;
        if (more && key_marker != NULL && strcmp(key_marker, page.next_key_marker) == 0 &&
            id_marker != NULL && page.next_version_id_marker != NULL &&
            strcmp(id_marker, page.next_version_id_marker) == 0)
            ok = err_set(err,
                         "listing the versions of objects in %s failed: the server gave the "
                         "same markers twice",
                         s->base.uri);
        free(key_marker);
        free(id_marker);
        key_marker = page.next_key_marker;
        id_marker = page.next_version_id_marker;
        page.next_key_marker = page.next_version_id_marker = NULL;
        s3_xml_versions_free(&page);
    }
    free(key_marker);
    free(id_marker);
    free(prefix);
    return ok;
}

static char *s3_listing_delete_xml(char *const *keys, char *const *ids, size_t n, size_t *len);
static bool s3_listing_post_delete(s3_storage *s, const char *xml, size_t len, size_t count,
                                   s3_xml_delete_failure **failures, size_t *nfail, pgd_error *err);

static bool s3_listing_report_failures(const s3_storage *s, const s3_xml_delete_failure *f,
                                       size_t n, pgd_error *err);

/*
 * The versions the store refused: those Object Lock still retains (AccessDenied, and a
 * retain-until date still to come) are kept, whole and visible, and said in one warning with
 * their number and the latest date: a later delete removes them once it has passed, as
 * retention keeps a locked backup. Any other refusal is the error (f is reordered: those
 * first).
 */
static bool s3_listing_sort_refusals(s3_storage *s, s3_xml_delete_failure *f, size_t n,
                                     pgd_error *err)
{
    size_t plen = s->prefix[0] ? strlen(s->prefix) + 1 : 0, left = 0, kept = 0;
    int64_t latest = 0;
    char first[512] = "";

    for (size_t i = 0; i < n; i++) {
        int64_t until = 0;
        pgd_error herr = {0};
        bool locked = strcmp(f[i].fault.code, "AccessDenied") == 0 && strlen(f[i].key) > plen &&
                      s3_reader_retained_until(&s->base, f[i].key + plen, &until, &herr) &&
                      until > (int64_t)time(NULL);
        if (!locked) {
            s3_xml_delete_failure t = f[left];
            f[left++] = f[i];
            f[i] = t;
            continue;
        }
        if (kept++ == 0)
            snprintf(first, sizeof(first), "%s", f[i].key + plen);
        if (until > latest)
            latest = until;
    }
    if (kept > 0) {
        char when[32];
        struct tm tm;
        time_t t = (time_t)latest;
        gmtime_r(&t, &tm);
        strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
        log_warn("kept %zu object%s that S3 Object Lock retains until %s at the latest (\"%s\"%s): "
                 "a later delete removes them",
                 kept, kept == 1 ? "" : "s", when, first, kept > 1 ? " and others" : "");
    }
    return left == 0 || s3_listing_report_failures(s, f, left, err);
}

/* The objects of paths removed with all their versions (see the banner). */
static bool s3_listing_remove_versions(s3_storage *s, const char *const *paths, size_t n,
                                       pgd_error *err)
{
    char **keys = xcalloc(n, sizeof(*keys));
    s3_xml_version *v = NULL;
    s3_xml_delete_failure *failed = NULL;
    size_t nv = 0, nfailed = 0;
    bool ok;

    for (size_t i = 0; i < n; i++)
        keys[i] = s3_request_key(s, paths[i]);
    qsort(keys, n, sizeof(*keys), s3_listing_key_cmp);
    ok = s3_listing_versions_of(s, keys, n, &v, &nv, err);
    for (size_t start = 0; ok && start < nv; start += S3_DELETE_BATCH) {
        size_t count = nv - start < S3_DELETE_BATCH ? nv - start : S3_DELETE_BATCH, len, nf = 0;
        char **keys_of = xcalloc(count, sizeof(char *)), **ids_of = xcalloc(count, sizeof(char *));
        s3_xml_delete_failure *f = NULL;
        char *xml;

        for (size_t k = 0; k < count; k++) {
            keys_of[k] = v[start + k].key;
            ids_of[k] = v[start + k].version_id;
        }
        xml = s3_listing_delete_xml(keys_of, ids_of, count, &len);
        free(keys_of);
        free(ids_of);
        ok = s3_listing_post_delete(s, xml, len, count, &f, &nf, err);
        free(xml);
        /* the refusals of every batch are gathered: the others still go */
        if (nf > 0) {
            failed = xrealloc(failed, (nfailed + nf) * sizeof(*failed));
            memcpy(failed + nfailed, f, nf * sizeof(*f));
            nfailed += nf;
        }
        free(f);
    }
    if (ok && nfailed > 0)
        ok = s3_listing_sort_refusals(s, failed, nfailed, err);
    s3_xml_delete_failures_free(failed, nfailed);
    for (size_t i = 0; i < nv; i++) {
        free(v[i].key);
        free(v[i].version_id);
    }
    free(v);
    for (size_t i = 0; i < n; i++)
        free(keys[i]);
    free(keys);
    return ok;
}

/*
 * One object (a lease, a probe, a claim, a sentinel): a plain DELETE, which in a bucket that
 * keeps versions leaves a delete marker: the object is gone for every reader, which is what
 * releasing a lease needs even while Object Lock retains its data; the bulk of a repository
 * (partitions, WAL) goes through s3_listing_remove_many.
 */
bool s3_listing_remove(storage *st, const char *path, pgd_error *err)
{
    s3_answer a;
    s3_call call = {.method = "DELETE", .path = path, .expect_missing = true};
    bool ok = s3_request((s3_storage *)st, &call, &a, err);

    s3_answer_free(&a);
    return ok;
}

/* <Delete> of n full keys, each with its version id when ids is not NULL; NULL: out of memory. */
static char *s3_listing_delete_xml(char *const *keys, char *const *ids, size_t n, size_t *len)
{
    char *xml = NULL;
    FILE *f = open_memstream(&xml, len); /* the C library's own malloc: its failures are checked */

    if (f == NULL)
        return NULL;
    fputs("<Delete><Quiet>true</Quiet>", f);
    for (size_t i = 0; i < n; i++) {
        char *key = s3_xml_escape(keys[i]), *id = ids != NULL ? s3_xml_escape(ids[i]) : NULL;
        fprintf(f, "<Object><Key>%s</Key>%s%s%s</Object>", key, id ? "<VersionId>" : "",
                id ? id : "", id ? "</VersionId>" : "");
        free(key);
        free(id);
    }
    fputs("</Delete>", f);
    if (fclose(f) != 0) {
        free(xml);
        return NULL;
    }
    return xml;
}

char *s3_listing_delete_body(const s3_storage *s, const char *const *paths, size_t n, size_t *len)
{
    char **keys = xcalloc(n > 0 ? n : 1, sizeof(*keys)), *xml;

    for (size_t i = 0; i < n; i++)
        keys[i] = s3_request_key(s, paths[i]);
    xml = s3_listing_delete_xml(keys, NULL, n, len);
    for (size_t i = 0; i < n; i++)
        free(keys[i]);
    free(keys);
    return xml;
}

/* One DeleteObjects of `count` objects (xml: its body, NULL when it could not be made). */
static bool s3_listing_post_delete(s3_storage *s, const char *xml, size_t len, size_t count,
                                   s3_xml_delete_failure **failures, size_t *nfail, pgd_error *err)
{
    pgd_error perr = {0};
    s3_answer a;
    bool ok;

    *failures = NULL;
    *nfail = 0;
    if (xml == NULL)
        return err_set(err, "out of memory");
    s3_call call = {.method = "POST",
                    .what = "(DeleteObjects)",
                    .query = "delete",
                    .body = xml,
                    .body_len = len};
    ok = s3_request(s, &call, &a, err);
    if (ok && !s3_xml_delete_result(a.http.body, a.http.body_len, failures, nfail, &perr))
        ok = err_set(err, "deleting %zu objects from %s failed: %s", count, s->base.uri, perr.msg);
    s3_answer_free(&a);
    return ok;
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
    bool versioned;

    if (n == 0)
        return true;
    if (!s3_listing_versioned(s, &versioned, err))
        return false;
    if (versioned)
        return s3_listing_remove_versions(s, paths, n, err);
    for (size_t start = 0; start < n; start += S3_DELETE_BATCH) {
        size_t count = n - start < S3_DELETE_BATCH ? n - start : S3_DELETE_BATCH, len, nfail = 0;
        char *xml = s3_listing_delete_body(s, paths + start, count, &len);
        s3_xml_delete_failure *failures = NULL;
        bool ok = s3_listing_post_delete(s, xml, len, count, &failures, &nfail, err);

        free(xml);
        if (ok && nfail > 0)
            ok = s3_listing_report_failures(s, failures, nfail, err);
        s3_xml_delete_failures_free(failures, nfail);
        if (!ok)
            return false;
    }
    return true;
}
