/*
 * fuzz_names.c - the names pgdirect takes from a repository listing or a
 * manifest and builds paths from: backup ids (repo/layout.c), partition
 * names and manifest paths (repo/manifest.c), increment entry names
 * (repo/increment.c), WAL file names and timelines (pg/wal_name.c), object
 * suffixes (compress/compress.c) and repository URIs (storage/storage.c).
 * Whatever a check accepts must be safe to join to a directory: no "..",
 * no absolute path; and a WAL name must print back as it was read.
 */
#include "fuzz_common.h"

#include "compress/compress.h"
#include "pg/wal_name.h"
#include "repo/increment.h"
#include "repo/layout.h"
#include "repo/manifest.h"
#include "storage/storage.h"

/* The rule, written again independently: relative, no empty, "." or ".." component. */
static bool fuzz_names_safe(const char *path)
{
    char *copy, *save = NULL;
    bool safe = path[0] != '\0' && path[0] != '/' && strstr(path, "//") == NULL &&
                path[strlen(path) - 1] != '/';

    copy = xstrdup(path);
    for (char *c = strtok_r(copy, "/", &save); safe && c != NULL; c = strtok_r(NULL, "/", &save))
        safe = strcmp(c, ".") != 0 && strcmp(c, "..") != 0;
    free(copy);
    return safe;
}

static void fuzz_names_wal(const char *name)
{
    wal_file_kind kind = wal_name_kind(name);
    uint32_t tli, log, seg, again;
    uint64_t segno;

    fuzz_assert(wal_name_is_wal_file(name) == (kind != WAL_FILE_UNKNOWN));
    if (kind == WAL_FILE_UNKNOWN)
        return;
    fuzz_assert(fuzz_names_safe(name) && strchr(name, '/') == NULL);
    fuzz_assert(wal_name_timeline(name, &tli));
    fuzz_assert(wal_name_parts(name, &again, &log, &seg) && again == tli);
    if (kind == WAL_FILE_SEGMENT) {
        for (uint64_t size = WAL_SEG_SIZE_MIN; size <= WAL_SEG_SIZE_MAX; size <<= 1) {
            char out[WAL_FILE_NAME_LEN + 1];

            if (!wal_name_parse(name, size, &again, &segno))
                continue;
            fuzz_assert(again == tli);
            fuzz_assert(wal_name_from_segno(tli, segno, size, out) && strcmp(out, name) == 0);
        }
    } else if (kind == WAL_FILE_HISTORY) {
        char out[WAL_HISTORY_NAME_LEN + 1];

        wal_name_history(tli, out);
        fuzz_assert(strcmp(out, name) == 0);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *name = fuzz_text(data, size);
    char out[LAYOUT_PATH_MAX];
    const char *why;
    uint32_t tli;

    if (manifest_path_is_safe(name))
        fuzz_assert(fuzz_names_safe(name));
    else if (strlen(name) < 2048 && fuzz_names_safe(name))
        fuzz_assert(!"manifest_path_is_safe refused a safe path");
    if (layout_is_backup_id(name))
        fuzz_assert(fuzz_names_safe(name) && strchr(name, '/') == NULL);
    for (compress_kind k = COMPRESS_NONE; k <= COMPRESS_ZSTD; k++)
        if (manifest_partition_name_is_valid(name, k))
            fuzz_assert(fuzz_names_safe(name) && strchr(name, '/') == NULL);
    if (increment_file_path(name, out, sizeof(out)) && manifest_path_is_safe(name))
        fuzz_assert(fuzz_names_safe(out));
    fuzz_names_wal(name);
    if (wal_name_timeline_hex(name, &tli)) {
        char hex[WAL_TLI_NAME_LEN + 1];

        wal_name_timeline_text(tli, hex);
        fuzz_assert(strcmp(hex, name) == 0);
    }
    if (wal_name_timeline_parse(name, &tli))
        fuzz_assert(tli != 0);
    (void)compress_from_suffix(name);
    (void)storage_uri_valid(name, &why);
    free(name);
    return 0;
}
