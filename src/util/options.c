/*
 * options.c - the three sources of options (command line, PGDIRECT_*
 * environment, config file) merged by precedence into one store. The
 * option table and the store are options_table.c's; the config file's
 * syntax is options_config.c's; the typed getters over the store are
 * options_value.c's; --help and the manual page are options_help.c's.
 */
#include "util/options_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/units.h"
#include "util/xmalloc.h"

static void options_add_arg(pgd_options *opts, const char *arg)
{
    opts->args = xrealloc(opts->args, (opts->nargs + 1) * sizeof(char *));
    opts->args[opts->nargs++] = (char *)arg;
}

static bool options_is_bool_word(const char *s)
{
    static const char *const words[] = {"on", "off", "true", "false", "yes", "no"};

    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (strcmp(s, words[i]) == 0)
            return true;
    return false;
}

static bool options_parse_cli(pgd_options *opts, int argc, char **argv, pgd_error *err)
{
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        const char *name, *eq, *value;
        int id;

        if (strcmp(arg, "--") == 0) {
            while (++i < argc)
                options_add_arg(opts, argv[i]);
            break;
        }
        if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0') {
            if (arg[0] == '-' && arg[1] != '\0')
                return err_set(err, "unknown option \"%s\" (see --help)", arg);
            options_add_arg(opts, arg);
            continue;
        }
        name = arg + 2;
        eq = strchr(name, '=');
        id = options_lookup(name, eq ? (size_t)(eq - name) : strlen(name));
        if (id < 0 || !(opt_defs[id].commands & opts->command))
            return err_set(err, "unknown option \"%.*s\" (see --help)",
                           (int)(eq ? (size_t)(eq - arg) : strlen(arg)), arg);
        if (eq != NULL)
            value = eq + 1;
        else if (opt_defs[id].metavar != NULL && strcmp(opt_defs[id].metavar, "on|off") == 0 &&
                 i + 1 < argc && options_is_bool_word(argv[i + 1]))
            value = argv[++i];
        else if (opt_defs[id].metavar == NULL || strcmp(opt_defs[id].metavar, "on|off") == 0)
            value = "on";
        else if (i + 1 < argc)
            value = argv[++i];
        else
            return err_set(err, "option \"--%s\" needs a value (%s)", opt_defs[id].name,
                           opt_defs[id].metavar);
        options_store(opts, id, value, SRC_CLI);
    }
    return true;
}

static void options_env_name(const char *opt, char *out, size_t outlen)
{
    size_t n = (size_t)snprintf(out, outlen, "PGDIRECT_");

    for (; *opt != '\0' && n + 1 < outlen; opt++)
        out[n++] = *opt == '-' ? '_' : (char)toupper((unsigned char)*opt);
    out[n] = '\0';
}

static void options_parse_env(pgd_options *opts)
{
    char name[128];

    for (int id = 0; id < OPT_COUNT; id++) {
        const char *value;

        if (opts->v[id].nvalues > 0 || id == OPT_HELP)
            continue;
        options_env_name(opt_defs[id].name, name, sizeof(name));
        value = getenv(name);
        if (value == NULL)
            continue;
        if (!opt_defs[id].repeatable) {
            options_store(opts, id, value, SRC_ENV);
            continue;
        }
        /* a repeatable option's variable holds its values one per line */
        for (const char *p = value, *nl;; p = nl + 1) {
            nl = strchr(p, '\n');
            if (nl == NULL) {
                options_store(opts, id, p, SRC_ENV);
                break;
            }
            char *one = xstrndup(p, (size_t)(nl - p));
            options_store(opts, id, one, SRC_ENV);
            free(one);
        }
    }
}

/*
 * A value that starts or ends with white space is malformed wherever it
 * comes from: " 4" would pass strtol() while "4 " would not, and " lz4"
 * would fail only later as an unknown word. One rule for every option and
 * every source; the config file's "name = value" spacing is gone by now.
 */
static bool options_check_spacing(const pgd_options *opts, pgd_error *err)
{
    for (int id = 0; id < OPT_COUNT; id++) {
        const opt_value *v = &opts->v[id];

        if (!(opt_defs[id].commands & opts->command))
            continue;
        for (size_t i = 0; i < v->nvalues; i++) {
            const char *s = v->values[i];
            size_t len = strlen(s);
            if (len > 0 && (isspace((unsigned char)s[0]) || isspace((unsigned char)s[len - 1])))
                return err_set(err,
                               "invalid value \"%s\" for option \"--%s\"%s: leading or trailing "
                               "white space",
                               s, opt_defs[id].name, options_source_name(v->source));
        }
    }
    return true;
}

bool options_parse(pgd_options *opts, unsigned command, int argc, char **argv, pgd_error *err)
{
    memset(opts, 0, sizeof(*opts));
    opts->command = command;
    if (!options_parse_cli(opts, argc, argv, err))
        return false;
    if (opt_is_set(opts, OPT_HELP))
        return true;
    options_parse_env(opts);
    /* before the config file is opened: its path may be the malformed value */
    if (!options_check_spacing(opts, err) || !options_config_parse(opts, err) ||
        !options_check_spacing(opts, err))
        return false;
    for (int id = 0; id < OPT_COUNT; id++)
        if (opts->v[id].nvalues == 0 && opt_defs[id].def != NULL)
            options_store(opts, id, opt_defs[id].def, SRC_DEFAULT);
    return true;
}

void options_free(pgd_options *opts)
{
    for (int id = 0; id < OPT_COUNT; id++) {
        for (size_t i = 0; i < opts->v[id].nvalues; i++)
            free(opts->v[id].values[i]);
        free(opts->v[id].values);
    }
    free(opts->args);
    memset(opts, 0, sizeof(*opts));
}
