/*
 * pg_version.h - PostgreSQL's version numbers: which major releases
 * pgdirect supports, and how server_version_num names one.
 *
 * A header of facts, without libpq, so that what only names a version (the
 * --help text, a tablespace's version directory, a backup's release) does
 * not include the session.
 */
#ifndef PGD_PG_VERSION_H
#define PGD_PG_VERSION_H

/*
 * The server versions pgdirect knows: their backup functions, WAL page
 * magic, data directory layout and backup_manifest format are the ones the
 * code and the version matrix of the tests cover. Any other is refused
 * before a backup starts rather than guessed at.
 */
#define PG_VERSION_MAJOR_MIN 14
#define PG_VERSION_MAJOR_MAX 18

/* server_version_num from PostgreSQL 10 on: major * 10000 + minor (150004: 15.4) */
#define PG_VERSION_PER_MAJOR 10000

/* The major release of a server_version_num. */
static inline int pg_version_major(int version_num)
{
    return version_num / PG_VERSION_PER_MAJOR;
}

#endif
