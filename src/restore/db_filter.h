/*
 * db_filter.h - restore --db-include / --db-exclude: which user databases
 * of a backup are left out, and which of its files are then restored as
 * empty sparse files of their size instead of their data.
 *
 * Names are resolved from the databases the backup recorded
 * (repo/manifest.h, databases[]): no server is needed, and a backup that
 * recorded none is refused. Template databases (datistemplate) and the
 * system ones (an oid below PostgreSQL's FirstNormalObjectId: template0,
 * template1 and postgres, whatever initdb version made them) are always
 * restored whole. Of an excluded database only its relation files
 * (pg/relfile.h, under base/<oid>/ or a tablespace's <version>/<oid>/) are
 * left empty; PG_VERSION, pg_filenode.map and the like are restored, so
 * that the directory is still a database's that DROP DATABASE removes.
 * WAL replay needs nothing from the emptied files: the first change to
 * each page after the backup's checkpoint carries a full-page image
 * (full_page_writes, which backups need), which replay writes whole. The
 * excluded databases hold no data after recovery and must be dropped.
 */
#ifndef PGD_DB_FILTER_H
#define PGD_DB_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pg/relfile.h"
#include "repo/manifest.h"
#include "util/error.h"

/* PostgreSQL's FirstNormalObjectId: below it, what initdb made */
#define DB_FILTER_FIRST_NORMAL_OID PG_FIRST_NORMAL_OID

typedef struct db_filter {
    const manifest_database **excluded; /* of the manifest */
    size_t nexcluded;
    unsigned char *sparse; /* per file of the manifest: restored empty, or NULL (none) */
    size_t nsparse;        /* files marked */
    uint64_t sparse_bytes; /* their sizes, none of it read nor written */
} db_filter;

/*
 * Decide from --db-include (restore only these user databases) and
 * --db-exclude (leave these out) names, either list may be empty; both
 * empty: nothing is left out. A name the backup does not have, a template
 * or system database in --db-exclude, a name in both lists, or a backup
 * without recorded databases is refused (err, nothing decided).
 */
bool db_filter_plan(db_filter *f, const manifest *m, const char *backup_id, char *const *include,
                    size_t ninclude, char *const *exclude, size_t nexclude, pgd_error *err);

/* A template or system database: always restored. */
bool db_filter_always(const manifest_database *d);

/* The excluded databases' names, quoted and comma-separated, into out. */
void db_filter_names(const db_filter *f, char *out, size_t outlen);

void db_filter_free(db_filter *f);

#endif
