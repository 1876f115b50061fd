/*
 * cluster_check.c - identity, amcheck and the DBA's statements, asked of a restore drill's
 * scratch server (cluster_check.h).
 */
#define _GNU_SOURCE
#include "pg/cluster_check.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg/lsn.h"
#include "pg/pq_api.h"
#include "util/text.h"
#include "util/xmalloc.h"

#define CLUSTER_CHECK_BOOLOID 16 /* pg_type.oid of boolean */
/* a statement's text in a problem: its first line, at most this much */
#define CLUSTER_CHECK_SHOW_MAX 120

void cluster_problems_add(cluster_problems *p, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    p->text = xrealloc(p->text, (p->n + 1) * sizeof(*p->text));
    p->text[p->n++] = xvasprintf(fmt, ap);
    va_end(ap);
}

void cluster_problems_free(cluster_problems *p)
{
    for (size_t i = 0; i < p->n; i++)
        free(p->text[i]);
    free(p->text);
    p->text = NULL;
    p->n = 0;
}

/* A server's error message, its first line (no trailing newline), for a problem or an error. */
static const char *cluster_check_message(const PGresult *r, PGconn *conn, char *out, size_t len)
{
    const char *m = r != NULL ? PQresultErrorMessage(r) : "";

    if (m == NULL || m[0] == '\0')
        m = PQerrorMessage(conn);
    if (strncmp(m, "ERROR:  ", 8) == 0)
        m += 8;
    snprintf(out, len, "%.*s", (int)strcspn(m, "\n"), m);
    return out;
}

bool cluster_check_facts(PGconn *conn, cluster_facts *f, pgd_error *err)
{
    PGresult *r = PQexec(conn, "SELECT system_identifier, pg_last_wal_replay_lsn(), "
                               "current_setting('data_checksums') = 'on', "
                               "current_setting('server_version_num') FROM pg_control_system()");
    char msg[512];
    bool ok = r != NULL && PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;

    memset(f, 0, sizeof(*f));
    if (!ok) {
        err_set(err, "could not read the scratch server's system identifier: %s",
                cluster_check_message(r, conn, msg, sizeof(msg)));
        PQclear(r);
        return false;
    }
    str_format(f->system_identifier, sizeof(f->system_identifier), "%s", PQgetvalue(r, 0, 0));
    if (!PQgetisnull(r, 0, 1) && !lsn_parse(PQgetvalue(r, 0, 1), &f->replay_lsn))
        ok = err_set(err, "the scratch server returned an invalid LSN \"%s\"", PQgetvalue(r, 0, 1));
    f->data_checksums = strcmp(PQgetvalue(r, 0, 2), "t") == 0;
    f->server_version_num = atoi(PQgetvalue(r, 0, 3));
    PQclear(r);
    return ok;
}

/* The databases amcheck visits: every one that accepts connections. */
static bool cluster_check_databases(PGconn *conn, char ***names, size_t *n, pgd_error *err)
{
    PGresult *r =
        PQexec(conn, "SELECT datname FROM pg_database WHERE datallowconn ORDER BY datname");
    char msg[512];

    if (r == NULL || PQresultStatus(r) != PGRES_TUPLES_OK) {
        err_set(err, "could not list the scratch server's databases: %s",
                cluster_check_message(r, conn, msg, sizeof(msg)));
        PQclear(r);
        return false;
    }
    *n = (size_t)PQntuples(r);
    *names = xcalloc(*n + 1, sizeof(**names));
    for (size_t i = 0; i < *n; i++)
        (*names)[i] = xstrdup(PQgetvalue(r, (int)i, 0));
    PQclear(r);
    return true;
}

/* CREATE EXTENSION amcheck where it is missing; false (no error) when it is not installed. */
static bool cluster_check_load_amcheck(PGconn *conn, cluster_amcheck *a)
{
    PGresult *r = PQexec(conn, "CREATE EXTENSION IF NOT EXISTS amcheck");
    bool ok = r != NULL && PQresultStatus(r) == PGRES_COMMAND_OK;
    char msg[200];

    if (!ok)
        snprintf(a->why, sizeof(a->why), "amcheck is not available to this server: %s",
                 cluster_check_message(r, conn, msg, sizeof(msg)));
    PQclear(r);
    return ok;
}

/*
 * Every relation amcheck can check: heap-like relations (verify_heapam) and valid B-tree
 * indexes (bt_index_check with heapallindexed), with their size in pages. Temporary relations
 * of other sessions cannot be read and are not there after recovery anyway.
 */
#define CLUSTER_CHECK_RELATIONS_SQL                                                                \
    "SELECT c.oid, quote_ident(n.nspname) || '.' || quote_ident(c.relname), "                      \
    "c.relkind IN ('r', 'm', 't'), pg_relation_size(c.oid) / current_setting('block_size')::int "  \
    "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "                               \
    "LEFT JOIN pg_index i ON i.indexrelid = c.oid LEFT JOIN pg_am am ON am.oid = c.relam "         \
    "WHERE c.relpersistence <> 't' AND (c.relkind IN ('r', 'm', 't') OR "                          \
    "(c.relkind = 'i' AND am.amname = 'btree' AND i.indisvalid AND i.indisready)) "                \
    "ORDER BY c.oid"

/* One relation: its problems (rows of verify_heapam, or the error of either check). */
static void cluster_check_relation(PGconn *conn, const char *db, const char *oid, const char *name,
                                   bool heap, cluster_problems *p)
{
    const char *params[] = {oid};
    PGresult *r =
        PQexecParams(conn,
                     heap ? "SELECT blkno, offnum, msg FROM verify_heapam($1::oid::regclass, "
                            "check_toast => true) LIMIT 3"
                          : "SELECT bt_index_check($1::oid::regclass, true)",
                     1, NULL, params, NULL, NULL, 0);
    char msg[512];

    if (r == NULL || PQresultStatus(r) != PGRES_TUPLES_OK)
        cluster_problems_add(p, "relation %s in database \"%s\": %s", name, db,
                             cluster_check_message(r, conn, msg, sizeof(msg)));
    else if (heap)
        for (int i = 0; i < PQntuples(r); i++)
            cluster_problems_add(p, "relation %s in database \"%s\", block %s, offset %s: %s", name,
                                 db, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), PQgetvalue(r, i, 2));
    PQclear(r);
}

static bool cluster_check_database(const scratch_server *s, const char *db, cluster_amcheck *a,
                                   cluster_problems *p, pgd_error *err)
{
    PGconn *conn = scratch_server_connect(s, db, err);
    PGresult *r;
    char msg[512];

    if (conn == NULL) {
        err_prefix(err, "amcheck of database \"%s\"", db);
        return false;
    }
    if (!cluster_check_load_amcheck(conn, a)) {
        a->skipped = true;
        PQfinish(conn);
        return true;
    }
    r = PQexec(conn, CLUSTER_CHECK_RELATIONS_SQL);
    if (r == NULL || PQresultStatus(r) != PGRES_TUPLES_OK) {
        err_set(err, "could not list the relations of database \"%s\": %s", db,
                cluster_check_message(r, conn, msg, sizeof(msg)));
        PQclear(r);
        PQfinish(conn);
        return false;
    }
    for (int i = 0; i < PQntuples(r); i++) {
        cluster_check_relation(conn, db, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1),
                               strcmp(PQgetvalue(r, i, 2), "t") == 0, p);
        a->relations++;
        a->pages += strtoull(PQgetvalue(r, i, 3), NULL, 10);
    }
    PQclear(r);
    PQfinish(conn);
    return true;
}

bool cluster_check_amcheck(const scratch_server *s, cluster_amcheck *a, cluster_problems *p,
                           pgd_error *err)
{
    PGconn *conn = scratch_server_connect(s, "postgres", err);
    char **dbs = NULL;
    size_t n = 0;
    bool ok;

    memset(a, 0, sizeof(*a));
    if (conn == NULL)
        return false;
    ok = cluster_check_databases(conn, &dbs, &n, err);
    PQfinish(conn);
    for (size_t i = 0; ok && !a->skipped && i < n; i++)
        ok = cluster_check_database(s, dbs[i], a, p, err);
    for (size_t i = 0; i < n; i++)
        free(dbs[i]);
    free(dbs);
    return ok;
}

/* Whether a statement's result holds: a row, whose first column is not a false boolean. */
static bool cluster_check_holds(const PGresult *r)
{
    if (PQntuples(r) < 1 || PQnfields(r) < 1)
        return false;
    return !(PQftype(r, 0) == CLUSTER_CHECK_BOOLOID &&
             (PQgetisnull(r, 0, 0) || strcmp(PQgetvalue(r, 0, 0), "f") == 0));
}

static void cluster_check_statement(PGconn *conn, const char *sql, const char *path, unsigned line,
                                    cluster_problems *p)
{
    PGresult *r = PQexec(conn, sql);
    char msg[512];
    int show = (int)strcspn(sql, "\n");

    if (show > CLUSTER_CHECK_SHOW_MAX)
        show = CLUSTER_CHECK_SHOW_MAX;
    if (r == NULL || PQresultStatus(r) != PGRES_TUPLES_OK)
        cluster_problems_add(p, "check \"%.*s\" (%s line %u) failed: %s", show, sql, path, line,
                             r != NULL && PQresultStatus(r) == PGRES_COMMAND_OK
                                 ? "it returns no rows"
                                 : cluster_check_message(r, conn, msg, sizeof(msg)));
    else if (!cluster_check_holds(r))
        cluster_problems_add(p, "check \"%.*s\" (%s line %u) does not hold: %s", show, sql, path,
                             line, PQntuples(r) == 0 ? "no rows" : "false");
    PQclear(r);
}

bool cluster_check_sql(PGconn *conn, const char *text, const char *path, size_t *count,
                       cluster_problems *p, pgd_error *err)
{
    text_buf stmt = {0};
    unsigned line = 0, first = 0;
    const char *at = text;

    (void)err;
    *count = 0;
    while (*at != '\0') {
        size_t len = strcspn(at, "\n");
        const char *end = at + len;
        line++;
        while (end > at && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
            end--;
        if (!(stmt.len == 0 && (end == at || strncmp(at + strspn(at, " \t"), "--", 2) == 0))) {
            if (stmt.len == 0)
                first = line;
            text_buf_printf(&stmt, "%s%.*s", stmt.len ? "\n" : "", (int)(end - at), at);
            if (end > at && end[-1] == ';') {
                cluster_check_statement(conn, stmt.data, path, first, p);
                (*count)++;
                stmt.len = 0;
                stmt.data[0] = '\0';
            }
        }
        at += len + (at[len] == '\n');
    }
    if (stmt.len > 0) {
        cluster_check_statement(conn, stmt.data, path, first, p);
        (*count)++;
    }
    free(stmt.data);
    return true;
}
