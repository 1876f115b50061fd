/*
 * shared_lib.h - a shared library opened when a command first needs it,
 * not when the program starts.
 *
 * libpq, libcurl and libxml2 bring about thirty libraries with them
 * (Kerberos, LDAP, TLS, ICU); libcrypto's start-up alone costs 1.2 ms
 * (util/digest.h). Linked at build time, every start of pgdirect
 * maps and relocates them all: about 35 ms of CPU on a 2-vCPU VM, more than
 * the rest of a wal-push to a local repository. PostgreSQL starts
 * archive_command and restore_command once per segment, so that cost is
 * paid per 16 MiB of WAL. pg/pq_api.h, storage/http/http_libs.h and
 * util/digest.h open them here, on first use.
 */
#ifndef PGD_SHARED_LIB_H
#define PGD_SHARED_LIB_H

#include "util/error.h"

/* dlopen(soname): the handle, or NULL with err naming the library and dlerror(). */
void *shared_lib_open(const char *soname, pgd_error *err);

/* The address of `name` in the library, or NULL with err set (the first failure is kept). */
void *shared_lib_symbol(void *handle, const char *soname, const char *name, pgd_error *err);

#endif
