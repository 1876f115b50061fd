/*
 * log.c - messages to stderr in one grammar: "pgdirect: LEVEL: text", or JSON lines (log.h).
 */
#define _GNU_SOURCE
#include "util/log.h"

#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#define LOG_ID_MAX      64
#define LOG_COMMAND_MAX 32

static log_level min_level = LOG_INFO;
static pthread_mutex_t log_mutex = PTHREAD_MUTEX_INITIALIZER;

/* True while an unterminated progress line is on the terminal. */
static bool progress_shown = false;

static const char *const level_names[] = {"debug", "info", "warning", "error"};

static bool log_json = false;
static char log_command[LOG_COMMAND_MAX] = "";
static char log_backup_id[LOG_ID_MAX] = "";
static FILE *log_file = NULL;

void log_set_json(bool json, const char *command)
{
    log_json = json;
    snprintf(log_command, sizeof(log_command), "%s", command != NULL ? command : "");
}

void log_set_file(FILE *f)
{
    log_lock();
    log_file = f;
    log_unlock();
}

void log_set_backup_id(const char *id)
{
    log_lock();
    snprintf(log_backup_id, sizeof(log_backup_id), "%s", id != NULL ? id : "");
    log_unlock();
}

/* One JSON line of `level` and `text` (NULL when it cannot be made: text that is not UTF-8). */
static char *log_json_line(const char *level, const char *text)
{
    struct timeval tv;
    struct tm tm;
    char when[40];
    json_t *o;
    char *line;

    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(when + strlen(when), sizeof(when) - strlen(when), ".%03ldZ",
             (long)(tv.tv_usec / 1000));
    o = json_pack("{s:s, s:s, s:s, s:s*, s:s}", "time", when, "level", level, "command",
                  log_command, "backup_id", log_backup_id[0] ? log_backup_id : NULL, "message",
                  text);
    if (o == NULL) /* text that is not UTF-8 (a file name): said, not dropped */
        o = json_pack("{s:s, s:s, s:s, s:s*, s:s}", "time", when, "level", level, "command",
                      log_command, "backup_id", log_backup_id[0] ? log_backup_id : NULL, "message",
                      "(a message that is not UTF-8; see --log-format text)");
    line = o != NULL ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    return line;
}

/* The message, formatted, to stderr and the log file; the log lock is held. */
static void log_emit(const char *level, const char *text)
{
    char *line = log_json ? log_json_line(level, text) : NULL;

    if (line != NULL)
        fprintf(stderr, "%s\n", line);
    else
        fprintf(stderr, "pgdirect: %s: %s\n", level, text);
    if (log_file != NULL) {
        if (line != NULL)
            fprintf(log_file, "%s\n", line);
        else
            fprintf(log_file, "pgdirect: %s: %s\n", level, text);
        fflush(log_file);
    }
    free(line);
}

void log_set_level(log_level level)
{
    min_level = level;
}

bool log_parse_level(const char *name, log_level *out)
{
    for (int i = 0; i <= LOG_ERROR; i++) {
        if (strcmp(name, level_names[i]) == 0) {
            *out = (log_level)i;
            return true;
        }
    }
    return false;
}

void log_lock(void)
{
    pthread_mutex_lock(&log_mutex);
}

void log_unlock(void)
{
    pthread_mutex_unlock(&log_mutex);
}

void log_msg(log_level level, const char *fmt, ...)
{
    va_list ap;

    if (level < min_level)
        return;
    log_lock();
    if (progress_shown) {
        fputs("\r\033[K", stderr);
        progress_shown = false;
    }
    va_start(ap, fmt);
    if (!log_json && log_file == NULL) {
        fprintf(stderr, "pgdirect: %s: ", level_names[level]);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
    } else {
        char text[8192];
        vsnprintf(text, sizeof(text), fmt, ap);
        log_emit(level_names[level], text);
    }
    va_end(ap);
    log_unlock();
}

void log_progress_line(const char *line, bool terminal)
{
    log_lock();
    if (terminal) {
        fprintf(stderr, "\r\033[K%s", line);
        progress_shown = true;
    } else if (log_json || log_file != NULL) {
        log_emit("progress", line);
    } else {
        fprintf(stderr, "pgdirect: progress: %s\n", line);
    }
    fflush(stderr);
    log_unlock();
}

void log_progress_end(void)
{
    log_lock();
    if (progress_shown) {
        fputs("\r\033[K", stderr);
        progress_shown = false;
    }
    log_unlock();
}
