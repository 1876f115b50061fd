/*
 * sftp_libs.c - see sftp_libs.h. The soname comes from the build
 * (meson.build reads it from the library the headers belong to).
 */
#define SFTP_LIBS_DEFINE_TABLE
#include "storage/sftp/sftp_libs.h"

#include "util/digest.h"
#include "util/shared_lib.h"

#include <pthread.h>

struct sftp_libs sftp_libs;

static pthread_once_t sftp_libs_once = PTHREAD_ONCE_INIT;
/* set when loading failed: every later call reports it */
static pgd_error sftp_libs_error;

static void sftp_libs_load_once(void)
{
    void *lib;

    /*
     * libcrypto first, as storage/http/http_libs.c does: libssh2 needs it, and glibc's
     * dlopen of a library another dlopen brought in keeps a block valgrind
     * reports as lost.
     */
    if (!digest_load(&sftp_libs_error))
        return;
    if ((lib = shared_lib_open(PGD_LIBSSH2_SONAME, &sftp_libs_error)) == NULL)
        return;
#define SFTP_LIBS_RESOLVE(name)                                                                    \
    sftp_libs.name = (__typeof__(sftp_libs.name))shared_lib_symbol(lib, PGD_LIBSSH2_SONAME, #name, \
                                                                   &sftp_libs_error);
    SFTP_LIBS_FUNCTIONS(SFTP_LIBS_RESOLVE)
#undef SFTP_LIBS_RESOLVE
    if (sftp_libs_error.set)
        return;
    if (sftp_libs.libssh2_init(0) != 0)
        err_set(&sftp_libs_error, "could not initialise libssh2 (%s)", PGD_LIBSSH2_SONAME);
}

bool sftp_libs_load(pgd_error *err)
{
    pthread_once(&sftp_libs_once, sftp_libs_load_once);
    if (!sftp_libs_error.set)
        return true;
    return err_set(err, "%s", sftp_libs_error.msg);
}
