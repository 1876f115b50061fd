/*
 * http_libs.c - see http_libs.h. The sonames come from the build (meson.build
 * reads them from the libraries the headers belong to).
 */
#define HTTP_LIBS_DEFINE_TABLE
#include "storage/http/http_libs.h"

#include "util/digest.h"
#include "util/shared_lib.h"

#include <pthread.h>

struct http_libs http_libs;

static pthread_once_t http_libs_once = PTHREAD_ONCE_INIT, http_libs_xml_once = PTHREAD_ONCE_INIT;
/* set when loading failed: every later call reports it */
static pgd_error http_libs_error, http_libs_xml_error;

#define HTTP_LIBS_RESOLVE(lib, soname, name, err)                                                  \
    http_libs.name = (__typeof__(http_libs.name))shared_lib_symbol(lib, soname, #name, err);

static void http_libs_load_once(void)
{
    void *curl;

    /*
     * libcrypto (SigV4, Content-MD5) first: libcurl needs it too, and glibc's
     * dlopen of a library that another dlopen brought in as a dependency
     * keeps a block valgrind reports as lost (40 bytes, once).
     */
    if (!digest_load(&http_libs_error))
        return;
    if ((curl = shared_lib_open(PGD_LIBCURL_SONAME, &http_libs_error)) == NULL)
        return;
#define HTTP_LIBS_RESOLVE_CURL(name)                                                               \
    HTTP_LIBS_RESOLVE(curl, PGD_LIBCURL_SONAME, name, &http_libs_error)
    HTTP_LIBS_CURL_FUNCTIONS(HTTP_LIBS_RESOLVE_CURL)
#undef HTTP_LIBS_RESOLVE_CURL
    if (http_libs_error.set)
        return;
    if (http_libs.curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        err_set(&http_libs_error, "could not initialise libcurl (%s)", PGD_LIBCURL_SONAME);
}

static void http_libs_xml_load_once(void)
{
    void *xml = shared_lib_open(PGD_LIBXML2_SONAME, &http_libs_xml_error);

    if (xml == NULL)
        return;
#define HTTP_LIBS_RESOLVE_XML(name)                                                                \
    HTTP_LIBS_RESOLVE(xml, PGD_LIBXML2_SONAME, name, &http_libs_xml_error)
    HTTP_LIBS_XML_FUNCTIONS(HTTP_LIBS_RESOLVE_XML)
#undef HTTP_LIBS_RESOLVE_XML
    if (!http_libs_xml_error.set)
        http_libs.xmlInitParser();
}

bool http_libs_load(pgd_error *err)
{
    pthread_once(&http_libs_once, http_libs_load_once);
    if (!http_libs_error.set)
        return true;
    return err_set(err, "%s", http_libs_error.msg);
}

bool http_libs_load_xml(pgd_error *err)
{
    pthread_once(&http_libs_xml_once, http_libs_xml_load_once);
    if (!http_libs_xml_error.set)
        return true;
    return err_set(err, "%s", http_libs_xml_error.msg);
}
