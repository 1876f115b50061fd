/*
 * drill_record.c - the last drill's verdict of a backup (drill_record.h).
 */
#include "repo/drill_record.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "repo/layout.h"

bool drill_record_write(storage *repo, const char *id, const drill_record *r, pgd_error *err)
{
    char path[LAYOUT_PATH_MAX], *text;
    json_t *o = json_pack("{s:I, s:b, s:I, s:f, s:f, s:f}", "time", (json_int_t)r->time, "ok",
                          r->ok, "problems", (json_int_t)r->problems, "restore_seconds",
                          r->restore_seconds, "replay_seconds", r->replay_seconds,
                          "time_to_consistency_seconds", r->time_to_consistency_seconds);
    bool ok;

    text = o != NULL ? json_dumps(o, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    if (text == NULL)
        return err_set(err, "could not serialise the drill record of backup %s", id);
    layout_backup_object(id, DRILL_RECORD_NAME, path, sizeof(path));
    ok = storage_put(repo, path, text, strlen(text), 0, err);
    free(text);
    return ok;
}

bool drill_record_load(storage *repo, const char *id, drill_record *r, pgd_error *err)
{
    char path[LAYOUT_PATH_MAX], *text;
    json_int_t time, problems;
    double restore, replay, consistent;
    bool missing = false;
    int ok;
    size_t len;
    json_t *o;

    memset(r, 0, sizeof(*r));
    layout_backup_object(id, DRILL_RECORD_NAME, path, sizeof(path));
    if (!storage_get(repo, path, &text, &len, &missing, err)) {
        if (!missing)
            return false;
        err_clear(err);
        return true;
    }
    o = json_loads(text, 0, NULL);
    free(text);
    if (o != NULL &&
        json_unpack(o, "{s:I, s:b, s:I, s:F, s:F, s:F}", "time", &time, "ok", &ok, "problems",
                    &problems, "restore_seconds", &restore, "replay_seconds", &replay,
                    "time_to_consistency_seconds", &consistent) == 0) {
        r->present = true;
        r->time = time;
        r->ok = ok != 0;
        r->problems = problems > 0 ? (uint64_t)problems : 0;
        r->restore_seconds = restore;
        r->replay_seconds = replay;
        r->time_to_consistency_seconds = consistent;
    }
    json_decref(o);
    return true;
}
