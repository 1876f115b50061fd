/*
 * session.h - the one libpq session a backup holds from start to stop.
 *
 * A non-exclusive backup lives exactly as long as the session that started
 * it: if pgdirect dies, PostgreSQL ends the backup by itself.
 */
#ifndef PGD_SESSION_H
#define PGD_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include "pg/lsn.h"
#include "pg/pg_control.h"
#include "pg/pg_version.h"
#include "pg/pq_api.h"
#include "util/error.h"

typedef struct pg_session {
    PGconn *conn;
    int version_num; /* 150004 */
    char version[32];
    char data_directory[4096];
    char archive_mode[16];
    uint64_t wal_segment_size; /* one wal_name_seg_size_valid accepts (pg/wal_name.h) */
    bool in_recovery;
    bool data_checksums; /* SHOW data_checksums: pages carry checksums to verify */
    char system_identifier[PG_SYSID_TEXT_MAX];
    char role[140]; /* current_user, quoted as an identifier: for the GRANTs messages suggest */
} pg_session;

typedef struct pg_tablespace {
    uint32_t oid;
    char name[128];
} pg_tablespace;

typedef struct pg_database {
    uint32_t oid;
    char name[128]; /* NAMEDATALEN is 64 bytes */
    bool is_template;
} pg_database;

/*
 * Connect (conninfo may be empty: libpq's PG* variables apply) and read
 * server facts; a server outside PG_VERSION_MAJOR_MIN..MAX is refused.
 */
bool pg_session_open(pg_session *s, const char *conninfo, pgd_error *err);

/*
 * The role may run the backup functions (pg_backup_start and pg_backup_stop, or 14's
 * pg_start_backup and pg_stop_backup); when not, err names the GRANTs that would let it.
 */
bool pg_session_backup_privileges(pg_session *s, pgd_error *err);

/* checkpoint_timeout (seconds) and checkpoint_completion_target: how long a spread one may take. */
bool pg_session_checkpoint_settings(pg_session *s, double *timeout_s, double *target,
                                    pgd_error *err);
void pg_session_close(pg_session *s);

/*
 * Whether pgdirect supports a server of version `version_num` (150004);
 * `version` is the server's own text for the message ("13.16"), or NULL.
 */
bool pg_session_check_version(int version_num, const char *version, pgd_error *err);

/* pg_backup_start (15+) / pg_start_backup(label, fast, false) (14). */
bool pg_session_backup_start(pg_session *s, const char *label, bool fast, pg_lsn *start_lsn,
                             pgd_error *err);

/*
 * pg_backup_stop(wait) (15+) / pg_stop_backup(false, wait) (14): the same
 * three columns (lsn, labelfile, spcmapfile). With wait_for_archive
 * the server blocks until its archiver has archived the backup's WAL, with
 * no time limit; a caller that checks the repository itself, under its own
 * deadline, passes false. Strings malloc'd.
 */
bool pg_session_backup_stop(pg_session *s, bool wait_for_archive, pg_lsn *stop_lsn,
                            char **labelfile, char **spcmapfile, pgd_error *err);

/*
 * Cancelling from a signal handler: arm once the session is open (one
 * session per process), then pg_session_cancel_request() is
 * async-signal-safe and cancels the query in progress, such as a spread
 * checkpoint in pg_backup_start. Disarm before closing the session.
 */
bool pg_session_cancel_arm(pg_session *s, pgd_error *err);
void pg_session_cancel_request(void);
void pg_session_cancel_disarm(void);

/* pg_is_in_recovery() now: whether the server is (still) a standby. */
/*
 * The next transaction id (xid8): the xmax of a snapshot taken now, which every transaction
 * that has not begun yet will be at or after.
 */
bool pg_session_next_xid(pg_session *s, uint64_t *xid, pgd_error *err);

bool pg_session_in_recovery(pg_session *s, bool *in_recovery, pgd_error *err);

/*
 * The timeline of a standby's stop point: pg_control's
 * minRecoveryPointTLI (pg_control_recovery()), which is what
 * pg_backup_stop on a standby takes its stop LSN from.
 */
bool pg_session_min_recovery_timeline(pg_session *s, uint32_t *tli, pgd_error *err);

/* User tablespaces (oid, name). *out malloc'd. */
bool pg_session_tablespaces(pg_session *s, pg_tablespace **out, size_t *count, pgd_error *err);

/* Every database of pg_database (oid, name, datistemplate). *out malloc'd. */
bool pg_session_databases(pg_session *s, pg_database **out, size_t *count, pgd_error *err);

/* libpq's last error on conn (or `fallback`), folded onto one line. */
void pg_error_line(PGconn *conn, const char *fallback, char *out, size_t outlen);

/* The server's current timeline: its last checkpoint's (pg_control_checkpoint()). */
bool pg_session_timeline(pg_session *s, uint32_t *tli, pgd_error *err);

#endif
