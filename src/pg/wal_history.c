/*
 * wal_history.c - checks of the two text files PostgreSQL archives beside
 * its segments, once each is complete: a timeline history file
 * (<tli>.history) and a backup history file (<segment>.<offset>.backup).
 * What a check accepts is what PostgreSQL reads back (readTimeLineHistory,
 * the backup history PostgreSQL itself writes), so a file that passes here
 * is one recovery can use.
 */
#include "pg/wal_history.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg/lsn.h"
#include "pg/wal_name.h"
#include "util/xmalloc.h"

#define HISTORY_NOUN        "timeline history file"
#define BACKUP_NOUN         "backup history file"
#define BACKUP_START_PREFIX "START WAL LOCATION: "
#define BACKUP_FILE_PREFIX  " (file "
#define HISTORY_LINE_MAX    1023 /* bytes before the newline (PostgreSQL's MAXPGPATH - 1) */
#define LABEL_TIMELINE      "START TIMELINE: "
#define LABEL_TIMELINE_MAX  10 /* digits of a 32-bit timeline */

/* "<noun> "NAME" <what>": the same words as wal_segment.c's failures. */
static bool wal_history_fail(pgd_error *err, const char *noun, const char *name, const char *fmt,
                             ...) __attribute__((format(printf, 4, 5)));

static bool wal_history_fail(pgd_error *err, const char *noun, const char *name, const char *fmt,
                             ...)
{
    char what[PGD_ERROR_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return err_set(err, "%s \"%s\" %s", noun, name, what);
}

/*
 * What PostgreSQL's readTimeLineHistory() accepts, and a little more: a
 * file it writes ends with a newline, and has at least one line (the
 * parent), each timeline above the one before and below the file's own.
 */
bool wal_history_check(const char *name, uint32_t name_tli, const char *text, size_t len,
                       pgd_error *err)
{
    const char *line = text, *end = text + len;
    unsigned long last = 0;
    unsigned lines = 0, lineno = 0;
    pg_lsn lsn;

    if (len == 0)
        return wal_history_fail(err, HISTORY_NOUN, name, "is empty");
    if (text[len - 1] != '\n')
        return wal_history_fail(err, HISTORY_NOUN, name,
                                "is truncated: its last line has no newline");
    while (line < end) {
        const char *nl = memchr(line, '\n', (size_t)(end - line)), *s = line;
        unsigned long tli;
        char *after;

        lineno++;
        /* readTimeLineHistory() reads a line at a time into 1,024 bytes, NUL included: what
           follows the first 1,023 is read as a line of its own (a lone newline is blank) */
        if (nl - line > HISTORY_LINE_MAX)
            return wal_history_fail(err, HISTORY_NOUN, name,
                                    "has a line longer than PostgreSQL reads in line %u (%zu "
                                    "bytes, at most %d)",
                                    lineno, (size_t)(nl - line), HISTORY_LINE_MAX);
        while (s < nl && isspace((unsigned char)*s))
            s++;
        if (s < nl && *s != '#') {
            tli = isdigit((unsigned char)*s) ? strtoul(s, &after, 10) : 0;
            s = tli > 0 ? after : s;
            if (tli == 0 || !isspace((unsigned char)*s))
                return wal_history_fail(err, HISTORY_NOUN, name,
                                        "has a syntax error in line %u: expected a timeline",
                                        lineno);
            while (s < nl && isspace((unsigned char)*s))
                s++;
            if (!lsn_parse_prefix(&s, &lsn) || s > nl)
                return wal_history_fail(err, HISTORY_NOUN, name,
                                        "has a syntax error in line %u: expected an LSN", lineno);
            if (tli <= last || tli >= name_tli)
                return wal_history_fail(
                    err, HISTORY_NOUN, name,
                    "is corrupt: timeline %lu in line %u is not between %lu and %u", tli, lineno,
                    last, name_tli);
            last = tli;
            lines++;
        }
        line = nl + 1;
    }
    if (lines == 0)
        return wal_history_fail(err, HISTORY_NOUN, name, "names no parent timeline");
    return true;
}

void wal_history_parse(const char *text, size_t len, wal_history_entry **entries, size_t *n)
{
    const char *line = text, *end = text + len;
    size_t cap = 0;

    *entries = NULL;
    *n = 0;
    while (line < end) {
        const char *nl = memchr(line, '\n', (size_t)(end - line)), *s = line;
        char *after;
        pg_lsn lsn;
        unsigned long tli;

        if (nl == NULL)
            nl = end;
        while (s < nl && isspace((unsigned char)*s))
            s++;
        tli = s < nl && isdigit((unsigned char)*s) ? strtoul(s, &after, 10) : 0;
        if (tli > 0) {
            s = after;
            while (s < nl && isspace((unsigned char)*s))
                s++;
        }
        if (tli > 0 && tli <= UINT32_MAX && lsn_parse_prefix(&s, &lsn)) {
            if (*n == cap) {
                cap = cap ? cap * 2 : 8;
                *entries = xrealloc(*entries, cap * sizeof(**entries));
            }
            (*entries)[(*n)++] = (wal_history_entry){.tli = (uint32_t)tli, .end = lsn};
        }
        line = nl + 1;
    }
}

/* "START WAL LOCATION: 0/2000028 (file 000000010000000000000002)", then more lines. */
bool wal_backup_history_check(const char *name, const char *text, size_t len, pgd_error *err)
{
    const char *s = text;
    pg_lsn lsn;

    if (len == 0)
        return wal_history_fail(err, BACKUP_NOUN, name, "is empty");
    if (text[len - 1] != '\n')
        return wal_history_fail(err, BACKUP_NOUN, name,
                                "is truncated: its last line has no newline");
    if (strncmp(s, BACKUP_START_PREFIX, strlen(BACKUP_START_PREFIX)) != 0)
        return wal_history_fail(err, BACKUP_NOUN, name,
                                "does not start with \"" BACKUP_START_PREFIX "\"");
    s += strlen(BACKUP_START_PREFIX);
    if (!lsn_parse_prefix(&s, &lsn) ||
        strncmp(s, BACKUP_FILE_PREFIX, strlen(BACKUP_FILE_PREFIX)) != 0 ||
        strncmp(s + strlen(BACKUP_FILE_PREFIX), name, WAL_FILE_NAME_LEN) != 0 ||
        s[strlen(BACKUP_FILE_PREFIX) + WAL_FILE_NAME_LEN] != ')')
        return wal_history_fail(err, BACKUP_NOUN, name, "does not name segment %.*s as its start",
                                WAL_FILE_NAME_LEN, name);
    return true;
}

bool wal_history_label_timeline(const char *labelfile, uint32_t *tli)
{
    const char *p = strstr(labelfile, LABEL_TIMELINE);
    char digits[LABEL_TIMELINE_MAX + 1];
    size_t n;

    if (p == NULL)
        return false;
    p += strlen(LABEL_TIMELINE);
    n = strcspn(p, "\n");
    if (n > LABEL_TIMELINE_MAX)
        return false;
    memcpy(digits, p, n);
    digits[n] = '\0';
    return wal_name_timeline_parse(digits, tli);
}
