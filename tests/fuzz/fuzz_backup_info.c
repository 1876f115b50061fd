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

        /* counts are counts: json_int_t went in, so an accepted one fits in it */
        fuzz_assert(bi.size <= INT64_MAX && bi.compressed_size <= INT64_MAX &&
                    bi.files <= INT64_MAX && bi.stop_next_xid <= INT64_MAX);
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
