/*
 * recovery_target.c - recovery targets checked before a restore writes
 * anything (see recovery_target.h for what is accepted and why).
 */
#include "restore/recovery_target.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "util/text.h"

#define TZ_DIR_DEFAULT         "/usr/share/zoneinfo"
#define TZ_NAME_MAX            255
#define TZ_OFFSET_HOUR_MAX     15 /* PostgreSQL's MAX_TZDISP_HOUR */
#define FRACTION_DIGITS_MAX    9
#define LSN_PART_DIGITS_MAX    8  /* pg_lsn: two 32-bit halves */
#define FIRST_NORMAL_XID       3  /* 0 invalid, 1 bootstrap, 2 frozen */
#define RESTORE_POINT_NAME_MAX 64 /* MAXFNAMELEN, terminator included */

#define TIME_EXAMPLE                                                                               \
    "expected an ISO 8601 date and time with a zone, e.g. \"2026-11-29 21:00:00+00\""

/* Exactly n decimal digits. */
static bool recovery_target_digits(const char **p, int n, int *out)
{
    int v = 0;

    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)(*p)[i]))
            return false;
        v = v * 10 + ((*p)[i] - '0');
    }
    *p += n;
    *out = v;
    return true;
}

static int recovery_target_days_in_month(int year, int month)
{
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;

    return month == 2 && leap ? 29 : days[month - 1];
}

/* +HH, +HHMM, +HH:MM, +HH:MM:SS (and -) at the end of the value. */
static bool recovery_target_offset(const char *p)
{
    int h, m = 0, s = 0;

    p++; /* the sign */
    if (!recovery_target_digits(&p, 2, &h))
        return false;
    if (*p == ':')
        p++;
    if (*p != '\0' && !recovery_target_digits(&p, 2, &m))
        return false;
    if (*p == ':') {
        p++;
        if (!recovery_target_digits(&p, 2, &s))
            return false;
    }
    return *p == '\0' && h <= TZ_OFFSET_HOUR_MAX && m < 60 && s < 60;
}

/* A zone name of the system's tz database: a regular file under $TZDIR. */
static bool recovery_target_zone_name(const char *name, char *why, size_t whylen)
{
    const char *dir = getenv("TZDIR");
    char path[TZ_NAME_MAX + 4096];
    struct stat st;

    if (strcasecmp(name, "UTC") == 0 || strcasecmp(name, "GMT") == 0)
        return true;
    if (dir == NULL || dir[0] == '\0')
        dir = TZ_DIR_DEFAULT;
    if (strlen(name) > TZ_NAME_MAX || name[0] == '/' || strstr(name, "..") != NULL ||
        strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_+-/") !=
            strlen(name) ||
        !str_format(path, sizeof(path), "%s/%s", dir, name) || stat(path, &st) != 0 ||
        !S_ISREG(st.st_mode)) {
        snprintf(why, whylen,
                 "unknown time zone \"%s\" (not in %s): give an offset such as +02:00 or a "
                 "zone name such as Europe/Berlin",
                 name, dir);
        return false;
    }
    return true;
}

bool recovery_target_check_time(const char *value, char *why, size_t whylen)
{
    const char *p = value;
    int year, month, day, hour, minute, second = 0;
    bool spaced = false;

    if (!recovery_target_digits(&p, 4, &year) || *p++ != '-' ||
        !recovery_target_digits(&p, 2, &month) || *p++ != '-' ||
        !recovery_target_digits(&p, 2, &day) || (*p != ' ' && *p != 'T')) {
        snprintf(why, whylen, TIME_EXAMPLE);
        return false;
    }
    p++;
    if (!recovery_target_digits(&p, 2, &hour) || *p++ != ':' ||
        !recovery_target_digits(&p, 2, &minute)) {
        snprintf(why, whylen, TIME_EXAMPLE);
        return false;
    }
    if (*p == ':') {
        p++;
        if (!recovery_target_digits(&p, 2, &second)) {
            snprintf(why, whylen, TIME_EXAMPLE);
            return false;
        }
        if (*p == '.') {
            size_t n = strspn(++p, "0123456789");
            if (n == 0 || n > FRACTION_DIGITS_MAX) {
                snprintf(why, whylen, TIME_EXAMPLE);
                return false;
            }
            p += n;
        }
    }
    if (year < 1 || month < 1 || month > 12 || day < 1 ||
        day > recovery_target_days_in_month(year, month) || hour > 23 || minute > 59 ||
        second > 60) {
        snprintf(why, whylen, "no such date or time");
        return false;
    }
    if (*p == ' ') {
        spaced = true;
        p++;
    }
    if (*p == '\0') {
        snprintf(why, whylen,
                 "no time zone: add an offset or a zone name (e.g. +00 or UTC), or the server "
                 "reads the time in its own TimeZone");
        return false;
    }
    if ((p[0] == 'Z' || p[0] == 'z') && p[1] == '\0')
        return true;
    if (*p == '+' || *p == '-') {
        if (recovery_target_offset(p))
            return true;
        snprintf(why, whylen, "invalid zone offset \"%s\": expected +HH, +HHMM or +HH:MM", p);
        return false;
    }
    if (!spaced) {
        snprintf(why, whylen, TIME_EXAMPLE);
        return false;
    }
    return recovery_target_zone_name(p, why, whylen);
}

bool recovery_target_check_lsn(const char *value, char *why, size_t whylen)
{
    static const char hex[] = "0123456789abcdefABCDEF";
    size_t hi = strspn(value, hex), lo;

    if (hi >= 1 && hi <= LSN_PART_DIGITS_MAX && value[hi] == '/') {
        lo = strspn(value + hi + 1, hex);
        if (lo >= 1 && lo <= LSN_PART_DIGITS_MAX && value[hi + 1 + lo] == '\0')
            return true;
    }
    snprintf(why, whylen, "expected a WAL location X/X in hex, e.g. 0/3000060");
    return false;
}

bool recovery_target_check_xid(const char *value, char *why, size_t whylen)
{
    unsigned long long xid;
    char *end;

    errno = 0;
    if (value[0] < '0' || value[0] > '9' || (xid = strtoull(value, &end, 10), *end != '\0') ||
        errno == ERANGE) {
        snprintf(why, whylen, "expected a transaction id (a decimal number, xid or xid8)");
        return false;
    }
    if ((xid & UINT32_MAX) < FIRST_NORMAL_XID) {
        snprintf(why, whylen, "transaction id %llu is not a normal transaction id", xid);
        return false;
    }
    return true;
}

bool recovery_target_check_name(const char *value, char *why, size_t whylen)
{
    if (value[0] == '\0') {
        snprintf(why, whylen, "a restore point name cannot be empty");
        return false;
    }
    if (strlen(value) >= RESTORE_POINT_NAME_MAX) {
        snprintf(why, whylen, "a restore point name has at most %d bytes",
                 RESTORE_POINT_NAME_MAX - 1);
        return false;
    }
    return true;
}
