/*
 * delta_dir.h - restore --delta into an existing data directory: what is
 * refused before anything is written, and what the backup does not have,
 * removed before its files are written over the old ones.
 *
 * A directory is reused only when it is a stopped data directory of the
 * backup's own system: a running server (postmaster.pid naming a live
 * process) would have its files changed under it, and the files of
 * another system would be mixed with ours. A non-empty directory without
 * global/pg_control is not a data directory at all and is refused too; an
 * absent or empty one is simply restored into.
 *
 * Before the first file is written, global/pg_control is renamed to the
 * name a restore writes it under (restore/extract.h) and that rename made
 * durable: a --delta restore that fails or is killed midway leaves a
 * directory PostgreSQL refuses to start, and a second --delta run still
 * knows the directory's system from the renamed file.
 *
 * Kept, where the backup has the same path: a directory as a directory, a
 * regular file with one link (a hard-linked file, as pg_upgrade --link
 * leaves them, is shared with another cluster and is never written in
 * place), a symbolic link pointing where the backup's does, a tablespace
 * link pointing at the tablespace's destination. Everything else below the
 * data directory is removed, recursively, without following links. In a
 * tablespace destination only the entries the backup has at its top level
 * (the PG_<version>_<catversion> directory) are its business: other
 * entries there are left alone.
 */
#ifndef PGD_DELTA_DIR_H
#define PGD_DELTA_DIR_H

#include <stdbool.h>
#include <stddef.h>

#include "restore/extract.h"
#include "restore/target_dir.h"
#include "util/error.h"

/*
 * Refuse `dir` (as given to --target-dir) when it is not empty and is not
 * a stopped data directory of the system `system_identifier` (decimal, as
 * in the backup's sentinel). An absent or empty directory passes.
 */
bool delta_dir_check(const char *dir, const char *system_identifier, pgd_error *err);

/* The system identifier in a pg_control file, as decimal text. */
bool delta_dir_read_system_identifier(const char *control_path, char *out, size_t outlen,
                                      pgd_error *err);

/* Move global/pg_control aside under the name a restore writes it under (see above). */
bool delta_dir_retire_control(const extract_plan *p, pgd_error *err);

/*
 * Remove what the backup does not have from the target (dirs[0]) and the
 * tablespace destinations (dirs[1 + i] for p->m->tablespaces[i]); *removed
 * counts the entries removed (a directory's contents counted once, as it).
 */
bool delta_dir_remove_extra(const extract_plan *p, const target_dir *dirs, size_t *removed,
                            pgd_error *err);

#endif
