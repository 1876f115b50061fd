/*
 * shared_lib.c - see shared_lib.h.
 */
#include "util/shared_lib.h"

#include <dlfcn.h>
#include <stddef.h>

void *shared_lib_open(const char *soname, pgd_error *err)
{
    /* RTLD_LOCAL: its names resolve only through shared_lib_symbol */
    void *handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    const char *why;

    if (handle != NULL)
        return handle;
    why = dlerror();
    err_set(err, "could not load the shared library \"%s\": %s", soname,
            why ? why : "unknown error");
    return NULL;
}

void *shared_lib_symbol(void *handle, const char *soname, const char *name, pgd_error *err)
{
    void *sym;
    const char *why;

    dlerror();
    sym = dlsym(handle, name);
    if (sym != NULL)
        return sym;
    why = dlerror();
    err_set(err,
            "the shared library \"%s\" has no function \"%s\"%s%s (another version than pgdirect "
            "was built for?)",
            soname, name, why ? ": " : "", why ? why : "");
    return NULL;
}
