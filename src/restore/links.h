/*
 * links.h - the symbolic links of a backup (other than the tablespace
 * links): checked before a restore writes anything, created after every
 * file is written.
 *
 * A backup is untrusted input, and a link is how a crafted one would make
 * the restore write, or the restored server read, outside the target:
 *
 *   - A link whose target resolves outside the directory it is restored
 *     into (the target directory, or its tablespace's destination) is
 *     refused unless the user allows external links: an absolute target,
 *     or a relative one that climbs out, also through other links of the
 *     backup, as the kernel would resolve it. A link into a tablespace
 *     from the data directory counts as external (the tablespace may be
 *     restored anywhere). A DBA whose postgresql.conf is a link into /etc
 *     opts in with --allow-external-links.
 *   - No file, directory or link of the backup may lie below a link: the
 *     restore would create it through the link, wherever that points.
 *   - Links are created last, once every file is written, so nothing the
 *     restore writes can follow one.
 */
#ifndef PGD_LINKS_H
#define PGD_LINKS_H

#include <stdbool.h>

#include "repo/manifest.h"
#include "restore/extract.h"
#include "util/error.h"

/* Links followed at most while resolving one target: Linux's limit (MAXSYMLINKS). */
#define LINKS_FOLLOW_MAX 40

typedef enum {
    LINKS_INSIDE,      /* stays in the directory it is restored into */
    LINKS_OUTSIDE,     /* absolute, or climbs out of that directory */
    LINKS_UNRESOLVABLE /* more than LINKS_FOLLOW_MAX links deep, or a loop */
} links_where;

/*
 * Where link i of the manifest (index built) resolves, following the
 * manifest's other links. Pure: looks at nothing but the manifest.
 */
links_where links_resolve(const manifest *m, size_t i);

/*
 * Refuse what is described above, naming the entry; links that point out
 * are only logged when allow_external is set. The manifest's index must be
 * built (manifest_build_index).
 */
bool links_check(const manifest *m, const char *backup_id, bool allow_external, pgd_error *err);

/* Create every link of the manifest where the plan restores it. */
bool links_create(const extract_plan *p, pgd_error *err);

/*
 * symlink(target, path); with `reuse` (restore --delta, which keeps a link
 * that points where the backup's does: restore/delta_dir.h) such a link
 * already there is as good as made. *errnum says why it failed.
 */
bool links_make(const char *target, const char *path, bool reuse, int *errnum);

#endif
