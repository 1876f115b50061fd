/*
 * lsn.h - PostgreSQL's write-ahead log location (pg_lsn): a 64-bit byte
 * position, read and written as text the way PostgreSQL does, "HI/LO",
 * each half in 1 to 8 hex digits.
 *
 * The one place an LSN is parsed or formatted: the server's answers, the
 * sentinels of the repository, history files and messages all go through
 * it, so a value read anywhere is checked by the same rule.
 */
#ifndef PGD_LSN_H
#define PGD_LSN_H

#include <stdbool.h>
#include <stdint.h>

typedef uint64_t pg_lsn;

/* "FFFFFFFF/FFFFFFFF" and its NUL: the longest text of an LSN */
#define LSN_TEXT_MAX 18

/*
 * Strict, as PostgreSQL's pg_lsn input: hex digits, '/', hex digits, 1 to 8
 * each side, either case, nothing before or after. False (and *out left
 * alone) otherwise, or when text is NULL.
 */
bool lsn_parse(const char *text, pg_lsn *out);

/*
 * An LSN at the start of *text (the same rule, but the text may go on after
 * it, as in a line of a history file); on success *text is moved past it.
 */
bool lsn_parse_prefix(const char **text, pg_lsn *out);

/* An LSN in a printf format, as PostgreSQL's LSN_FORMAT_ARGS: printf(LSN_FORMAT, LSN_ARGS(x)) */
#define LSN_FORMAT    "%X/%X"
#define LSN_ARGS(lsn) (unsigned)((pg_lsn)(lsn) >> 32), (unsigned)(uint32_t)(lsn)

/* LSN_FORMAT, as PostgreSQL prints one; returns out, for use in a message. */
const char *lsn_format(pg_lsn lsn, char out[LSN_TEXT_MAX]);

#endif
