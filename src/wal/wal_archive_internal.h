/*
 * wal_archive_internal.h - what the two files of WAL in the repository
 * share; nothing outside src/wal/wal_archive*.c includes it.
 *
 *   wal_archive.c       find, fetch and wait for a WAL file
 *   wal_archive_push.c  push one, never two different files under one name
 */
#ifndef PGD_WAL_ARCHIVE_INTERNAL_H
#define PGD_WAL_ARCHIVE_INTERNAL_H

#include <stddef.h>

#include "compress/compress.h"

#define WAL_IO_CHUNK (1024 * 1024)

/* The compressions a WAL file may be stored with, in the order a fetch looks for them. */
extern const compress_kind wal_archive_kinds[];
extern const size_t wal_archive_nkinds;

#endif
