/*
 * relfile.c - relation data file names (see relfile.h).
 */
#include "pg/relfile.h"

#include <stdlib.h>
#include <string.h>

#define RELFILE_GLOBAL  "global/"
#define RELFILE_BASE    "base/"
#define RELFILE_TBLSPC  "pg_tblspc/"
#define RELFILE_VERSION "PG_" /* a tablespace's PG_<major>_<catversion> directory */
#define RELFILE_OID_MAX 4294967295UL

/* A decimal oid ending at a '/' (or, with last, at the end); *p moves past it. */
static bool relfile_oid(const char **p, bool last, uint32_t *out)
{
    const char *s = *p;
    char *end;
    unsigned long v;

    if (*s < '1' || *s > '9')
        return false;
    v = strtoul(s, &end, 10);
    if (v > RELFILE_OID_MAX || (last ? (*end != '\0' && *end != '_' && *end != '.') : *end != '/'))
        return false;
    *out = (uint32_t)v;
    *p = last ? end : end + 1;
    return true;
}

/* "<relfilenode>[_fsm|_vm|_init][.<segment>]" */
static bool relfile_name(const char *s, relfile *out)
{
    static const struct {
        const char *suffix;
        relfile_fork fork;
    } forks[] = {{"_fsm", RELFILE_FSM}, {"_vm", RELFILE_VM}, {"_init", RELFILE_INIT}};
    char *end;
    unsigned long seg;

    if (!relfile_oid(&s, true, &out->relfilenode))
        return false;
    out->fork = RELFILE_MAIN;
    for (size_t i = 0; *s == '_' && i < sizeof(forks) / sizeof(forks[0]); i++) {
        size_t n = strlen(forks[i].suffix);
        if (strncmp(s, forks[i].suffix, n) == 0 && (s[n] == '\0' || s[n] == '.')) {
            out->fork = forks[i].fork;
            s += n;
        }
    }
    out->segment = 0;
    if (*s == '\0')
        return true;
    if (*s != '.' || s[1] < '1' || s[1] > '9')
        return false;
    seg = strtoul(s + 1, &end, 10);
    if (*end != '\0' || seg > RELFILE_OID_MAX / PG_SEGMENT_PAGES)
        return false;
    out->segment = (uint32_t)seg;
    return true;
}

bool relfile_parse(const char *path, relfile *out)
{
    const char *p = path;

    memset(out, 0, sizeof(*out));
    if (strncmp(p, RELFILE_GLOBAL, strlen(RELFILE_GLOBAL)) == 0)
        return relfile_name(p + strlen(RELFILE_GLOBAL), out);
    if (strncmp(p, RELFILE_BASE, strlen(RELFILE_BASE)) == 0) {
        p += strlen(RELFILE_BASE);
        return relfile_oid(&p, false, &out->db_oid) && relfile_name(p, out);
    }
    if (strncmp(p, RELFILE_TBLSPC, strlen(RELFILE_TBLSPC)) == 0) {
        const char *version;
        p += strlen(RELFILE_TBLSPC);
        if (!relfile_oid(&p, false, &out->spc_oid))
            return false;
        version = p; /* PG_<major>_<catversion>/ */
        p = strchr(version, '/');
        if (p == NULL || strncmp(version, RELFILE_VERSION, strlen(RELFILE_VERSION)) != 0)
            return false;
        p++;
        return relfile_oid(&p, false, &out->db_oid) && relfile_name(p, out);
    }
    return false;
}
