/*
 * http_libs.h - libcurl and libxml2 (and libcrypto, util/digest.h), opened when a command first
 * uses an S3 or Azure repository (see util/shared_lib.h for why they are not linked at build time).
 *
 * http.c and xml.c include this header instead of <curl/curl.h> and
 * <libxml/...> and call the libraries' functions by their usual names: each
 * name below is a slot of a table http_libs_load (libcurl) and
 * http_libs_load_xml (libxml2) fill. s3_storage_open (every S3 storage) and
 * http_client_new call http_libs_load first, xml.c http_libs_load_xml.
 *
 * libcurl's compile-time type check of curl_easy_setopt's argument (a gcc
 * macro of the same name) gives way to the slot; its options are set in
 * http.c only.
 */
#ifndef PGD_HTTP_LIBS_H
#define PGD_HTTP_LIBS_H

#include "util/error.h"

#include <curl/curl.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <stdbool.h>

/* every libcurl function pgdirect calls */
#define HTTP_LIBS_CURL_FUNCTIONS(X)                                                                \
    X(curl_easy_cleanup)                                                                           \
    X(curl_easy_getinfo)                                                                           \
    X(curl_easy_init)                                                                              \
    X(curl_easy_perform)                                                                           \
    X(curl_easy_reset)                                                                             \
    X(curl_easy_setopt)                                                                            \
    X(curl_easy_strerror)                                                                          \
    X(curl_global_init)                                                                            \
    X(curl_slist_append)                                                                           \
    X(curl_slist_free_all)

/* every libxml2 function pgdirect calls */
#define HTTP_LIBS_XML_FUNCTIONS(X)                                                                 \
    X(xmlDocGetRootElement)                                                                        \
    X(xmlFreeDoc)                                                                                  \
    X(xmlGetLastError)                                                                             \
    X(xmlInitParser)                                                                               \
    X(xmlReadMemory)                                                                               \
    X(xmlStrcmp)

struct http_libs {
#define HTTP_LIBS_SLOT(name) __typeof__(name) *name;
    HTTP_LIBS_CURL_FUNCTIONS(HTTP_LIBS_SLOT)
    HTTP_LIBS_XML_FUNCTIONS(HTTP_LIBS_SLOT)
#undef HTTP_LIBS_SLOT
};

extern struct http_libs http_libs;

/*
 * Open libcurl, resolve its part of the table and initialise it once
 * (curl_global_init, from the main thread before any thread uses it);
 * false with err naming the library and the function.
 */
bool http_libs_load(pgd_error *err);

/*
 * The same for libxml2 (xmlInitParser), opened only when an answer is
 * first parsed: a GET of an object, which is what wal-fetch does once per
 * segment, parses none. Any thread may call it; the first does the work,
 * the others wait for it (pthread_once), so the parser is initialised
 * before any of them uses it.
 */
bool http_libs_load_xml(pgd_error *err);

#ifndef HTTP_LIBS_DEFINE_TABLE
#undef curl_easy_setopt /* libcurl's type-checking macro, see above */
#undef curl_easy_getinfo
#define curl_easy_cleanup    http_libs.curl_easy_cleanup
#define curl_easy_getinfo    http_libs.curl_easy_getinfo
#define curl_easy_init       http_libs.curl_easy_init
#define curl_easy_perform    http_libs.curl_easy_perform
#define curl_easy_reset      http_libs.curl_easy_reset
#define curl_easy_setopt     http_libs.curl_easy_setopt
#define curl_easy_strerror   http_libs.curl_easy_strerror
#define curl_global_init     http_libs.curl_global_init
#define curl_slist_append    http_libs.curl_slist_append
#define curl_slist_free_all  http_libs.curl_slist_free_all
#define xmlDocGetRootElement http_libs.xmlDocGetRootElement
#define xmlFreeDoc           http_libs.xmlFreeDoc
#define xmlGetLastError      http_libs.xmlGetLastError
#define xmlInitParser        http_libs.xmlInitParser
#define xmlReadMemory        http_libs.xmlReadMemory
#define xmlStrcmp            http_libs.xmlStrcmp
#endif

#endif
