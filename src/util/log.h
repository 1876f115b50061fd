/*
 * log.h - messages to stderr in one grammar: "pgdirect: LEVEL: text".
 */
#ifndef PGD_LOG_H
#define PGD_LOG_H

#include <stdbool.h>

typedef enum { LOG_DEBUG, LOG_INFO, LOG_WARNING, LOG_ERROR } log_level;

void log_set_level(log_level level);
bool log_parse_level(const char *name, log_level *out);
void log_msg(log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_INFO, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_WARNING, __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)

/*
 * The progress line: redrawn in place on a terminal; where stderr is not one (a log file, a
 * pipe), a plain "pgdirect: progress: ..." line, and never a control code.
 */
void log_progress_line(const char *line, bool terminal);
void log_progress_end(void);

/* Serialise with the progress line so a message never lands inside it. */
void log_lock(void);
void log_unlock(void);

#endif
