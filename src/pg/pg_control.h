/*
 * pg_control.h - a cluster's identity as pgdirect keeps it: the system
 * identifier, which initdb draws once and every WAL segment, pg_control
 * and backup of the cluster carries.
 *
 * pgdirect keeps it as the text PostgreSQL prints (pg_control_system(),
 * pg_controldata): a uint64 in decimal. A header of facts, without libpq.
 */
#ifndef PGD_PG_CONTROL_H
#define PGD_PG_CONTROL_H

/* "18446744073709551615": 20 digits and a terminator, with room */
#define PG_SYSID_TEXT_MAX 24

#endif
