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
#include <time.h>

#include "pg/lsn.h"
#include "util/log.h"
#include "util/text.h"
#include "util/xmalloc.h"

#define TZ_DIR_DEFAULT         "/usr/share/zoneinfo"
#define TZ_NAME_MAX            255
#define TZ_OFFSET_HOUR_MAX     15 /* PostgreSQL's MAX_TZDISP_HOUR */
#define FRACTION_DIGITS_MAX    9
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

/* +HH, +HHMM, +HH:MM, +HH:MM:SS (and -) at the end of the value; *east: seconds east of UTC. */
static bool recovery_target_offset(const char *p, int64_t *east)
{
    int h, m = 0, s = 0, sign = *p == '-' ? -1 : 1;

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
    *east = sign * ((int64_t)h * 3600 + m * 60 + s);
    return *p == '\0' && h <= TZ_OFFSET_HOUR_MAX && m < 60 && s < 60;
}

/*
 * The Unix time of broken-down local time tm in zone `name` of the tz database: TZ set for the
 * one call (a restore is single-threaded until it has decided what to restore).
 */
static int64_t recovery_target_zone_time(struct tm *tm, const char *name)
{
    char *saved = getenv("TZ") ? xstrdup(getenv("TZ")) : NULL;
    time_t t;

    setenv("TZ", name, 1);
    tzset();
    tm->tm_isdst = -1;
    t = mktime(tm);
    if (saved != NULL) {
        setenv("TZ", saved, 1);
        free(saved);
    } else {
        unsetenv("TZ");
    }
    tzset();
    return (int64_t)t;
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

bool recovery_target_time_seconds(const char *value, int64_t *seconds, char *why, size_t whylen)
{
    const char *p = value;
    int year, month, day, hour, minute, second = 0;
    bool spaced = false;
    int64_t east;
    struct tm tm;

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
        if (*p == '.') { /* the fraction is dropped: *seconds is the second it falls in */
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
    memset(&tm, 0, sizeof(tm));
    tm.tm_year = year - 1900;
    tm.tm_mon = month - 1;
    tm.tm_mday = day;
    tm.tm_hour = hour;
    tm.tm_min = minute;
    tm.tm_sec = second;
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
    if ((p[0] == 'Z' || p[0] == 'z') && p[1] == '\0') {
        *seconds = (int64_t)timegm(&tm);
        return true;
    }
    if (*p == '+' || *p == '-') {
        if (recovery_target_offset(p, &east)) {
            *seconds = (int64_t)timegm(&tm) - east;
            return true;
        }
        snprintf(why, whylen, "invalid zone offset \"%s\": expected +HH, +HHMM or +HH:MM", p);
        return false;
    }
    if (!spaced) {
        snprintf(why, whylen, TIME_EXAMPLE);
        return false;
    }
    if (!recovery_target_zone_name(p, why, whylen))
        return false;
    *seconds = recovery_target_zone_time(&tm, p);
    return true;
}

bool recovery_target_check_time(const char *value, char *why, size_t whylen)
{
    int64_t seconds;

    return recovery_target_time_seconds(value, &seconds, why, whylen);
}

bool recovery_target_check_lsn(const char *value, char *why, size_t whylen)
{
    pg_lsn lsn;

    if (lsn_parse(value, &lsn))
        return true;
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

recovery_target_order recovery_target_versus_backup(const backup_info *bi, const char *key,
                                                    const char *value, char *end, size_t endlen)
{
    char why[PGD_ERROR_MAX], when[64];
    uint64_t target;
    int64_t seconds;
    time_t t = (time_t)bi->stop_time;
    struct tm tm;

    if (strcmp(key, "recovery_target_time") == 0) {
        strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S+00", gmtime_r(&t, &tm));
        snprintf(end, endlen, "%s", when);
        if (!recovery_target_time_seconds(value, &seconds, why, sizeof(why)))
            return RECOVERY_TARGET_UNKNOWN;
        /* the backup ended in its stop_time's second or before: the target's must be later */
        return seconds > bi->stop_time ? RECOVERY_TARGET_AFTER_END : RECOVERY_TARGET_BEFORE_END;
    }
    if (strcmp(key, "recovery_target_lsn") == 0) {
        snprintf(end, endlen, LSN_FORMAT, LSN_ARGS(bi->stop_lsn));
        if (!lsn_parse(value, &target))
            return RECOVERY_TARGET_UNKNOWN;
        return target >= bi->stop_lsn ? RECOVERY_TARGET_AFTER_END : RECOVERY_TARGET_BEFORE_END;
    }
    if (strcmp(key, "recovery_target_xid") == 0) {
        snprintf(end, endlen, "next transaction id %llu", (unsigned long long)bi->stop_next_xid);
        if (bi->stop_next_xid == 0)
            return RECOVERY_TARGET_UNKNOWN;
        target = strtoull(value, NULL, 10);
        /* a 32-bit xid is taken in the epoch of the backup's end (xid8 = epoch << 32 | xid) */
        if (target <= UINT32_MAX)
            target |= bi->stop_next_xid & ~(uint64_t)UINT32_MAX;
        return target >= bi->stop_next_xid ? RECOVERY_TARGET_AFTER_END : RECOVERY_TARGET_BEFORE_END;
    }
    snprintf(end, endlen, LSN_FORMAT, LSN_ARGS(bi->stop_lsn));
    return RECOVERY_TARGET_UNKNOWN;
}

bool recovery_target_older_backup(storage *repo, const char *key, const char *value,
                                  const char *newest_end, backup_info *bi, pgd_error *err)
{
    bool xid = strcmp(key, "recovery_target_xid") == 0;
    char end[64], why[PGD_ERROR_MAX];
    size_t n, oldest = SIZE_MAX;
    backup_info *all;

    if (!backup_info_scan(repo, &all, &n, err))
        return false;
    for (size_t i = n; i-- > 0;) {
        if (backup_info_unusable(&all[i], why, sizeof(why)) != NULL ||
            strcmp(all[i].id, bi->id) >= 0)
            continue;
        oldest = i;
        if (recovery_target_versus_backup(&all[i], key, value, end, sizeof(end)) ==
            RECOVERY_TARGET_BEFORE_END)
            continue;
        log_info("restoring backup %s, the newest that ended before the recovery target (%s = "
                 "'%s'): the newer %s ended at %s, after it",
                 all[i].id, key, value, bi->id, newest_end);
        *bi = all[i];
        free(all);
        return true;
    }
    if (xid && oldest != SIZE_MAX) { /* it may still have committed after the end: try the oldest */
        recovery_target_versus_backup(&all[oldest], key, value, end, sizeof(end));
        log_warn("transaction %s began before every backup ended (the oldest, %s, at %s): "
                 "restoring %s, which reaches it only if it committed after that; else %s",
                 value, all[oldest].id, end, all[oldest].id, RECOVERY_TARGET_FATAL_BEFORE_END);
        *bi = all[oldest];
        free(all);
        return true;
    }
    if (oldest != SIZE_MAX)
        recovery_target_versus_backup(&all[oldest], key, value, end, sizeof(end));
    err_set(err,
            "the recovery target %s = '%s' is before the end of every backup in repository "
            "\"%s\": the oldest, %s, ended at %s; %s",
            key, value, repo->uri, oldest != SIZE_MAX ? all[oldest].id : bi->id,
            oldest != SIZE_MAX ? end : newest_end, RECOVERY_TARGET_FATAL_BEFORE_END);
    free(all);
    return false;
}
