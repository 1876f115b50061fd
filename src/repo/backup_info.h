/*
 * backup_info.h - the sentinel <id>.done.json, written last: a backup
 * exists only once this object exists. It carries what `list` shows and
 * what restore needs before it opens the manifest.
 */
#ifndef PGD_BACKUP_INFO_H
#define PGD_BACKUP_INFO_H

#include <stdbool.h>
#include <stdint.h>

#include "pg/lsn.h"
#include "pg/pg_control.h"
#include "repo/annotation.h"
#include "storage/storage.h"
#include "util/error.h"

typedef struct backup_info {
    char id[32];
    char type[8]; /* "full" or "delta" */
    /* a delta's parent id ("" for a full), its place in the chain (0 for a full) */
    char parent[32];
    uint32_t depth;
    pg_lsn parent_start_lsn; /* the page-LSN threshold a delta used (0 for a full) */
    /* how a delta found its pages: "wal-summary" or "page-scan" ("" for a full, or older) */
    char delta_method[16];
    char label[128];
    int64_t start_time, stop_time; /* Unix seconds, UTC */
    /* in the JSON as text, "X/Y" (pg/lsn.h): parsed when loaded, a bad one is a damaged sentinel */
    pg_lsn start_lsn, stop_lsn;
    uint32_t timeline;
    char start_wal[32], stop_wal[32];
    char system_identifier[PG_SYSID_TEXT_MAX];
    int pg_version_num;
    char tool_version[16];
    char compression[8];
    char read_mode[64];
    uint64_t size;            /* bytes read from PGDATA and tablespaces */
    uint64_t compressed_size; /* bytes stored */
    uint64_t files;
    /*
     * Pages of the files the backup read that the kernel evicted from the page cache while the
     * backup had them open (backup/pipeline.h); -1 not measured (no cachestat(2), or a sentinel
     * written before it was recorded: "pages_evicted" absent).
     */
    int64_t pages_evicted;
    /*
     * Data page checksums (backup/filter_page_checksum.h): "verified", "off"
     * (the cluster has none), "not verified" (--no-verify-checksums), or ""
     * in sentinels written before they were verified. checksum_failed: taken
     * with --checksum-errors fail and pages failed; LATEST passes it over.
     */
    char page_checksums[16];
    uint64_t pages_checked, checksum_errors, checksum_error_files;
    bool checksum_failed;
    /* taken from a hot standby; false in sentinels written before standbys were backed up */
    bool from_standby;
    /*
     * The next transaction id (xid8) when the backup ended: every transaction from it on began
     * after the end, so a --target-xid from it on is reached after the backup is consistent.
     * 0 in sentinels written before it was recorded.
     */
    uint64_t stop_next_xid;
    /* KEY=VALUE pairs a person gave it (repo/annotation.h): compact JSON object text, "" none */
    char annotations[ANNOTATIONS_TEXT_MAX];
    /*
     * Set by backup_info_scan when the sentinel is damaged (only id and
     * damage are valid then), and by backup_info_check_latest when the
     * manifest is: damage says why.
     */
    bool damaged;
    char damage[PGD_ERROR_MAX];
} backup_info;

bool backup_info_to_json(const backup_info *bi, char **json, pgd_error *err);
bool backup_info_from_json(backup_info *bi, const char *json, const char *what, pgd_error *err);

/* Load the sentinel of backup `id`; *missing when the backup does not exist. */
bool backup_info_load(storage *repo, const char *id, backup_info *bi, bool *missing,
                      pgd_error *err);

/*
 * The sentinel of backup `id` as backup_info_scan reads each: true with
 * damaged set when it was read and is damaged; false, the error naming it,
 * when `id` is not a backup id, the backup is not in the repository or its
 * sentinel cannot be read (no verdict on the backup).
 */
bool backup_info_find(storage *repo, const char *id, backup_info *bi, pgd_error *err);

/*
 * Every backup with a sentinel, oldest first (ids sort by time), the
 * damaged ones included (a sentinel that was read and is empty, not JSON,
 * invalid or of another backup: damaged is set and damage says why). One
 * bad sentinel must not hide the others. A sentinel that cannot be read
 * (permission, I/O error, the repository) fails the whole scan: the backup
 * may be whole, and passing it over would make LATEST an older backup
 * without a word. *out is malloc'd.
 */
bool backup_info_scan(storage *repo, backup_info **out, size_t *count, pgd_error *err);

/*
 * The manifests LATEST depends on, after backup_info_scan: from the newest
 * backup down to the first usable one (neither damaged nor checksum_failed),
 * each one's manifest.json is read and parsed as a restore reads it. One
 * that is missing, empty, does not parse or is another backup's marks its
 * backup damaged (damage says why), as a damaged sentinel does, and the
 * next older one is tried. A manifest that cannot be read at all
 * (permission, the repository) fails, naming it, as an unreadable sentinel
 * does. Only those manifests are read: normally the newest backup's alone,
 * one GET, not one per backup (list calls it too; verify reads the rest).
 */
bool backup_info_check_latest(storage *repo, backup_info *all, size_t n, pgd_error *err);

/* Every complete backup, oldest first; damaged ones are left out with a warning. */
bool backup_info_list(storage *repo, backup_info **out, size_t *count, pgd_error *err);

/*
 * LATEST among `all` (backup_info_scan, then backup_info_check_latest): the
 * index of the newest usable backup in *latest; with `warn`, a warning
 * names each newer one passed over, and why. False, the error naming the
 * repository and the newest backup's trouble, when none is usable.
 */
bool backup_info_pick_latest(storage *repo, const backup_info *all, size_t n, bool warn,
                             size_t *latest, pgd_error *err);

/*
 * "LATEST" (backup_info_pick_latest, with its warnings, after the manifests
 * were checked) or an id -> the backup's info; errors name the repository,
 * or the damage.
 */
bool backup_info_resolve(storage *repo, const char *id_or_latest, backup_info *bi, pgd_error *err);

/* Why LATEST passes over backup bi (damaged, or marked by --checksum-errors fail), or NULL. */
const char *backup_info_unusable(const backup_info *bi, char *buf, size_t len);

#endif
