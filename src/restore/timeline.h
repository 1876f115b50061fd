/*
 * timeline.h - the timeline a restored server's recovery follows, and
 * whether that timeline's history passes through the backup: decided from
 * the repository before a restore writes anything.
 *
 * PostgreSQL (12 on) recovers along recovery_target_timeline, 'latest'
 * unless set: the newest timeline whose history file the archive holds,
 * found by asking for the history files of the backup's timeline + 1, + 2,
 * ... until one is not there. That timeline's history must show the
 * backup's timeline running at least to the backup's end. When it leaves it
 * earlier, or does not come from it at all, the server does not start
 * (PostgreSQL 15 looks for the backup's checkpoint on the new timeline:
 * "could not locate required checkpoint record"; or "requested timeline N
 * is not a child of this server's history"): a restore that said
 * "complete" and a server that will not start. A standby promoted by mistake, or a restore
 * test whose server archived into the same repository, leaves such a
 * timeline behind.
 */
#ifndef PGD_TIMELINE_H
#define PGD_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "repo/backup_info.h"
#include "storage/storage.h"
#include "util/error.h"

typedef enum timeline_goal {
    TIMELINE_DEFAULT, /* the server's default: latest from PostgreSQL 12, current before */
    TIMELINE_LATEST,
    TIMELINE_CURRENT, /* the backup's own timeline */
    TIMELINE_NUMBER
} timeline_goal;

typedef struct timeline_choice {
    timeline_goal goal;
    uint32_t number; /* TIMELINE_NUMBER */
} timeline_choice;

/* --target-timeline's value: "latest", "current" or a timeline number (decimal, 1 or more). */
bool timeline_parse(const char *value, timeline_choice *c, char *why, size_t whylen);

/* A timeline on the way from the backup's to the target, and where it begins. */
typedef struct timeline_leg {
    uint32_t tli;
    uint64_t begin; /* 0 for the backup's own */
} timeline_leg;

typedef enum timeline_failure {
    TIMELINE_UNREADABLE, /* the repository could not be read: no verdict */
    TIMELINE_REFUSED,    /* the target's history does not pass through the backup, or is missing */
    TIMELINE_DAMAGED     /* a history file recovery would read is damaged */
} timeline_failure;

typedef struct timeline_path {
    uint32_t target;          /* the timeline recovery follows */
    timeline_leg *legs;       /* the backup's timeline first, the target last (malloc'd) */
    size_t nlegs;             /* 1 when recovery stays on the backup's timeline */
    timeline_failure failure; /* why timeline_resolve failed */
} timeline_path;

/*
 * The timeline recovery of backup bi follows with choice c, and the way
 * there, into *p (timeline_path_free it). False, with why and how to
 * restore anyway, and p->failure, when the target's history does not pass
 * through the backup, a history file it needs is not archived or is
 * damaged, or the repository cannot be read.
 */
bool timeline_resolve(storage *repo, const backup_info *bi, const timeline_choice *c,
                      timeline_path *p, pgd_error *err);

/* When recovery leaves the backup's timeline: an INFO line saying where it goes, and from where. */
void timeline_log_path(const timeline_path *p, const backup_info *bi, const timeline_choice *c);

void timeline_path_free(timeline_path *p);

/*
 * What check and backup warn of: a timeline a default restore would follow
 * although the server was never on it. PostgreSQL recovers along the newest
 * timeline whose history file the archive holds; a test restore that was
 * promoted and archived into this repository, or another server promoted
 * from this one, leaves one newer than the server's own timeline
 * server_tli, and from then on a default restore of every later backup
 * refuses (restore/timeline.h above) or follows WAL that is not the
 * server's. Also: a default restore of `newest` (NULL: none) would refuse.
 * *warning is "" when all is well; false only when the repository could not
 * be read.
 */
/*
 * Whether timeline tli descends from timeline `ancestor` (tli's history file, in the
 * repository, lists it; a timeline does not descend from itself). A missing history file
 * says no; a damaged one fails.
 */
bool timeline_descends(storage *repo, uint32_t tli, uint32_t ancestor, bool *descends,
                       pgd_error *err);

bool timeline_find_stray(storage *repo, uint32_t server_tli, const backup_info *newest,
                         char *warning, size_t len, pgd_error *err);

#endif
