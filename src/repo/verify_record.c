/*
 * verify_record.c - the last verify's verdict on a backup (see verify_record.h).
 */
#include "repo/verify_record.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "repo/layout.h"

bool verify_record_write(storage *repo, const char *id, const verify_record *r, pgd_error *err)
{
    char path[LAYOUT_PATH_MAX], *text;
    json_t *o = json_pack("{s:I, s:s, s:I, s:s}", "time", (json_int_t)r->time, "status", r->status,
                          "problems", (json_int_t)r->problems, "summary", r->summary);
    bool ok;

    text = o != NULL ? json_dumps(o, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    if (text == NULL)
        return err_set(err, "could not serialise the verify record of backup %s", id);
    layout_backup_object(id, VERIFY_RECORD_NAME, path, sizeof(path));
    ok = storage_put(repo, path, text, strlen(text), 0, err);
    free(text);
    return ok;
}

bool verify_record_load(storage *repo, const char *id, verify_record *r, pgd_error *err)
{
    char path[LAYOUT_PATH_MAX], *text;
    const char *status, *summary;
    json_int_t time, problems;
    bool missing = false;
    size_t len;
    json_t *o;

    memset(r, 0, sizeof(*r));
    layout_backup_object(id, VERIFY_RECORD_NAME, path, sizeof(path));
    if (!storage_get(repo, path, &text, &len, &missing, err)) {
        if (!missing)
            return false;
        err_clear(err);
        return true;
    }
    o = json_loads(text, 0, NULL);
    free(text);
    if (o != NULL && json_unpack(o, "{s:I, s:s, s:I, s:s}", "time", &time, "status", &status,
                                 "problems", &problems, "summary", &summary) == 0) {
        r->present = true;
        r->time = time;
        snprintf(r->status, sizeof(r->status), "%s", status);
        r->problems = problems > 0 ? (uint64_t)problems : 0;
        snprintf(r->summary, sizeof(r->summary), "%s", summary);
    }
    json_decref(o);
    return true;
}
