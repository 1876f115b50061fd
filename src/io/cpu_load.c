/*
 * cpu_load.c - /proc/stat's all-CPU line, and this process's share of it.
 */
#define _GNU_SOURCE
#include "io/cpu_load.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/progress.h"

bool cpu_sample_parse(const char *text, cpu_sample *s)
{
    /* user nice system idle iowait irq softirq steal: the kernel adds columns at the end only */
    uint64_t v[8] = {0};
    const char *line = text;
    int n;

    while (line != NULL && strncmp(line, "cpu ", 4) != 0) {
        line = strchr(line, '\n');
        if (line != NULL)
            line++;
    }
    if (line == NULL)
        return false;
    n = sscanf(line + 4,
               "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
               " %" SCNu64,
               &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
    if (n < 4)
        return false;
    s->busy = v[0] + v[1] + v[2];
    s->idle = v[3] + v[4];
    s->total = s->busy + s->idle + v[5] + v[6] + v[7];
    return true;
}

bool cpu_sample_read(cpu_sample *s, pgd_error *err)
{
    char buf[4096];
    struct timespec ts;
    ssize_t n;
    int fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return err_errno(err, errno, "could not open \"/proc/stat\"");
    n = read(fd, buf, sizeof(buf) - 1); /* the "cpu " line comes first */
    close(fd);
    if (n <= 0)
        return err_errno(err, n < 0 ? errno : EIO, "could not read \"/proc/stat\"");
    buf[n] = '\0';
    if (!cpu_sample_parse(buf, s))
        return err_set(err, "\"/proc/stat\" has no all-CPU (\"cpu \") line");
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
        return err_errno(err, errno, "could not read this process's CPU time");
    s->own_s = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
    s->at = clock_seconds();
    return true;
}

cpu_interval cpu_interval_between(const cpu_sample *a, const cpu_sample *b, double ticks_per_s)
{
    cpu_interval iv = {.others_cpus = 0, .idle_share = 1, .seconds = b->at - a->at};
    double busy_s, own_s, cpus;

    /* no tick elapsed, or a counter stepped back (iowait may): nothing to say, as if idle */
    if (b->total <= a->total || b->busy < a->busy || b->idle < a->idle || iv.seconds <= 0 ||
        ticks_per_s <= 0)
        return iv;
    busy_s = (double)(b->busy - a->busy) / ticks_per_s;
    own_s = b->own_s - a->own_s;
    /* ticks are sampled, our clock is exact: clamp the difference at zero */
    iv.others_cpus = busy_s > own_s ? (busy_s - own_s) / iv.seconds : 0;
    iv.idle_share = (double)(b->idle - a->idle) / (double)(b->total - a->total);
    cpus = (double)(b->total - a->total) / ticks_per_s / iv.seconds;
    iv.others_margin = cpus / ticks_per_s / iv.seconds;
    return iv;
}
