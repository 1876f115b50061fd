/*
 * fuzz_backup_label.c - the backup_label a backup stores and restore
 * reads its timeline from (pg/wal_history.c,
 * wal_history_label_timeline): the label is a file of the backup, so
 * untrusted like the rest of it. A timeline it finds must be one a WAL
 * name can carry.
 */
#include "fuzz_common.h"

#include "pg/wal_history.h"
#include "pg/wal_name.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    uint32_t tli = 0;

    if (wal_history_label_timeline(text, &tli)) {
        char hex[WAL_TLI_NAME_LEN + 1], seg[WAL_FILE_NAME_LEN + 1];
        uint32_t again = 0;

        fuzz_assert(tli != 0);
        wal_name_timeline_text(tli, hex);
        fuzz_assert(wal_name_timeline_hex(hex, &again) && again == tli);
        wal_name_of_lsn(tli, 0x1000000, 16u << 20, false, seg);
        fuzz_assert(wal_name_timeline(seg, &again) && again == tli);
    }
    free(text);
    return 0;
}
