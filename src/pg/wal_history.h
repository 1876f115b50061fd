/*
 * wal_history.h - is a complete .history or .backup file what PostgreSQL
 * wrote (wal_segment.h feeds them here; segments it checks itself).
 */
#ifndef PGD_WAL_HISTORY_H
#define PGD_WAL_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pg/lsn.h"
#include "util/error.h"

/*
 * The timeline history file `name` of timeline name_tli, text[len] with a
 * NUL after it: one line or more, each timeline above the one before and
 * below name_tli, each with an LSN; the last line ends with a newline.
 */
bool wal_history_check(const char *name, uint32_t name_tli, const char *text, size_t len,
                       pgd_error *err);

/* A line of a timeline history file: timeline `tli` ended at `end`, where its child began. */
typedef struct wal_history_entry {
    uint32_t tli;
    pg_lsn end;
} wal_history_entry;

/*
 * The lines of a timeline history file that passed wal_history_check, in
 * file order (oldest ancestor first) into *entries (malloc'd, *n of them).
 * A failed allocation ends the process (util/xmalloc.h).
 */
void wal_history_parse(const char *text, size_t len, wal_history_entry **entries, size_t *n);

/* The backup history file `name`: it starts with the START WAL LOCATION of its own segment. */
bool wal_backup_history_check(const char *name, const char *text, size_t len, pgd_error *err);

/*
 * "START TIMELINE: 1" of a backup_label (or of a backup history file, which
 * PostgreSQL writes from it): false when there is no such line with a
 * timeline.
 */
bool wal_history_label_timeline(const char *labelfile, uint32_t *tli);

#endif
