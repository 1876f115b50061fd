/*
 * repo_contents.h - what a repository holds, as delete decides from it:
 * the backups with a sentinel (for retention, repo/retention.h), every
 * backup directory with what its claim says when it has no sentinel (for
 * garbage), and the stored WAL files of each timeline.
 *
 * Only listings and small reads (sentinels, claims); nothing is written.
 */
#ifndef PGD_REPO_CONTENTS_H
#define PGD_REPO_CONTENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "repo/backup_info.h"
#include "repo/layout.h"
#include "repo/retention.h"
#include "storage/storage.h"
#include "util/error.h"

/* A directory under backups/ and, when it has no sentinel, what its claim says. */
typedef struct repo_dir {
    char id[BACKUP_ID_LEN + 1];
    bool sentinel;
    size_t objects; /* without a sentinel: objects under it (0: nothing to remove) */
    retention_claim_state state;
    char why[RETENTION_REASON_MAX];
    char parent[BACKUP_ID_LEN + 1]; /* a running delta's parent, as its claim names it */
    char system_identifier[PG_SYSID_TEXT_MAX];     /* of the cluster its claim says it backs up; "" unknown */
    char host[64];                  /* the claiming process's host and pid ("", 0: no claim) */
    int64_t pid;
    int64_t start_time; /* when the claim says the run started; 0 unknown */
} repo_dir;

typedef struct repo_contents {
    backup_info *infos;        /* backups with a sentinel (repo/backup_info.h) */
    retention_backup *backups; /* the same, as retention sees them */
    size_t n;
    repo_dir *dirs;
    size_t ndirs, dircap;
} repo_contents;

/*
 * The backups with a sentinel, in infos and backups (a delta without a valid parent: damaged;
 * the newest ones whose manifest is damaged too, as restore LATEST sees them:
 * backup_info_check_latest).
 */
bool repo_contents_scan_backups(storage *repo, repo_contents *c, pgd_error *err);

/*
 * Every directory under backups/; each without a sentinel classified by its
 * claim (running, dead, or unknown: retention_claim_classify) against
 * garbage_age seconds.
 */
bool repo_contents_scan_dirs(storage *repo, int64_t garbage_age, repo_contents *c, pgd_error *err);

void repo_contents_free(repo_contents *c);

/* A sorted list of names or object paths; free with repo_contents_names_free. */
typedef struct repo_contents_names {
    char **names;
    size_t n, cap;
} repo_contents_names;

/* The timelines under wal/ (directories of 8 upper-case hex digits), sorted. */
bool repo_contents_wal_timelines(storage *repo, repo_contents_names *out, pgd_error *err);

/*
 * The stored WAL files of one timeline that come before segment keep_from
 * (retention_wal_removable), as object paths, sorted; .history files are
 * never among them.
 */
bool repo_contents_wal_before(storage *repo, const char *timeline, const char *keep_from,
                              repo_contents_names *out, pgd_error *err);

/* Every object stored under one timeline's directory (wal/<timeline>/), its .history too. */
bool repo_contents_wal_all(storage *repo, const char *timeline, repo_contents_names *out,
                           pgd_error *err);

void repo_contents_names_free(repo_contents_names *l);

#endif
