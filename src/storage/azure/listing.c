/*
 * listing.c - a "directory" of the repository listed with List Blobs
 * (delimiter '/', every page followed through its NextMarker), and blobs
 * removed with Delete Blob.
 *
 * A listing is complete or it is an error: a marker that repeats, or an
 * entry outside the directory asked for, stops it.
 */
#define _GNU_SOURCE
#include "storage/azure/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/xmalloc.h"

char *azure_listing_prefix(const azure_storage *s, const char *dir)
{
    char *key = azure_request_key(s, dir), *out;
    size_t len = strlen(key);

    while (len > 0 && key[len - 1] == '/')
        key[--len] = '\0';
    out = xasprintf("%s%s", key, len ? "/" : "");
    free(key);
    return out;
}

bool azure_listing_deliver(const azure_storage *s, const char *dir, const char *list_prefix,
                           const azure_xml_listing *page, storage_list_cb cb, void *arg,
                           pgd_error *err)
{
    return storage_list_keys(s->base.uri, dir, list_prefix, page->entries, page->n, cb, arg, err);
}

bool azure_listing_list(storage *st, const char *dir, storage_list_cb cb, void *arg, pgd_error *err)
{
    azure_storage *s = (azure_storage *)st;
    char *list_prefix = azure_listing_prefix(s, dir), *marker = NULL, *what = xasprintf("%s/", dir);
    char page_size[16];
    bool ok;

    snprintf(page_size, sizeof(page_size), "%u", s->list_page);
    for (;;) {
        const char *params[] = {"restype",
                                "container",
                                "comp",
                                "list",
                                "delimiter",
                                "/",
                                "prefix",
                                list_prefix,
                                "maxresults",
                                page_size,
                                marker ? "marker" : NULL,
                                marker,
                                NULL};
        azure_answer a;
        azure_xml_listing page;
        pgd_error perr = {0};
        azure_call call = {.method = "GET", .what = what, .params = params};
        ok = azure_request(s, &call, &a, err);
        if (ok && !azure_xml_listing_parse(a.http.body, a.http.body_len, &page, &perr))
            ok = err_set(err, "listing \"%s\" in %s failed: %s", dir, s->base.uri, perr.msg);
        azure_answer_free(&a);
        if (!ok)
            break;
        ok = azure_listing_deliver(s, dir, list_prefix, &page, cb, arg, err);
        if (ok && page.next_marker != NULL && marker != NULL &&
            strcmp(marker, page.next_marker) == 0)
            ok = err_set(err, "listing \"%s\" in %s failed: the server gave the same marker twice",
                         dir, s->base.uri);
        free(marker);
        marker = page.next_marker;
        page.next_marker = NULL;
        azure_xml_listing_free(&page);
        if (!ok || marker == NULL)
            break;
    }
    free(marker);
    free(list_prefix);
    free(what);
    return ok;
}

bool azure_listing_remove(storage *st, const char *path, pgd_error *err)
{
    azure_answer a;
    azure_call call = {.method = "DELETE", .path = path, .expect_missing = true};
    bool ok = azure_request((azure_storage *)st, &call, &a, err);

    azure_answer_free(&a);
    return ok;
}
