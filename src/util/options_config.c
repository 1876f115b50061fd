/*
 * options_config.c - the config file (--config, default /etc/pgdirect.conf),
 * read with postgresql.conf's syntax, so that a line written the way
 * PostgreSQL's own files are written means the same here:
 *
 *   # a comment: from '#' outside quotes to the end of the line
 *   repo = /var/lib/pgdirect       an unquoted value is one word
 *   repo = '/var/lib/pgdirect'     quoted: '' is one quote, and backslash
 *                                  escapes as PostgreSQL reads them
 *   dbname = 'host=/tmp port=5433' white space or '#' only inside quotes
 *   repo /var/lib/pgdirect         the '=' may be left out
 *
 * What PostgreSQL would refuse is refused, naming the file and the line: a
 * name without a value, an unterminated quote, anything after the value.
 * So is what an INI reader would have skipped: a section header ("[main]")
 * would suggest sections that do not exist, and ';' starts no comment.
 * An unquoted value is more liberal than PostgreSQL's (which must start
 * with a letter or digit): any word without white space, '#' or a quote,
 * so that paths need no quotes. PostgreSQL's include directives are not
 * supported: "include" is an unknown name.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/options_internal.h"

#define OPTIONS_CONFIG_LINE_MAX 8192
#define OPTIONS_CONFIG_NAME_MAX 128
/* how much of what follows a value an error message quotes */
#define OPTIONS_CONFIG_QUOTE_MAX 40

/* Where in the file a line is, for its messages. */
typedef struct options_config_pos {
    const char *path;
    int lineno;
} options_config_pos;

static bool options_config_fail(const options_config_pos *pos, pgd_error *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static bool options_config_fail(const options_config_pos *pos, pgd_error *err, const char *fmt, ...)
{
    char what[PGD_ERROR_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return err_set(err, "config file \"%s\" line %d: %s", pos->path, pos->lineno, what);
}

static const char *options_config_skip_space(const char *p)
{
    while (isspace((unsigned char)*p))
        p++;
    return p;
}

/* Length of the word at p: up to white space (for quoting it in a message). */
static int options_config_word_len(const char *p)
{
    int n = 0;

    while (p[n] != '\0' && !isspace((unsigned char)p[n]) && n < OPTIONS_CONFIG_QUOTE_MAX)
        n++;
    return n;
}

/*
 * The backslash escape at p (just after the backslash), as PostgreSQL's
 * configuration scanner decodes it: \b \f \n \r \t, one to three octal
 * digits, and any other character stands for itself (\' and \\). Returns
 * where the escape ends; *c gets the character, '\0' for \0 (which no C
 * string can hold: the caller refuses it).
 */
static const char *options_config_unescape(const char *p, char *c)
{
    int v = 0, k;

    switch (*p) {
    case 'b':
        *c = '\b';
        return p + 1;
    case 'f':
        *c = '\f';
        return p + 1;
    case 'n':
        *c = '\n';
        return p + 1;
    case 'r':
        *c = '\r';
        return p + 1;
    case 't':
        *c = '\t';
        return p + 1;
    default:
        break;
    }
    if (*p < '0' || *p > '7') {
        *c = *p;
        return p + 1;
    }
    for (k = 0; k < 3 && p[k] >= '0' && p[k] <= '7'; k++)
        v = (v << 3) + (p[k] - '0');
    *c = (char)(v & 0xff);
    return p + k;
}

/* A quoted value at p (on its opening quote) into out; *end: just after the closing quote. */
static bool options_config_quoted(const char *p, const char *name, char *out, const char **end,
                                  const options_config_pos *pos, pgd_error *err)
{
    for (p++;;) {
        char c;

        if (*p == '\0')
            return options_config_fail(pos, err,
                                       "unterminated quoted string in the value of \"%s\"", name);
        if (*p == '\'' && p[1] == '\'') {
            *out++ = '\'';
            p += 2;
            continue;
        }
        if (*p == '\'')
            break;
        if (*p != '\\') {
            *out++ = *p++;
            continue;
        }
        if (p[1] == '\0')
            return options_config_fail(pos, err,
                                       "unterminated quoted string in the value of \"%s\"", name);
        p = options_config_unescape(p + 1, &c);
        if (c == '\0')
            return options_config_fail(pos, err, "NUL character (\\0) in the value of \"%s\"",
                                       name);
        *out++ = c;
    }
    *out = '\0';
    *end = p + 1;
    return true;
}

/* An unquoted value at p into out: one word; *end: just after it. */
static bool options_config_unquoted(const char *p, const char *name, char *out, const char **end,
                                    const options_config_pos *pos, pgd_error *err)
{
    while (*p != '\0' && *p != '#' && !isspace((unsigned char)*p)) {
        if (*p == '\'')
            return options_config_fail(pos, err,
                                       "quote inside the unquoted value of \"%s\" (quote the whole "
                                       "value, with '' for a quote in it)",
                                       name);
        *out++ = *p++;
    }
    *out = '\0';
    *end = p;
    return true;
}

/*
 * One line (its newline removed) into name and value (buffers at least as
 * long as the line); name[0] is '\0' for a line with neither (blank, or a
 * comment).
 */
static bool options_config_line(const char *line, char *name, char *value,
                                const options_config_pos *pos, pgd_error *err)
{
    const char *p = options_config_skip_space(line), *start;
    size_t len;

    name[0] = '\0';
    if (*p == '\0' || *p == '#')
        return true;
    if (*p == ';')
        return options_config_fail(pos, err, "\";\" starts no comment here: use \"#\"");
    if (*p == '[')
        return options_config_fail(pos, err,
                                   "unexpected section header \"%.*s\" (the file has no "
                                   "sections: name = value lines only)",
                                   options_config_word_len(p), p);
    for (start = p;
         *p != '\0' && *p != '=' && *p != '#' && *p != '\'' && !isspace((unsigned char)*p); p++)
        ;
    len = (size_t)(p - start);
    if (len == 0)
        return options_config_fail(pos, err, "expected \"name = value\"");
    if (len >= OPTIONS_CONFIG_NAME_MAX)
        return options_config_fail(pos, err, "unknown option \"%.*s...\"", OPTIONS_CONFIG_QUOTE_MAX,
                                   start);
    memcpy(name, start, len);
    name[len] = '\0';
    p = options_config_skip_space(p);
    if (*p == '=')
        p = options_config_skip_space(p + 1);
    if (*p == '\0' || *p == '#')
        return options_config_fail(pos, err, "no value for \"%s\"", name);
    if (*p == '\'' ? !options_config_quoted(p, name, value, &p, pos, err)
                   : !options_config_unquoted(p, name, value, &p, pos, err))
        return false;
    p = options_config_skip_space(p);
    if (*p != '\0' && *p != '#')
        return options_config_fail(pos, err,
                                   "unexpected \"%.*s\" after the value of \"%s\" (quote a value "
                                   "that holds white space or '#')",
                                   options_config_word_len(p), p, name);
    return true;
}

/* The option of one name = value line: stored, skipped (another command's) or refused. */
static bool options_config_apply(pgd_options *opts, const char *name, const char *value,
                                 const options_config_pos *pos, pgd_error *err)
{
    int id = options_lookup(name, strlen(name));

    if (id < 0 || id == OPT_CONFIG || id == OPT_HELP)
        return options_config_fail(pos, err, "unknown option \"%s\"", name);
    /* one file serves every command: another command's option is no error */
    if (!(opt_defs[id].commands & opts->command))
        return true;
    if (opts->v[id].nvalues == 0 || opts->v[id].source == SRC_CONFIG)
        options_store(opts, id, value, SRC_CONFIG);
    return true;
}

static bool options_config_read(pgd_options *opts, FILE *f, const char *path, pgd_error *err)
{
    char line[OPTIONS_CONFIG_LINE_MAX], name[OPTIONS_CONFIG_NAME_MAX],
        value[OPTIONS_CONFIG_LINE_MAX];
    options_config_pos pos = {path, 0};

    while (fgets(line, sizeof(line), f) != NULL) {
        size_t len = strlen(line);

        pos.lineno++;
        /* a line longer than the buffer would go on as a line of its own */
        if (len == sizeof(line) - 1 && line[len - 1] != '\n' && !feof(f))
            return options_config_fail(&pos, err, "longer than %zu bytes", sizeof(line) - 2);
        if (len > 0 && line[len - 1] == '\n')
            line[--len] = '\0';
        if (!options_config_line(line, name, value, &pos, err) ||
            (name[0] != '\0' && !options_config_apply(opts, name, value, &pos, err)))
            return false;
    }
    /* a read error part-way must not pass for the end of the file */
    if (ferror(f))
        return err_errno(err, errno, "could not read config file \"%s\"", path);
    return true;
}

bool options_config_parse(pgd_options *opts, pgd_error *err)
{
    const char *path = opt_str(opts, OPT_CONFIG);
    bool explicit_path = opt_is_set(opts, OPT_CONFIG);
    FILE *f;
    bool ok;

    if (path == NULL)
        path = OPTIONS_DEFAULT_CONFIG_PATH;
    snprintf(opts->config_path, sizeof(opts->config_path), "%s", path);
    f = fopen(path, "r");
    if (f == NULL) {
        if (errno == ENOENT && !explicit_path)
            return true;
        return err_errno(err, errno, "could not open config file \"%s\"", path);
    }
    ok = options_config_read(opts, f, path, err);
    fclose(f);
    return ok;
}
