/*
 * s3_libs.c - see s3_libs.h. The sonames come from the build (meson.build
 * reads them from the libraries the headers belong to).
 */
#define S3_LIBS_DEFINE_TABLE
#include "storage/s3/s3_libs.h"

#include "util/digest.h"
#include "util/shared_lib.h"

#include <pthread.h>

struct s3_libs s3_libs;

static pthread_once_t s3_libs_once = PTHREAD_ONCE_INIT, s3_libs_xml_once = PTHREAD_ONCE_INIT;
/* set when loading failed: every later call reports it */
static pgd_error s3_libs_error, s3_libs_xml_error;

#define S3_LIBS_RESOLVE(lib, soname, name, err)                                                    \
    s3_libs.name = (__typeof__(s3_libs.name))shared_lib_symbol(lib, soname, #name, err);

static void s3_libs_load_once(void)
{
    void *curl;

    /*
     * libcrypto (SigV4, Content-MD5) first: libcurl needs it too, and glibc's
     * dlopen of a library that another dlopen brought in as a dependency
     * keeps a block valgrind reports as lost (40 bytes, once).
     */
    if (!digest_load(&s3_libs_error))
        return;
    if ((curl = shared_lib_open(PGD_LIBCURL_SONAME, &s3_libs_error)) == NULL)
        return;
#define S3_LIBS_RESOLVE_CURL(name) S3_LIBS_RESOLVE(curl, PGD_LIBCURL_SONAME, name, &s3_libs_error)
    S3_LIBS_CURL_FUNCTIONS(S3_LIBS_RESOLVE_CURL)
#undef S3_LIBS_RESOLVE_CURL
    if (s3_libs_error.set)
        return;
    if (s3_libs.curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        err_set(&s3_libs_error, "could not initialise libcurl (%s)", PGD_LIBCURL_SONAME);
}

static void s3_libs_xml_load_once(void)
{
    void *xml = shared_lib_open(PGD_LIBXML2_SONAME, &s3_libs_xml_error);

    if (xml == NULL)
        return;
#define S3_LIBS_RESOLVE_XML(name) S3_LIBS_RESOLVE(xml, PGD_LIBXML2_SONAME, name, &s3_libs_xml_error)
    S3_LIBS_XML_FUNCTIONS(S3_LIBS_RESOLVE_XML)
#undef S3_LIBS_RESOLVE_XML
    if (!s3_libs_xml_error.set)
        s3_libs.xmlInitParser();
}

bool s3_libs_load(pgd_error *err)
{
    pthread_once(&s3_libs_once, s3_libs_load_once);
    if (!s3_libs_error.set)
        return true;
    return err_set(err, "%s", s3_libs_error.msg);
}

bool s3_libs_load_xml(pgd_error *err)
{
    pthread_once(&s3_libs_xml_once, s3_libs_xml_load_once);
    if (!s3_libs_xml_error.set)
        return true;
    return err_set(err, "%s", s3_libs_xml_error.msg);
}
