/*
 * log.c - messages to stderr in one grammar: "pgdirect: LEVEL: text".
 */
#include "util/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static log_level min_level = LOG_INFO;
static pthread_mutex_t log_mutex = PTHREAD_MUTEX_INITIALIZER;

/* True while an unterminated progress line is on the terminal. */
static bool progress_shown = false;

static const char *const level_names[] = {"debug", "info", "warning", "error"};

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
    fprintf(stderr, "pgdirect: %s: ", level_names[level]);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    log_unlock();
}

void log_progress_line(const char *line, bool terminal)
{
    log_lock();
    if (terminal) {
        fprintf(stderr, "\r\033[K%s", line);
        progress_shown = true;
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
