/*
 * metrics.c - `pgdirect metrics`: the repository's state for monitoring, printed in Prometheus'
 * text format (repo/metrics.h), the same text --metrics-file writes after backup, wal-push,
 * verify and drill. For a scrape on demand (a textfile collector's cron job, an exporter
 * running it) rather than after each command.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "cmd/cmd.h"
#include "cmd/common.h"
#include "repo/metrics.h"

static const command_help metrics_help = {
    CMD_METRICS, "usage: pgdirect metrics [OPTIONS]",
    "Print the repository's metrics in Prometheus' text exposition format: the last complete\n"
    "backup of each type (end time, duration, bytes read and stored, checksum errors, pages\n"
    "evicted from the page cache while it read), the backups by state, the last verify and the\n"
    "last restore drill (verdict, problems, restore and recovery seconds), and when WAL was last\n"
    "archived (its segment's timeline and end, the archive backlog then), as the last wal-push\n"
    "with --metrics-file recorded it. backup, wal-push, verify and drill write the same to a\n"
    "file with --metrics-file."};

int cmd_metrics(int argc, char **argv)
{
    pgd_options opts;
    pgd_error err = {0};
    storage *repo = NULL;
    char *text = NULL;
    int rc;

    if (!command_start(&opts, &metrics_help, 0, argc, argv, &rc))
        return rc;
    if ((repo = command_open_repo(&opts, &err)) == NULL ||
        !metrics_collect(repo, NULL, &text, &err)) {
        rc = command_fail(CMD_METRICS, &err);
    } else if (fputs(text, stdout) < 0 || fflush(stdout) != 0) {
        err_errno(&err, errno, "could not write to standard output");
        rc = command_fail(CMD_METRICS, &err);
    } else {
        rc = EXIT_OK;
    }
    free(text);
    storage_free(repo);
    options_free(&opts);
    return rc;
}
