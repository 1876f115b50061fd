/*
 * mem_cgroup.c - a bounded memory cgroup for a restore drill (mem_cgroup.h).
 */
#define _GNU_SOURCE
#include "io/mem_cgroup.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/text.h"

#define MEM_CGROUP_ROOT    "/sys/fs/cgroup"
#define MEM_CGROUP_V1_ROOT MEM_CGROUP_ROOT "/memory"
/* rmdir fails with EBUSY while a process that just left is still being moved out */
#define MEM_CGROUP_RMDIR_TRIES 50
#define MEM_CGROUP_RMDIR_WAIT  20000 /* microseconds */

static bool mem_cgroup_write(const char *dir, const char *file, const char *text)
{
    char path[1100];
    FILE *f;
    bool ok;

    if (!str_format(path, sizeof(path), "%s/%s", dir, file) || (f = fopen(path, "w")) == NULL)
        return false;
    ok = fputs(text, f) >= 0;
    return (fclose(f) == 0) && ok;
}

/* This process's cgroup in the hierarchy of `controller` (v1), or the v2 one (""). */
static bool mem_cgroup_own(const char *controller, char *out, size_t outlen)
{
    FILE *f = fopen("/proc/self/cgroup", "r");
    char line[1024];
    bool found = false;

    if (f == NULL)
        return false;
    while (!found && fgets(line, sizeof(line), f) != NULL) {
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (c2 == NULL)
            continue;
        *c2 = '\0';
        c2[1 + strcspn(c2 + 1, "\n")] = '\0';
        if (controller[0] == '\0'
                ? c1[1] == '\0'
                : strcmp(c1 + 1, controller) == 0 || strstr(c1 + 1, "memory,") != NULL ||
                      strstr(c1 + 1, ",memory") != NULL)
            found = str_format(out, outlen, "%s", strcmp(c2 + 1, "/") == 0 ? "" : c2 + 1);
    }
    fclose(f);
    return found;
}

bool mem_cgroup_enter(mem_cgroup *cg, uint64_t limit, pgd_error *err)
{
    char own[256], pid[32], value[32];
    struct stat st;

    memset(cg, 0, sizeof(*cg));
    cg->v1 = stat(MEM_CGROUP_V1_ROOT "/memory.limit_in_bytes", &st) == 0;
    if (!mem_cgroup_own(cg->v1 ? "memory" : "", own, sizeof(own)))
        return err_set(err, "no cgroup v1 memory controller and no cgroup v2 hierarchy");
    str_format(cg->parent, sizeof(cg->parent), "%s%s",
               cg->v1 ? MEM_CGROUP_V1_ROOT : MEM_CGROUP_ROOT, own);
    snprintf(pid, sizeof(pid), "%ld", (long)getpid());
    snprintf(value, sizeof(value), "%" PRIu64, limit);
    if (!str_format(cg->dir, sizeof(cg->dir), "%s/pgdirect-drill-%s", cg->parent, pid) ||
        mkdir(cg->dir, 0755) != 0) {
        int e = errno;
        cg->dir[0] = '\0';
        return err_errno(err, e, "could not create a memory cgroup under \"%s\"", cg->parent);
    }
    if (!mem_cgroup_write(cg->dir, cg->v1 ? "memory.limit_in_bytes" : "memory.max", value) ||
        !mem_cgroup_write(cg->dir, "cgroup.procs", pid)) {
        int e = errno;
        rmdir(cg->dir);
        err_errno(err, e, "could not bound memory cgroup \"%s\" to %s bytes", cg->dir, value);
        cg->dir[0] = '\0';
        return false;
    }
    return true;
}

bool mem_cgroup_cache_bytes(const mem_cgroup *cg, uint64_t *bytes)
{
    char path[1100], line[256];
    const char *key = cg->v1 ? "cache " : "file ";
    FILE *f;
    bool found = false;

    if (cg->dir[0] == '\0' || !str_format(path, sizeof(path), "%s/memory.stat", cg->dir) ||
        (f = fopen(path, "r")) == NULL)
        return false;
    while (!found && fgets(line, sizeof(line), f) != NULL)
        if (strncmp(line, key, strlen(key)) == 0)
            found = sscanf(line + strlen(key), "%" SCNu64, bytes) == 1;
    fclose(f);
    return found;
}

void mem_cgroup_leave(mem_cgroup *cg)
{
    char pid[32];

    if (cg->dir[0] == '\0')
        return;
    snprintf(pid, sizeof(pid), "%ld", (long)getpid());
    mem_cgroup_write(cg->parent, "cgroup.procs", pid);
    /* v1 hands an emptied group's pages to its parent: reclaim them first */
    if (cg->v1)
        mem_cgroup_write(cg->dir, "memory.force_empty", "0");
    for (int i = 0; i < MEM_CGROUP_RMDIR_TRIES && rmdir(cg->dir) != 0 && errno == EBUSY; i++)
        usleep(MEM_CGROUP_RMDIR_WAIT);
    cg->dir[0] = '\0';
}
