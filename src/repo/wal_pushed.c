/*
 * wal_pushed.c - when WAL last reached the archive (wal_pushed.h).
 */
#include "repo/wal_pushed.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool wal_pushed_write(storage *repo, const wal_pushed *r, pgd_error *err)
{
    json_t *o =
        json_pack("{s:I, s:s, s:I, s:I}", "time", (json_int_t)r->time, "segment", r->segment,
                  "segment_size", (json_int_t)r->segment_size, "backlog", (json_int_t)r->backlog);
    char *text = o != NULL ? json_dumps(o, JSON_COMPACT) : NULL;
    bool ok;

    json_decref(o);
    if (text == NULL)
        return err_set(err, "could not serialise object \"%s\"", WAL_PUSHED_PATH);
    ok = storage_put(repo, WAL_PUSHED_PATH, text, strlen(text), 0, err);
    free(text);
    if (!ok)
        err_prefix(err, "could not record the push in \"%s\"", WAL_PUSHED_PATH);
    return ok;
}

bool wal_pushed_load(storage *repo, wal_pushed *r, pgd_error *err)
{
    json_int_t time, size, backlog;
    const char *segment;
    bool missing = false;
    char *text;
    size_t len;
    json_t *o;

    memset(r, 0, sizeof(*r));
    r->backlog = -1;
    if (!storage_get(repo, WAL_PUSHED_PATH, &text, &len, &missing, err)) {
        if (!missing)
            return false;
        err_clear(err);
        return true;
    }
    o = json_loadb(text, len, 0, NULL);
    free(text);
    if (o != NULL &&
        json_unpack(o, "{s:I, s:s, s:I, s:I}", "time", &time, "segment", &segment, "segment_size",
                    &size, "backlog", &backlog) == 0 &&
        time > 0 && size > 0 && backlog >= -1 && wal_name_is_wal_file(segment) &&
        strlen(segment) < sizeof(r->segment)) {
        r->present = true;
        r->time = time;
        snprintf(r->segment, sizeof(r->segment), "%s", segment);
        r->segment_size = (uint64_t)size;
        r->backlog = backlog;
    }
    json_decref(o);
    return true;
}

bool wal_pushed_end(const wal_pushed *r, uint32_t *tli, pg_lsn *end)
{
    uint64_t segno;

    if (!r->present || !wal_name_seg_size_valid(r->segment_size) ||
        wal_name_kind(r->segment) != WAL_FILE_SEGMENT ||
        !wal_name_parse(r->segment, r->segment_size, tli, &segno))
        return false;
    *end = (segno + 1) * r->segment_size;
    return true;
}
