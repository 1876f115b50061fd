/*
 * pq_api.c - see pq_api.h. PGD_LIBPQ_SONAME comes from the build (meson.build
 * reads it from the library the headers belong to).
 */
#define PQ_API_DEFINE_TABLE
#include "pg/pq_api.h"

#include "util/digest.h"
#include "util/shared_lib.h"

#include <pthread.h>
#include <string.h>

struct pq_api pq_api;

static pthread_once_t pq_api_once = PTHREAD_ONCE_INIT;
static pgd_error pq_api_error; /* set when loading failed: every later call reports it */

static void pq_api_load_once(void)
{
    void *lib;

    /* libcrypto before the libpq that needs it: see http_libs_load_once (no error of its own) */
    (void)digest_load(NULL);
    lib = shared_lib_open(PGD_LIBPQ_SONAME, &pq_api_error);

    if (lib == NULL)
        return;
#define PQ_API_RESOLVE(name)                                                                       \
    pq_api.name =                                                                                  \
        (__typeof__(pq_api.name))shared_lib_symbol(lib, PGD_LIBPQ_SONAME, #name, &pq_api_error);
    PQ_API_FUNCTIONS(PQ_API_RESOLVE)
#undef PQ_API_RESOLVE
}

bool pq_api_load(pgd_error *err)
{
    pthread_once(&pq_api_once, pq_api_load_once);
    if (!pq_api_error.set)
        return true;
    return err_set(err, "%s", pq_api_error.msg);
}
