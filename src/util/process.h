/*
 * process.h - which process a claim in the repository names, and whether it is still running.
 *
 * A pid alone says little: it is reused, and it means nothing after a reboot or on another
 * host. A claim therefore records the host name, the kernel's boot id and the process's start
 * time (clock ticks after boot, /proc/PID/stat field 22) with the pid. On the same host and boot
 * a claim is then decided at once: its process is alive, or it is gone (no such pid, or the pid
 * now names a process that started at another time). After a reboot of the same host it is gone
 * too. On another host, or in another pid namespace (a container that shares the host's name),
 * nothing can be told from here.
 */
#ifndef PGD_PROCESS_H
#define PGD_PROCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROCESS_HOST_MAX    256
#define PROCESS_BOOT_ID_MAX 40 /* a UUID, 36 characters */

typedef struct process_identity {
    char host[PROCESS_HOST_MAX];
    char boot_id[PROCESS_BOOT_ID_MAX]; /* "" where the kernel does not say */
    int64_t pid;
    uint64_t start_ticks; /* 0 where unknown */
    uint64_t pid_ns;      /* the inode of its pid namespace (/proc/self/ns/pid); 0 where unknown */
} process_identity;

typedef enum process_state {
    PROCESS_ALIVE,   /* this host, this boot, the same process */
    PROCESS_GONE,    /* this host: no longer running (or from an earlier boot) */
    PROCESS_UNKNOWN, /* another host, or a claim that does not say enough */
} process_state;

/* This process. */
void process_self(process_identity *id);

/* The state of the process `id` names, seen from here; *why says how it was decided. */
process_state process_check(const process_identity *id, char *why, size_t whylen);

#endif
