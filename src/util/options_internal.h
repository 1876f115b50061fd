/*
 * options_internal.h - what the files of the option module share: the
 * option table and its store (options.c) that the config file's reader
 * (options_config.c), the typed getters (options_value.c) and the help and
 * manual page (options_help.c) use. The interface is options.h.
 */
#ifndef PGD_OPTIONS_INTERNAL_H
#define PGD_OPTIONS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

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
     CMD_VERIFY | CMD_KEY | CMD_CAT | CMD_DRILL | CMD_METRICS | CMD_ANNOTATE)

#define OPTIONS_DEFAULT_CONFIG_PATH "/etc/pgdirect.conf"

/* One entry per option, indexed by opt_id (options.c). */
extern const opt_def opt_defs[OPT_COUNT];

/* The option called `name` (len bytes of it), or -1. */
int options_lookup(const char *name, size_t len);

/* Add a value from `src`; a value from a stronger source is kept instead. */
void options_store(pgd_options *opts, int id, const char *value, opt_source src);

/* Read the config file (--config, else the default one if it exists) into opts. */
bool options_config_parse(pgd_options *opts, pgd_error *err);

/* Where a value came from, for messages: "" (command line), " (from the environment)", ... */
const char *options_source_name(opt_source src);

#endif
