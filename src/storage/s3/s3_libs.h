/*
 * s3_libs.h - libcurl and libxml2 (and libcrypto, util/digest.h), opened when a command first uses
 * an S3 repository (see util/shared_lib.h for why they are not linked at build time).
 *
 * http.c and xml.c include this header instead of <curl/curl.h> and
 * <libxml/...> and call the libraries' functions by their usual names: each
 * name below is a slot of a table s3_libs_load (libcurl) and
 * s3_libs_load_xml (libxml2) fill. s3_storage_open (every S3 storage) and
 * http_client_new call s3_libs_load first, xml.c s3_libs_load_xml.
 *
 * libcurl's compile-time type check of curl_easy_setopt's argument (a gcc
 * macro of the same name) gives way to the slot; its options are set in
 * http.c only.
 */
#ifndef PGD_S3_LIBS_H
#define PGD_S3_LIBS_H

#include "util/error.h"

#include <curl/curl.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <stdbool.h>

/* every libcurl function pgdirect calls */
#define S3_LIBS_CURL_FUNCTIONS(X)                                                                  \
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
#define S3_LIBS_XML_FUNCTIONS(X)                                                                   \
    X(xmlDocGetRootElement)                                                                        \
    X(xmlFreeDoc)                                                                                  \
    X(xmlGetLastError)                                                                             \
    X(xmlInitParser)                                                                               \
    X(xmlReadMemory)                                                                               \
    X(xmlStrcmp)

struct s3_libs {
#define S3_LIBS_SLOT(name) __typeof__(name) *name;
    S3_LIBS_CURL_FUNCTIONS(S3_LIBS_SLOT)
    S3_LIBS_XML_FUNCTIONS(S3_LIBS_SLOT)
#undef S3_LIBS_SLOT
};

extern struct s3_libs s3_libs;

/*
 * Open libcurl, resolve its part of the table and initialise it once
 * (curl_global_init, from the main thread before any thread uses it);
 * false with err naming the library and the function.
 */
bool s3_libs_load(pgd_error *err);

/*
 * The same for libxml2 (xmlInitParser), opened only when an answer is
 * first parsed: a GET of an object, which is what wal-fetch does once per
 * segment, parses none. Any thread may call it; the first does the work,
 * the others wait for it (pthread_once), so the parser is initialised
 * before any of them uses it.
 */
bool s3_libs_load_xml(pgd_error *err);

#ifndef S3_LIBS_DEFINE_TABLE
#undef curl_easy_setopt /* libcurl's type-checking macro, see above */
#undef curl_easy_getinfo
#define curl_easy_cleanup    s3_libs.curl_easy_cleanup
#define curl_easy_getinfo    s3_libs.curl_easy_getinfo
#define curl_easy_init       s3_libs.curl_easy_init
#define curl_easy_perform    s3_libs.curl_easy_perform
#define curl_easy_reset      s3_libs.curl_easy_reset
#define curl_easy_setopt     s3_libs.curl_easy_setopt
#define curl_easy_strerror   s3_libs.curl_easy_strerror
#define curl_global_init     s3_libs.curl_global_init
#define curl_slist_append    s3_libs.curl_slist_append
#define curl_slist_free_all  s3_libs.curl_slist_free_all
#define xmlDocGetRootElement s3_libs.xmlDocGetRootElement
#define xmlFreeDoc           s3_libs.xmlFreeDoc
#define xmlGetLastError      s3_libs.xmlGetLastError
#define xmlInitParser        s3_libs.xmlInitParser
#define xmlReadMemory        s3_libs.xmlReadMemory
#define xmlStrcmp            s3_libs.xmlStrcmp
#endif

#endif
