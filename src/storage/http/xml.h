/*
 * xml.h - reading the XML answers of object stores (S3, Azure) with
 * libxml2, through one hardened parser setup (see xml.c).
 */
#ifndef PGD_HTTP_XML_H
#define PGD_HTTP_XML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/http/http_libs.h"
#include "util/error.h"

#define HTTP_XML_MESSAGE_MAX 256 /* a server's sentence, cut */

/* The document, or NULL with err set (err may be NULL: then just NULL). Free with xmlFreeDoc. */
xmlDocPtr http_xml_read(const char *body, size_t len, pgd_error *err);

/* Is n the element `name` (local name)? */
bool http_xml_named(xmlNodePtr n, const char *name);

/* The first child element `name` of parent, or NULL. */
xmlNodePtr http_xml_child(xmlNodePtr parent, const char *name);

/*
 * The text under n, as xmlNodeGetContent gives it: its length, and the
 * bytes into out when out is not NULL.
 */
size_t http_xml_text(xmlNodePtr n, char *out);

/* The text of child `name`, malloc'd (entities decoded), or NULL when absent. */
char *http_xml_child_text(xmlNodePtr parent, const char *name);

/* Server text for a one-line message: cut to fit, control characters replaced. */
void http_xml_copy_line(char *dst, size_t cap, const char *src);

/* The Code and Message children of an <Error> element, each as one line (copy_line). */
void http_xml_fault(xmlNodePtr error, char *code, size_t code_cap, char *message,
                    size_t message_cap);

/*
 * A body whose root is <Error>: its Code and Message (http_xml_fault). False when it is not
 * one, or when libxml2 cannot be loaded: then `lost` (what the caller's messages lose, "S3
 * error answers are reported without their code") is said in a warning, once per `warned`.
 */
bool http_xml_error(const char *body, size_t len, char *code, size_t code_cap, char *message,
                    size_t message_cap, bool *warned, const char *lost);

/* A decimal size of at most 20 digits, nothing else. */
bool http_xml_parse_size(const char *text, uint64_t *size);

#endif
