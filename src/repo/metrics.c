/*
 * metrics.c - the repository's state in Prometheus' text format (metrics.h).
 */
#define _GNU_SOURCE
#include "repo/metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "repo/backup_info.h"
#include "repo/drill_record.h"
#include "repo/verify_record.h"
#include "repo/wal_pushed.h"
#include "util/sync_dir.h"
#include "util/text.h"
#include "util/xmalloc.h"

#define METRICS_NTYPES 2

static const char *const metrics_types[METRICS_NTYPES] = {"full", "delta"};

/* One family's HELP and TYPE lines (every family here is a gauge). */
static void metrics_family(text_buf *b, const char *name, const char *help)
{
    text_buf_printf(b, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

/* The newest complete (undamaged) backup of each type, or NULL. */
static void metrics_newest(const backup_info *all, size_t n, const backup_info **newest)
{
    for (size_t t = 0; t < METRICS_NTYPES; t++)
        newest[t] = NULL;
    for (size_t i = 0; i < n; i++) {
        const char *type = all[i].type[0] ? all[i].type : "full";
        if (all[i].damaged)
            continue;
        for (size_t t = 0; t < METRICS_NTYPES; t++)
            if (strcmp(type, metrics_types[t]) == 0)
                newest[t] = &all[i]; /* oldest first: the last one seen is the newest */
    }
}

/* Per type: one sample of a backup's figure, `get` of its newest complete backup. */
static void metrics_per_type(text_buf *b, const backup_info *const *newest, const char *name,
                             const char *help, uint64_t (*get)(const backup_info *))
{
    if (newest[0] == NULL && newest[1] == NULL)
        return;
    metrics_family(b, name, help);
    for (size_t t = 0; t < METRICS_NTYPES; t++)
        if (newest[t] != NULL)
            text_buf_printf(b, "%s{type=\"%s\"} %" PRIu64 "\n", name, metrics_types[t],
                            get(newest[t]));
}

static uint64_t metrics_end(const backup_info *bi)
{
    return bi->stop_time > 0 ? (uint64_t)bi->stop_time : 0;
}

static uint64_t metrics_duration(const backup_info *bi)
{
    return bi->stop_time > bi->start_time ? (uint64_t)(bi->stop_time - bi->start_time) : 0;
}

static uint64_t metrics_read(const backup_info *bi)
{
    return bi->size;
}

static uint64_t metrics_stored(const backup_info *bi)
{
    return bi->compressed_size;
}

static uint64_t metrics_checksum_errors(const backup_info *bi)
{
    return bi->checksum_errors;
}

/*
 * The page cache's evictions the newest complete backup of each type measured; a type whose
 * newest backup could not measure them (no cachestat(2), an older sentinel) has no sample.
 */
static void metrics_evicted(text_buf *b, const backup_info *const *newest)
{
    static const char name[] = "pgdirect_backup_last_evicted_pages";
    bool any = false;

    for (size_t t = 0; t < METRICS_NTYPES; t++) {
        if (newest[t] == NULL || newest[t]->pages_evicted < 0)
            continue;
        if (!any)
            metrics_family(b, name,
                           "Pages of the files the newest complete backup of this type read "
                           "that the kernel evicted from the page cache while the backup read "
                           "them (cachestat).");
        any = true;
        text_buf_printf(b, "%s{type=\"%s\"} %" PRId64 "\n", name, metrics_types[t],
                        newest[t]->pages_evicted);
    }
}

static void metrics_backups(text_buf *b, const backup_info *all, size_t n)
{
    const backup_info *newest[METRICS_NTYPES];
    size_t damaged = 0;

    metrics_newest(all, n, newest);
    metrics_per_type(b, newest, "pgdirect_backup_last_end_timestamp_seconds",
                     "When the newest complete backup of this type ended (Unix time).",
                     metrics_end);
    metrics_per_type(b, newest, "pgdirect_backup_last_duration_seconds",
                     "How long the newest complete backup of this type took.", metrics_duration);
    metrics_per_type(b, newest, "pgdirect_backup_last_read_bytes",
                     "Bytes the newest complete backup of this type read from the cluster.",
                     metrics_read);
    metrics_per_type(b, newest, "pgdirect_backup_last_stored_bytes",
                     "Bytes the newest complete backup of this type stored in the repository.",
                     metrics_stored);
    metrics_per_type(b, newest, "pgdirect_backup_last_checksum_errors",
                     "Pages that failed their data checksum in the newest complete backup of "
                     "this type.",
                     metrics_checksum_errors);
    metrics_evicted(b, newest);
    for (size_t i = 0; i < n; i++)
        damaged += all[i].damaged;
    metrics_family(b, "pgdirect_backups", "Backups in the repository with a sentinel, by state.");
    text_buf_printf(b, "pgdirect_backups{state=\"complete\"} %zu\n", n - damaged);
    text_buf_printf(b, "pgdirect_backups{state=\"damaged\"} %zu\n", damaged);
}

/* The newest verify and drill records among the backups. */
static bool metrics_records(text_buf *b, storage *repo, const backup_info *all, size_t n,
                            pgd_error *err)
{
    verify_record v = {0}, vr;
    drill_record d = {0}, dr;

    for (size_t i = 0; i < n; i++) {
        if (all[i].damaged)
            continue;
        if (!verify_record_load(repo, all[i].id, &vr, err) ||
            !drill_record_load(repo, all[i].id, &dr, err))
            return false;
        if (vr.present && (!v.present || vr.time >= v.time))
            v = vr;
        if (dr.present && (!d.present || dr.time >= d.time))
            d = dr;
    }
    if (v.present) {
        metrics_family(b, "pgdirect_verify_last_timestamp_seconds",
                       "When the last verify of a backup ran (Unix time).");
        text_buf_printf(b, "pgdirect_verify_last_timestamp_seconds %" PRId64 "\n", v.time);
        metrics_family(b, "pgdirect_verify_last_ok",
                       "1 when the last verify found the backup good, else 0.");
        text_buf_printf(b, "pgdirect_verify_last_ok %d\n", strcmp(v.status, "good") == 0);
        metrics_family(b, "pgdirect_verify_last_problems", "Problems the last verify found.");
        text_buf_printf(b, "pgdirect_verify_last_problems %" PRIu64 "\n", v.problems);
    }
    if (d.present) {
        metrics_family(b, "pgdirect_drill_last_timestamp_seconds",
                       "When the last restore drill ended (Unix time).");
        text_buf_printf(b, "pgdirect_drill_last_timestamp_seconds %" PRId64 "\n", d.time);
        metrics_family(b, "pgdirect_drill_last_ok",
                       "1 when everything the last restore drill checked held, else 0.");
        text_buf_printf(b, "pgdirect_drill_last_ok %d\n", d.ok);
        metrics_family(b, "pgdirect_drill_last_problems",
                       "Problems the last restore drill found in the restored data.");
        text_buf_printf(b, "pgdirect_drill_last_problems %" PRIu64 "\n", d.problems);
        metrics_family(b, "pgdirect_drill_last_restore_seconds",
                       "How long the last restore drill's restore took.");
        text_buf_printf(b, "pgdirect_drill_last_restore_seconds %.3f\n", d.restore_seconds);
        metrics_family(b, "pgdirect_drill_last_recovery_seconds",
                       "The last drill's time to consistency: restore and recovery until the "
                       "server accepted connections (the measured recovery time objective).");
        text_buf_printf(b, "pgdirect_drill_last_recovery_seconds %.3f\n",
                        d.time_to_consistency_seconds);
    }
    return true;
}

/*
 * When WAL last reached the archive and the backlog then: from the wal-push writing the metrics
 * (extra), else from the record the last wal-push with --metrics-file left (wal_pushed.h).
 */
static bool metrics_wal(text_buf *b, storage *repo, const metrics_extra *extra, pgd_error *err)
{
    wal_pushed w;
    uint32_t tli;
    pg_lsn end;

    if (extra != NULL && extra->wal_archived_at > 0) {
        memset(&w, 0, sizeof(w));
        w.present = true;
        w.time = extra->wal_archived_at;
        w.backlog = extra->archive_backlog;
        if (extra->wal_segment != NULL) {
            snprintf(w.segment, sizeof(w.segment), "%s", extra->wal_segment);
            w.segment_size = extra->wal_segment_size;
        }
    } else if (!wal_pushed_load(repo, &w, err)) {
        return false;
    }
    if (!w.present)
        return true;
    metrics_family(b, "pgdirect_wal_last_archived_timestamp_seconds",
                   "When wal-push last archived a WAL segment (Unix time).");
    text_buf_printf(b, "pgdirect_wal_last_archived_timestamp_seconds %" PRId64 "\n", w.time);
    if (wal_pushed_end(&w, &tli, &end)) {
        metrics_family(b, "pgdirect_wal_last_archived_timeline",
                       "The timeline of the WAL segment wal-push last archived.");
        text_buf_printf(b, "pgdirect_wal_last_archived_timeline %" PRIu32 "\n", tli);
        metrics_family(b, "pgdirect_wal_last_archived_end_lsn_bytes",
                       "Where the WAL segment wal-push last archived ends: an LSN, a byte "
                       "position in the WAL (compare pg_current_wal_lsn()).");
        text_buf_printf(b, "pgdirect_wal_last_archived_end_lsn_bytes %" PRIu64 "\n", end);
    }
    if (w.backlog >= 0) {
        metrics_family(b, "pgdirect_wal_archive_backlog_segments",
                       "WAL files PostgreSQL had marked ready for the archive and not yet "
                       "archived when wal-push last archived one.");
        text_buf_printf(b, "pgdirect_wal_archive_backlog_segments %" PRId64 "\n", w.backlog);
    }
    return true;
}

bool metrics_collect(storage *repo, const metrics_extra *extra, char **text, pgd_error *err)
{
    backup_info *all = NULL;
    text_buf b = {0};
    size_t n = 0;
    bool ok;

    ok = backup_info_scan(repo, &all, &n, err);
    if (ok) {
        metrics_backups(&b, all, n);
        ok = metrics_records(&b, repo, all, n, err);
    }
    free(all);
    if (ok)
        ok = metrics_wal(&b, repo, extra, err);
    if (ok) {
        metrics_family(&b, "pgdirect_metrics_timestamp_seconds",
                       "When pgdirect wrote these metrics (Unix time).");
        text_buf_printf(&b, "pgdirect_metrics_timestamp_seconds %lld\n", (long long)time(NULL));
    }
    if (!ok) {
        text_buf_free(&b);
        return false;
    }
    if ((*text = text_buf_take(&b)) == NULL)
        return err_set(err, "could not format the metrics");
    return true;
}

bool metrics_write_file(const char *path, const char *text, pgd_error *err)
{
    char tmp[4096 + 32];
    size_t len = strlen(text);
    ssize_t n = 0;
    int fd;

    if (!str_format(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()))
        return err_set(err, "path too long: \"%s\"", path);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        return err_errno(err, errno, "could not create file \"%s\"", tmp);
    while (len > 0 && (n = write(fd, text, len)) > 0) {
        text += n;
        len -= (size_t)n;
    }
    if (len > 0 || fsync(fd) != 0) {
        int e = len > 0 && n >= 0 ? ENOSPC : errno;
        close(fd);
        unlink(tmp);
        return err_errno(err, e, "could not write file \"%s\"", tmp);
    }
    if (close(fd) != 0 || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return err_errno(err, e, "could not write file \"%s\"", path);
    }
    return sync_dir_of(path, err);
}
