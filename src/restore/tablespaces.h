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
 * No tablespace_map is written: restore makes the pg_tblspc/<oid> links
 * itself, pointing at the destinations as given (a link in a destination
 * path stays the user's choice), and without the file the server keeps
 * those links as they are.
 */
#ifndef PGD_TABLESPACES_H
#define PGD_TABLESPACES_H

#include <stdbool.h>
#include <stddef.h>

#include "repo/manifest.h"
#include "restore/durable.h"
#include "restore/target_dir.h"
#include "util/error.h"

/*
 * dest[i]: the destination of m->tablespaces[i], from `map` (nmap
 * "OLD=NEW" values of --tablespace-map; each must match a tablespace).
 * The strings point into the manifest or `map`.
 */
bool tablespaces_map(const manifest *m, char *const *map, size_t nmap, const char **dest,
                     pgd_error *err);

/* Log each destination; refuse one that overlaps the target or another destination. */
bool tablespaces_check(const char *target, const manifest *m, const char *const *dest,
                       pgd_error *err);

/* pg_tblspc/<oid> in `target` -> dirs[1 + i].path (dirs[0] is the target directory). */
bool tablespaces_link(const char *target, const manifest *m, const target_dir *dirs,
                      pgd_error *err);

/* The directory holding the links, for the final fsync pass, when the manifest does not list it. */
bool tablespaces_add_durable(const char *target, const manifest *m, durable_list *l,
                             pgd_error *err);

#endif
