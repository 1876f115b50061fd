/*
 * politeness.c - ioprio and a CPU-weight cgroup for the backup process.
 */
#define _GNU_SOURCE
#include "io/politeness.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/text.h"

#define IOPRIO_CLASS_SHIFT 13
#define IOPRIO_CLASS_BE    2
#define IOPRIO_CLASS_IDLE  3
#define IOPRIO_WHO_PROCESS 1
#define IOPRIO_BE_NORMAL   4
#define CGROUP_ROOT        "/sys/fs/cgroup"
#define CPU_SHARES_DEFAULT 1024

bool politeness_io_class(bool idle, pgd_error *err)
{
    int value = idle ? IOPRIO_CLASS_IDLE << IOPRIO_CLASS_SHIFT
                     : (IOPRIO_CLASS_BE << IOPRIO_CLASS_SHIFT) | IOPRIO_BE_NORMAL;

    if (syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, value) != 0)
        return err_errno(err, errno, "could not set the I/O class to %s",
                         idle ? "idle" : "best-effort");
    return true;
}

bool politeness_thread_idle(pgd_error *err)
{
    struct sched_param param = {.sched_priority = 0};

    /* pid 0: the calling thread, not the process (Linux schedules threads) */
    if (sched_setscheduler(0, SCHED_IDLE, &param) != 0)
        return err_errno(err, errno, "could not put a reading thread in the idle CPU class");
    return true;
}

bool politeness_nice(int increment, pgd_error *err)
{
    /* nice() returns the new value, which may be -1: errno tells a failure apart */
    errno = 0;
    if (nice(increment) == -1 && errno != 0)
        return err_errno(err, errno, "could not raise the nice value by %d", increment);
    return true;
}

static bool politeness_write_text(const char *dir, const char *file, const char *text)
{
    char path[1024];
    FILE *f;
    bool ok;

    if (!str_format(path, sizeof(path), "%s/%s", dir, file) || (f = fopen(path, "w")) == NULL)
        return false;
    ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok;
}

/* This process's cgroup path for controller `ctl` ("cpu" on v1, "" for v2). */
static bool politeness_own_cgroup(const char *ctl, char *out, size_t outlen)
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
        line[strcspn(c2 + 1, "\n") + (size_t)(c2 + 1 - line)] = '\0';
        if (ctl[0] == '\0' ? strcmp(c1 + 1, "") == 0
                           : (strcmp(c1 + 1, ctl) == 0 || strstr(c1 + 1, "cpu,") != NULL ||
                              strstr(c1 + 1, ",cpu") != NULL)) {
            found = str_format(out, outlen, "%s", c2 + 1);
        }
    }
    fclose(f);
    return found;
}

bool politeness_cpu_weight(unsigned weight, cpu_cgroup *cg, pgd_error *err)
{
    char own[512], pid[32], value[32];
    struct stat st;
    bool v1 = stat(CGROUP_ROOT "/cpu/cpu.shares", &st) == 0;

    memset(cg, 0, sizeof(*cg));
    snprintf(pid, sizeof(pid), "%ld", (long)getpid());
    if (v1) {
        if (!politeness_own_cgroup("cpu", own, sizeof(own)))
            return err_set(err, "could not find this process's cpu cgroup");
        str_format(cg->parent, sizeof(cg->parent), CGROUP_ROOT "/cpu%s", own);
        snprintf(value, sizeof(value), "%u", weight * CPU_SHARES_DEFAULT / 100);
    } else {
        if (!politeness_own_cgroup("", own, sizeof(own)))
            return err_set(err, "no cgroup v1 cpu controller and no cgroup v2 hierarchy");
        str_format(cg->parent, sizeof(cg->parent), CGROUP_ROOT "%s", own);
        snprintf(value, sizeof(value), "%u", weight);
    }
    if (!str_format(cg->dir, sizeof(cg->dir), "%s/pgdirect-%s",
                    strcmp(own, "/") == 0 ? (v1 ? CGROUP_ROOT "/cpu" : CGROUP_ROOT) : cg->parent,
                    pid) ||
        mkdir(cg->dir, 0755) != 0) {
        int e = errno;
        cg->dir[0] = '\0';
        return err_errno(err, e, "could not create a cgroup under \"%s\"", cg->parent);
    }
    if (!politeness_write_text(cg->dir, v1 ? "cpu.shares" : "cpu.weight", value) ||
        !politeness_write_text(cg->dir, "cgroup.procs", pid)) {
        int e = errno;
        rmdir(cg->dir);
        err_errno(err, e, "could not set the CPU weight in \"%s\"", cg->dir);
        cg->dir[0] = '\0';
        return false;
    }
    return true;
}

void politeness_cpu_release(cpu_cgroup *cg)
{
    char pid[32];

    if (cg->dir[0] == '\0')
        return;
    snprintf(pid, sizeof(pid), "%ld", (long)getpid());
    politeness_write_text(cg->parent, "cgroup.procs", pid);
    rmdir(cg->dir);
    cg->dir[0] = '\0';
}
