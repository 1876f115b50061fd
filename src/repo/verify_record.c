/*
 * verify_record.c - the last verify's verdict on a backup (see verify_record.h).
 */
#include "repo/verify_record.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "repo/backup_record.h"

bool verify_record_write(storage *repo, const char *id, const verify_record *r, pgd_error *err)
{
    json_t *o = json_pack("{s:I, s:s, s:I, s:s}", "time", (json_int_t)r->time, "status", r->status,
                          "problems", (json_int_t)r->problems, "summary", r->summary);

    return backup_record_put(repo, id, VERIFY_RECORD_NAME, o, "verify record", err);
}

bool verify_record_load(storage *repo, const char *id, verify_record *r, pgd_error *err)
{
    const char *status, *summary;
    json_int_t time, problems;
    void *json;
    json_t *o;

    memset(r, 0, sizeof(*r));
    if (!backup_record_get(repo, id, VERIFY_RECORD_NAME, &json, err))
        return false;
    o = json;
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
