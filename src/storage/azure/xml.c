/*
 * xml.c - Azure's XML: an error's Code and Message, a List Blobs page
 * (EnumerationResults: Blob and BlobPrefix entries, NextMarker), and the
 * Put Block List body. Answers are untrusted input, read through the
 * hardened reader of storage/http/xml.h (no network, no entities, no DTD).
 */
#define _GNU_SOURCE
#include "storage/azure/internal.h"
#include "storage/http/xml.h"
#include "util/xmalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool azure_xml_error(const char *body, size_t len, azure_xml_fault *fault)
{
    static bool warned;

    return http_xml_error(body, len, fault->code, sizeof(fault->code), fault->message,
                          sizeof(fault->message), &warned,
                          "Azure error answers are reported without their message");
}

void azure_xml_listing_free(azure_xml_listing *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->entries[i].name);
    free(l->entries);
    free(l->next_marker);
    memset(l, 0, sizeof(*l));
}

static bool azure_xml_listing_entry(xmlNodePtr c, azure_xml_listing *out, pgd_error *err)
{
    bool is_prefix = http_xml_named(c, "BlobPrefix");
    char *name = http_xml_child_text(c, "Name"), *size_text = NULL;
    uint64_t size = 0;

    if (name == NULL || name[0] == '\0') {
        free(name);
        return err_set(err, "a %s without a Name", is_prefix ? "BlobPrefix" : "Blob");
    }
    if (!is_prefix) {
        xmlNodePtr props = http_xml_child(c, "Properties");
        size_text = props ? http_xml_child_text(props, "Content-Length") : NULL;
        if (!http_xml_parse_size(size_text, &size)) {
            err_set(err, "blob \"%s\" has no valid Content-Length", name);
            free(name);
            free(size_text);
            return false;
        }
        free(size_text);
    }
    out->entries = xrealloc(out->entries, (out->n + 1) * sizeof(*out->entries));
    out->entries[out->n++] = (azure_xml_entry){name, size, is_prefix};
    return true;
}

bool azure_xml_listing_parse(const char *body, size_t len, azure_xml_listing *out, pgd_error *err)
{
    xmlDocPtr doc = http_xml_read(body, len, err);
    xmlNodePtr root, blobs;
    bool ok = true;

    memset(out, 0, sizeof(*out));
    if (doc == NULL)
        return false;
    root = xmlDocGetRootElement(doc);
    if (!http_xml_named(root, "EnumerationResults")) {
        err_set(err, "the answer is a <%s>, not an EnumerationResults", (const char *)root->name);
        xmlFreeDoc(doc);
        return false;
    }
    blobs = http_xml_child(root, "Blobs");
    for (xmlNodePtr c = blobs ? blobs->children : NULL; ok && c; c = c->next)
        if (http_xml_named(c, "Blob") || http_xml_named(c, "BlobPrefix"))
            ok = azure_xml_listing_entry(c, out, err);
    if (ok) {
        out->next_marker = http_xml_child_text(root, "NextMarker");
        if (out->next_marker != NULL && out->next_marker[0] == '\0') {
            free(out->next_marker);
            out->next_marker = NULL;
        }
    }
    xmlFreeDoc(doc);
    if (!ok)
        azure_xml_listing_free(out);
    return ok;
}

char *azure_xml_block_list(char *const *ids, size_t n, size_t *len)
{
    char *xml = NULL;
    FILE *f = open_memstream(&xml, len);

    if (f == NULL)
        return NULL;
    fputs("<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList>", f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "<Latest>%s</Latest>", ids[i]);
    fputs("</BlockList>", f);
    if (fclose(f) != 0) {
        free(xml);
        return NULL;
    }
    return xml;
}
