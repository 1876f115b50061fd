/*
 * annotation.h - a backup's annotations: KEY=VALUE pairs a person gives a backup (backup
 * --annotation, pgdirect annotate) and list shows. Kept in the sentinel as the object
 * "annotations" {KEY: VALUE, ...}, keys sorted; in memory (backup_info) as that object's compact
 * JSON text, so that backup_info stays a value that can be copied.
 *
 * A key is 1 to ANNOTATION_KEY_MAX of [A-Za-z0-9_.-]; a value is UTF-8 text without control
 * characters (C0, DEL, and C1 in what is given), at most ANNOTATION_VALUE_MAX bytes; all of
 * them fit ANNOTATIONS_TEXT_MAX.
 */
#ifndef PGD_ANNOTATION_H
#define PGD_ANNOTATION_H

#include <stdbool.h>
#include <stddef.h>

#include "util/error.h"

#define ANNOTATION_KEY_MAX   64
#define ANNOTATION_VALUE_MAX 256
#define ANNOTATIONS_TEXT_MAX 2048

/* Check "KEY=VALUE" (what --annotation or annotate was given); key and value point into a copy. */
bool annotation_parse(const char *kv, char key[ANNOTATION_KEY_MAX + 1], const char **value,
                      pgd_error *err);

/*
 * Set key to value (NULL: remove it) in the annotations `text` (compact JSON object text, ""
 * for none), in place; *changed says whether it differs. False when the result would not fit,
 * or `text` is not an object of strings.
 */
bool annotation_set(char text[ANNOTATIONS_TEXT_MAX], const char *key, const char *value,
                    bool *changed, pgd_error *err);

/* `text` checked and normalised (keys sorted, compact) from a sentinel's object; false: damaged. */
bool annotation_from_json(const void *json_object, char text[ANNOTATIONS_TEXT_MAX], pgd_error *err);

#endif
