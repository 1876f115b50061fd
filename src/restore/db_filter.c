/*
 * db_filter.c - the databases restore leaves out, and their relation files
 * (see db_filter.h).
 */
#include "restore/db_filter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg/relfile.h"
#include "util/xmalloc.h"

bool db_filter_always(const manifest_database *d)
{
    return d->is_template || d->oid < DB_FILTER_FIRST_NORMAL_OID;
}

static const manifest_database *db_filter_find(const manifest *m, const char *name)
{
    for (size_t i = 0; i < m->ndatabases; i++)
        if (strcmp(m->databases[i].name, name) == 0)
            return &m->databases[i];
    return NULL;
}

static bool db_filter_listed(char *const *names, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return true;
    return false;
}

/* Every name given is a database of the backup; none is both included and excluded. */
static bool db_filter_check_names(const manifest *m, const char *backup_id, char *const *include,
                                  size_t ninclude, char *const *exclude, size_t nexclude,
                                  pgd_error *err)
{
    for (size_t i = 0; i < ninclude + nexclude; i++) {
        const char *name = i < ninclude ? include[i] : exclude[i - ninclude];
        const manifest_database *d = db_filter_find(m, name);
        if (d == NULL)
            return err_set(err,
                           "database \"%s\" is not in backup %s (see its manifest.json, "
                           "\"databases\")",
                           name, backup_id);
        if (i >= ninclude && db_filter_always(d))
            return err_set(err,
                           "invalid value \"%s\" for option \"--db-exclude\": a template or "
                           "system database is always restored",
                           name);
        if (i < ninclude && db_filter_listed(exclude, nexclude, name))
            return err_set(err, "database \"%s\" is given to both --db-include and --db-exclude",
                           name);
    }
    return true;
}

static bool db_filter_is_excluded(const db_filter *f, uint32_t oid)
{
    for (size_t i = 0; i < f->nexcluded; i++)
        if (f->excluded[i]->oid == oid)
            return true;
    return false;
}

bool db_filter_plan(db_filter *f, const manifest *m, const char *backup_id, char *const *include,
                    size_t ninclude, char *const *exclude, size_t nexclude, pgd_error *err)
{
    memset(f, 0, sizeof(*f));
    if (ninclude == 0 && nexclude == 0)
        return true;
    if (!m->has_databases)
        return err_set(err,
                       "backup %s recorded no database names (an older pgdirect took it): "
                       "--db-include and --db-exclude need a backup that did; restore it whole",
                       backup_id);
    if (!db_filter_check_names(m, backup_id, include, ninclude, exclude, nexclude, err))
        return false;
    f->excluded = xcalloc(m->ndatabases ? m->ndatabases : 1, sizeof(*f->excluded));
    for (size_t i = 0; i < m->ndatabases; i++) {
        const manifest_database *d = &m->databases[i];
        if (db_filter_always(d))
            continue;
        if ((ninclude > 0 && !db_filter_listed(include, ninclude, d->name)) ||
            db_filter_listed(exclude, nexclude, d->name))
            f->excluded[f->nexcluded++] = d;
    }
    if (f->nexcluded == 0)
        return true;
    f->sparse = xcalloc(m->nfiles ? m->nfiles : 1, 1);
    for (size_t i = 0; i < m->nfiles; i++) {
        const manifest_file *mf = &m->files[i];
        relfile rf;
        if (mf->is_dir || !relfile_parse(mf->path, &rf) || rf.db_oid == 0 ||
            !db_filter_is_excluded(f, rf.db_oid))
            continue;
        f->sparse[i] = 1;
        f->nsparse++;
        f->sparse_bytes += mf->increment ? mf->file_size : mf->size;
    }
    return true;
}

void db_filter_names(const db_filter *f, char *out, size_t outlen)
{
    size_t len = 0;

    if (outlen == 0)
        return;
    out[0] = '\0';
    for (size_t i = 0; i < f->nexcluded && len < outlen; i++) {
        int n = snprintf(out + len, outlen - len, "%s\"%s\"", i ? ", " : "", f->excluded[i]->name);
        if (n < 0)
            break;
        len += (size_t)n;
    }
}

void db_filter_free(db_filter *f)
{
    free(f->excluded);
    free(f->sparse);
    memset(f, 0, sizeof(*f));
}
