/*
 * fuzz_manifest.c - manifest.json (repo/manifest.c), as restore, verify and
 * a delta backup load it: backup_read_manifest (repo/backup_read.c), the
 * checked load, reading the fuzzer's bytes as the manifest of a backup in a
 * repository in a temporary directory. A manifest it accepts must hold only
 * paths manifest_path_is_safe accepts and partition names the backup
 * writes, each file found again by its path, and must write back to JSON.
 */
#include <sys/stat.h>

#include "fuzz_common.h"

#include "repo/backup_read.h"
#include "repo/layout.h"
#include "repo/manifest.h"

#define FUZZ_MANIFEST_ID "20261206T040420F"

static char fuzz_manifest_root[64];
static char fuzz_manifest_file[128];
static storage *fuzz_manifest_repo;

static void fuzz_manifest_setup(void)
{
    const char *dir = fuzz_tmpdir("/tmp/pgd-fuzz-manifest.XXXXXX");
    char path[128];

    snprintf(fuzz_manifest_root, sizeof(fuzz_manifest_root), "%s", dir);
    snprintf(path, sizeof(path), "%s/%s", dir, BACKUPS_DIR);
    fuzz_assert(mkdir(path, 0700) == 0);
    snprintf(path, sizeof(path), "%s/%s/%s", dir, BACKUPS_DIR, FUZZ_MANIFEST_ID);
    fuzz_assert(mkdir(path, 0700) == 0);
    snprintf(fuzz_manifest_file, sizeof(fuzz_manifest_file), "%s/%s", path, MANIFEST_NAME);
    fuzz_manifest_repo = storage_fs_new(fuzz_manifest_root);
    fuzz_assert(fuzz_manifest_repo != NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pgd_error err = {0};
    manifest m;
    FILE *f;

    if (fuzz_manifest_repo == NULL)
        fuzz_manifest_setup();
    f = fopen(fuzz_manifest_file, "w");
    fuzz_assert(f != NULL);
    fuzz_assert(fwrite(data, 1, size, f) == size);
    fuzz_assert(fclose(f) == 0);
    manifest_init(&m);
    if (backup_read_manifest(fuzz_manifest_repo, FUZZ_MANIFEST_ID, &m, &err)) {
        char *again = NULL;

        for (size_t i = 0; i < m.nfiles; i++) {
            fuzz_assert(manifest_path_is_safe(m.files[i].path));
            /* each file is found by its path: the one entry of that path */
            fuzz_assert(manifest_find(&m, m.files[i].path) == (long)i);
        }
        for (size_t i = 0; i < m.nlinks; i++)
            fuzz_assert(manifest_find_link(&m, m.links[i].path) >= 0);
        for (size_t i = 0; i < m.npartitions; i++)
            fuzz_assert(manifest_partition_name_is_valid(m.partitions[i].name, m.compression));
        fuzz_assert(manifest_to_json(&m, &again, &err));
        free(again);
    } else {
        fuzz_check_refusal(&err);
    }
    manifest_free(&m);
    return 0;
}
