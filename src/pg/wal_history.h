/*
 * wal_history.h - is a complete .history or .backup file what PostgreSQL
 * wrote (wal_segment.h feeds them here; segments it checks itself).
 */
#ifndef PGD_WAL_HISTORY_H
#define PGD_WAL_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

/*
 * The timeline history file `name` of timeline name_tli, text[len] with a
 * NUL after it: one line or more, each timeline above the one before and
 * below name_tli, each with an LSN; the last line ends with a newline.
 */
bool wal_history_check(const char *name, uint32_t name_tli, const char *text, size_t len,
                       pgd_error *err);

/* The backup history file `name`: it starts with the START WAL LOCATION of its own segment. */
bool wal_backup_history_check(const char *name, const char *text, size_t len, pgd_error *err);

#endif
