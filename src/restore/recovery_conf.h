/*
 * recovery_conf.h - the recovery settings a restore writes, as PostgreSQL's
 * configuration parser and restore_command expect them.
 *
 * A backup of a cluster that was itself restored carries that restore's
 * settings in its postgresql.auto.conf (ALTER SYSTEM keeps them): an old
 * recovery_target_time would stop a later "recover to the end" at the old
 * point, an old restore_command would read another archive. So the
 * restore strips every setting that decides where WAL comes from, where
 * recovery stops and what happens then, and writes its own:
 *
 *   PostgreSQL 15's groups "Write-Ahead Log / Archive Recovery" and
 *   "Write-Ahead Log / Recovery Target" (restore_command,
 *   archive_cleanup_command, recovery_end_command, recovery_target*), the
 *   standby settings that name a primary or change when WAL is applied or
 *   promotion happens (primary_conninfo, primary_slot_name,
 *   wal_receiver_create_temp_slot, recovery_min_apply_delay,
 *   promote_trigger_file), and the names recovery.conf used before
 *   PostgreSQL 12 (standby_mode, trigger_file).
 *
 * Tuning that changes neither what is replayed nor where it stops
 * (hot_standby, max_standby_*_delay, recovery_prefetch, ...) is kept.
 */
#ifndef PGD_RECOVERY_CONF_H
#define PGD_RECOVERY_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "restore/durable.h"
#include "util/error.h"

/* One of the settings above (names compare case-insensitively, as GUC names do). */
bool recovery_conf_is_recovery_setting(const char *name, size_t len);

/*
 * Copy `text` (a postgresql.auto.conf) without the lines that set a
 * recovery setting; *removed lists their names, ", "-separated ("" when
 * none). Both malloc'd.
 */
bool recovery_conf_strip(const char *text, char **kept, char **removed, pgd_error *err);

/* Append "key = 'value'\n" with value quoted as the configuration parser reads it. */
void recovery_conf_append(FILE *out, const char *key, const char *value);

/*
 * restore_command: `exe wal-fetch ARGS %f %p`, each word quoted for
 * /bin/sh and every '%' of ours doubled, so PostgreSQL substitutes only
 * %f and %p. *out is malloc'd.
 */
bool recovery_conf_restore_command(const char *exe, const char *const *args, size_t nargs,
                                   char **out, pgd_error *err);

/* The recovery setup of a restore: where WAL comes from, and where recovery stops. */
typedef struct recovery_conf_request {
    const char *target;          /* the restored data directory */
    int pg_version_num;          /* of the backup's server: recovery.conf before 12 */
    const char *backup_id;       /* named in a comment */
    const char *restore_command; /* as PostgreSQL will run it (cmd/restore_command.h) */
    const char *target_key;      /* recovery_target_time...; NULL: to the end of the archive */
    const char *target_value;
    const char *target_action;    /* recovery_target_action, or NULL */
    const char *target_timeline;  /* recovery_target_timeline, or NULL: PostgreSQL's default */
    bool standby;                 /* standby.signal (standby_mode before 12): a new replica */
    const char *primary_conninfo; /* written when set (with standby); wins over inherited ones */
    bool archive_off;             /* archive_mode = off: the restored cluster does not archive */
} recovery_conf_request;

/*
 * PostgreSQL >= 12: postgresql.auto.conf (the restored one, never read
 * through a link, without its inherited recovery settings, which are
 * logged) with ours appended, and recovery.signal (standby.signal for
 * a standby). Before 12: recovery.conf. Every file written is added to `l`.
 */
bool recovery_conf_write(const recovery_conf_request *req, durable_list *l, pgd_error *err);

#endif
