/*
 * verify_record.h - what the last verify found of a backup, kept beside it for list:
 * backups/<id>/verify.json, {"time", "status", "problems", "summary"}. verify writes it (a
 * repository it may not write to costs only the record, with a warning); list shows it; the
 * backup's removal takes it along (it lives in the backup's directory).
 */
#ifndef PGD_VERIFY_RECORD_H
#define PGD_VERIFY_RECORD_H

#include <stdbool.h>
#include <stdint.h>

#include "storage/storage.h"
#include "util/error.h"

#define VERIFY_RECORD_NAME        "verify.json"
#define VERIFY_RECORD_SUMMARY_MAX 256

typedef struct verify_record {
    bool present;    /* verify has looked at this backup */
    int64_t time;    /* when, Unix seconds */
    char status[16]; /* "good", "damaged", "wal damaged" (after the stop), "timeline" */
    uint64_t problems;
    char summary[VERIFY_RECORD_SUMMARY_MAX]; /* the first problem, or "" */
} verify_record;

bool verify_record_write(storage *repo, const char *id, const verify_record *r, pgd_error *err);

/* r->present = false, and no error, when verify never wrote one (or it does not parse). */
bool verify_record_load(storage *repo, const char *id, verify_record *r, pgd_error *err);

#endif
