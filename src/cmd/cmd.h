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

int cmd_backup(int argc, char **argv);
int cmd_restore(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_wal_push(int argc, char **argv);
int cmd_wal_fetch(int argc, char **argv);
int cmd_cache(int argc, char **argv);
int cmd_tune(int argc, char **argv);

#endif
