/*
 * relations.h - what `pgdirect cache` asks PostgreSQL: the relations of a
 * database with their files, and (from pg_buffercache, when installed and
 * readable) which of their blocks are in shared_buffers.
 */
#ifndef PGD_RELATIONS_H
#define PGD_RELATIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pg/pq_api.h"
#include "util/error.h"

typedef struct pg_relation {
    const char *name;     /* schema.relation */
    const char *kind;     /* table, index, toast, matview, sequence */
    const char *filepath; /* as pg_relation_filepath() gives it: relative to PGDATA */
    uint32_t filenode;
    bool shared;         /* a shared catalog (same in every database) */
    uint32_t tablespace; /* pg_class.reltablespace: 0 for the database's default */
    /*
     * The tablespace's OID, the database's for 0, as pg_buffercache names it: a relfilenode is
     * unique only within one tablespace of a database (PostgreSQL checks for a clash in the
     * relation's own tablespace only), so buffers are matched on both.
     */
    uint32_t tablespace_oid;
} pg_relation;

/*
 * A database's relations. Their text points into the query's result, which the list owns (one
 * allocation for 100,000 relations, not a copy of every name), until pg_relation_list_free.
 */
typedef struct pg_relation_list {
    pg_relation *rels;
    size_t n;
    PGresult *res;
} pg_relation_list;

/* Relations with storage; `like` (SQL LIKE on the relation name) may be NULL. */
bool pg_relations_list(PGconn *conn, const char *like, pg_relation_list *out, pgd_error *err);
void pg_relation_list_free(pg_relation_list *l);

typedef struct pg_buffer {
    uint32_t filenode;
    int fork; /* 0 main, 1 fsm, 2 vm, 3 init */
    uint32_t block;
    uint32_t tablespace; /* reltablespace: its OID, never 0 (1664, pg_global: a shared catalog) */
} pg_buffer;

typedef enum {
    BUFFERCACHE_OK,
    BUFFERCACHE_NOT_INSTALLED,
    BUFFERCACHE_NO_PERMISSION,
} buffercache_status;

/* Buffers of the current database and of shared catalogs. */
bool pg_buffercache_read(PGconn *conn, pg_buffer **out, size_t *count, buffercache_status *status,
                         pgd_error *err);

/* Connect to database `dbname` (NULL: the conninfo's), keeping the rest of conninfo. */
PGconn *pg_connect_db(const char *conninfo, const char *dbname, pgd_error *err);

bool pg_databases(PGconn *conn, char ***names, size_t *count, pgd_error *err);
bool pg_data_directory(PGconn *conn, char *out, size_t outlen, pgd_error *err);

#endif
