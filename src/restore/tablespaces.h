/*
 * tablespaces.h - where a restore puts each tablespace of the backup, and
 * the links that find them.
 *
 * A tablespace goes to its location in the backup, or where
 * --tablespace-map OLD=NEW sends it. The location comes from the backup,
 * so it is untrusted: every destination must be absolute, is logged before
 * anything is written to it, and may neither lie inside the target
 * directory or another destination nor contain them (files of one would
 * land among, or replace, files of the other).
 *
 * restore --delta (tablespaces_delta) reuses what the existing data
 * directory has: a tablespace it has a pg_tblspc/<oid> link for goes
 * where that link points (its own copy, not necessarily the location in
 * the backup, which may be another, running cluster's), unless
 * --tablespace-map names a destination. Any other destination must be
 * absent or empty, as for a plain restore.
 *
 * No tablespace_map is written: restore makes the pg_tblspc/<oid> links
 * itself, pointing at the destinations as given (a link in a destination
 * path stays the user's choice), and without the file the server keeps
 * those links as they are.
 */
#ifndef PGD_TABLESPACES_H
#define PGD_TABLESPACES_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "repo/manifest.h"
#include "restore/durable.h"
#include "restore/target_dir.h"
#include "util/error.h"

/* Where a destination comes from (logged with it). */
typedef enum tablespaces_from {
    TABLESPACES_RECORDED,   /* its location in the backup */
    TABLESPACES_MAPPED,     /* --tablespace-map */
    TABLESPACES_OWN_LINK,   /* --delta: the existing data directory's pg_tblspc/<oid> link */
    TABLESPACES_MAPPED_OWN, /* --tablespace-map, for a tablespace the directory has a link for */
} tablespaces_from;

/*
 * dest[i]: the destination of m->tablespaces[i], from `map` (nmap
 * "OLD=NEW" values of --tablespace-map; each must match a tablespace);
 * from[i] says which. The strings point into the manifest or `map`.
 */
bool tablespaces_map(const manifest *m, char *const *map, size_t nmap, const char **dest,
                     tablespaces_from *from, pgd_error *err);

/*
 * restore --delta into `target`: a tablespace whose pg_tblspc/<oid> in
 * `target` is a symbolic link goes where it points (own[i] holds it, and
 * dest[i] points at it), unless it was mapped; the link must be absolute
 * and name an existing directory outside the target. Any other
 * destination must be absent or empty. Nothing is written.
 */
bool tablespaces_delta(const char *target, const manifest *m, const char **dest,
                       tablespaces_from *from, char (*own)[PATH_MAX], pgd_error *err);

/* May restore --delta write into destination i when it is not empty (it is the directory's own)? */
bool tablespaces_reuse(tablespaces_from from);

/* Log each destination; refuse one that overlaps the target or another destination. */
bool tablespaces_check(const char *target, const manifest *m, const char *const *dest,
                       const tablespaces_from *from, pgd_error *err);

/* pg_tblspc/<oid> in `target` -> dirs[1 + i].path (dirs[0] is the target directory). */
bool tablespaces_link(const char *target, const manifest *m, const target_dir *dirs,
                      pgd_error *err);

/* The directory holding the links, for the final fsync pass, when the manifest does not list it. */
bool tablespaces_add_durable(const char *target, const manifest *m, durable_list *l,
                             pgd_error *err);

#endif
