/*
 * main.c - pgdirect: PostgreSQL physical backups read with direct I/O, so a
 * backup leaves the page cache (and the queries that rely on it) alone.
 *
 * Dispatch only: `pgdirect COMMAND [OPTIONS] [ARGS]`.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "pg/pg_version.h"
#include "util/log.h"
#include "util/options.h"
#include "util/xmalloc.h"

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
    {"check", cmd_check, "prove the set-up: settings, archive_command reaches the repository"},
    {"delete", cmd_delete, "retention (--retain-full, --retain-since, --backup) and --garbage"},
    {"verify", cmd_verify,
     "re-read backups and their WAL without restoring: restorable, and how far"},
    {"key", cmd_key, "key rotate: a new master key for an encrypted repository"},
    {"cat", cmd_cat, "an object of the repository, decrypted, on standard output"},
    {"drill", cmd_drill, "restore a backup into a scratch directory, start it and check its data"},
    {"metrics", cmd_metrics, "the repository's state in Prometheus' text format"},
    {"annotate", cmd_annotate, "add, change or remove a backup's KEY=VALUE annotations"},
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
    fprintf(out, "\nServers: PostgreSQL %d to %d.\n", PG_VERSION_MAJOR_MIN, PG_VERSION_MAJOR_MAX);
    fprintf(out, "\n\"pgdirect COMMAND --help\" lists the options of a command and their "
                 "defaults;\n\"pgdirect --help-man\" prints the manual page (roff).\n");
}

/*
 * The manual page, in roff: each command prints its own part through the
 * same option table and help texts as --help (util/options.h), so the two
 * cannot disagree. The build runs this to make pgdirect.1.
 */
static void main_print_man(void)
{
    char help[] = "--help";
    char *argv[] = {help, NULL};

    printf(".TH PGDIRECT 1 \"\" \"pgdirect %s\" \"User Commands\"\n"
           ".SH NAME\npgdirect \\- PostgreSQL backups that leave the page cache alone\n"
           ".SH SYNOPSIS\n.B pgdirect\n.I COMMAND\n[\\fIOPTIONS\\fR] [\\fIARGS\\fR]\n"
           ".SH DESCRIPTION\n"
           "pgdirect takes physical backups of a running PostgreSQL cluster, reading data files "
           "with direct I/O so the page cache is left as it was; archives and restores WAL; "
           "restores to a point in time; keeps a repository (a local directory or an S3 bucket) "
           "in shape with retention and garbage collection. Options may stand anywhere after "
           "the command; each has one name on the command line (\\fB\\-\\-name\\fR), in the "
           "environment (\\fBPGDIRECT_NAME\\fR) and in the configuration file "
           "(\\fBname = value\\fR), in that order of precedence.\n"
           ".SH COMMANDS\n",
           PGDIRECT_VERSION);
    options_help_man_on();
    for (size_t i = 0; i < NCOMMANDS; i++) {
        printf(".SS %s\n", main_commands[i].name);
        main_commands[i].run(1, argv);
    }
    fputs(".SH REPOSITORY OPTIONS\n", stdout);
    options_print_man_shared(true);
    fputs(".SH GENERAL OPTIONS\n", stdout);
    options_print_man_shared(false);
    printf(".SH ENVIRONMENT\n"
           ".TP\n\\fBPGDIRECT_\\fR\\fINAME\\fR\n"
           "Any option, its name upper-cased with \\- as _: PGDIRECT_REPO, PGDIRECT_RETAIN_FULL.\n"
           ".TP\n\\fBPGDATA\\fR, \\fBPGHOST\\fR, \\fBPGPORT\\fR, \\fBPGUSER\\fR, "
           "\\fBPGDATABASE\\fR\nThe data directory and libpq's connection settings.\n"
           ".TP\n\\fBAWS_ACCESS_KEY_ID\\fR, \\fBAWS_SECRET_ACCESS_KEY\\fR, "
           "\\fBAWS_SESSION_TOKEN\\fR, \\fBAWS_REGION\\fR, \\fBAWS_ENDPOINT_URL\\fR\n"
           "Credentials and endpoint of an s3:// repository.\n"
           ".SH FILES\n.TP\n\\fI/etc/pgdirect.conf\\fR\n"
           "Default configuration file (\\fB\\-\\-config\\fR): \\fBname = value\\fR lines, read as "
           "PostgreSQL reads postgresql.conf: \\fB#\\fR comments, values with white space in "
           "single quotes (\\fB\\(aq\\(aq\\fR for a quote).\n"
           ".SH EXIT STATUS\n"
           ".TP\n%d\nSuccess; for \\fBcheck\\fR, every check passed (warnings allowed).\n"
           ".TP\n%d\nFailure: one line on standard error names the cause.\n"
           ".TP\n%d\nUsage error: unknown command or option, invalid option value.\n"
           ".TP\n%d\nDamaged data found. \\fBverify\\fR: at least one backup verified is damaged "
           "(each problem is named; a corrupt sentinel too); %d from verify means it could not "
           "run (repository unreachable or unreadable, interrupted). \\fBbackup "
           "\\-\\-checksum\\-errors fail\\fR: the backup completed, but pages failed their data "
           "checksum; it is marked and \\fBrestore LATEST\\fR passes over it. \\fBdrill\\fR: the "
           "restored cluster's data is wrong (each problem named), or it does not recover; %d "
           "from drill means the drill could not run.\n"
           ".PP\n\\fBwal\\-fetch\\fR runs as restore_command and answers PostgreSQL: "
           "%d when the file was restored, %d when it is not in the repository (recovery ends "
           "there), %d on any other failure, which stops recovery instead of ending it early.\n"
           ".SH EXAMPLES\n.nf\n"
           "archive_command = \\(aqpgdirect wal\\-push %%p\\(aq\n"
           "pgdirect check\n"
           "pgdirect backup \\-\\-repo s3://bucket/prefix\n"
           "pgdirect restore LATEST \\-\\-target\\-dir /srv/pg \\-\\-target\\-time "
           "\\(aq2026\\-11\\-29 21:00:00+00\\(aq\n"
           "pgdirect verify \\-\\-all\n"
           "pgdirect delete \\-\\-retain\\-full 2 \\-\\-garbage \\-\\-dry\\-run\n"
           ".fi\n"
           ".SH SEE ALSO\n\\fBpostgres\\fR(1), \\fBpg_verifybackup\\fR(1), "
           "\\fBsystemd.timer\\fR(5)\n",
           EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_DAMAGED, EXIT_ERROR, EXIT_ERROR, EXIT_OK,
           EXIT_WAL_NOT_ARCHIVED, EXIT_WAL_FATAL);
}

int main(int argc, char **argv)
{
    /* jansson allocates as the rest of pgdirect does (util/xmalloc.h): its NULLs mean bad input */
    json_set_alloc_funcs(xmalloc, free);
    if (argc < 2) {
        main_usage(stderr);
        return EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        main_usage(stdout);
        return EXIT_OK;
    }
    if (strcmp(argv[1], "--help-man") == 0) {
        main_print_man();
        return fflush(stdout) == 0 && !ferror(stdout) ? EXIT_OK : EXIT_ERROR;
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
