/*
 * verify_result.c - the problems verify records of a backup (see verify_result.h).
 */
#define _GNU_SOURCE
#include "verify/verify_result.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/xmalloc.h"

void verify_problem(verify_result *r, const char *fmt, ...)
{
    va_list ap;

    r->damaged = true;
    r->nproblems_all++;
    if (r->nproblems >= VERIFY_PROBLEMS_MAX)
        return;
    va_start(ap, fmt);
    r->problems[r->nproblems++] = xvasprintf(fmt, ap);
    va_end(ap);
}

void verify_result_free(verify_result *r)
{
    for (size_t i = 0; i < r->nproblems; i++)
        free(r->problems[i]);
    free(r->damaged_wal_why);
    free(r->timeline_problem);
    memset(r, 0, sizeof(*r));
}

void verify_wal_memo_free(verify_wal_memo *m)
{
    for (size_t i = 0; i < m->n; i++) {
        free(m->names[i]);
        free(m->why[i]);
    }
    free(m->names);
    free(m->why);
    free(m->sysid);
    memset(m, 0, sizeof(*m));
}
