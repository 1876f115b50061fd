/*
 * fuzz_manifest.c - manifest.json (repo/manifest.c, manifest_from_json), as
 * restore and verify read it from a repository anyone with write access to
 * the bucket may have changed. An accepted manifest is indexed and every
 * path looked up again, and must hold only paths manifest_path_is_safe
 * accepts: restore creates them under the target directory.
 */
#include "fuzz_common.h"

#include "repo/manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    pgd_error err = {0};
    manifest m;

    manifest_init(&m);
    if (manifest_from_json(&m, text, "manifest \"fuzz\"", &err)) {
        manifest_build_index(&m);
        for (size_t i = 0; i < m.nfiles; i++) {
            fuzz_assert(manifest_path_is_safe(m.files[i].path));
            fuzz_assert(manifest_find(&m, m.files[i].path) >= 0);
        }
        for (size_t i = 0; i < m.nlinks; i++)
            fuzz_assert(manifest_find_link(&m, m.links[i].path) >= 0);
        for (size_t i = 0; i < m.npartitions; i++)
            fuzz_assert(manifest_partition_name_is_valid(m.partitions[i].name, m.compression));
        char *again = NULL;
        fuzz_assert(manifest_to_json(&m, &again, &err));
        free(again);
    } else {
        fuzz_check_refusal(&err);
    }
    manifest_free(&m);
    free(text);
    return 0;
}
