/*
 * list.c - `pgdirect list [--json]`: the complete backups of a repository.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd/cmd.h"
#include "cmd/common.h"
#include "repo/backup_info.h"
#include "util/log.h"
#include "util/progress.h"

static const command_help list_help = {
    CMD_LIST, "usage: pgdirect list [--json] [OPTIONS]",
    "List the complete backups in the repository, oldest first. A backup that is still\n"
    "running or was interrupted is not shown: it has no sentinel yet."};

static void print_table(const backup_info *b, size_t n)
{
    printf("%-17s  %-4s  %-20s  %9s  %10s  %10s  %5s  %-12s  %-12s  %-24s\n", "ID", "TYPE",
           "STARTED (UTC)", "DURATION", "SIZE", "STORED", "RATIO", "START LSN", "STOP LSN",
           "WAL START");
    for (size_t i = 0; i < n; i++) {
        char started[32], dur[32], size[32], stored[32];
        struct tm tm;
        time_t t = (time_t)b[i].start_time;

        gmtime_r(&t, &tm);
        strftime(started, sizeof(started), "%Y-%m-%d %H:%M:%S", &tm);
        format_duration((double)(b[i].stop_time - b[i].start_time), dur, sizeof(dur));
        format_bytes(b[i].size, size, sizeof(size));
        format_bytes(b[i].compressed_size, stored, sizeof(stored));
        printf("%-17s  %-4s  %-20s  %9s  %10s  %10s  %5.2f  %-12s  %-12s  %-24s\n", b[i].id,
               b[i].type, started, dur, size, stored,
               b[i].compressed_size ? (double)b[i].size / (double)b[i].compressed_size : 0.0,
               b[i].start_lsn, b[i].stop_lsn, b[i].start_wal);
    }
    if (n == 0)
        printf("(no backups)\n");
}

static bool print_json(const backup_info *b, size_t n, pgd_error *err)
{
    json_t *arr = json_array();
    char *text;

    for (size_t i = 0; i < n; i++) {
        char *one;
        json_t *o;
        if (!backup_info_to_json(&b[i], &one, err)) {
            json_decref(arr);
            return false;
        }
        o = json_loads(one, 0, NULL);
        free(one);
        json_array_append_new(arr, o);
    }
    text = json_dumps(arr, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(arr);
    if (text == NULL)
        return err_set(err, "could not serialise the backup list");
    printf("%s\n", text);
    free(text);
    return true;
}

int cmd_list(int argc, char **argv)
{
    pgd_options opts;
    pgd_error err = {0};
    storage *repo = NULL;
    backup_info *backups = NULL;
    size_t n = 0;
    bool json;
    int rc;

    if (!command_start(&opts, &list_help, 0, argc, argv, &rc))
        return rc;
    if (!opt_bool(&opts, OPT_JSON, &json, &err) ||
        (repo = command_open_repo(&opts, &err)) == NULL ||
        !backup_info_list(repo, &backups, &n, &err)) {
        rc = command_fail(&err);
    } else if (json) {
        rc = print_json(backups, n, &err) ? EXIT_OK : command_fail(&err);
    } else {
        print_table(backups, n);
        rc = EXIT_OK;
    }
    free(backups);
    storage_free(repo);
    options_free(&opts);
    return rc;
}
