/*
 * fuzz_config.c - the config file (util/options_config.c), read by every
 * command: the fuzzer's bytes are written to a file in a temporary
 * directory and given as --config; the first byte chooses the command.
 */
#include <unistd.h>

#include "fuzz_options.h"

static char fuzz_config_path[96];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char arg[sizeof(fuzz_config_path) + 16];
    char *argv[] = {arg, NULL};
    FILE *f;

    if (size < 1)
        return 0;
    if (fuzz_config_path[0] == '\0') {
        snprintf(fuzz_config_path, sizeof(fuzz_config_path), "%s/pgdirect.conf",
                 fuzz_tmpdir("/tmp/pgd-fuzz-config.XXXXXX"));
    }
    f = fopen(fuzz_config_path, "w");
    fuzz_assert(f != NULL);
    fuzz_assert(fwrite(data + 1, 1, size - 1, f) == size - 1);
    fuzz_assert(fclose(f) == 0);
    snprintf(arg, sizeof(arg), "--config=%s", fuzz_config_path);
    fuzz_options_run(fuzz_options_command(data[0]), 1, argv);
    return 0;
}
