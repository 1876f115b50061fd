/*
 * fuzz_lsn.c - LSN text (pg/lsn.c): sentinels, backup_label, history
 * files and server answers carry LSNs as "X/X". What lsn_parse accepts
 * must print back to a text that parses to the same LSN, and the prefix
 * parser must agree with the whole-text one.
 */
#include "fuzz_common.h"

#include "pg/lsn.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    char out[LSN_TEXT_MAX];
    pg_lsn lsn = 0, again = 0, prefix = 0;
    const char *p = text;

    if (lsn_parse(text, &lsn)) {
        fuzz_assert(strlen(lsn_format(lsn, out)) < LSN_TEXT_MAX);
        fuzz_assert(lsn_parse(out, &again) && again == lsn);
        fuzz_assert(lsn_parse_prefix(&p, &prefix) && prefix == lsn && *p == '\0');
    } else if (lsn_parse_prefix(&p, &prefix)) {
        /* a prefix that parses, with something after it */
        fuzz_assert(p > text && *p != '\0');
    }
    free(text);
    return 0;
}
