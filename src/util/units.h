/*
 * units.h - sizes and durations as people read and write them: "1.5 GiB",
 * "3m07s" in summaries and listings, "64MiB" in options.
 */
#ifndef PGD_UNITS_H
#define PGD_UNITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* "1.5 GiB", "734 MiB", "12 KiB", "15 B" */
void units_format_bytes(uint64_t bytes, char *out, size_t outlen);

/* "1h02m", "3m07s", "12.4s", "0.06s" */
void units_format_duration(double seconds, char *out, size_t outlen);

/* "64MiB", "1GiB", "4096", "1G" (binary multiples, whatever the spelling) -> bytes. */
bool units_parse_size(const char *text, uint64_t *out);

#endif
