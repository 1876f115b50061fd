/*
 * cache.c - `pgdirect cache`: per relation, where its pages are: in
 * PostgreSQL's shared_buffers, in the OS page cache, or only on disk. With
 * --watch, the totals and the machine's (and cgroup's) memory figures as
 * CSV over time, for plotting what a backup does to the cache.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cache/meminfo.h"
#include "cache/report.h"
#include "cache/report_json.h"
#include "cmd/cmd.h"
#include "cmd/common.h"
#include "util/log.h"
#include "util/progress.h"
#include "util/units.h"
#include "util/xmalloc.h"

static const command_help cache_help = {
    CMD_CACHE, "usage: pgdirect cache [OPTIONS]",
    "Show, per relation and fork, its size and how much of it is in shared_buffers (from\n"
    "pg_buffercache when installed), in the OS page cache, and only on disk. Run as the\n"
    "postgres OS user (or root) so the relation files can be examined."};

static volatile sig_atomic_t stop_watch;

static void cmd_cache_on_signal(int sig)
{
    (void)sig;
    stop_watch = 1;
}

/* "pgbench_*" -> "pgbench\_%" (SQL LIKE), so users need not know LIKE's rules. */
static char *cmd_cache_glob_to_like(const char *glob)
{
    char *out = xmalloc(strlen(glob) * 2 + 1), *p = out;

    for (; *glob; glob++) {
        if (*glob == '*')
            *p++ = '%';
        else if (*glob == '?')
            *p++ = '_';
        else {
            if (*glob == '%' || *glob == '_' || *glob == '\\')
                *p++ = '\\';
            *p++ = *glob;
        }
    }
    *p = '\0';
    return out;
}

static double cmd_cache_pct(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static void cmd_cache_print_row(const char *db, const char *name, const char *kind,
                                const char *fork, const cache_figures *f, const cache_report *r)
{
    char size[32], sb[32], os[32], disk[32];

    units_format_bytes(f->size, size, sizeof(size));
    units_format_bytes(f->shared_buffers, sb, sizeof(sb));
    units_format_bytes(f->os_cache, os, sizeof(os));
    units_format_bytes(f->disk_only, disk, sizeof(disk));
    printf("%-12s %-40s %-8s %-4s %10s", db, name, kind, fork, size);
    if (r->shared_buffers_known)
        printf(" %10s %5.1f%%", sb, cmd_cache_pct(f->shared_buffers, f->size));
    else
        printf(" %10s %6s", "-", "");
    if (r->os_known)
        printf(" %10s %5.1f%% %10s %5.1f%%\n", os, cmd_cache_pct(f->os_cache, f->size), disk,
               cmd_cache_pct(f->disk_only, f->size));
    else
        printf(" %10s %6s %10s %6s\n", "-", "", "-", "");
}

static void cmd_cache_print_table(const cache_report *r, size_t top)
{
    cache_figures t = cache_totals(r);
    size_t n = top && top < r->n ? top : r->n;

    printf("%-12s %-40s %-8s %-4s %10s %17s %17s %17s\n", "DATABASE", "RELATION", "KIND", "FORK",
           "SIZE", "SHARED_BUFFERS", "OS PAGE CACHE", "DISK ONLY");
    for (size_t i = 0; i < n; i++)
        cmd_cache_print_row(r->rows[i].database, r->rows[i].name, r->rows[i].kind, r->rows[i].fork,
                            &r->rows[i].f, r);
    if (n < r->n)
        printf("(%zu more relation forks not shown; totals include them)\n", r->n - n);
    cmd_cache_print_row("", "TOTAL", "", "", &t, r);
}

static bool cmd_cache_watch(const cache_request *req, double interval, long count, pgd_error *err)
{
    struct sigaction sa = {.sa_handler = cmd_cache_on_signal};

    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    printf("epoch,size,shared_buffers,os_cache,disk_only,evicted_pages,mem_free,cached,dirty,"
           "cgroup_cache\n");
    fflush(stdout);
    for (long i = 0; !stop_watch && (count == 0 || i < count); i++) {
        double t0 = clock_seconds();
        struct timespec now;
        cache_report r;
        cache_figures t;
        meminfo mi;
        uint64_t cg = 0;
        bool cg_found;
        char cg_path[512];

        if (!cache_collect(req, &r, err) || !meminfo_read(&mi, err))
            return false;
        cgroup_page_cache(&cg, &cg_found, cg_path, sizeof(cg_path));
        t = cache_totals(&r);
        clock_gettime(CLOCK_REALTIME, &now);
        printf("%.3f,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,",
               (double)now.tv_sec + now.tv_nsec / 1e9, (unsigned long long)t.size,
               (unsigned long long)t.shared_buffers, (unsigned long long)t.os_cache,
               (unsigned long long)t.disk_only, (unsigned long long)t.evicted_pages,
               (unsigned long long)mi.mem_free, (unsigned long long)mi.cached,
               (unsigned long long)mi.dirty);
        if (cg_found)
            printf("%llu", (unsigned long long)cg);
        printf("\n");
        fflush(stdout);
        if (i == 0)
            for (size_t k = 0; k < r.nnotes; k++)
                log_warn("%s", r.notes[k]);
        cache_report_free(&r);
        for (double left = interval - (clock_seconds() - t0); left > 0 && !stop_watch;
             left = interval - (clock_seconds() - t0)) {
            struct timespec ts = {0, (long)((left < 0.1 ? left : 0.1) * 1e9)};
            nanosleep(&ts, NULL);
        }
    }
    return true;
}

static bool cmd_cache_parse_interval(const char *text, double *out)
{
    char *end;
    double v = strtod(text, &end);

    if (end == text || (*end != '\0' && strcmp(end, "s") != 0) || v < 0.1 || v > 86400)
        return false;
    *out = v;
    return true;
}

int cmd_cache(int argc, char **argv)
{
    pgd_options opts;
    pgd_error err = {0};
    cache_request req = {0};
    cache_report r = {0};
    char *like = NULL;
    long top, count;
    bool json;
    int rc;

    if (!command_start(&opts, &cache_help, 0, argc, argv, &rc))
        return rc;
    if (!opt_int(&opts, OPT_TOP, 0, 1000000, &top, &err) ||
        !opt_int(&opts, OPT_WATCH_COUNT, 0, 100000000, &count, &err) ||
        !opt_bool(&opts, OPT_JSON, &json, &err)) {
        rc = command_fail(CMD_CACHE, &err);
        goto done;
    }
    req.conninfo = opt_str(&opts, OPT_DBNAME);
    req.pgdata = opt_str(&opts, OPT_PGDATA);
    req.databases = (const char *const *)opts.v[OPT_DATABASE].values;
    req.ndatabases = opts.v[OPT_DATABASE].nvalues;
    if (req.ndatabases == 0)
        req.databases = NULL;
    if (opt_str(&opts, OPT_RELATION) != NULL)
        like = cmd_cache_glob_to_like(opt_str(&opts, OPT_RELATION));
    req.like = like;
    if (opt_str(&opts, OPT_WATCH) != NULL) {
        double interval;
        if (!cmd_cache_parse_interval(opt_str(&opts, OPT_WATCH), &interval)) {
            err_set(&err,
                    "invalid value \"%s\" for option \"--watch\": expected seconds from "
                    "0.1 to 86400",
                    opt_str(&opts, OPT_WATCH));
            rc = command_fail(CMD_CACHE, &err);
        } else {
            rc = cmd_cache_watch(&req, interval, count, &err) ? EXIT_OK
                                                              : command_fail(CMD_CACHE, &err);
        }
        goto done;
    }
    if (!cache_collect(&req, &r, &err)) {
        rc = command_fail(CMD_CACHE, &err);
        goto done;
    }
    cache_sort_by_size(&r);
    if (json) {
        rc = cache_report_write_json(stdout, &r, (size_t)top, &err) ? EXIT_OK
                                                                    : command_fail(CMD_CACHE, &err);
    } else {
        for (size_t i = 0; i < r.nnotes; i++)
            log_warn("%s", r.notes[i]);
        cmd_cache_print_table(&r, (size_t)top);
        rc = EXIT_OK;
    }
done:
    cache_report_free(&r);
    free(like);
    options_free(&opts);
    return rc;
}
