/*
 * mem_cgroup.c - a bounded memory cgroup for a restore drill (mem_cgroup.h).
 */
#define _GNU_SOURCE
#include "io/mem_cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/text.h"

#define MEM_CGROUP_ROOT    "/sys/fs/cgroup"
#define MEM_CGROUP_V1_ROOT MEM_CGROUP_ROOT "/memory"
#define MEM_CGROUP_PREFIX  "pgdirect-drill-" /* and the drill's PID */
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

/* Where this process's drill cgroup goes: its own memory cgroup (cg->parent, cg->v1). */
static bool mem_cgroup_parent(mem_cgroup *cg, pgd_error *err)
{
    char own[256];
    struct stat st;

    memset(cg, 0, sizeof(*cg));
    cg->v1 = stat(MEM_CGROUP_V1_ROOT "/memory.limit_in_bytes", &st) == 0;
    if (!mem_cgroup_own(cg->v1 ? "memory" : "", own, sizeof(own)))
        return err_set(err, "no cgroup v1 memory controller and no cgroup v2 hierarchy");
    str_format(cg->parent, sizeof(cg->parent), "%s%s",
               cg->v1 ? MEM_CGROUP_V1_ROOT : MEM_CGROUP_ROOT, own);
    return true;
}

/* Reclaim what a cgroup nothing runs in holds, and remove it; false (errno) when it stays. */
static bool mem_cgroup_remove(const mem_cgroup *cg, const char *dir)
{
    /* v1 hands an emptied group's pages to its parent: reclaim them first */
    if (cg->v1)
        mem_cgroup_write(dir, "memory.force_empty", "0");
    for (int i = 0; i < MEM_CGROUP_RMDIR_TRIES; i++) {
        if (rmdir(dir) == 0 || errno == ENOENT)
            return true;
        if (errno != EBUSY)
            return false;
        usleep(MEM_CGROUP_RMDIR_WAIT);
    }
    return false;
}

size_t mem_cgroup_remove_stale(char *kept, size_t keptlen)
{
    mem_cgroup cg;
    pgd_error ignored = {0};
    struct dirent *de;
    size_t removed = 0;
    DIR *d;

    if (kept != NULL && keptlen > 0)
        kept[0] = '\0';
    if (!mem_cgroup_parent(&cg, &ignored) || (d = opendir(cg.parent)) == NULL)
        return 0;
    while ((de = readdir(d)) != NULL) {
        char dir[1100], *end;
        long pid;

        if (strncmp(de->d_name, MEM_CGROUP_PREFIX, strlen(MEM_CGROUP_PREFIX)) != 0)
            continue;
        errno = 0;
        pid = strtol(de->d_name + strlen(MEM_CGROUP_PREFIX), &end, 10);
        /* a drill's, whose process is gone (a live one's, or a reused PID's, is left alone) */
        if (errno != 0 || *end != '\0' || pid <= 0 || pid == (long)getpid() ||
            kill((pid_t)pid, 0) == 0 || errno != ESRCH ||
            !str_format(dir, sizeof(dir), "%s/%s", cg.parent, de->d_name))
            continue;
        if (mem_cgroup_remove(&cg, dir))
            removed++;
        else if (kept != NULL && kept[0] == '\0')
            str_format(kept, keptlen, "%s: %s", dir, strerror(errno));
    }
    closedir(d);
    return removed;
}

bool mem_cgroup_enter(mem_cgroup *cg, uint64_t limit, pgd_error *err)
{
    char pid[32], value[32];

    if (!mem_cgroup_parent(cg, err))
        return false;
    snprintf(pid, sizeof(pid), "%ld", (long)getpid());
    snprintf(value, sizeof(value), "%" PRIu64, limit);
    if (!str_format(cg->dir, sizeof(cg->dir), "%s/" MEM_CGROUP_PREFIX "%s", cg->parent, pid) ||
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
    mem_cgroup_remove(cg, cg->dir);
    cg->dir[0] = '\0';
}
