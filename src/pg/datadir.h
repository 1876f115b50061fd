/*
 * datadir.h - what of a data directory goes into a backup.
 *
 * Walks PGDATA and each tablespace (followed through its pg_tblspc/<oid>
 * link; files recorded as pg_tblspc/<oid>/...), leaving out what
 * pg_basebackup leaves out: the contents of pg_wal and of the runtime
 * directories (pg_stat_tmp, pg_replslot, pg_dynshmem, pg_notify, pg_serial,
 * pg_snapshots, pg_subtrans), postmaster.pid/opts, pgsql_tmp*,
 * pg_internal.init, temporary relations, and every fork of an unlogged
 * relation except its init fork. Also left out: backup_label,
 * tablespace_map, backup_manifest and the recovery/standby signal files,
 * which restore writes for itself.
 *
 * Other symbolic links are recorded as links, not followed, as
 * pg_basebackup does: following them loops on "ln -s . loop" and backs up
 * what a link points to (a config file in /etc) as if it lived in PGDATA.
 * A link standing where a directory whose contents are left out belongs
 * (pg_wal moved to another disk) is recorded as that directory.
 */
#ifndef PGD_DATADIR_H
#define PGD_DATADIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

typedef struct datadir_entry {
    char *path;   /* name in the backup, relative, '/'-separated */
    char *source; /* absolute path to read */
    bool is_dir;
    char *link; /* a symbolic link: its target as readlink gives it; NULL otherwise */
    uint64_t size;
    uint32_t mode;
    int64_t mtime;
} datadir_entry;

typedef struct datadir_tablespace {
    uint32_t oid;
    char *location; /* link target */
} datadir_tablespace;

typedef struct datadir {
    datadir_entry *entries;
    size_t n, cap;
    datadir_tablespace *tablespaces;
    size_t ntablespaces;
} datadir;

/* pg_version_num: e.g. 150004; selects the PG_<major>_ tablespace directory. */
bool datadir_walk(datadir *dd, const char *pgdata, int pg_version_num, pgd_error *err);
void datadir_free(datadir *dd);

/*
 * The name-based exclusion rules, exposed for the unit tests: true when the
 * entry `name` inside directory `parent` (relative to PGDATA, "" at the top)
 * is left out of the backup. *keep_dir_only is set for directories whose
 * contents are left out but which must exist in the restore.
 */
bool datadir_excluded(const char *parent, const char *name, bool is_dir, bool *keep_dir_only);

/* "t3_16384" style temporary relation file names. */
bool datadir_is_temp_relation(const char *name);

#endif
