/*
 * cmd.h - the commands. Each parses its options, calls modules, reports,
 * and returns the process exit status.
 */
#ifndef PGD_CMD_H
#define PGD_CMD_H

#define PGDIRECT_VERSION "0.1.0"

#define EXIT_OK    0
#define EXIT_ERROR 1
#define EXIT_USAGE 2
/*
 * backup --checksum-errors fail: the backup completed and exists (list shows
 * it, restore by id uses it, restore LATEST passes it over) but pages failed
 * their data checksum. Distinct from 1 so a schedule can tell "no backup"
 * from "a backup of a cluster with corrupt pages".
 */
#define EXIT_CHECKSUM_ERRORS 3

/* verify: a backup is damaged (1 stays "verify could not run": try again later); drill: the
   restored cluster's data is wrong (1: the drill could not run) */
#define EXIT_DAMAGED 3

/*
 * wal-fetch runs as restore_command, and PostgreSQL reads its exit status
 * (RestoreArchivedFile): 0 is "restored"; 1 to 125 is "not archived", which
 * ends recovery there and promotes the server; above 125, or a signal,
 * stops the startup process with FATAL. So only "this file is not in the
 * repository" may say 1; every other failure says EXIT_WAL_FATAL (not 126
 * or 127, which the shell uses for a command it cannot run).
 */
#define EXIT_WAL_NOT_ARCHIVED 1
#define EXIT_WAL_FATAL        254

int cmd_backup(int argc, char **argv);
int cmd_restore(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_wal_push(int argc, char **argv);
int cmd_wal_fetch(int argc, char **argv);
int cmd_cache(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_delete(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_key(int argc, char **argv);
int cmd_cat(int argc, char **argv);
int cmd_drill(int argc, char **argv);
int cmd_metrics(int argc, char **argv);
int cmd_annotate(int argc, char **argv);

#endif
