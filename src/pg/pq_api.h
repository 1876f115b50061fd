/*
 * pq_api.h - libpq, opened when a command first connects to a server
 * (see util/shared_lib.h for why it is not linked at build time).
 *
 * Code includes this header instead of <libpq-fe.h> and calls PQexec and
 * the rest by their usual names: each name below is a slot of a table that
 * pq_api_load fills from the library. pq_api_load comes first, once per
 * process (pg_session_open and pg_connect_db call it before connecting);
 * every other PQ call needs a connection, so it follows.
 */
#ifndef PGD_PQ_API_H
#define PGD_PQ_API_H

#include "util/error.h"

#include <libpq-fe.h>
#include <stdbool.h>

/* every libpq function pgdirect calls */
#define PQ_API_FUNCTIONS(X)                                                                        \
    X(PQcancel)                                                                                    \
    X(PQclear)                                                                                     \
    X(PQconnectdbParams)                                                                           \
    X(PQdb)                                                                                        \
    X(PQerrorMessage)                                                                              \
    X(PQexec)                                                                                      \
    X(PQexecParams)                                                                                \
    X(PQfinish)                                                                                    \
    X(PQfreeCancel)                                                                                \
    X(PQftype)                                                                                     \
    X(PQgetCancel)                                                                                 \
    X(PQgetResult)                                                                                 \
    X(PQgetisnull)                                                                                 \
    X(PQgetvalue)                                                                                  \
    X(PQnfields)                                                                                   \
    X(PQntuples)                                                                                   \
    X(PQparameterStatus)                                                                           \
    X(PQresultErrorField)                                                                          \
    X(PQresultErrorMessage)                                                                        \
    X(PQresultStatus)                                                                              \
    X(PQsendQueryParams)                                                                           \
    X(PQserverVersion)                                                                             \
    X(PQsetClientEncoding)                                                                         \
    X(PQsetNoticeReceiver)                                                                         \
    X(PQsetSingleRowMode)                                                                          \
    X(PQstatus)

struct pq_api {
#define PQ_API_SLOT(name) __typeof__(name) *name;
    PQ_API_FUNCTIONS(PQ_API_SLOT)
#undef PQ_API_SLOT
};

extern struct pq_api pq_api;

/* Open libpq and resolve the table; false with err naming the library and the function. */
bool pq_api_load(pgd_error *err);

#ifndef PQ_API_DEFINE_TABLE
#define PQcancel             pq_api.PQcancel
#define PQclear              pq_api.PQclear
#define PQconnectdbParams    pq_api.PQconnectdbParams
#define PQdb                 pq_api.PQdb
#define PQerrorMessage       pq_api.PQerrorMessage
#define PQexec               pq_api.PQexec
#define PQexecParams         pq_api.PQexecParams
#define PQfinish             pq_api.PQfinish
#define PQfreeCancel         pq_api.PQfreeCancel
#define PQftype              pq_api.PQftype
#define PQgetCancel          pq_api.PQgetCancel
#define PQgetResult          pq_api.PQgetResult
#define PQgetisnull          pq_api.PQgetisnull
#define PQgetvalue           pq_api.PQgetvalue
#define PQnfields            pq_api.PQnfields
#define PQntuples            pq_api.PQntuples
#define PQparameterStatus    pq_api.PQparameterStatus
#define PQresultErrorField   pq_api.PQresultErrorField
#define PQresultErrorMessage pq_api.PQresultErrorMessage
#define PQresultStatus       pq_api.PQresultStatus
#define PQsendQueryParams    pq_api.PQsendQueryParams
#define PQserverVersion      pq_api.PQserverVersion
#define PQsetClientEncoding  pq_api.PQsetClientEncoding
#define PQsetNoticeReceiver  pq_api.PQsetNoticeReceiver
#define PQsetSingleRowMode   pq_api.PQsetSingleRowMode
#define PQstatus             pq_api.PQstatus
#endif

#endif
