/*
 * annotation.c - a backup's KEY=VALUE annotations (annotation.h).
 */
#include "repo/annotation.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool annotation_key_ok(const char *key, size_t len)
{
    if (len == 0 || len > ANNOTATION_KEY_MAX)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = key[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-'))
            return false;
    }
    return true;
}

/*
 * UTF-8 text without C0 controls or DEL, at most ANNOTATION_VALUE_MAX bytes; given on a
 * command line (`strict`), without C1 controls either (U+0080 to U+009F, 0xC2 0x80-0x9F in
 * UTF-8: a terminal may read 0x9B as the start of an escape sequence). A sentinel written
 * before C1 controls were refused is still read.
 */
static bool annotation_value_ok(const char *value, bool strict)
{
    json_t *s;

    if (strlen(value) > ANNOTATION_VALUE_MAX)
        return false;
    for (const unsigned char *p = (const unsigned char *)value; *p; p++)
        if (*p < 0x20 || *p == 0x7f || (strict && p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f))
            return false;
    /* jansson refuses text that is not UTF-8 */
    s = json_string(value);
    json_decref(s);
    return s != NULL;
}

bool annotation_parse(const char *kv, char key[ANNOTATION_KEY_MAX + 1], const char **value,
                      pgd_error *err)
{
    const char *eq = strchr(kv, '=');

    if (eq == NULL || !annotation_key_ok(kv, (size_t)(eq - kv))) {
        /* echoed only when it is printable ASCII: a terminal must not act on what it holds */
        for (const unsigned char *p = (const unsigned char *)kv; *p; p++)
            if (*p < 0x20 || *p >= 0x7f)
                return err_set(err,
                               "invalid annotation: expected KEY=VALUE, KEY 1 to %d letters, "
                               "digits, '_', '.' or '-'",
                               ANNOTATION_KEY_MAX);
        return err_set(err,
                       "invalid annotation \"%s\": expected KEY=VALUE, KEY 1 to %d letters, "
                       "digits, '_', '.' or '-'",
                       kv, ANNOTATION_KEY_MAX);
    }
    if (!annotation_value_ok(eq + 1, true))
        /* the key named, the value never echoed: it may hold what a terminal acts on */
        return err_set(err,
                       "invalid annotation \"%.*s\": its value must be UTF-8 text "
                       "without control characters (C0, DEL or C1), at most %d bytes",
                       (int)(eq - kv), kv, ANNOTATION_VALUE_MAX);
    snprintf(key, ANNOTATION_KEY_MAX + 1, "%.*s", (int)(eq - kv), kv);
    *value = eq + 1;
    return true;
}

/* The object as compact text with sorted keys into text; false when it does not fit. */
static bool annotation_store(json_t *o, char text[ANNOTATIONS_TEXT_MAX], pgd_error *err)
{
    char *dump;
    bool fits;

    if (json_object_size(o) == 0) {
        text[0] = '\0';
        return true;
    }
    dump = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    fits = dump != NULL && strlen(dump) < ANNOTATIONS_TEXT_MAX;
    if (fits)
        memcpy(text, dump, strlen(dump) + 1);
    free(dump);
    return fits ||
           err_set(err, "the annotations would take more than %d bytes", ANNOTATIONS_TEXT_MAX - 1);
}

bool annotation_from_json(const void *json_object, char text[ANNOTATIONS_TEXT_MAX], pgd_error *err)
{
    json_t *o = (json_t *)json_object;
    const char *key;
    json_t *v;

    text[0] = '\0';
    if (!json_is_object(o))
        return err_set(err, "\"annotations\" is not an object");
    json_object_foreach(o, key, v)
    {
        if (!annotation_key_ok(key, strlen(key)) || !json_is_string(v) ||
            !annotation_value_ok(json_string_value(v), false))
            return err_set(err, "bad annotation \"%s\"", key);
    }
    return annotation_store(o, text, err);
}

bool annotation_set(char text[ANNOTATIONS_TEXT_MAX], const char *key, const char *value,
                    bool *changed, pgd_error *err)
{
    json_t *o = text[0] ? json_loads(text, 0, NULL) : json_object();
    json_t *old;
    bool ok;

    *changed = false;
    if (!json_is_object(o)) {
        json_decref(o);
        return err_set(err, "the annotations do not parse");
    }
    old = json_object_get(o, key);
    if (value == NULL) {
        *changed = old != NULL;
        json_object_del(o, key);
    } else {
        *changed = old == NULL || strcmp(json_string_value(old), value) != 0;
        json_object_set_new(o, key, json_string(value));
    }
    ok = annotation_store(o, text, err);
    json_decref(o);
    return ok;
}
