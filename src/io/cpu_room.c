/*
 * cpu_room.c - the CPU the rest of the host leaves (see cpu_room.h).
 */
#include "io/cpu_room.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "util/progress.h"

/* The first line of /proc/stat: "cpu  user nice system idle iowait irq softirq steal ..." */
static bool cpu_room_machine_times(cpu_sample *s, pgd_error *err)
{
    FILE *f = fopen("/proc/stat", "r");
    uint64_t v[8] = {0};
    int n;

    if (f == NULL)
        return err_errno(err, errno, "could not open \"/proc/stat\"");
    n = fscanf(f,
               "cpu %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
               " %" SCNu64 " %" SCNu64,
               &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
    fclose(f);
    if (n < 5)
        return err_set(err, "could not read the CPU times in \"/proc/stat\"");
    s->total = 0;
    for (int i = 0; i < n; i++)
        s->total += v[i];
    s->idle = v[3] + v[4];
    return true;
}

/* utime and stime, fields 14 and 15 of /proc/self/stat, counted after the command's ")". */
static bool cpu_room_self_times(cpu_sample *s, pgd_error *err)
{
    FILE *f = fopen("/proc/self/stat", "r");
    char line[1024], *p;
    uint64_t utime, stime;
    bool ok;

    if (f == NULL)
        return err_errno(err, errno, "could not open \"/proc/self/stat\"");
    ok = fgets(line, sizeof(line), f) != NULL;
    fclose(f);
    p = ok ? strrchr(line, ')') : NULL;
    if (p == NULL ||
        sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %" SCNu64 " %" SCNu64, &utime,
               &stime) != 2)
        return err_set(err, "could not read this process's CPU time in \"/proc/self/stat\"");
    s->self = utime + stime;
    return true;
}

bool cpu_room_sample(cpu_sample *s, pgd_error *err)
{
    s->at = clock_seconds();
    return cpu_room_machine_times(s, err) && cpu_room_self_times(s, err);
}

double cpu_room_others_left(const cpu_sample *a, const cpu_sample *b, unsigned cpus)
{
    double total = (double)(b->total - a->total), busy, self;

    if (b->total <= a->total)
        return 0; /* no time passed: nothing known, nothing left */
    busy = total - (double)(b->idle - a->idle);
    self = (double)(b->self - a->self);
    if (self > busy)
        self = busy; /* counted at another tick than the machine's */
    return (double)cpus * (1 - (busy - self) / total);
}

void cpu_room_start_init(cpu_room_start *r, double forced, unsigned cpus)
{
    *r = (cpu_room_start){.forced = forced, .cpus = cpus};
    r->t0_taken = forced < 0 && cpu_room_sample(&r->t0, &(pgd_error){0});
    r->since = r->t0_taken ? r->t0.at : clock_seconds();
}

bool cpu_room_start_step(cpu_room_start *r, double now, unsigned reserve)
{
    cpu_sample s;

    if (r->decided || now - r->since < CPU_ROOM_START_S)
        return false;
    r->decided = true;
    r->decided_at = now;
    if (r->forced >= 0) {
        r->known = true;
        r->left = r->forced;
    } else if (r->t0_taken && cpu_room_sample(&s, &(pgd_error){0})) {
        r->known = true;
        r->left = cpu_room_others_left(&r->t0, &s, r->cpus);
    }
    r->normal = r->known ? cpu_room_streams(r->left, reserve) : 0;
    return true;
}

bool cpu_room_measure(double seconds, unsigned cpus, double *left, pgd_error *err)
{
    cpu_sample a, b;

    if (!cpu_room_sample(&a, err))
        return false;
    clock_sleep(seconds);
    if (!cpu_room_sample(&b, err))
        return false;
    *left = cpu_room_others_left(&a, &b, cpus);
    return true;
}

unsigned cpu_room_streams(double left, unsigned streams)
{
    unsigned room = 0;

    left += 1e-9; /* 1.3 - 1 is a hair under 0.3 */
    while (left >= CPU_ROOM_STREAM && room < streams) {
        room++;
        left -= 1;
    }
    return room;
}

bool cpu_room_thread_sample(cpu_thread_sample *s)
{
    FILE *f = fopen("/proc/thread-self/schedstat", "r");
    int n;

    s->at = clock_seconds();
    if (f == NULL)
        return false;
    n = fscanf(f, "%" SCNu64 " %" SCNu64, &s->run, &s->wait);
    fclose(f);
    return n == 2;
}

double cpu_room_wait_share(const cpu_thread_sample *a, const cpu_thread_sample *b)
{
    uint64_t run = b->run - a->run, wait = b->wait - a->wait;

    if (b->run < a->run || b->wait < a->wait || run + wait == 0)
        return 0;
    return (double)wait / (double)(run + wait);
}

bool cpu_room_contention_judge(cpu_contention *c, const cpu_thread_sample *now)
{
    double share;

    if (!c->started) {
        c->since = *now;
        c->started = true;
        return false;
    }
    share = cpu_room_wait_share(&c->since, now);
    c->since = *now;
    c->wait_min = c->judged == 0 || share < c->wait_min ? share : c->wait_min;
    c->wait_max = c->judged == 0 || share > c->wait_max ? share : c->wait_max;
    c->judged++;
    return share > CPU_ROOM_WAIT;
}

bool cpu_room_contention_step(cpu_contention *c, double now)
{
    cpu_thread_sample s;

    if (c->started && now - c->since.at < CPU_ROOM_WINDOW_S)
        return false;
    if (!cpu_room_thread_sample(&s))
        return true; /* no counters: nothing says the CPU is free, the polite side then */
    return cpu_room_contention_judge(c, &s);
}
