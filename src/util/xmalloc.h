/*
 * xmalloc.h - memory that is there or the process ends: malloc and its
 * family, which print "pgdirect: error: out of memory (could not allocate N
 * bytes)" and exit when the system refuses, as PostgreSQL's frontends do with
 * pg_malloc. A call site needs no branch, and no "out of memory" travels up
 * through a pgd_error.
 *
 * The exit status is the command's to choose (xmalloc_set_exit_status, before
 * any work; 1 by default): wal-fetch runs as restore_command, where 1 means
 * "not archived" and would end recovery early, so it sets EXIT_WAL_FATAL.
 * Nothing below src/cmd sets it. The process ends with _exit: other threads
 * may be running, and neither they nor the libraries' exit handlers run
 * after it; what was left half written is what a kill -9 leaves (CODING.md,
 * "Memory allocation failures").
 */
#ifndef PGD_XMALLOC_H
#define PGD_XMALLOC_H

#include <stdarg.h>
#include <stddef.h>

/* The exit status of a process that runs out of memory (default 1). */
void xmalloc_set_exit_status(int status);

/* Never NULL; a size of 0 gives a valid pointer to free(). */
void *xmalloc(size_t size) __attribute__((malloc));
void *xcalloc(size_t n, size_t size) __attribute__((malloc));
void *xrealloc(void *p, size_t size);
char *xstrdup(const char *s) __attribute__((malloc));
char *xstrndup(const char *s, size_t n) __attribute__((malloc));
/* The formatted text, malloc'd. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2), malloc));
char *xvasprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0), malloc));

/*
 * Print the message and exit with the status set: for an allocator of the
 * project's own (util/big_buffer.h) that ran out of memory.
 */
__attribute__((noreturn)) void xmalloc_fail(size_t size);

#endif
