/*
 * meminfo.c - /proc/meminfo and memory-cgroup page cache.
 */
#define _GNU_SOURCE
#include "cache/meminfo.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/xmalloc.h"

#define CGROUP_ROOT "/sys/fs/cgroup"
#define TEXT_MAX    (64 * 1024)

static bool meminfo_read_text(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    size_t n;

    if (f == NULL)
        return false;
    n = fread(buf, 1, len - 1, f);
    fclose(f);
    buf[n] = '\0';
    return true;
}

static bool meminfo_field_kb(const char *text, const char *key, uint64_t *bytes)
{
    const char *p = text;
    size_t klen = strlen(key);

    while ((p = strstr(p, key)) != NULL) {
        if ((p == text || p[-1] == '\n') && p[klen] == ':') {
            *bytes = strtoull(p + klen + 1, NULL, 10) * 1024;
            return true;
        }
        p += klen;
    }
    return false;
}

bool meminfo_parse(const char *text, meminfo *out)
{
    return meminfo_field_kb(text, "MemFree", &out->mem_free) &&
           meminfo_field_kb(text, "Cached", &out->cached) &&
           meminfo_field_kb(text, "Dirty", &out->dirty);
}

bool meminfo_read(meminfo *out, pgd_error *err)
{
    char *text = xmalloc(TEXT_MAX);
    bool ok;

    ok = meminfo_read_text("/proc/meminfo", text, TEXT_MAX) && meminfo_parse(text, out);
    free(text);
    return ok || err_set(err, "could not read /proc/meminfo");
}

bool cgroup_parse_stat(const char *text, bool v2, uint64_t *bytes)
{
    const char *key = v2 ? "file " : "cache ";
    const char *p = text;

    while ((p = strstr(p, key)) != NULL) {
        if (p == text || p[-1] == '\n') {
            *bytes = strtoull(p + strlen(key), NULL, 10);
            return true;
        }
        p += strlen(key);
    }
    return false;
}

void cgroup_page_cache(uint64_t *bytes, bool *found, char *cgroup_path, size_t pathlen)
{
    char *self = xmalloc(TEXT_MAX), *stat_text = xmalloc(TEXT_MAX), *line, *save = NULL;

    *found = false;
    if (!meminfo_read_text("/proc/self/cgroup", self, TEXT_MAX)) {
        free(self);
        free(stat_text);
        return; /* no cgroups */
    }
    for (line = strtok_r(self, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        /* "4:memory:/path" (v1) or "0::/path" (v2) */
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL, path[4096];
        bool v2;
        if (c2 == NULL)
            continue;
        *c2 = '\0';
        v2 = strcmp(c1 + 1, "") == 0;
        if (!v2 && strstr(c1 + 1, "memory") == NULL)
            continue;
        if (strcmp(c2 + 1, "/") == 0)
            continue; /* root cgroup: the machine figures say it all */
        if (snprintf(path, sizeof(path), "%s%s%s/memory.stat", CGROUP_ROOT, v2 ? "" : "/memory",
                     c2 + 1) >= (int)sizeof(path))
            continue;
        if (!meminfo_read_text(path, stat_text, TEXT_MAX) ||
            !cgroup_parse_stat(stat_text, v2, bytes))
            continue;
        snprintf(cgroup_path, pathlen, "%s", c2 + 1);
        *found = true;
        if (!v2)
            break; /* v1 memory controller wins over the v2 unified entry */
    }
    free(self);
    free(stat_text);
}
