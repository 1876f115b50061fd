/*
 * log.h - messages to stderr in one grammar: "pgdirect: LEVEL: text".
 *
 * --log-format json makes each message one JSON object on a line instead: time (UTC, ISO 8601
 * with milliseconds), level, command, backup_id (once the command knows it) and message.
 * --log-file PATH appends every message to that file too, in the same format. Messages never
 * hold a secret (CODING.md), so neither does the file.
 */
#ifndef PGD_LOG_H
#define PGD_LOG_H

#include <stdbool.h>
#include <stdio.h>

typedef enum { LOG_DEBUG, LOG_INFO, LOG_WARNING, LOG_ERROR } log_level;

void log_set_level(log_level level);

/* JSON lines instead of text; the command's name for them. */
void log_set_json(bool json, const char *command);

/* Append every message to `f` too (NULL: stop); log_set_file does not close the one it replaces. */
void log_set_file(FILE *f);

/* The backup a message is about, for JSON lines: set once the command knows it ("" or NULL: none).
 */
void log_set_backup_id(const char *id);
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
