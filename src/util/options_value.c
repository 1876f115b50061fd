/*
 * options_value.c - the typed getters over the option store (options.h):
 * strings, integers, booleans, sizes, enumerations, durations and points in
 * time, each refusing a bad value with a message that names the option and
 * where the value came from.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/options_internal.h"
#include "util/units.h"

const char *opt_str(const pgd_options *opts, opt_id id)
{
    return opts->v[id].nvalues > 0 ? opts->v[id].values[opts->v[id].nvalues - 1] : NULL;
}

bool opt_is_set(const pgd_options *opts, opt_id id)
{
    return opts->v[id].nvalues > 0 && opts->v[id].source != SRC_DEFAULT;
}

bool opt_applies(const pgd_options *opts, opt_id id)
{
    return (opt_defs[id].commands & opts->command) != 0;
}

const char *opt_source_note(const pgd_options *opts, opt_id id)
{
    return options_source_name(opts->v[id].source);
}

const char *options_source_name(opt_source src)
{
    switch (src) {
    case SRC_CLI:
        return "";
    case SRC_ENV:
        return " (from the environment)";
    case SRC_CONFIG:
        return " (from the config file)";
    default:
        return " (default)";
    }
}

bool opt_int(const pgd_options *opts, opt_id id, long min, long max, long *out, pgd_error *err)
{
    const char *s = opt_str(opts, id);
    char *end;
    long v;

    if (s == NULL)
        return err_set(err, "option \"--%s\" is required", opt_defs[id].name);
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < min || v > max)
        return err_set(err,
                       "invalid value \"%s\" for option \"--%s\"%s: expected an integer from "
                       "%ld to %ld",
                       s, opt_defs[id].name, options_source_name(opts->v[id].source), min, max);
    *out = v;
    return true;
}

bool opt_bool(const pgd_options *opts, opt_id id, bool *out, pgd_error *err)
{
    int idx;

    if (!opt_enum(opts, id, "off|on|false|true|no|yes|0|1", &idx, err))
        return false;
    *out = (idx % 2) == 1;
    return true;
}

bool opt_size(const pgd_options *opts, opt_id id, uint64_t min, uint64_t max, uint64_t *out,
              pgd_error *err)
{
    const char *s = opt_str(opts, id);
    uint64_t v;

    if (s == NULL)
        return err_set(err, "option \"--%s\" is required", opt_defs[id].name);
    if (!units_parse_size(s, &v) || v < min || v > max)
        return err_set(err,
                       "invalid value \"%s\" for option \"--%s\"%s: expected a size from "
                       "%llu to %llu bytes (suffixes KiB, MiB, GiB)",
                       s, opt_defs[id].name, options_source_name(opts->v[id].source),
                       (unsigned long long)min, (unsigned long long)max);
    *out = v;
    return true;
}

bool opt_enum(const pgd_options *opts, opt_id id, const char *choices, int *out, pgd_error *err)
{
    const char *s = opt_str(opts, id);
    const char *p = choices;
    int idx = 0;

    if (s == NULL)
        return err_set(err, "option \"--%s\" is required", opt_defs[id].name);
    while (*p != '\0') {
        size_t len = strcspn(p, "|");
        if (strlen(s) == len && strncmp(s, p, len) == 0) {
            *out = idx;
            return true;
        }
        p += len;
        if (*p == '|')
            p++;
        idx++;
    }
    return err_set(err, "invalid value \"%s\" for option \"--%s\"%s: expected one of %s", s,
                   opt_defs[id].name, options_source_name(opts->v[id].source),
                   opt_defs[id].metavar ? opt_defs[id].metavar : choices);
}

/* ---- durations and points in time ---- */

#define SECONDS_PER_MINUTE 60
#define SECONDS_PER_HOUR   (60 * SECONDS_PER_MINUTE)
#define SECONDS_PER_DAY    (24 * SECONDS_PER_HOUR)
#define SECONDS_PER_WEEK   (7 * SECONDS_PER_DAY)

bool parse_duration(const char *text, int64_t *seconds)
{
    static const struct {
        const char *suffix;
        int64_t mult;
    } units[] = {{"", 1},
                 {"s", 1},
                 {"m", SECONDS_PER_MINUTE},
                 {"min", SECONDS_PER_MINUTE},
                 {"h", SECONDS_PER_HOUR},
                 {"d", SECONDS_PER_DAY},
                 {"w", SECONDS_PER_WEEK}};
    char *end;
    long long v;

    if (text == NULL || !isdigit((unsigned char)text[0]))
        return false;
    errno = 0;
    v = strtoll(text, &end, 10);
    if (errno != 0)
        return false;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcmp(end, units[i].suffix) == 0) {
            if (v > INT64_MAX / units[i].mult)
                return false;
            *seconds = (int64_t)v * units[i].mult;
            return true;
        }
    }
    return false;
}

bool opt_duration(const pgd_options *opts, opt_id id, int64_t min, int64_t max, int64_t *out,
                  pgd_error *err)
{
    const char *s = opt_str(opts, id);
    int64_t v;

    if (s == NULL)
        return err_set(err, "option \"--%s\" is required", opt_defs[id].name);
    if (!parse_duration(s, &v) || v < min || v > max)
        return err_set(err,
                       "invalid value \"%s\" for option \"--%s\"%s: expected a duration from "
                       "%lld to %lld seconds (suffixes s, m, h, d, w)",
                       s, opt_defs[id].name, options_source_name(opts->v[id].source),
                       (long long)min, (long long)max);
    *out = v;
    return true;
}

/* Exactly `n` digits at *p -> value; advances *p. */
static bool options_value_digits(const char **p, int n, int *value)
{
    *value = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)(*p)[i]))
            return false;
        *value = *value * 10 + ((*p)[i] - '0');
    }
    *p += n;
    return true;
}

/* "Z", "UTC", "+HH", "+HH:MM" or "+HHMM" (after an optional space) -> seconds east of UTC. */
static bool options_value_zone(const char *p, int64_t *east)
{
    int hours, minutes = 0, sign;

    if (*p == ' ')
        p++;
    if (strcmp(p, "Z") == 0 || strcmp(p, "UTC") == 0) {
        *east = 0;
        return true;
    }
    if (*p != '+' && *p != '-')
        return false;
    sign = *p++ == '-' ? -1 : 1;
    if (!options_value_digits(&p, 2, &hours))
        return false;
    if (*p == ':')
        p++;
    if (*p != '\0' && !options_value_digits(&p, 2, &minutes))
        return false;
    if (*p != '\0' || hours > 23 || minutes > 59)
        return false;
    *east = sign * ((int64_t)hours * SECONDS_PER_HOUR + (int64_t)minutes * SECONDS_PER_MINUTE);
    return true;
}

/* "YYYY-MM-DD[ T]HH:MM[:SS[.fraction]]ZONE" -> Unix seconds (the fraction dropped). */
static bool options_value_timestamp(const char *text, int64_t *out)
{
    const char *p = text;
    int year, month, day, hour, minute, second = 0;
    struct tm tm;
    int64_t east;
    time_t t;

    if (!options_value_digits(&p, 4, &year) || *p++ != '-' ||
        !options_value_digits(&p, 2, &month) || *p++ != '-' || !options_value_digits(&p, 2, &day) ||
        (*p != ' ' && *p != 'T'))
        return false;
    p++;
    if (!options_value_digits(&p, 2, &hour) || *p++ != ':' || !options_value_digits(&p, 2, &minute))
        return false;
    if (*p == ':') {
        p++;
        if (!options_value_digits(&p, 2, &second))
            return false;
        if (*p == '.')
            for (p++; isdigit((unsigned char)*p); p++)
                ;
    }
    if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60 ||
        !options_value_zone(p, &east))
        return false;
    memset(&tm, 0, sizeof(tm));
    tm.tm_year = year - 1900;
    tm.tm_mon = month - 1;
    tm.tm_mday = day;
    tm.tm_hour = hour;
    tm.tm_min = minute;
    tm.tm_sec = second;
    t = timegm(&tm);
    if (tm.tm_mday != day) /* timegm normalised an impossible date such as 02-30 */
        return false;
    *out = (int64_t)t - east;
    return true;
}

bool opt_point_in_time(const pgd_options *opts, opt_id id, int64_t now, int64_t *out,
                       pgd_error *err)
{
    const char *s = opt_str(opts, id);
    int64_t ago;

    if (s == NULL)
        return err_set(err, "option \"--%s\" is required", opt_defs[id].name);
    if (parse_duration(s, &ago)) {
        *out = now - ago;
        return true;
    }
    if (options_value_timestamp(s, out))
        return true;
    return err_set(err,
                   "invalid value \"%s\" for option \"--%s\"%s: expected an age such as 14d or "
                   "a date and time with a zone such as \"2026-11-29 21:00:00+00\" (a time "
                   "without a zone is refused: whose clock would it be?)",
                   s, opt_defs[id].name, options_source_name(opts->v[id].source));
}
