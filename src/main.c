/*
 * main.c - pgdirect: PostgreSQL physical backups read with direct I/O, so a
 * backup leaves the page cache (and the queries that rely on it) alone.
 *
 * Dispatch only: `pgdirect COMMAND [OPTIONS] [ARGS]`.
 */
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "pg/session.h"
#include "util/log.h"

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} main_commands[] = {
    {"backup", cmd_backup, "full backup of the running cluster (direct I/O)"},
    {"restore", cmd_restore, "restore a backup and configure point-in-time recovery"},
    {"list", cmd_list, "list the backups in the repository"},
    {"wal-push", cmd_wal_push, "archive one WAL file (archive_command)"},
    {"wal-fetch", cmd_wal_fetch, "restore one WAL file (restore_command)"},
    {"tune", cmd_tune, "what block size and concurrency a backup would use here, and why"},
    {"cache", cmd_cache, "where each relation's pages are: shared_buffers, page cache, disk"},
};

#define NCOMMANDS (sizeof(main_commands) / sizeof(main_commands[0]))

static void main_usage(FILE *out)
{
    fprintf(out,
            "pgdirect %s - PostgreSQL backups that leave the page cache alone\n\n"
            "usage: pgdirect COMMAND [OPTIONS] [ARGS]\n\ncommands:\n",
            PGDIRECT_VERSION);
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(out, "  %-10s %s\n", main_commands[i].name, main_commands[i].summary);
    fprintf(out, "\nServers: PostgreSQL %d to %d.\n", PG_SESSION_MAJOR_MIN, PG_SESSION_MAJOR_MAX);
    fprintf(out, "\n\"pgdirect COMMAND --help\" lists the options of a command and their "
                 "defaults.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        main_usage(stderr);
        return EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        main_usage(stdout);
        return EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("pgdirect %s\n", PGDIRECT_VERSION);
        return EXIT_OK;
    }
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(argv[1], main_commands[i].name) == 0)
            return main_commands[i].run(argc - 2, argv + 2);
    log_error("unknown command \"%s\" (see pgdirect --help)", argv[1]);
    return EXIT_USAGE;
}
