/*
 * options_help.c - a command's --help from the option table, and the same
 * as a manual page section (roff) when the man page is being generated.
 */
#include <stdio.h>
#include <string.h>

#include "util/options_internal.h"

static bool options_help_man;
static void options_help_print_man(unsigned command, const char *usage, const char *summary);

void options_print_help(unsigned command, const char *usage, const char *summary)
{
    if (options_help_man) {
        options_help_print_man(command, usage, summary);
        return;
    }
    printf("%s\n\n%s\n\nOptions (also PGDIRECT_<NAME> variables and \"name = value\" in the config "
           "file):\n",
           usage, summary);
    for (int id = 0; id < OPT_COUNT; id++) {
        char left[96];

        if (!(opt_defs[id].commands & command))
            continue;
        if (opt_defs[id].metavar != NULL)
            snprintf(left, sizeof(left), "--%s %s", opt_defs[id].name, opt_defs[id].metavar);
        else
            snprintf(left, sizeof(left), "--%s", opt_defs[id].name);
        printf("  %-34s %s", left, opt_defs[id].help);
        if (opt_defs[id].def != NULL && opt_defs[id].def[0] != '\0' && id != OPT_HELP)
            printf(" [default: %s]", opt_defs[id].def);
        putchar('\n');
    }
}

/* ---- the manual page ---- */

void options_help_man_on(void)
{
    options_help_man = true;
}

void options_man_text(const char *text)
{
    bool line_start = true;

    for (const char *p = text; *p != '\0'; p++) {
        if (line_start && (*p == '.' || *p == '\''))
            fputs("\\&", stdout);
        line_start = *p == '\n';
        if (*p == '\\')
            fputs("\\e", stdout);
        else if (*p == '-')
            fputs("\\-", stdout);
        else
            putchar(*p);
    }
}

/* Options every command with a repository shares, and those all commands share. */
static bool options_help_shared(int id, bool *repo)
{
    *repo = opt_defs[id].commands == CMD_REPO_USERS;
    return *repo || opt_defs[id].commands == CMD_ALL;
}

static void options_help_man_entry(int id)
{
    fputs(".TP\n\\fB", stdout);
    options_man_text("--");
    options_man_text(opt_defs[id].name);
    fputs("\\fR", stdout);
    if (opt_defs[id].metavar != NULL) {
        fputs(" \\fI", stdout);
        options_man_text(opt_defs[id].metavar);
        fputs("\\fR", stdout);
    }
    putchar('\n');
    options_man_text(opt_defs[id].help);
    if (opt_defs[id].def != NULL && opt_defs[id].def[0] != '\0' && id != OPT_HELP) {
        fputs(" [default: ", stdout);
        options_man_text(opt_defs[id].def);
        putchar(']');
    }
    putchar('\n');
}

static void options_help_print_man(unsigned command, const char *usage, const char *summary)
{
    const char *synopsis =
        strncmp(usage, "usage: ", strlen("usage: ")) == 0 ? usage + strlen("usage: ") : usage;
    bool repo, uses_repo = (command & CMD_REPO_USERS) != 0;

    fputs(".PP\n.nf\n\\fB", stdout);
    options_man_text(synopsis);
    fputs("\\fR\n.fi\n.PP\n", stdout);
    options_man_text(summary);
    putchar('\n');
    for (int id = 0; id < OPT_COUNT; id++)
        if ((opt_defs[id].commands & command) && !options_help_shared(id, &repo))
            options_help_man_entry(id);
    fputs(".PP\n", stdout);
    options_man_text(uses_repo ? "And the REPOSITORY OPTIONS and the GENERAL OPTIONS.\n"
                               : "And the GENERAL OPTIONS.\n");
}

void options_print_man_shared(bool shared_repo)
{
    bool repo;

    for (int id = 0; id < OPT_COUNT; id++)
        if (options_help_shared(id, &repo) && repo == shared_repo)
            options_help_man_entry(id);
}
