/*
 * backup_record.h - a small JSON object kept beside a backup (backups/<id>/NAME): the records
 * of the last verify (verify_record.h) and the last drill (drill_record.h). Written whole with
 * one storage_put; read back as a jansson object, absent being no error.
 */
#ifndef PGD_BACKUP_RECORD_H
#define PGD_BACKUP_RECORD_H

#include <stdbool.h>

#include "storage/storage.h"
#include "util/error.h"

/*
 * Store `json` (a json_t *, its reference taken over; NULL: it could not be made) as object
 * NAME of backup `id`; `what` names the record in the message ("drill record").
 */
bool backup_record_put(storage *repo, const char *id, const char *name, void *json,
                       const char *what, pgd_error *err);

/*
 * Object NAME of backup `id`, parsed: *json (a json_t *, the caller's to release) is NULL when
 * the object is absent or is not JSON. False only when it could not be read.
 */
bool backup_record_get(storage *repo, const char *id, const char *name, void **json,
                       pgd_error *err);

#endif
