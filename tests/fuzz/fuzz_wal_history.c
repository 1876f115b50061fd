/*
 * fuzz_wal_history.c - timeline history files and backup history files
 * (pg/wal_history.c), as wal-push checks them before storing one and
 * restore and verify read them from the archive to follow timelines. The
 * first byte of the input chooses the file's timeline (and, odd, a backup
 * history file instead); the rest is the file.
 */
#include "fuzz_common.h"

#include "pg/wal_history.h"
#include "pg/wal_name.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pgd_error err = {0};
    char name[WAL_HISTORY_NAME_LEN + 1];
    uint32_t tli;
    char *text;
    size_t len;

    if (size < 1)
        return 0;
    text = fuzz_text(data + 1, size - 1);
    len = size - 1;
    tli = (uint32_t)(data[0] >> 1) + 1;
    if (data[0] & 1) {
        if (!wal_backup_history_check("000000010000000000000002.00000028.backup", text, len, &err))
            fuzz_check_refusal(&err);
    } else {
        wal_name_history(tli, name);
        if (wal_history_check(name, tli, text, len, &err)) {
            wal_history_entry *e = NULL;
            size_t n = 0;

            wal_history_parse(text, len, &e, &n);
            fuzz_assert(n > 0);
            for (size_t i = 0; i < n; i++) {
                fuzz_assert(e[i].tli < tli);
                fuzz_assert(i == 0 || e[i].tli > e[i - 1].tli);
            }
            free(e);
        } else {
            fuzz_check_refusal(&err);
        }
    }
    free(text);
    return 0;
}
