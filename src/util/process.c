/*
 * process.c - a process's identity and whether it still runs (see process.h).
 */
#define _GNU_SOURCE
#include "util/process.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROCESS_BOOT_ID_PATH  "/proc/sys/kernel/random/boot_id"
#define PROCESS_STAT_MAX      1024
#define PROCESS_STARTTIME_FLD 22 /* proc(5): starttime, the 22nd field of /proc/PID/stat */

static void process_boot_id(char out[PROCESS_BOOT_ID_MAX])
{
    FILE *f = fopen(PROCESS_BOOT_ID_PATH, "r");

    out[0] = '\0';
    if (f == NULL)
        return;
    if (fgets(out, PROCESS_BOOT_ID_MAX, f) == NULL)
        out[0] = '\0';
    out[strcspn(out, "\n")] = '\0';
    fclose(f);
}

/* The start time of process pid in clock ticks after boot; 0 when it cannot be read. */
static uint64_t process_start_ticks(int64_t pid)
{
    char path[64], buf[PROCESS_STAT_MAX], *p;
    unsigned long long ticks = 0;
    size_t n;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%lld/stat", (long long)pid);
    f = fopen(path, "r");
    if (f == NULL)
        return 0;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* the command name (field 2) may hold spaces and ')': count fields after its last ')' */
    p = strrchr(buf, ')');
    if (p == NULL)
        return 0;
    for (int field = 2; field < PROCESS_STARTTIME_FLD && p != NULL; field++)
        p = strchr(p + 1, ' ');
    if (p == NULL || sscanf(p + 1, "%llu", &ticks) != 1)
        return 0;
    return ticks;
}

static uint64_t process_pid_ns(void)
{
    struct stat st;

    return stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

void process_self(process_identity *id)
{
    memset(id, 0, sizeof(*id));
    if (gethostname(id->host, sizeof(id->host) - 1) != 0 || id->host[0] == '\0')
        snprintf(id->host, sizeof(id->host), "unknown");
    process_boot_id(id->boot_id);
    id->pid = (int64_t)getpid();
    id->start_ticks = process_start_ticks(id->pid);
    id->pid_ns = process_pid_ns();
}

process_state process_check(const process_identity *id, char *why, size_t whylen)
{
    process_identity me;
    uint64_t ticks;

    process_self(&me);
    if (strcmp(me.host, id->host) != 0 || id->pid <= 0 ||
        (id->pid_ns != 0 && me.pid_ns != 0 && id->pid_ns != me.pid_ns)) {
        snprintf(why, whylen, "process %lld of host %s, which cannot be seen from here",
                 (long long)id->pid, id->host);
        return PROCESS_UNKNOWN;
    }
    if (id->boot_id[0] != '\0' && me.boot_id[0] != '\0' && strcmp(id->boot_id, me.boot_id) != 0) {
        snprintf(why, whylen, "process %lld of this host before its last boot", (long long)id->pid);
        return PROCESS_GONE;
    }
    if (kill((pid_t)id->pid, 0) != 0 && errno != EPERM) {
        if (id->boot_id[0] == '\0') { /* an older claim: the pid may be of an earlier boot */
            snprintf(why, whylen, "process %lld of this host, not running now (boot unknown)",
                     (long long)id->pid);
            return PROCESS_UNKNOWN;
        }
        snprintf(why, whylen, "process %lld of this host, which has ended", (long long)id->pid);
        return PROCESS_GONE;
    }
    ticks = process_start_ticks(id->pid);
    if (id->start_ticks != 0 && ticks != 0 && ticks != id->start_ticks) {
        snprintf(why, whylen,
                 "process %lld of this host, which has ended (the pid is another's now)",
                 (long long)id->pid);
        return PROCESS_GONE;
    }
    snprintf(why, whylen, "process %lld of this host, still running", (long long)id->pid);
    return PROCESS_ALIVE;
}
