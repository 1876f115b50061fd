/*
 * sync_dir.h - a directory fsynced, so that a file created, renamed or
 * removed in it is still there (or gone) after a crash: fsync of the file
 * alone does not make its directory entry durable.
 */
#ifndef PGD_SYNC_DIR_H
#define PGD_SYNC_DIR_H

#include <stdbool.h>

#include "util/error.h"

/* fsync directory `dir`. */
bool sync_dir(const char *dir, pgd_error *err);

/* fsync file `path` (one that is there already: for a writer's own file, fsync its descriptor). */
bool sync_file(const char *path, pgd_error *err);

/* fsync the directory that holds `path` (nothing to do for a name without a slash). */
bool sync_dir_of(const char *path, pgd_error *err);

/*
 * After creating directory `path`: fsync the directory that holds it. Its
 * parent may be one we may write to but not read (mode 0733, owned by
 * another user): it cannot be opened, nothing better can be done, and it
 * is left alone, as PostgreSQL's fsync_fname does.
 */
bool sync_dir_of_new(const char *path, pgd_error *err);

#endif
