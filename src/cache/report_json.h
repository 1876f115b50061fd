/*
 * report_json.h - the cache report as JSON (`pgdirect cache --json`),
 * written as it goes: no document tree of 100,000 relation objects in
 * memory, which cost more than examining the files did.
 *
 * The text is what jansson's json_dumps(JSON_INDENT(1) | JSON_PRESERVE_ORDER)
 * printed before, byte for byte:
 *
 *   {
 *    "relations": [
 *     {
 *      "database": "postgres",
 *      "relation": "public.t",
 *      "kind": "table",
 *      "fork": "main",
 *      "size": 8192,
 *      "shared_buffers": 8192,     (null when pg_buffercache could not be read)
 *      "os_cache": 0,              (null when the files could not be read)
 *      "disk_only": 0,             (null when the files could not be read)
 *      "evicted_pages": 0
 *     }
 *    ],
 *    "totals": { the same figures, over every row },
 *    "notes": [ "what could not be read", ... ]
 *   }
 */
#ifndef PGD_CACHE_REPORT_JSON_H
#define PGD_CACHE_REPORT_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "cache/report.h"
#include "util/error.h"

/* The first `top` rows of r (0: all), the totals of all of them and the notes, to out. */
bool cache_report_write_json(FILE *out, const cache_report *r, size_t top, pgd_error *err);

#endif
