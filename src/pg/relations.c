/*
 * relations.c - relation files and shared_buffers contents, for `cache`.
 */
#include "pg/relations.h"

#include "pg/session.h"
#include "util/xmalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

PGconn *pg_connect_db(const char *conninfo, const char *dbname, pgd_error *err)
{
    const char *keys[] = {"dbname", "dbname", "fallback_application_name", NULL};
    const char *vals[] = {conninfo != NULL && conninfo[0] ? conninfo : NULL, dbname, "pgdirect",
                          NULL};
    PGconn *conn;
    char msg[PGD_ERROR_MAX];

    if (dbname == NULL) { /* drop the override */
        keys[1] = "fallback_application_name";
        vals[1] = "pgdirect";
        keys[2] = NULL;
    }
    if (!pq_api_load(err))
        return NULL;
    conn = PQconnectdbParams(keys, vals, 1);
    if (conn == NULL || PQstatus(conn) != CONNECTION_OK) {
        pg_error_line(conn, "out of memory", msg, sizeof(msg));
        PQfinish(conn);
        err_set(err, "could not connect to %s%s%s: %s", dbname ? "database \"" : "the server",
                dbname ? dbname : "", dbname ? "\"" : "", msg);
        return NULL;
    }
    /* names in UTF-8 whatever the database's encoding: the report (and its JSON) is UTF-8 */
    if (PQsetClientEncoding(conn, "UTF8") != 0) {
        pg_error_line(conn, "could not set client_encoding", msg, sizeof(msg));
        PQfinish(conn);
        err_set(err, "could not ask %s%s%s for UTF-8 names: %s",
                dbname ? "database \"" : "the server", dbname ? dbname : "", dbname ? "\"" : "",
                msg);
        return NULL;
    }
    return conn;
}

/* `sql` with no parameter, or with one ($1) when nparams is 1 (param may be NULL). */
static PGresult *pg_relations_query(PGconn *conn, const char *sql, int nparams, const char *param,
                                    pgd_error *err)
{
    const char *params[1] = {param};
    PGresult *res = PQexecParams(conn, sql, nparams, NULL, params, NULL, NULL, 0);
    char msg[PGD_ERROR_MAX];

    if (PQresultStatus(res) == PGRES_TUPLES_OK)
        return res;
    pg_error_line(conn, "", msg, sizeof(msg));
    PQclear(res);
    err_set(err, "query on database \"%s\" failed: %s", PQdb(conn), msg);
    return NULL;
}

/* Tablespace, then relfilenode: the order of their directories and of the files in them. */
static int pg_relations_cmp(const void *a, const void *b)
{
    const pg_relation *ra = a, *rb = b;

    if (ra->tablespace != rb->tablespace)
        return ra->tablespace < rb->tablespace ? -1 : 1;
    if (ra->filenode != rb->filenode)
        return ra->filenode < rb->filenode ? -1 : 1;
    return 0;
}

bool pg_relations_list(PGconn *conn, const char *like, pg_relation_list *out, pgd_error *err)
{
    /*
     * The file path and relfilenode as pg_relation_filepath()/pg_relation_filenode() give them,
     * computed from pg_class where that is simple: a relation with its own relfilenode (not a
     * mapped catalog) in the database's directory under base/. Each call of those functions in a
     * new session looks the relation up in the system cache, one pg_class index scan per
     * relation: two seconds of a report over 100,000 relations. Mapped catalogs, shared ones and
     * relations in other tablespaces (a handful, usually) still ask the functions. relkind
     * r, i, S, t, m are the kinds with storage (the relations pg_relation_filepath() has a path
     * for); temporary relations are another session's.
     */
    static const char *sql =
        "SELECT n.nspname || '.' || c.relname, "
        "  CASE c.relkind WHEN 'r' THEN 'table' WHEN 'i' THEN 'index' WHEN 't' THEN 'toast' "
        "    WHEN 'm' THEN 'matview' WHEN 'S' THEN 'sequence' ELSE c.relkind::text END, "
        "  CASE WHEN c.relfilenode <> 0 AND c.reltablespace = 0 AND dt.spcname = 'pg_default' "
        "    THEN 'base/' || d.oid || '/' || c.relfilenode "
        "    ELSE pg_catalog.pg_relation_filepath(c.oid) END, "
        "  CASE WHEN c.relfilenode <> 0 THEN c.relfilenode "
        "    ELSE pg_catalog.pg_relation_filenode(c.oid) END, "
        "  c.relisshared, c.reltablespace, "
        "  CASE c.reltablespace WHEN 0 THEN d.dattablespace ELSE c.reltablespace END "
        "FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
        "  JOIN pg_catalog.pg_database d ON d.datname = pg_catalog.current_database() "
        "  JOIN pg_catalog.pg_tablespace dt ON dt.oid = d.dattablespace "
        "WHERE c.relpersistence <> 't' AND c.relkind IN ('r', 'i', 'S', 't', 'm') "
        "  AND ($1::text IS NULL OR c.relname LIKE $1::text)";
    PGresult *res = pg_relations_query(conn, sql, 1, like, err);
    int n;

    memset(out, 0, sizeof(*out));
    if (res == NULL)
        return false;
    n = PQntuples(res);
    if (n > 0)
        out->rels = xcalloc((size_t)n, sizeof(*out->rels));
    for (int i = 0; i < n; i++) {
        pg_relation *r = &out->rels[i];
        r->name = PQgetvalue(res, i, 0);
        r->kind = PQgetvalue(res, i, 1);
        r->filepath = PQgetvalue(res, i, 2);
        r->filenode = (uint32_t)strtoul(PQgetvalue(res, i, 3), NULL, 10);
        r->shared = strcmp(PQgetvalue(res, i, 4), "t") == 0;
        r->tablespace = (uint32_t)strtoul(PQgetvalue(res, i, 5), NULL, 10);
        r->tablespace_oid = (uint32_t)strtoul(PQgetvalue(res, i, 6), NULL, 10);
    }
    out->n = (size_t)n;
    out->res = res;
    /*
     * One directory after the other: the caller lists each once, not at every switch. Sorted
     * here, not by the query: ORDER BY sorted 100,000 wide rows, on disk past work_mem.
     */
    if (out->n > 1)
        qsort(out->rels, out->n, sizeof(*out->rels), pg_relations_cmp);
    return true;
}

void pg_relation_list_free(pg_relation_list *l)
{
    free(l->rels);
    PQclear(l->res);
    memset(l, 0, sizeof(*l));
}

bool pg_buffercache_read(PGconn *conn, pg_buffer **out, size_t *count, buffercache_status *status,
                         pgd_error *err)
{
    PGresult *res;
    int n;

    *out = NULL;
    *count = 0;
    res = pg_relations_query(conn,
                             "SELECT count(*) FROM pg_catalog.pg_extension WHERE extname = "
                             "'pg_buffercache'",
                             0, NULL, err);
    if (res == NULL)
        return false;
    if (strcmp(PQgetvalue(res, 0, 0), "0") == 0) {
        PQclear(res);
        *status = BUFFERCACHE_NOT_INSTALLED;
        return true;
    }
    PQclear(res);
    res = PQexec(conn, "SELECT relfilenode, relforknumber, relblocknumber, reltablespace "
                       "FROM pg_buffercache WHERE relfilenode IS NOT NULL AND reldatabase IN "
                       "(0, (SELECT oid FROM pg_catalog.pg_database WHERE datname = "
                       "current_database()))");
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        /* 42501: insufficient_privilege (needs pg_monitor) */
        const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
        bool denied = state != NULL && strcmp(state, "42501") == 0;
        PQclear(res);
        if (denied) {
            *status = BUFFERCACHE_NO_PERMISSION;
            return true;
        }
        return err_set(err, "reading pg_buffercache in database \"%s\" failed", PQdb(conn));
    }
    n = PQntuples(res);
    if (n > 0)
        *out = xcalloc((size_t)n, sizeof(**out));
    for (int i = 0; i < n; i++) {
        (*out)[i].filenode = (uint32_t)strtoul(PQgetvalue(res, i, 0), NULL, 10);
        (*out)[i].fork = atoi(PQgetvalue(res, i, 1));
        (*out)[i].block = (uint32_t)strtoul(PQgetvalue(res, i, 2), NULL, 10);
        (*out)[i].tablespace = (uint32_t)strtoul(PQgetvalue(res, i, 3), NULL, 10);
    }
    *count = (size_t)n;
    *status = BUFFERCACHE_OK;
    PQclear(res);
    return true;
}

bool pg_databases(PGconn *conn, char ***names, size_t *count, pgd_error *err)
{
    PGresult *res =
        pg_relations_query(conn,
                           "SELECT datname FROM pg_catalog.pg_database WHERE datallowconn "
                           "ORDER BY datname",
                           0, NULL, err);
    int n;

    *names = NULL;
    *count = 0;
    if (res == NULL)
        return false;
    n = PQntuples(res);
    if (n > 0)
        *names = xcalloc((size_t)n, sizeof(char *));
    for (int i = 0; i < n; i++)
        (*names)[i] = xstrdup(PQgetvalue(res, i, 0));
    *count = (size_t)n;
    PQclear(res);
    return true;
}

bool pg_data_directory(PGconn *conn, char *out, size_t outlen, pgd_error *err)
{
    PGresult *res = pg_relations_query(conn,
                                       "SELECT setting FROM pg_catalog.pg_settings WHERE name = "
                                       "'data_directory'",
                                       0, NULL, err);

    if (res == NULL)
        return false;
    out[0] = '\0';
    if (PQntuples(res) == 1)
        snprintf(out, outlen, "%s", PQgetvalue(res, 0, 0));
    PQclear(res);
    return true;
}
