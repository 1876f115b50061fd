/*
 * target_dir.h - the directories a restore writes into (the data
 * directory and each tablespace destination): taken only when absent or
 * empty, and left as they were when the restore fails.
 *
 * A directory we create is removed on failure, with the parents we made
 * for it. A directory that existed (empty) keeps existing: its contents
 * are removed and its mode put back; its owner never changes. When the
 * given path is a symbolic link, everything happens in the directory it
 * points to and the link stays a link.
 *
 * A prepared directory is locked (flock) until target_dir_release: a
 * second restore into it at the same time is refused instead of mixing
 * its files with ours, or removing them when it fails.
 */
#ifndef PGD_TARGET_DIR_H
#define PGD_TARGET_DIR_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "restore/durable.h"
#include "util/error.h"

typedef struct target_dir {
    char path[PATH_MAX]; /* as given */
    char real[PATH_MAX]; /* the directory written into; "" until prepared */
    bool created;        /* we made it, and every parent from path[0..created_from) on */
    size_t created_from; /* length of the topmost directory we created */
    mode_t mode;         /* of a directory that existed, to put back */
    bool mode_changed;
    bool reused; /* an existing, non-empty directory (--delta): cleanup leaves it alone */
    bool locked;
    int lock_fd;
} target_dir;

/*
 * Create `path` (0700, parents as needed) or take it when it is an empty
 * directory; give it a mode PostgreSQL accepts (0700, or 0750 when it has
 * that already). `what` names it in errors ("target directory").
 */
bool target_dir_prepare(target_dir *d, const char *path, const char *what, pgd_error *err);

/*
 * The same, for restore --delta: a directory that exists may also be
 * non-empty (reused is then set). A failed restore cannot put such a
 * directory back as it was, and must not remove the user's files:
 * target_dir_cleanup leaves it alone.
 */
bool target_dir_prepare_existing(target_dir *d, const char *path, const char *what, pgd_error *err);

/* After a failure: remove what the restore wrote (see above). */
void target_dir_cleanup(const target_dir *d);

/* Drop the lock (after success or cleanup). */
void target_dir_release(target_dir *d);

/* The directory and, when we created it, the parent entries naming it. */
void target_dir_add_durable(const target_dir *d, durable_list *l);

/*
 * The absolute, symlink-free form of `path`, which need not exist yet: the
 * longest existing prefix resolved, the rest applied lexically.
 */
bool target_dir_resolve(const char *path, char *out, size_t outlen, pgd_error *err);

/*
 * Who will own a cluster restored into `path`: its owner, or its nearest existing parent's when
 * it does not exist yet. A restore run as root gives every file it writes to that user
 * (target_dir_chown), and refuses when that user is root: PostgreSQL will not start on a data
 * directory root owns ("data directory ... has wrong ownership"). Run as any other user, the
 * files are that user's, as always.
 */
bool target_dir_owner(const char *path, uid_t *uid, gid_t *gid, pgd_error *err);

/* Every entry under dir (dir included, links not followed) given to uid:gid. */
bool target_dir_chown(const char *dir, uid_t uid, gid_t gid, pgd_error *err);

/* `path` is `dir` or lies below it (both resolved). */
bool target_dir_is_within(const char *path, const char *dir);

#endif
