/*
 * options_internal.h - what the files of the option module share: the
 * option table (options.c) that the typed getters (options_value.c) and
 * the help and manual page (options_help.c) read. The interface is
 * options.h.
 */
#ifndef PGD_OPTIONS_INTERNAL_H
#define PGD_OPTIONS_INTERNAL_H

#include <stdbool.h>

#include "util/options.h"

typedef struct opt_def {
    const char *name;
    const char *metavar; /* NULL: a switch, given alone or as --name=on|off */
    const char *def;     /* default value, NULL for none */
    unsigned commands;
    bool repeatable;
    const char *help;
} opt_def;

#define CMD_REPO_USERS                                                                             \
    (CMD_BACKUP | CMD_RESTORE | CMD_LIST | CMD_WAL_PUSH | CMD_WAL_FETCH | CMD_CHECK | CMD_DELETE | \
     CMD_VERIFY)

/* One entry per option, indexed by opt_id (options.c). */
extern const opt_def opt_defs[OPT_COUNT];

/* Where a value came from, for messages: "" (command line), " (from the environment)", ... */
const char *options_source_name(opt_source src);

#endif
