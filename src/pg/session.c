/*
 * session.c - libpq session: server facts, the supported server versions,
 * backup start/stop (PG 15+ and the PG 14 names), tablespaces, and the
 * server's notices routed through our logger.
 */
#include "pg/session.h"

#include <inttypes.h>
#include <signal.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg/wal_name.h"
#include "util/log.h"
#include "util/xmalloc.h"

#define PG_VERSION_NEW_NAMES 150000 /* pg_backup_start/stop; 14 has pg_start/stop_backup */

/* libpq messages span lines; ours are one line. */
static void pg_session_one_line(char *s)
{
    char *w = s;

    for (char *r = s; *r != '\0'; r++) {
        char c = (*r == '\n' || *r == '\t') ? ' ' : *r;
        if (c == ' ' && (w == s || w[-1] == ' '))
            continue;
        *w++ = c;
    }
    while (w > s && w[-1] == ' ')
        w--;
    *w = '\0';
}

void pg_error_line(PGconn *conn, const char *fallback, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s", conn ? PQerrorMessage(conn) : fallback);
    pg_session_one_line(out);
}

/*
 * libpq prints NOTICE and WARNING messages raw on stderr ("NOTICE:  all
 * required WAL segments have been archived"); ours go through the logger in
 * its grammar and obey --log-level: warnings as warnings, the rest as info.
 */
static void pg_session_notice(void *arg, const PGresult *res)
{
    const char *severity = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
    const char *primary = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
    const char *hint = PQresultErrorField(res, PG_DIAG_MESSAGE_HINT);
    char msg[PGD_ERROR_MAX];

    (void)arg;
    if (severity == NULL)
        severity = PQresultErrorField(res, PG_DIAG_SEVERITY);
    snprintf(msg, sizeof(msg), "%s%s%s", primary ? primary : PQresultErrorMessage(res),
             hint ? " (hint: " : "", hint ? hint : "");
    if (hint != NULL && strlen(msg) + 1 < sizeof(msg))
        strcat(msg, ")");
    pg_session_one_line(msg);
    if (severity != NULL && strcmp(severity, "WARNING") == 0)
        log_warn("server: %s", msg);
    else
        log_info("server: %s", msg);
}

static bool pg_session_query_error(pg_session *s, const char *what, PGresult *res, pgd_error *err)
{
    char msg[PGD_ERROR_MAX];

    pg_error_line(s->conn, "", msg, sizeof(msg));
    PQclear(res);
    return err_set(err, "%s failed: %s", what, msg);
}

/* Run a query expected to return `rows` rows (or -1: any) of `cols` columns. */
static PGresult *pg_session_run(pg_session *s, const char *sql, int nparams,
                                const char *const *params, int cols, pgd_error *err)
{
    PGresult *res = PQexecParams(s->conn, sql, nparams, NULL, params, NULL, NULL, 0);

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        pg_session_query_error(s, sql, res, err);
        return NULL;
    }
    if (PQnfields(res) != cols) {
        PQclear(res);
        err_set(err, "unexpected result shape from \"%s\"", sql);
        return NULL;
    }
    return res;
}

static bool pg_session_fetch_one(pg_session *s, const char *sql, char *out, size_t outlen,
                                 pgd_error *err)
{
    PGresult *res = pg_session_run(s, sql, 0, NULL, 1, err);

    if (res == NULL)
        return false;
    if (PQntuples(res) != 1) {
        PQclear(res);
        return err_set(err, "unexpected result from \"%s\"", sql);
    }
    snprintf(out, outlen, "%s", PQgetvalue(res, 0, 0));
    PQclear(res);
    return true;
}

bool pg_session_open(pg_session *s, const char *conninfo, pgd_error *err)
{
    const char *keys[] = {"dbname", "fallback_application_name", NULL};
    const char *vals[] = {conninfo != NULL && conninfo[0] != '\0' ? conninfo : NULL, "pgdirect",
                          NULL};
    char buf[64];

    memset(s, 0, sizeof(*s));
    if (!pq_api_load(err))
        return false;
    s->conn = PQconnectdbParams(keys, vals, 1);
    if (s->conn == NULL)
        return err_set(err, "could not connect to the server: out of memory");
    if (PQstatus(s->conn) != CONNECTION_OK) {
        char msg[PGD_ERROR_MAX];
        pg_error_line(s->conn, "", msg, sizeof(msg));
        pg_session_close(s);
        return err_set(err, "could not connect to the server: %s", msg);
    }
    PQsetNoticeReceiver(s->conn, pg_session_notice, NULL);
    s->version_num = PQserverVersion(s->conn);
    if (!pg_session_check_version(s->version_num, PQparameterStatus(s->conn, "server_version"),
                                  err)) {
        pg_session_close(s);
        return false;
    }
    /* data_directory: no row at all for a role that may not read it (one row, "", then) */
    if (!pg_session_fetch_one(s, "SHOW server_version", s->version, sizeof(s->version), err) ||
        !pg_session_fetch_one(s, "SELECT pg_catalog.quote_ident(current_user)", s->role,
                              sizeof(s->role), err) ||
        !pg_session_fetch_one(s,
                              "SELECT coalesce((SELECT setting FROM pg_catalog.pg_settings "
                              "WHERE name = 'data_directory'), '')",
                              s->data_directory, sizeof(s->data_directory), err) ||
        !pg_session_fetch_one(s, "SHOW archive_mode", s->archive_mode, sizeof(s->archive_mode),
                              err) ||
        !pg_session_fetch_one(s, "SELECT pg_catalog.pg_is_in_recovery()::text", buf, sizeof(buf),
                              err))
        goto fail;
    s->in_recovery = strcmp(buf, "true") == 0;
    if (!pg_session_fetch_one(s, "SHOW data_checksums", buf, sizeof(buf), err))
        goto fail;
    s->data_checksums = strcmp(buf, "on") == 0;
    if (!pg_session_fetch_one(
            s,
            "SELECT (setting::bigint * CASE unit WHEN '8kB' THEN 8192 WHEN 'MB' THEN "
            "1048576 ELSE 1 END)::text FROM pg_catalog.pg_settings WHERE name = "
            "'wal_segment_size'",
            buf, sizeof(buf), err))
        goto fail;
    s->wal_segment_size = strtoull(buf, NULL, 10);
    if (!wal_name_seg_size_valid(s->wal_segment_size)) {
        err_set(err, "the server reported an invalid wal_segment_size \"%s\"", buf);
        goto fail;
    }
    if (!pg_session_fetch_one(s,
                              "SELECT system_identifier::text FROM pg_catalog.pg_control_system()",
                              s->system_identifier, sizeof(s->system_identifier), err))
        goto fail;
    if (s->data_directory[0] == '\0') {
        err_set(err,
                "role %s may not read the server's data_directory: GRANT pg_read_all_settings TO "
                "%s; (or connect as a superuser)",
                s->role, s->role);
        goto fail;
    }
    return true;
fail:
    pg_session_close(s);
    return false;
}

bool pg_session_backup_privileges(pg_session *s, pgd_error *err)
{
    bool named = s->version_num >= PG_VERSION_NEW_NAMES;
    const char *start = named ? "pg_catalog.pg_backup_start(text, boolean)"
                              : "pg_catalog.pg_start_backup(text, boolean, boolean)";
    const char *stop = named ? "pg_catalog.pg_backup_stop(boolean)"
                             : "pg_catalog.pg_stop_backup(boolean, boolean)";
    const char *params[] = {start, stop};
    PGresult *res = pg_session_run(s,
                                   "SELECT pg_catalog.has_function_privilege($1, 'EXECUTE')::text, "
                                   "pg_catalog.has_function_privilege($2, 'EXECUTE')::text",
                                   2, params, 2, err);
    char grants[2 * 256] = "";
    size_t len = 0;

    if (res == NULL)
        return false;
    for (int i = 0; i < 2; i++)
        if (strcmp(PQgetvalue(res, 0, i), "true") != 0)
            len += (size_t)snprintf(grants + len, sizeof(grants) - len,
                                    "%sGRANT EXECUTE ON FUNCTION %s TO %s;", len ? " " : "",
                                    params[i], s->role);
    PQclear(res);
    if (len == 0)
        return true;
    return err_set(err, "role %s may not take a backup: %s (or connect as a superuser)", s->role,
                   grants);
}

bool pg_session_checkpoint_settings(pg_session *s, double *timeout_s, double *target,
                                    pgd_error *err)
{
    char buf[64];

    if (!pg_session_fetch_one(s,
                              "SELECT (SELECT setting FROM pg_catalog.pg_settings WHERE name = "
                              "'checkpoint_timeout') || ' ' || (SELECT setting FROM "
                              "pg_catalog.pg_settings WHERE name = 'checkpoint_completion_target')",
                              buf, sizeof(buf), err))
        return false;
    if (sscanf(buf, "%lf %lf", timeout_s, target) != 2)
        return err_set(err, "unexpected checkpoint settings from the server: \"%s\"", buf);
    return true;
}

bool pg_session_check_version(int version_num, const char *version, pgd_error *err)
{
    int major = pg_version_major(version_num);
    char number[32];

    if (version_num > 0 && major >= PG_VERSION_MAJOR_MIN && major <= PG_VERSION_MAJOR_MAX)
        return true;
    if (version == NULL || version[0] == '\0') {
        snprintf(number, sizeof(number), "%d", version_num);
        version = number;
    }
    return err_set(err, "server version %s is not supported: pgdirect supports PostgreSQL %d to %d",
                   version, PG_VERSION_MAJOR_MIN, PG_VERSION_MAJOR_MAX);
}

void pg_session_close(pg_session *s)
{
    if (s->conn != NULL)
        PQfinish(s->conn);
    s->conn = NULL;
}

/* What a signal handler may use: set and cleared only while signals that use it are blocked. */
static PGcancel *volatile session_cancel;

bool pg_session_cancel_arm(pg_session *s, pgd_error *err)
{
    PGcancel *c = PQgetCancel(s->conn);
    sigset_t all, old;

    if (c == NULL)
        return err_set(err, "could not prepare the cancellation of the backup's queries");
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    if (session_cancel != NULL)
        PQfreeCancel(session_cancel);
    session_cancel = c;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return true;
}

void pg_session_cancel_request(void)
{
    char errbuf[256];

    if (session_cancel != NULL)
        PQcancel(session_cancel, errbuf, sizeof(errbuf));
}

void pg_session_cancel_disarm(void)
{
    sigset_t all, old;
    PGcancel *c;

    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    c = session_cancel;
    session_cancel = NULL;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (c != NULL)
        PQfreeCancel(c);
}

bool pg_session_backup_start(pg_session *s, const char *label, bool fast, pg_lsn *start_lsn,
                             pgd_error *err)
{
    const char *params[] = {label, fast ? "true" : "false"};
    const char *sql = s->version_num >= PG_VERSION_NEW_NAMES
                          ? "SELECT pg_catalog.pg_backup_start($1, $2)::text"
                          : "SELECT pg_catalog.pg_start_backup($1, $2, false)::text";
    PGresult *res = pg_session_run(s, sql, 2, params, 1, err);

    bool ok;

    if (res == NULL)
        return false;
    ok = lsn_parse(PQgetvalue(res, 0, 0), start_lsn) ||
         err_set(err, "the server returned an invalid start WAL location \"%s\"",
                 PQgetvalue(res, 0, 0));
    PQclear(res);
    return ok;
}

bool pg_session_backup_stop(pg_session *s, bool wait_for_archive, pg_lsn *stop_lsn,
                            char **labelfile, char **spcmapfile, pgd_error *err)
{
    const char *params[] = {wait_for_archive ? "true" : "false"};
    const char *sql = s->version_num >= PG_VERSION_NEW_NAMES
                          ? "SELECT lsn::text, labelfile, spcmapfile FROM "
                            "pg_catalog.pg_backup_stop($1)"
                          : "SELECT lsn::text, labelfile, spcmapfile FROM "
                            "pg_catalog.pg_stop_backup(false, $1)";
    PGresult *res = pg_session_run(s, sql, 1, params, 3, err);

    if (res == NULL)
        return false;
    if (!lsn_parse(PQgetvalue(res, 0, 0), stop_lsn)) {
        err_set(err, "the server returned an invalid stop WAL location \"%s\"",
                PQgetvalue(res, 0, 0));
        PQclear(res);
        return false;
    }
    *labelfile = xstrdup(PQgetvalue(res, 0, 1));
    *spcmapfile = xstrdup(PQgetvalue(res, 0, 2));
    PQclear(res);
    return true;
}

bool pg_session_next_xid(pg_session *s, uint64_t *xid, pgd_error *err)
{
    char buf[32], *end;

    if (!pg_session_fetch_one(
            s, "SELECT pg_catalog.pg_snapshot_xmax(pg_catalog.pg_current_snapshot())::text", buf,
            sizeof(buf), err))
        return false;
    errno = 0;
    *xid = strtoull(buf, &end, 10);
    if (buf[0] < '0' || buf[0] > '9' || *end != '\0' || errno != 0)
        return err_set(err, "the server returned an invalid transaction id \"%s\"", buf);
    return true;
}

bool pg_session_in_recovery(pg_session *s, bool *in_recovery, pgd_error *err)
{
    char buf[16];

    if (!pg_session_fetch_one(s, "SELECT pg_catalog.pg_is_in_recovery()::text", buf, sizeof(buf),
                              err))
        return false;
    *in_recovery = strcmp(buf, "true") == 0;
    return true;
}

bool pg_session_min_recovery_timeline(pg_session *s, uint32_t *tli, pgd_error *err)
{
    char buf[16];

    if (!pg_session_fetch_one(
            s, "SELECT min_recovery_end_timeline::text FROM pg_catalog.pg_control_recovery()", buf,
            sizeof(buf), err))
        return false;
    /* 0 (or nothing): no minimum recovery point, which the caller reports */
    *tli = 0;
    if (buf[0] == '\0' || strcmp(buf, "0") == 0)
        return true;
    return wal_name_timeline_parse(buf, tli) ||
           err_set(err, "the server returned an invalid timeline \"%s\"", buf);
}

bool pg_session_tablespaces(pg_session *s, pg_tablespace **out, size_t *count, pgd_error *err)
{
    PGresult *res =
        pg_session_run(s,
                       "SELECT oid::text, spcname FROM pg_catalog.pg_tablespace WHERE spcname "
                       "NOT IN ('pg_default', 'pg_global') ORDER BY oid",
                       0, NULL, 2, err);
    int n;

    *out = NULL;
    *count = 0;
    if (res == NULL)
        return false;
    n = PQntuples(res);
    if (n > 0)
        *out = xcalloc((size_t)n, sizeof(**out));
    for (int i = 0; i < n; i++) {
        (*out)[i].oid = (uint32_t)strtoul(PQgetvalue(res, i, 0), NULL, 10);
        snprintf((*out)[i].name, sizeof((*out)[i].name), "%s", PQgetvalue(res, i, 1));
    }
    *count = (size_t)n;
    PQclear(res);
    return true;
}

bool pg_session_databases(pg_session *s, pg_database **out, size_t *count, pgd_error *err)
{
    PGresult *res = pg_session_run(s,
                                   "SELECT oid::text, datname, datistemplate::text FROM "
                                   "pg_catalog.pg_database ORDER BY oid",
                                   0, NULL, 3, err);
    int n;

    *out = NULL;
    *count = 0;
    if (res == NULL)
        return false;
    n = PQntuples(res);
    if (n > 0)
        *out = xcalloc((size_t)n, sizeof(**out));
    for (int i = 0; i < n; i++) {
        (*out)[i].oid = (uint32_t)strtoul(PQgetvalue(res, i, 0), NULL, 10);
        snprintf((*out)[i].name, sizeof((*out)[i].name), "%s", PQgetvalue(res, i, 1));
        (*out)[i].is_template = strcmp(PQgetvalue(res, i, 2), "true") == 0;
    }
    *count = (size_t)n;
    PQclear(res);
    return true;
}

bool pg_session_timeline(pg_session *s, uint32_t *tli, pgd_error *err)
{
    char buf[16];

    if (!pg_session_fetch_one(s, "SELECT timeline_id::text FROM pg_catalog.pg_control_checkpoint()",
                              buf, sizeof(buf), err))
        return false;
    *tli = 0;
    return wal_name_timeline_parse(buf, tli) || err_set(err, "the server reported no timeline");
}
