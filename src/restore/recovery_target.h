/*
 * recovery_target.h - check recovery targets before a restore writes
 * anything.
 *
 * PostgreSQL reads the target only when the restored server starts; a
 * value it rejects then means a restore that looked fine and a server that
 * will not start. Each check accepts a subset of what PostgreSQL accepts,
 * chosen so the value means the same thing on every server:
 *
 *   time  ISO 8601 date and time WITH a zone: "2026-11-29 21:00:00+00",
 *         "2026-11-29T21:00:00.5Z", "2026-11-29 22:00 Europe/Berlin".
 *         Without a zone the server would read it in its own TimeZone
 *         setting, which need not be the zone of whoever chose the time.
 *         Zone names are those of the tz database the system provides
 *         ($TZDIR, else /usr/share/zoneinfo), as PostgreSQL built with
 *         system tzdata uses.
 *   lsn   X/X, 1 to 8 hex digits each (pg_lsn)
 *   xid   a transaction id or an xid8 (epoch << 32 | xid), decimal; its
 *         low 32 bits a normal xid (3 or more)
 *   name  a restore point name: not empty, shorter than 64 bytes
 *         (MAXFNAMELEN, as pg_create_restore_point requires)
 */
#ifndef PGD_RECOVERY_TARGET_H
#define PGD_RECOVERY_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "repo/backup_info.h"

/* Each returns false and a reason ("expected ...") in why. */
bool recovery_target_check_time(const char *value, char *why, size_t whylen);
/* The same, and the Unix time of the second it names (a fraction dropped). */
bool recovery_target_time_seconds(const char *value, int64_t *seconds, char *why, size_t whylen);
bool recovery_target_check_lsn(const char *value, char *why, size_t whylen);
bool recovery_target_check_xid(const char *value, char *why, size_t whylen);
bool recovery_target_check_name(const char *value, char *why, size_t whylen);

/* Where a recovery target falls against a backup's end (recovery_target_versus_backup). */
typedef enum recovery_target_order {
    RECOVERY_TARGET_AFTER_END,  /* recovery is consistent before it gets there: fine */
    RECOVERY_TARGET_BEFORE_END, /* PostgreSQL would stop with FATAL */
    RECOVERY_TARGET_UNKNOWN     /* a restore point (only replay finds it), or an unrecorded xid */
} recovery_target_order;

/*
 * Recovery is consistent only at the backup's end; a target before it makes PostgreSQL stop with
 * "requested recovery stop point is before consistent recovery point". For recovery_target_time,
 * _lsn and _xid (key; value checked above) against backup bi: a time after the second the backup
 * ended in, an LSN at or after its stop LSN, a transaction that began after its end (the next
 * xid it recorded). `end` gets the backup's end as messages say it.
 */
recovery_target_order recovery_target_versus_backup(const backup_info *bi, const char *key,
                                                    const char *value, char *end, size_t endlen);

#define RECOVERY_TARGET_FATAL_BEFORE_END                                                           \
    "PostgreSQL would stop with FATAL (\"requested recovery stop point is before consistent "      \
    "recovery point\")"

/*
 * LATEST (*bi, which ended at newest_end) with a target before its end: *bi becomes the newest
 * older usable backup of repo that ended before it, as restore and drill choose, saying which; a
 * transaction id that began before every end takes the oldest, with a warning (it may have
 * committed after). False, err naming the oldest backup's end, when none did.
 */
bool recovery_target_older_backup(storage *repo, const char *key, const char *value,
                                  const char *newest_end, backup_info *bi, pgd_error *err);

#endif
