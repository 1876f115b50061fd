/*
 * drill_record.h - what the last restore drill found of a backup, kept beside it for metrics:
 * backups/<id>/drill.json, {"time", "ok", "problems", "restore_seconds", "replay_seconds",
 * "time_to_consistency_seconds"}. drill writes it (a repository it may not write to costs only
 * the record, with a warning); the backup's removal takes it along.
 */
#ifndef PGD_DRILL_RECORD_H
#define PGD_DRILL_RECORD_H

#include <stdbool.h>
#include <stdint.h>

#include "storage/storage.h"
#include "util/error.h"

#define DRILL_RECORD_NAME "drill.json"

typedef struct drill_record {
    bool present;
    int64_t time; /* when the drill ended, Unix seconds */
    bool ok;      /* everything held */
    uint64_t problems;
    double restore_seconds, replay_seconds, time_to_consistency_seconds;
} drill_record;

bool drill_record_write(storage *repo, const char *id, const drill_record *r, pgd_error *err);

/* r->present = false, and no error, when no drill wrote one (or it does not parse). */
bool drill_record_load(storage *repo, const char *id, drill_record *r, pgd_error *err);

#endif
