/*
 * fuzz_options.h - what the option targets (fuzz_config.c,
 * fuzz_option_value.c) share: options_parse run on an argv, and, when it
 * accepts, every typed getter of util/options_value.c asked for every
 * option, as the commands ask for theirs.
 */
#ifndef PGD_FUZZ_OPTIONS_H
#define PGD_FUZZ_OPTIONS_H

#include <limits.h>

#include "fuzz_common.h"

#include "util/options.h"
#include "util/units.h"

/* The command of an input: one of the ten, by a byte of it. */
static inline unsigned fuzz_options_command(uint8_t byte)
{
    return 1u << (byte % 10);
}

static inline void fuzz_options_getters(const pgd_options *opts)
{
    for (int id = 0; id < OPT_COUNT; id++) {
        pgd_error err = {0};
        long l;
        bool b;
        uint64_t u;
        int64_t s;
        int e;

        (void)opt_str(opts, (opt_id)id);
        (void)opt_source_note(opts, (opt_id)id);
        if (!opt_int(opts, (opt_id)id, LONG_MIN, LONG_MAX, &l, &err))
            fuzz_check_refusal(&err);
        err = (pgd_error){0};
        if (!opt_bool(opts, (opt_id)id, &b, &err))
            fuzz_check_refusal(&err);
        err = (pgd_error){0};
        if (!opt_size(opts, (opt_id)id, 0, UINT64_MAX, &u, &err))
            fuzz_check_refusal(&err);
        err = (pgd_error){0};
        if (!opt_duration(opts, (opt_id)id, INT64_MIN, INT64_MAX, &s, &err))
            fuzz_check_refusal(&err);
        err = (pgd_error){0};
        if (!opt_point_in_time(opts, (opt_id)id, 1764547200, &s, &err))
            fuzz_check_refusal(&err);
        err = (pgd_error){0};
        if (!opt_enum(opts, (opt_id)id, "off|lz4|zstd|fast|spread", &e, &err))
            fuzz_check_refusal(&err);
        else
            fuzz_assert(opt_str(opts, (opt_id)id) == NULL || (e >= 0 && e < 5));
    }
}

/* options_parse on argv[argc] for `command`; the getters when it accepts. */
static inline void fuzz_options_run(unsigned command, int argc, char **argv)
{
    pgd_options opts;
    pgd_error err = {0};

    memset(&opts, 0, sizeof(opts));
    if (options_parse(&opts, command, argc, argv, &err))
        fuzz_options_getters(&opts);
    else
        fuzz_check_refusal(&err);
    options_free(&opts);
}

#endif
