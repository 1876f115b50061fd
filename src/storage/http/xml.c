/*
 * xml.c - the hardened libxml2 reader the object stores' XML answers go
 * through (S3's and Azure's): parsed without network access, without entity
 * substitution, and a document with a DTD is refused (no store sends one;
 * entity expansion is how a hostile document grows). Elements are matched by
 * local name, whatever namespace the server declares; libxml2's own error
 * printing is off: a malformed answer is reported once, by the driver.
 */
#define _GNU_SOURCE
#include "storage/http/xml.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"
#include "util/xmalloc.h"

#define HTTP_XML_PARSE_OPTIONS (XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING)
#define HTTP_XML_SIZE_DIGITS   20 /* UINT64_MAX */

/* The document, or NULL with err set (err may be NULL: then just NULL). */
xmlDocPtr http_xml_read(const char *body, size_t len, pgd_error *err)
{
    xmlDocPtr doc;

    if (!http_libs_load_xml(err))
        return NULL;
    if (body == NULL || len == 0) {
        err_set(err, "the answer is empty");
        return NULL;
    }
    if (len > INT32_MAX) {
        err_set(err, "the answer is too large");
        return NULL;
    }
    doc = xmlReadMemory(body, (int)len, NULL, NULL, HTTP_XML_PARSE_OPTIONS);
    if (doc == NULL) {
        const xmlError *e = xmlGetLastError();
        char msg[HTTP_XML_MESSAGE_MAX];
        snprintf(msg, sizeof(msg), "%s", e && e->message ? e->message : "not XML");
        msg[strcspn(msg, "\r\n")] = '\0';
        err_set(err, "the answer is not well-formed XML: %s", msg);
        return NULL;
    }
    if (doc->intSubset != NULL || xmlDocGetRootElement(doc) == NULL) {
        xmlFreeDoc(doc);
        err_set(err, "the answer is not a document of an object store (it has a DTD or no root)");
        return NULL;
    }
    return doc;
}

bool http_xml_named(xmlNodePtr n, const char *name)
{
    return n != NULL && n->type == XML_ELEMENT_NODE && xmlStrcmp(n->name, BAD_CAST name) == 0;
}

xmlNodePtr http_xml_child(xmlNodePtr parent, const char *name)
{
    for (xmlNodePtr c = parent ? parent->children : NULL; c; c = c->next)
        if (http_xml_named(c, name))
            return c;
    return NULL;
}

/*
 * The text under n, as xmlNodeGetContent gives it (text and CDATA of every
 * descendant, in order): its length, and the bytes into out when out is
 * not NULL. Read from the tree here, so nothing is allocated by libxml2 and
 * freed through its xmlFree, a variable in some of its builds and a macro
 * in others.
 */
size_t http_xml_text(xmlNodePtr n, char *out)
{
    size_t len = 0;

    for (xmlNodePtr c = n->children; c; c = c->next) {
        if (c->type == XML_TEXT_NODE || c->type == XML_CDATA_SECTION_NODE) {
            size_t l = c->content ? strlen((const char *)c->content) : 0;
            if (out != NULL)
                memcpy(out + len, c->content, l);
            len += l;
        } else if (c->type == XML_ELEMENT_NODE) {
            len += http_xml_text(c, out ? out + len : NULL);
        }
    }
    return len;
}

/* The text of child `name`, malloc'd (entities decoded), or NULL when absent. */
char *http_xml_child_text(xmlNodePtr parent, const char *name)
{
    xmlNodePtr c = http_xml_child(parent, name);
    size_t len;
    char *out;

    if (c == NULL)
        return NULL;
    len = http_xml_text(c, NULL);
    out = xmalloc(len + 1);
    http_xml_text(c, out);
    out[len] = '\0';
    return out;
}

/* Server text for a one-line message: cut to fit, control characters replaced. */
void http_xml_copy_line(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src ? src : "");
    for (char *c = dst; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = ' ';
}

bool http_xml_parse_size(const char *text, uint64_t *size)
{
    char *end;
    unsigned long long v;

    if (text == NULL || text[0] < '0' || text[0] > '9' || strlen(text) > HTTP_XML_SIZE_DIGITS)
        return false;
    errno = 0;
    v = strtoull(text, &end, 10);
    if (errno != 0 || *end != '\0')
        return false;
    *size = v;
    return true;
}

void http_xml_fault(xmlNodePtr error, char *code, size_t code_cap, char *message,
                    size_t message_cap)
{
    char *c = http_xml_child_text(error, "Code"), *m = http_xml_child_text(error, "Message");

    http_xml_copy_line(code, code_cap, c);
    http_xml_copy_line(message, message_cap, m);
    free(c);
    free(m);
}

bool http_xml_error(const char *body, size_t len, char *code, size_t code_cap, char *message,
                    size_t message_cap, bool *warned, const char *lost)
{
    pgd_error load = {0};
    xmlDocPtr doc;
    xmlNodePtr root;
    bool is_error;

    /* the caller reports the failure without them; that libxml2 is why, once */
    if (!http_libs_load_xml(&load)) {
        if (!__atomic_exchange_n(warned, true, __ATOMIC_RELAXED))
            log_warn("%s: %s", load.msg, lost);
        return false;
    }
    doc = http_xml_read(body, len, NULL);
    if (doc == NULL)
        return false;
    root = xmlDocGetRootElement(doc);
    is_error = http_xml_named(root, "Error");
    if (is_error)
        http_xml_fault(root, code, code_cap, message, message_cap);
    xmlFreeDoc(doc);
    return is_error;
}
