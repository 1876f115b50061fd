/*
 * recovery_conf.c - recovery settings: inherited ones stripped, ours quoted
 * for PostgreSQL's configuration parser and for /bin/sh, and written.
 */
#define _GNU_SOURCE
#include "restore/recovery_conf.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/log.h"
#include "util/text.h"
#include "util/xmalloc.h"

#define SETTING_NAME_MAX     128
#define PG_VERSION_AUTO_CONF 120000 /* recovery settings in postgresql.conf from PG 12 */
#define AUTO_CONF_NAME       "postgresql.auto.conf"
#define CONF_FILE_NAME       "postgresql.conf"
#define CONF_FILE_MAX        (16 * 1024 * 1024) /* configuration files are a few KiB */

/*
 * Each recovery setting with the value PostgreSQL uses when nothing sets it:
 * what a restore writes over one that the restored postgresql.conf sets.
 * NULL for the names recovery.conf used before PostgreSQL 12, which no
 * server we restore accepts in postgresql.conf.
 */
typedef struct recovery_setting {
    const char *name;
    const char *reset; /* PostgreSQL's default */
} recovery_setting;

static const recovery_setting recovery_settings[] = {
    /* Write-Ahead Log / Archive Recovery */
    {"restore_command", ""},
    {"archive_cleanup_command", ""},
    {"recovery_end_command", ""},
    /* Write-Ahead Log / Recovery Target */
    {"recovery_target", ""},
    {"recovery_target_action", "pause"},
    {"recovery_target_inclusive", "on"},
    {"recovery_target_lsn", ""},
    {"recovery_target_name", ""},
    {"recovery_target_time", ""},
    {"recovery_target_timeline", "latest"},
    {"recovery_target_xid", ""},
    /* Replication / Standby Servers: where WAL comes from, when it is applied */
    {"primary_conninfo", ""},
    {"primary_slot_name", ""},
    {"wal_receiver_create_temp_slot", "off"},
    {"recovery_min_apply_delay", "0"},
    {"promote_trigger_file", ""},
    /* recovery.conf names before PostgreSQL 12 */
    {"standby_mode", NULL},
    {"trigger_file", NULL}};

#define RECOVERY_SETTINGS_N (sizeof(recovery_settings) / sizeof(recovery_settings[0]))

bool recovery_conf_is_recovery_setting(const char *name, size_t len)
{
    for (size_t i = 0; i < RECOVERY_SETTINGS_N; i++)
        if (strlen(recovery_settings[i].name) == len &&
            strncasecmp(recovery_settings[i].name, name, len) == 0)
            return true;
    return false;
}

/* A GUC name as the configuration lexer reads it: letters, digits, '_', '.', bytes >= 0x80. */
static size_t recovery_conf_name_length(const char *p)
{
    size_t n = 0;

    if (!(isalpha((unsigned char)p[0]) || p[0] == '_' || (unsigned char)p[0] >= 0x80))
        return 0;
    while (isalnum((unsigned char)p[n]) || p[n] == '_' || p[n] == '.' ||
           (unsigned char)p[n] >= 0x80)
        n++;
    return n;
}

/* Add name to the ", "-separated list once, however often the file sets it. */
static void recovery_conf_note_removed(FILE *removed, char *seen, size_t seenlen, const char *name,
                                       size_t len)
{
    char key[SETTING_NAME_MAX + 3]; /* ",name," */
    size_t n = len < SETTING_NAME_MAX ? len : SETTING_NAME_MAX;

    key[0] = ',';
    for (size_t i = 0; i < n; i++)
        key[i + 1] = (char)tolower((unsigned char)name[i]);
    key[n + 1] = ',';
    key[n + 2] = '\0';
    if (strstr(seen, key) != NULL || strlen(seen) + n + 1 >= seenlen)
        return;
    fprintf(removed, "%s%.*s", seen[1] != '\0' ? ", " : "", (int)n, key + 1);
    strcat(seen, key + 1); /* seen stays ",a,b," */
}

bool recovery_conf_strip(const char *text, char **kept, char **removed, pgd_error *err)
{
    size_t kept_len, removed_len;
    FILE *k = open_memstream(kept, &kept_len);
    FILE *r = open_memstream(removed, &removed_len);
    char seen[RECOVERY_SETTINGS_N * (SETTING_NAME_MAX + 1)] = ",";
    const char *line = text;

    if (k == NULL || r == NULL) {
        if (k != NULL) {
            fclose(k);
            free(*kept);
        }
        if (r != NULL) {
            fclose(r);
            free(*removed);
        }
        return err_set(err, "out of memory");
    }
    while (*line != '\0') {
        size_t linelen = strcspn(line, "\n");
        size_t full = linelen + (line[linelen] == '\n');
        const char *p = line + strspn(line, " \t");
        size_t namelen = recovery_conf_name_length(p);

        /* "name = value" or "name value"; comments and blank lines have no name */
        if (namelen > 0 && recovery_conf_is_recovery_setting(p, namelen))
            recovery_conf_note_removed(r, seen, sizeof(seen), p, namelen);
        else
            fwrite(line, 1, full, k);
        line += full;
    }
    if ((fclose(k) != 0) | (fclose(r) != 0)) {
        free(*kept);
        free(*removed);
        return err_set(err, "out of memory");
    }
    return true;
}

void recovery_conf_append(FILE *out, const char *key, const char *value)
{
    fprintf(out, "%s = '", key);
    for (const unsigned char *p = (const unsigned char *)value; *p != '\0'; p++) {
        /* the lexer's STRING: no raw newline, '' for ', backslash escapes */
        if (*p == '\'')
            fputs("''", out);
        else if (*p == '\\')
            fputs("\\\\", out);
        else if (*p == '\n')
            fputs("\\n", out);
        else if (*p == '\r')
            fputs("\\r", out);
        else if (*p == '\t')
            fputs("\\t", out);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(out, "\\%03o", *p);
        else
            fputc(*p, out);
    }
    fputs("'\n", out);
}

/* One word for /bin/sh: as is when it holds only safe characters, else in single quotes. */
static void recovery_conf_shell_word(FILE *out, const char *word)
{
    static const char safe[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                               "0123456789/._-:+=@,";

    if (word[0] != '\0' && strspn(word, safe) == strlen(word)) {
        fputs(word, out);
        return;
    }
    fputc('\'', out);
    for (const char *p = word; *p != '\0'; p++) {
        if (*p == '\'')
            fputs("'\\''", out);
        else
            fputc(*p, out);
    }
    fputc('\'', out);
}

bool recovery_conf_restore_command(const char *exe, const char *const *args, size_t nargs,
                                   char **out, pgd_error *err)
{
    char *words = NULL, *cmd = NULL;
    size_t words_len, cmd_len;
    FILE *w = open_memstream(&words, &words_len), *c;

    if (w == NULL)
        return err_set(err, "out of memory");
    recovery_conf_shell_word(w, exe);
    fputs(" wal-fetch", w);
    for (size_t i = 0; i < nargs; i++) {
        fputc(' ', w);
        recovery_conf_shell_word(w, args[i]);
    }
    if (fclose(w) != 0 || (c = open_memstream(&cmd, &cmd_len)) == NULL) {
        free(words);
        return err_set(err, "out of memory");
    }
    /* PostgreSQL replaces %f, %p, %r and %%: a '%' of a path must not become one of them */
    for (const char *p = words; *p != '\0'; p++) {
        if (*p == '%')
            fputc('%', c);
        fputc(*p, c);
    }
    fputs(" %f %p", c);
    free(words);
    if (fclose(c) != 0) {
        free(cmd);
        return err_set(err, "out of memory");
    }
    *out = cmd;
    return true;
}

/*
 * A restored configuration file ("" when the backup has none), at most
 * CONF_FILE_MAX, and only a regular file (a link to a FIFO would block
 * us). postgresql.auto.conf is never read through a link: a crafted
 * backup's link would make us read, as root, whatever it points to.
 * postgresql.conf is often a link (Debian keeps it in /etc): the restore
 * put that link there itself, after checking it against
 * --allow-external-links, and PostgreSQL will read through it, so we do
 * too (`follow_link`).
 */
static bool recovery_conf_read(const char *target, const char *name, bool follow_link, char **text,
                               pgd_error *err)
{
    char path[PATH_MAX];
    struct stat st;
    FILE *f;
    size_t n;
    int fd;

    *text = NULL;
    if (!str_format(path, sizeof(path), "%s/%s", target, name))
        return err_set(err, "path too long: \"%s/%s\"", target, name);
    fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | (follow_link ? 0 : O_NOFOLLOW));
    if (fd < 0 && errno == ENOENT) {
        *text = xstrdup("");
        return true;
    }
    if (fd >= 0 && fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
        close(fd);
        return err_set(err, "could not read file \"%s\": not a regular file", path);
    }
    if (fd < 0 || (f = fdopen(fd, "r")) == NULL) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return err_errno(err, e, "could not open file \"%s\"", path);
    }
    *text = xmalloc(CONF_FILE_MAX + 1);
    n = fread(*text, 1, CONF_FILE_MAX + 1, f);
    if (ferror(f) || n > CONF_FILE_MAX) {
        fclose(f);
        free(*text);
        *text = NULL;
        return err_set(err, "could not read file \"%s\": %s", path,
                       n > CONF_FILE_MAX ? "larger than 16 MiB" : "read error");
    }
    fclose(f);
    (*text)[n] = '\0';
    return true;
}

/* What postgresql.auto.conf keeps of the restored one; "" before PostgreSQL 12. */
static bool recovery_conf_kept(const recovery_conf_request *req, char **kept, pgd_error *err)
{
    char *old, *removed;
    bool ok;

    *kept = NULL;
    if (req->pg_version_num < PG_VERSION_AUTO_CONF) {
        *kept = xstrdup("");
        return true;
    }
    if (!recovery_conf_read(req->target, AUTO_CONF_NAME, false, &old, err))
        return false;
    ok = recovery_conf_strip(old, kept, &removed, err);
    free(old);
    if (!ok)
        return false;
    if (removed[0] != '\0')
        log_info("removed recovery settings inherited from the backup's %s: %s", AUTO_CONF_NAME,
                 removed);
    free(removed);
    return true;
}

/* Whether `name` is one of the ", "-separated names of `list`. */
static bool recovery_conf_listed(const char *list, const char *name)
{
    size_t len = strlen(name);

    for (const char *p = list; *p != '\0'; p += strspn(p, ", ")) {
        size_t n = strcspn(p, ",");
        if (n == len && strncasecmp(p, name, len) == 0)
            return true;
        p += n;
    }
    return false;
}

/*
 * postgresql.conf is the DBA's file and stays as restored, but recovery
 * settings in it would still apply: an old recovery_target_time would stop
 * "recover to the end" early, and with our own target PostgreSQL refuses
 * to start ("multiple recovery targets"). postgresql.auto.conf is read
 * after it and its value wins, so every recovery setting postgresql.conf
 * sets and we do not is written back to PostgreSQL's default there. Files
 * postgresql.conf includes are not followed.
 */
static bool recovery_conf_overrides(const recovery_conf_request *req, FILE *out, pgd_error *err)
{
    char *text, *kept, *found;
    bool ok;

    if (!recovery_conf_read(req->target, CONF_FILE_NAME, true, &text, err))
        return false;
    ok = recovery_conf_strip(text, &kept, &found, err);
    free(text);
    if (!ok)
        return false;
    free(kept);
    for (size_t i = 0; i < RECOVERY_SETTINGS_N; i++) {
        const recovery_setting *rs = &recovery_settings[i];

        if (rs->reset == NULL || !recovery_conf_listed(found, rs->name) ||
            strcmp(rs->name, "restore_command") == 0 ||
            (req->target_key != NULL && strcmp(rs->name, req->target_key) == 0) ||
            (req->target_action != NULL && strcmp(rs->name, "recovery_target_action") == 0) ||
            (req->target_timeline != NULL && strcmp(rs->name, "recovery_target_timeline") == 0) ||
            (req->primary_conninfo != NULL && strcmp(rs->name, "primary_conninfo") == 0))
            continue;
        recovery_conf_append(out, rs->name, rs->reset);
    }
    if (found[0] != '\0')
        log_info("recovery settings of the backup's %s overridden in %s: %s", CONF_FILE_NAME,
                 AUTO_CONF_NAME, found);
    free(found);
    return true;
}

bool recovery_conf_write(const recovery_conf_request *req, durable_list *l, pgd_error *err)
{
    char *kept, *conf = NULL;
    size_t conf_len;
    FILE *out;
    bool ok;

    if (!recovery_conf_kept(req, &kept, err))
        return false;
    out = open_memstream(&conf, &conf_len);
    if (out == NULL) {
        free(kept);
        return err_set(err, "out of memory");
    }
    if (kept[0] != '\0')
        fprintf(out, "%s%s", kept, kept[strlen(kept) - 1] == '\n' ? "" : "\n");
    free(kept);
    fprintf(out, "# added by pgdirect restore of backup %s\n", req->backup_id);
    recovery_conf_append(out, "restore_command", req->restore_command);
    if (req->target_key != NULL)
        recovery_conf_append(out, req->target_key, req->target_value);
    if (req->target_action != NULL)
        recovery_conf_append(out, "recovery_target_action", req->target_action);
    if (req->target_timeline != NULL)
        recovery_conf_append(out, "recovery_target_timeline", req->target_timeline);
    if (req->standby && req->pg_version_num < PG_VERSION_AUTO_CONF)
        recovery_conf_append(out, "standby_mode", "on");
    if (req->primary_conninfo != NULL)
        recovery_conf_append(out, "primary_conninfo", req->primary_conninfo);
    /* last, so that it wins over an archive_mode the restored files set (the last one counts);
       recovery.conf (before 12) takes recovery settings only */
    if (req->archive_off && req->pg_version_num >= PG_VERSION_AUTO_CONF)
        recovery_conf_append(out, "archive_mode", "off");
    ok = req->pg_version_num < PG_VERSION_AUTO_CONF || recovery_conf_overrides(req, out, err);
    if (fclose(out) != 0) {
        free(conf);
        return err_set(err, "out of memory");
    }
    if (!ok) {
        free(conf);
        return false;
    }
    if (req->pg_version_num < PG_VERSION_AUTO_CONF)
        ok = durable_write_file(req->target, "recovery.conf", conf, O_EXCL, l, err);
    else
        ok = durable_write_file(req->target, AUTO_CONF_NAME, conf, O_TRUNC, l, err) &&
             durable_write_file(req->target, req->standby ? "standby.signal" : "recovery.signal",
                                "", O_EXCL, l, err);
    free(conf);
    return ok;
}
