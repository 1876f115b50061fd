/*
 * fuzz_backup_info.c - a backup's sentinel (repo/backup_info.c,
 * backup_info_from_json), which list, restore, delete and retention read
 * for every backup of a repository. An accepted sentinel is written back
 * and must load again to the same fields.
 */
#include "fuzz_common.h"

#include "repo/backup_info.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    pgd_error err = {0};
    backup_info bi, again;

    if (backup_info_from_json(&bi, text, "sentinel \"fuzz\"", &err)) {
        char why[256], *json = NULL;

        backup_info_unusable(&bi, why, sizeof(why));
        fuzz_assert(backup_info_to_json(&bi, &json, &err));
        fuzz_assert(backup_info_from_json(&again, json, "sentinel \"again\"", &err));
        fuzz_assert(strcmp(again.id, bi.id) == 0 && again.start_lsn == bi.start_lsn &&
                    again.stop_lsn == bi.stop_lsn && again.timeline == bi.timeline &&
                    again.size == bi.size && again.files == bi.files);
        free(json);
    } else {
        fuzz_check_refusal(&err);
    }
    free(text);
    return 0;
}
