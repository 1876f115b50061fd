/*
 * fuzz_option_value.c - option values and units (util/options.c,
 * util/options_value.c, util/units.c) and restore's recovery targets
 * (restore/recovery_target.c): the input is an argv, its arguments
 * separated by NUL bytes, after a first byte that chooses the command.
 * Each argument is also read as a size, a duration and each kind of
 * recovery target. Arguments that name a config file are skipped: the
 * config file is fuzz_config.c's, and a path could name a device.
 */
#include "fuzz_options.h"

#include "restore/recovery_target.h"

#define FUZZ_OPTION_VALUE_MAX_ARGS 32

static void fuzz_option_value_one(const char *text)
{
    char why[256];
    uint64_t size;
    int64_t seconds;

    if (units_parse_size(text, &size)) {
        char out[64];

        units_format_bytes(size, out, sizeof(out));
    }
    (void)parse_duration(text, &seconds);
    (void)recovery_target_check_time(text, why, sizeof(why));
    (void)recovery_target_time_seconds(text, &seconds, why, sizeof(why));
    (void)recovery_target_check_lsn(text, why, sizeof(why));
    (void)recovery_target_check_xid(text, why, sizeof(why));
    (void)recovery_target_check_name(text, why, sizeof(why));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *argv[FUZZ_OPTION_VALUE_MAX_ARGS + 1];
    char *text;
    int argc = 0;

    if (size < 1)
        return 0;
    text = fuzz_text(data + 1, size - 1);
    for (char *p = text; p <= text + size - 1 && argc < FUZZ_OPTION_VALUE_MAX_ARGS;
         p += strlen(p) + 1) {
        if (strstr(p, "config") != NULL || strstr(p, "--c") != NULL)
            goto out;
        argv[argc++] = p;
        fuzz_option_value_one(p);
    }
    argv[argc] = NULL;
    fuzz_options_run(fuzz_options_command(data[0]), argc, argv);
out:
    free(text);
    return 0;
}
