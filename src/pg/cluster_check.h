/*
 * cluster_check.h - what a restore drill asks of the running scratch server (scratch_server.h):
 * its identity and how far it replayed, amcheck over every relation of every database, and the
 * DBA's own statements. What is wrong with the data is a problem (a verdict, collected and
 * named); a check that could not run is an error.
 *
 * amcheck: verify_heapam on every table, materialized view and TOAST table, and bt_index_check
 * with heapallindexed on every valid B-tree index, in each database that accepts connections:
 * the checks of `pg_amcheck --heapallindexed`, run over the drill's own connection so that the
 * relations and pages checked are counted, whatever client tools are installed. The extension
 * is created in the scratch cluster where it is missing; where it is not installed at all the
 * check is skipped, and said so.
 */
#ifndef PGD_CLUSTER_CHECK_H
#define PGD_CLUSTER_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pg/pg_control.h"
#include "pg/scratch_server.h"
#include "util/error.h"

typedef struct cluster_problems {
    char **text; /* one line each, naming the relation, file or statement */
    size_t n;
} cluster_problems;

void cluster_problems_add(cluster_problems *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void cluster_problems_free(cluster_problems *p);

typedef struct cluster_facts {
    char system_identifier[PG_SYSID_TEXT_MAX];
    uint64_t replay_lsn; /* pg_last_wal_replay_lsn(): the last record recovery applied */
    bool data_checksums;
    int server_version_num;
} cluster_facts;

bool cluster_check_facts(PGconn *conn, cluster_facts *f, pgd_error *err);

typedef struct cluster_amcheck {
    bool skipped; /* amcheck is not installed for this server */
    char why[256];
    uint64_t relations, pages;
} cluster_amcheck;

bool cluster_check_amcheck(const scratch_server *s, cluster_amcheck *a, cluster_problems *p,
                           pgd_error *err);

/*
 * The statements of `text` (read from file `path`; each ends with ';' at the end of a line;
 * lines starting with "--" are comments), each run in database postgres: it holds when it
 * returns a row whose first column is not false. *count gets how many ran.
 */
bool cluster_check_sql(PGconn *conn, const char *text, const char *path, size_t *count,
                       cluster_problems *p, pgd_error *err);

#endif
