/*
 * drill_record.c - the last drill's verdict of a backup (drill_record.h).
 */
#include "repo/drill_record.h"

#include <jansson.h>
#include <string.h>

#include "repo/backup_record.h"

bool drill_record_write(storage *repo, const char *id, const drill_record *r, pgd_error *err)
{
    json_t *o = json_pack("{s:I, s:b, s:I, s:f, s:f, s:f}", "time", (json_int_t)r->time, "ok",
                          r->ok, "problems", (json_int_t)r->problems, "restore_seconds",
                          r->restore_seconds, "replay_seconds", r->replay_seconds,
                          "time_to_consistency_seconds", r->time_to_consistency_seconds);

    return backup_record_put(repo, id, DRILL_RECORD_NAME, o, "drill record", err);
}

bool drill_record_load(storage *repo, const char *id, drill_record *r, pgd_error *err)
{
    json_int_t time, problems;
    double restore, replay, consistent;
    int ok;
    void *json;
    json_t *o;

    memset(r, 0, sizeof(*r));
    if (!backup_record_get(repo, id, DRILL_RECORD_NAME, &json, err))
        return false;
    o = json;
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
