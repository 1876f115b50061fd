/*
 * archive_probe.c - proof that archive_command stores WAL in the repository (see
 * archive_probe.h).
 */
#include "backup/archive_probe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pg/pq_api.h"
#include "wal/wal_archive.h"
#include "util/text.h"

#define ARCHIVE_PROBE_SETTING_MAX 1024
#define ARCHIVE_PROBE_POLL_US     (200 * 1000)
#define ARCHIVE_PROBE_PG15        150000 /* archive_library */

/* One value from the server, or false with the server's message in why. */
static bool archive_probe_query(pg_session *pg, const char *sql, char *out, size_t outlen,
                                char *why, size_t whylen)
{
    PGresult *res = PQexec(pg->conn, sql);
    bool ok = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 && PQnfields(res) == 1;

    if (ok)
        snprintf(out, outlen, "%s", PQgetisnull(res, 0, 0) ? "" : PQgetvalue(res, 0, 0));
    else
        pg_error_line(pg->conn, "unexpected result", why, whylen);
    PQclear(res);
    return ok;
}

/* pg_stat_archiver: the last file archived, the last that failed (and when), in one line. */
typedef struct archive_probe_state {
    char last_archived[64];
    long long failed_count; /* -1: could not be read */
    char line[PGD_ERROR_MAX];
} archive_probe_state;

static void archive_probe_archiver(pg_session *pg, archive_probe_state *st)
{
    char why[PGD_ERROR_MAX];
    PGresult *res =
        PQexec(pg->conn, "SELECT coalesce(last_archived_wal, ''), coalesce(last_failed_wal, ''), "
                         "coalesce(last_failed_time::text, ''), failed_count::text FROM "
                         "pg_catalog.pg_stat_archiver");

    memset(st, 0, sizeof(*st));
    st->failed_count = -1;
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1 || PQnfields(res) != 4) {
        pg_error_line(pg->conn, "unexpected result", why, sizeof(why));
        (void)str_format(st->line, sizeof(st->line), "pg_stat_archiver could not be read: %s", why);
    } else {
        snprintf(st->last_archived, sizeof(st->last_archived), "%s", PQgetvalue(res, 0, 0));
        st->failed_count = strtoll(PQgetvalue(res, 0, 3), NULL, 10);
        if (PQgetvalue(res, 0, 1)[0] != '\0')
            snprintf(st->line, sizeof(st->line),
                     "pg_stat_archiver: the last failure was WAL file \"%s\" at %s (%s failures "
                     "in all; the server log has archive_command's output)",
                     PQgetvalue(res, 0, 1), PQgetvalue(res, 0, 2), PQgetvalue(res, 0, 3));
        else
            snprintf(st->line, sizeof(st->line), "pg_stat_archiver records no failure");
    }
    PQclear(res);
}

/* archive_command, or archive_library when one is set (PostgreSQL 15), for messages. */
static void archive_probe_setting(pg_session *pg, char *cmd, size_t cmdlen, char *out,
                                  size_t outlen)
{
    char lib[ARCHIVE_PROBE_SETTING_MAX] = "", why[PGD_ERROR_MAX];

    cmd[0] = '\0';
    archive_probe_query(pg, "SHOW archive_command", cmd, cmdlen, why, sizeof(why));
    if (pg->version_num >= ARCHIVE_PROBE_PG15)
        archive_probe_query(pg, "SHOW archive_library", lib, sizeof(lib), why, sizeof(why));
    /* a cut setting only shortens a message */
    if (lib[0] != '\0')
        (void)str_format(out, outlen, "archive_library = '%s'", lib);
    else
        (void)str_format(out, outlen, "archive_command = '%s'", cmd);
}

/* A name the server archived is in the repository (any compression). */
static bool archive_probe_stored(const archive_probe_request *req, const char *name, bool *found,
                                 pgd_error *err)
{
    compress_kind kind;

    return wal_archive_find(req->repo, name, found, &kind, err);
}

/*
 * Wait for `segment` in the repository. A server that reports it archived while the repository
 * does not have it archives somewhere else, and one whose archiver fails while we wait
 * (pg_stat_archiver's failed_count grows beyond failed_before) has a broken archive_command: say
 * so at once instead of waiting out the timeout.
 */
static archive_probe_status archive_probe_wait(const archive_probe_request *req,
                                               const char *segment, long long failed_before,
                                               const char *setting, char *detail, size_t len)
{
    time_t start = time(NULL), deadline = start + req->timeout_s;
    archive_probe_state st;
    pgd_error err = {0};
    bool found = false;

    for (;;) {
        if (!archive_probe_stored(req, segment, &found, &err)) {
            snprintf(detail, len, "could not look for WAL file \"%s\": %s", segment, err.msg);
            return ARCHIVE_PROBE_FAILED;
        }
        if (found) {
            snprintf(detail, len,
                     "WAL file \"%s\" reached repository \"%s\" %lds after pg_switch_wal() (%s)",
                     segment, req->repo->uri, (long)(time(NULL) - start), setting);
            return ARCHIVE_PROBE_OK;
        }
        archive_probe_archiver(req->pg, &st);
        if (st.last_archived[0] != '\0' && strlen(st.last_archived) == strlen(segment) &&
            strcmp(st.last_archived, segment) >= 0) {
            /* archived by the server: one more look, in case it landed between the two */
            if (archive_probe_stored(req, segment, &found, &err) && found)
                continue;
            snprintf(detail, len,
                     "the server archived WAL file \"%s\" (pg_stat_archiver) but it is not in "
                     "repository \"%s\": %s stores WAL somewhere else",
                     segment, req->repo->uri, setting);
            return ARCHIVE_PROBE_FAILED;
        }
        if (failed_before >= 0 && st.failed_count > failed_before) {
            snprintf(detail, len,
                     "archive_command failed while WAL file \"%s\" waited to reach repository "
                     "\"%s\"; %s; %s",
                     segment, req->repo->uri, st.line, setting);
            return ARCHIVE_PROBE_FAILED;
        }
        if (time(NULL) >= deadline) {
            snprintf(detail, len,
                     "WAL file \"%s\" did not reach repository \"%s\" within %ds of "
                     "pg_switch_wal(); %s; %s",
                     segment, req->repo->uri, req->timeout_s, st.line, setting);
            return ARCHIVE_PROBE_FAILED;
        }
        usleep(ARCHIVE_PROBE_POLL_US);
    }
}

archive_probe_status archive_probe_run(const archive_probe_request *req, char *detail, size_t len)
{
    char cmd[ARCHIVE_PROBE_SETTING_MAX], setting[ARCHIVE_PROBE_SETTING_MAX + 32];
    char segment[64], ignore[64], why[PGD_ERROR_MAX];
    archive_probe_state st;
    pgd_error err = {0};
    bool found = false;

    archive_probe_setting(req->pg, cmd, sizeof(cmd), setting, sizeof(setting));
    if (strcmp(req->pg->archive_mode, "off") == 0) {
        snprintf(detail, len, "archive_mode is off (%s)", setting);
        return ARCHIVE_PROBE_FAILED;
    }
    if (req->pg->in_recovery) {
        snprintf(detail, len,
                 "the server is a standby, where WAL cannot be switched: run pgdirect check on "
                 "the primary (%s)",
                 setting);
        return ARCHIVE_PROBE_SKIPPED;
    }
    if (strcmp(setting, "archive_command = ''") == 0) {
        snprintf(detail, len,
                 "archive_command is empty: set it to 'pgdirect wal-push %%p' with this "
                 "repository");
        return ARCHIVE_PROBE_FAILED;
    }
    if (strstr(cmd, "wal-push") != NULL && strstr(cmd, "%p") == NULL) {
        snprintf(detail, len,
                 "%s has no %%p: PostgreSQL passes the WAL file's path there, and wal-push gets "
                 "none without it",
                 setting);
        return ARCHIVE_PROBE_FAILED;
    }
    archive_probe_archiver(req->pg, &st);
    if (req->accept_latest) {
        if (st.last_archived[0] != '\0' &&
            archive_probe_stored(req, st.last_archived, &found, &err) && found) {
            snprintf(detail, len,
                     "WAL file \"%s\", the last the server archived, is in repository \"%s\"",
                     st.last_archived, req->repo->uri);
            return ARCHIVE_PROBE_OK;
        }
        err_clear(&err);
    }
    if (!archive_probe_query(req->pg, "SELECT pg_catalog.txid_current()::text", ignore,
                             sizeof(ignore), why, sizeof(why)) ||
        !archive_probe_query(req->pg,
                             "SELECT pg_catalog.pg_walfile_name(pg_catalog.pg_switch_wal())",
                             segment, sizeof(segment), why, sizeof(why))) {
        snprintf(detail, len,
                 "could not switch WAL to test it: %s (superuser, or GRANT EXECUTE ON FUNCTION "
                 "pg_catalog.pg_switch_wal() TO %s;)",
                 why, req->pg->role);
        return ARCHIVE_PROBE_FAILED;
    }
    return archive_probe_wait(req, segment, st.failed_count, setting, detail, len);
}
