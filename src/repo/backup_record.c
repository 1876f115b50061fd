/*
 * backup_record.c - a small JSON object kept beside a backup (backup_record.h).
 */
#include "repo/backup_record.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "repo/layout.h"

bool backup_record_put(storage *repo, const char *id, const char *name, void *json,
                       const char *what, pgd_error *err)
{
    char path[LAYOUT_PATH_MAX], *text;
    json_t *o = json;
    bool ok;

    text = o != NULL ? json_dumps(o, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    if (text == NULL)
        return err_set(err, "could not serialise the %s of backup %s", what, id);
    layout_backup_object(id, name, path, sizeof(path));
    ok = storage_put(repo, path, text, strlen(text), 0, err);
    free(text);
    return ok;
}

bool backup_record_get(storage *repo, const char *id, const char *name, void **json, pgd_error *err)
{
    char path[LAYOUT_PATH_MAX], *text;
    bool missing = false;
    size_t len;

    *json = NULL;
    layout_backup_object(id, name, path, sizeof(path));
    if (!storage_get(repo, path, &text, &len, &missing, err)) {
        if (!missing)
            return false;
        err_clear(err);
        return true;
    }
    *json = json_loads(text, 0, NULL);
    free(text);
    return true;
}
