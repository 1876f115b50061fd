/*
 * backup_info.c - the backup sentinel: JSON form, loading and listing; and
 * which backup LATEST is, the manifests it depends on read too.
 */
#include "repo/backup_info.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg/wal_name.h"
#include "repo/layout.h"
#include "repo/manifest.h"
#include "util/log.h"
#include "util/xmalloc.h"

bool backup_info_to_json(const backup_info *bi, char **json, pgd_error *err)
{
    char start_lsn[LSN_TEXT_MAX], stop_lsn[LSN_TEXT_MAX], parent_start_lsn[LSN_TEXT_MAX] = "";
    json_t *o;

    lsn_format(bi->start_lsn, start_lsn);
    lsn_format(bi->stop_lsn, stop_lsn);
    /* a full has no parent: "" as ever */
    if (bi->parent[0] != '\0')
        lsn_format(bi->parent_start_lsn, parent_start_lsn);
    o = json_pack(
        "{s:s, s:s, s:s, s:I, s:I, s:s, s:s, s:I, s:s, s:s, s:s, s:i, s:s, s:s, s:s, s:I, s:I, "
        "s:I}",
        "id", bi->id, "type", bi->type, "label", bi->label, "start_time",
        (json_int_t)bi->start_time, "stop_time", (json_int_t)bi->stop_time, "start_lsn", start_lsn,
        "stop_lsn", stop_lsn, "timeline", (json_int_t)bi->timeline, "start_wal", bi->start_wal,
        "stop_wal", bi->stop_wal, "system_identifier", bi->system_identifier, "pg_version_num",
        bi->pg_version_num, "tool_version", bi->tool_version, "compression", bi->compression,
        "read_mode", bi->read_mode, "size", (json_int_t)bi->size, "compressed_size",
        (json_int_t)bi->compressed_size, "files", (json_int_t)bi->files);

    if (o == NULL ||
        (bi->pages_evicted >= 0 &&
         json_object_set_new(o, "pages_evicted", json_integer((json_int_t)bi->pages_evicted)) !=
             0) ||
        json_object_set_new(o, "page_checksums", json_string(bi->page_checksums)) != 0 ||
        json_object_set_new(o, "pages_checked", json_integer((json_int_t)bi->pages_checked)) != 0 ||
        json_object_set_new(o, "checksum_errors", json_integer((json_int_t)bi->checksum_errors)) !=
            0 ||
        json_object_set_new(o, "checksum_error_files",
                            json_integer((json_int_t)bi->checksum_error_files)) != 0 ||
        json_object_set_new(o, "checksum_failed", json_boolean(bi->checksum_failed)) != 0 ||
        json_object_set_new(o, "from_standby", json_boolean(bi->from_standby)) != 0 ||
        (bi->stop_next_xid != 0 &&
         json_object_set_new(o, "stop_next_xid", json_integer((json_int_t)bi->stop_next_xid)) !=
             0) ||
        json_object_set_new(o, "parent", json_string(bi->parent)) != 0 ||
        json_object_set_new(o, "depth", json_integer(bi->depth)) != 0 ||
        json_object_set_new(o, "parent_start_lsn", json_string(parent_start_lsn)) != 0 ||
        (bi->delta_method[0] != '\0' &&
         json_object_set_new(o, "delta_method", json_string(bi->delta_method)) != 0) ||
        (bi->annotations[0] != '\0' &&
         json_object_set_new(o, "annotations", json_loads(bi->annotations, 0, NULL)) != 0)) {
        json_decref(o);
        return err_set(err, "could not build sentinel of backup \"%s\"", bi->id);
    }
    *json = json_dumps(o, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (*json == NULL)
        return err_set(err, "could not serialise sentinel of backup \"%s\"", bi->id);
    return true;
}

#define COPY_FIELD(dst, src) snprintf((dst), sizeof(dst), "%s", (src))

/* The page checksum fields: absent from sentinels written before pages were verified. */
static bool backup_info_checksums_from_json(backup_info *bi, json_t *o, const char *what,
                                            pgd_error *err)
{
    json_error_t jerr;
    const char *state = "";
    json_int_t checked = 0, errors = 0, files = 0;
    int failed = 0;

    if (json_unpack_ex(o, &jerr, 0, "{s?s, s?I, s?I, s?I, s?b}", "page_checksums", &state,
                       "pages_checked", &checked, "checksum_errors", &errors,
                       "checksum_error_files", &files, "checksum_failed", &failed) != 0)
        return err_set(err, "invalid %s: %s", what, jerr.text);
    if (checked < 0 || errors < 0 || files < 0 || errors > checked)
        return err_set(err, "invalid %s: bad \"%s\"", what,
                       checked < 0 || errors > checked ? "pages_checked"
                       : errors < 0                    ? "checksum_errors"
                                                       : "checksum_error_files");
    COPY_FIELD(bi->page_checksums, state);
    bi->pages_checked = (uint64_t)checked;
    bi->checksum_errors = (uint64_t)errors;
    bi->checksum_error_files = (uint64_t)files;
    bi->checksum_failed = failed != 0;
    return true;
}

/*
 * type, parent, depth, parent_start_lsn, delta_method: absent from sentinels written
 * before deltas (a full, depth 0). A delta must name a valid parent id and
 * have a depth of at least 1; a full ("full", or "" as unit tests
 * write it) has neither.
 */
static bool backup_info_delta_from_json(backup_info *bi, json_t *o, const char *type,
                                        const char *what, pgd_error *err)
{
    json_error_t jerr;
    const char *parent = "", *plsn = "", *method = "";
    json_int_t depth = 0;
    bool delta = strcmp(type, "delta") == 0;

    if (json_unpack_ex(o, &jerr, 0, "{s?s, s?I, s?s, s?s}", "parent", &parent, "depth", &depth,
                       "parent_start_lsn", &plsn, "delta_method", &method) != 0)
        return err_set(err, "invalid %s: %s", what, jerr.text);
    if (!delta && strcmp(type, "full") != 0 && type[0] != '\0')
        return err_set(err, "invalid %s: bad \"type\"", what);
    if (delta ? !layout_is_backup_id(parent) : parent[0] != '\0')
        return err_set(err, "invalid %s: bad \"parent\"", what);
    if (delta ? depth < 1 || depth > UINT32_MAX : depth != 0)
        return err_set(err, "invalid %s: bad \"depth\"", what);
    /* a delta's threshold is an LSN; a full has none ("", or absent) */
    if ((delta || plsn[0] != '\0') && !lsn_parse(plsn, &bi->parent_start_lsn))
        return err_set(err, "invalid %s: bad \"parent_start_lsn\"", what);
    COPY_FIELD(bi->parent, parent);
    COPY_FIELD(bi->delta_method, method);
    bi->depth = (uint32_t)depth;
    return true;
}

bool backup_info_from_json(backup_info *bi, const char *json, const char *what, pgd_error *err)
{
    json_error_t jerr;
    json_t *o = json_loads(json, 0, &jerr);
    const char *id, *type, *label, *start_lsn, *stop_lsn, *start_wal, *stop_wal, *sysid,
        *tool_version, *compression, *read_mode, *bad;
    json_int_t start_time, stop_time, timeline, size, csize, files;
    int pgver, from_standby = 0;
    json_int_t next_xid = 0, evicted = -1;

    memset(bi, 0, sizeof(*bi));
    if (o == NULL)
        return err_set(err, "could not parse %s: %s", what, jerr.text);
    /* each check below keeps a damaged sentinel from reaching restore as numbers that look valid */
    if (json_unpack_ex(o, &jerr, 0,
                       "{s:s, s:s, s:s, s:I, s:I, s:s, s:s, s:I, s:s, s:s, s:s, s:i, s:s, s:s, "
                       "s:s, s:I, s:I, s:I}",
                       "id", &id, "type", &type, "label", &label, "start_time", &start_time,
                       "stop_time", &stop_time, "start_lsn", &start_lsn, "stop_lsn", &stop_lsn,
                       "timeline", &timeline, "start_wal", &start_wal, "stop_wal", &stop_wal,
                       "system_identifier", &sysid, "pg_version_num", &pgver, "tool_version",
                       &tool_version, "compression", &compression, "read_mode", &read_mode, "size",
                       &size, "compressed_size", &csize, "files", &files) != 0) {
        json_decref(o);
        return err_set(err, "invalid %s: %s", what, jerr.text);
    }
    /* a negative count would load as a number near 2^64 (found by fuzz_backup_info) */
    bad = !layout_is_backup_id(id)                 ? "id"
          : !lsn_parse(start_lsn, &bi->start_lsn)  ? "start_lsn"
          : !lsn_parse(stop_lsn, &bi->stop_lsn)    ? "stop_lsn"
          : timeline <= 0 || timeline > UINT32_MAX ? "timeline"
          : !wal_name_is_wal_file(start_wal)       ? "start_wal"
          : !wal_name_is_wal_file(stop_wal)        ? "stop_wal"
          : size < 0                               ? "size"
          : csize < 0                              ? "compressed_size"
          : files < 0                              ? "files"
                                                   : NULL;
    if (bad != NULL) {
        json_decref(o);
        return err_set(err, "invalid %s: bad \"%s\"", what, bad);
    }
    if (!backup_info_checksums_from_json(bi, o, what, err)) {
        json_decref(o);
        return false;
    }
    /* absent from sentinels written before standbys were backed up (a primary's), before the
       next xid was recorded, and before (or without) the page cache's evictions */
    if (json_unpack_ex(o, &jerr, 0, "{s?b, s?I, s?I}", "from_standby", &from_standby,
                       "stop_next_xid", &next_xid, "pages_evicted", &evicted) != 0) {
        json_decref(o);
        return err_set(err, "invalid %s: %s", what, jerr.text);
    }
    if (next_xid < 0 || (evicted < 0 && json_object_get(o, "pages_evicted") != NULL)) {
        json_decref(o);
        return err_set(err, "invalid %s: bad \"%s\"", what,
                       next_xid < 0 ? "stop_next_xid" : "pages_evicted");
    }
    bi->pages_evicted = evicted;
    bi->from_standby = from_standby != 0;
    bi->stop_next_xid = (uint64_t)next_xid;
    /* absent from sentinels written before annotations, and from backups given none */
    if (json_object_get(o, "annotations") != NULL &&
        !annotation_from_json(json_object_get(o, "annotations"), bi->annotations, err)) {
        json_decref(o);
        err_prefix(err, "invalid %s", what);
        return false;
    }
    if (!backup_info_delta_from_json(bi, o, type, what, err)) {
        json_decref(o);
        return false;
    }
    COPY_FIELD(bi->id, id);
    COPY_FIELD(bi->type, type);
    COPY_FIELD(bi->label, label);
    COPY_FIELD(bi->start_wal, start_wal);
    COPY_FIELD(bi->stop_wal, stop_wal);
    COPY_FIELD(bi->system_identifier, sysid);
    COPY_FIELD(bi->tool_version, tool_version);
    COPY_FIELD(bi->compression, compression);
    COPY_FIELD(bi->read_mode, read_mode);
    bi->start_time = start_time;
    bi->stop_time = stop_time;
    bi->timeline = (uint32_t)timeline;
    bi->pg_version_num = pgver;
    bi->size = (uint64_t)size;
    bi->compressed_size = (uint64_t)csize;
    bi->files = (uint64_t)files;
    json_decref(o);
    return true;
}

/* backup_info_load; *unread when the sentinel could not be read (not: is damaged). */
static bool backup_info_load_sentinel(storage *repo, const char *id, backup_info *bi, bool *missing,
                                      bool *unread, pgd_error *err)
{
    char path[LAYOUT_PATH_MAX], what[LAYOUT_PATH_MAX + 16];
    char *json;
    size_t len;
    bool ok;

    layout_sentinel_path(id, path, sizeof(path));
    snprintf(what, sizeof(what), "sentinel \"%s\"", path);
    *unread = !storage_get(repo, path, &json, &len, missing, err);
    if (*unread)
        return false;
    if (len == 0 || strspn(json, " \t\r\n") == len)
        ok = err_set(err, "%s is empty", what);
    else if (strlen(json) != len)
        ok = err_set(err, "%s holds a NUL byte", what);
    else
        ok = backup_info_from_json(bi, json, what, err);
    free(json);
    if (ok && strcmp(bi->id, id) != 0)
        ok = err_set(err, "%s names backup \"%s\"", what, bi->id);
    return ok;
}

bool backup_info_load(storage *repo, const char *id, backup_info *bi, bool *missing, pgd_error *err)
{
    bool unread;

    return backup_info_load_sentinel(repo, id, bi, missing, &unread, err);
}

typedef struct id_list {
    char (*ids)[BACKUP_ID_LEN + 1];
    size_t n, cap;
} id_list;

static bool backup_info_collect_sentinel(void *arg, const char *name, uint64_t size, bool is_dir,
                                         pgd_error *err)
{
    id_list *l = arg;
    size_t len = strlen(name), slen = strlen(SENTINEL_SUFFIX);

    (void)size;
    (void)err;
    (void)is_dir; /* a sentinel that is a directory is read (and fails), not skipped */
    if (len != BACKUP_ID_LEN + slen || strcmp(name + BACKUP_ID_LEN, SENTINEL_SUFFIX))
        return true;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        l->ids = xrealloc(l->ids, cap * sizeof(*l->ids));
        l->cap = cap;
    }
    memcpy(l->ids[l->n], name, BACKUP_ID_LEN);
    l->ids[l->n][BACKUP_ID_LEN] = '\0';
    if (layout_is_backup_id(l->ids[l->n]))
        l->n++;
    return true;
}

static int backup_info_id_cmp(const void *a, const void *b)
{
    return strcmp(a, b);
}

/*
 * One sentinel as backup_info_scan reads it: true, loaded or marked
 * damaged; false when it is missing (*missing, no error) or cannot be read.
 */
static bool backup_info_read(storage *repo, const char *id, backup_info *bi, bool *missing,
                             pgd_error *err)
{
    pgd_error load_err = {0};
    bool unread;

    *missing = false;
    if (backup_info_load_sentinel(repo, id, bi, missing, &unread, &load_err))
        return true;
    if (*missing)
        return false;
    if (unread) { /* the repository or its files, not this backup */
        *err = load_err;
        return false;
    }
    memset(bi, 0, sizeof(*bi));
    snprintf(bi->id, sizeof(bi->id), "%s", id);
    bi->damaged = true;
    snprintf(bi->damage, sizeof(bi->damage), "%s", load_err.msg);
    return true;
}

bool backup_info_find(storage *repo, const char *id, backup_info *bi, pgd_error *err)
{
    bool missing;

    if (!layout_is_backup_id(id))
        return err_set(err,
                       "invalid backup id \"%s\": expected LATEST or an id like "
                       "20261129T215959F",
                       id);
    if (backup_info_read(repo, id, bi, &missing, err))
        return true;
    if (missing)
        return err_set(err, "backup \"%s\" not found in repository \"%s\"", id, repo->uri);
    /* a sentinel that could not be read (permission, the repository) is no verdict on it */
    err_prefix(err, "could not read the sentinel of backup %s", id);
    return false;
}

bool backup_info_scan(storage *repo, backup_info **out, size_t *count, pgd_error *err)
{
    id_list ids = {0};
    backup_info *infos = NULL;
    size_t n = 0;

    *out = NULL;
    *count = 0;
    if (!storage_list(repo, BACKUPS_DIR, backup_info_collect_sentinel, &ids, err)) {
        free(ids.ids);
        return false;
    }
    if (ids.n > 1)
        qsort(ids.ids, ids.n, sizeof(*ids.ids), backup_info_id_cmp);
    if (ids.n > 0)
        infos = xcalloc(ids.n, sizeof(*infos));
    for (size_t i = 0; i < ids.n; i++) {
        bool missing;
        if (!backup_info_read(repo, ids.ids[i], &infos[n], &missing, err)) {
            if (missing) /* removed while we listed */
                continue;
            err_prefix(err,
                       "nothing can be said of backup %s, whose sentinel cannot be read (make "
                       "it readable; or remove it, and delete --garbage removes the backup)",
                       ids.ids[i]);
            free(infos);
            free(ids.ids);
            return false;
        }
        n++;
    }
    free(ids.ids);
    *out = infos;
    *count = n;
    return true;
}

bool backup_info_list(storage *repo, backup_info **out, size_t *count, pgd_error *err)
{
    size_t n, kept = 0;

    if (!backup_info_scan(repo, out, &n, err))
        return false;
    for (size_t i = 0; i < n; i++) {
        if ((*out)[i].damaged) {
            log_warn("backup %s is damaged: %s", (*out)[i].id, (*out)[i].damage);
            continue;
        }
        (*out)[kept++] = (*out)[i];
    }
    *count = kept;
    return true;
}

/*
 * Why LATEST passes a backup over, or NULL. A backup taken with
 * --checksum-errors fail that found bad pages is passed over: an older
 * backup and WAL replay rebuild those pages as they were written, which
 * beats restoring the copies that failed; restore it by id to use it.
 */
const char *backup_info_unusable(const backup_info *bi, char *buf, size_t len)
{
    if (bi->damaged)
        return bi->damage;
    if (!bi->checksum_failed)
        return NULL;
    snprintf(buf, len,
             "%llu pages failed their data checksum and it was taken with --checksum-errors fail "
             "(restore it by id to use it anyway)",
             (unsigned long long)bi->checksum_errors);
    return buf;
}

/*
 * The manifest of a backup LATEST would take, read and parsed: one that is
 * missing or does not parse, or is another backup's, marks it damaged.
 */
static bool backup_info_check_manifest(storage *repo, backup_info *bi, pgd_error *err)
{
    manifest m;
    pgd_error e = {0};
    bool ok;

    ok = manifest_load(repo, bi->id, &m, &e);
    if (ok && strcmp(m.id, bi->id) != 0) {
        ok = err_set(&e, "manifest of backup \"%s\" names backup \"%s\"", bi->id, m.id);
        err_mark(&e, PGD_ERR_DAMAGED);
    }
    manifest_free(&m);
    if (ok)
        return true;
    if (!err_is(&e, PGD_ERR_DAMAGED)) {
        *err = e;
        err_prefix(err,
                   "nothing can be said of backup %s, whose manifest cannot be read (make it "
                   "readable; or remove the backup with delete --backup %s)",
                   bi->id, bi->id);
        return false;
    }
    bi->damaged = true;
    snprintf(bi->damage, sizeof(bi->damage), "%s", e.msg);
    return true;
}

bool backup_info_check_latest(storage *repo, backup_info *all, size_t n, pgd_error *err)
{
    char why[PGD_ERROR_MAX];

    for (size_t i = n; i-- > 0;) {
        if (backup_info_unusable(&all[i], why, sizeof(why)) != NULL)
            continue; /* passed over on its sentinel alone */
        if (!backup_info_check_manifest(repo, &all[i], err))
            return false;
        if (!all[i].damaged)
            return true;
    }
    return true;
}

bool backup_info_pick_latest(storage *repo, const backup_info *all, size_t n, bool warn,
                             size_t *latest, pgd_error *err)
{
    size_t usable;
    char why[PGD_ERROR_MAX];

    for (usable = n; usable > 0 && backup_info_unusable(&all[usable - 1], why, sizeof(why));
         usable--)
        ;
    if (usable == 0 && n > 0) {
        bool damaged = true;
        for (size_t i = 0; i < n; i++)
            damaged = damaged && all[i].damaged;
        return err_set(
            err, "no usable backup in repository \"%s\": the %zu there %s %s (the newest, %s: %s)",
            repo->uri, n, n == 1 ? "is" : "are all", damaged ? "damaged" : "unusable",
            all[n - 1].id, backup_info_unusable(&all[n - 1], why, sizeof(why)));
    }
    if (n == 0)
        return err_set(err, "no backup in repository \"%s\"", repo->uri);
    for (size_t i = usable; warn && i < n; i++)
        log_warn("skipping backup %s, newer than %s, because %s%s", all[i].id, all[usable - 1].id,
                 all[i].damaged ? "it is damaged: " : "",
                 backup_info_unusable(&all[i], why, sizeof(why)));
    *latest = usable - 1;
    return true;
}

static bool backup_info_resolve_latest(storage *repo, backup_info *bi, pgd_error *err)
{
    backup_info *all;
    size_t n, latest;
    bool ok;

    if (!backup_info_scan(repo, &all, &n, err))
        return false;
    ok = backup_info_check_latest(repo, all, n, err) &&
         backup_info_pick_latest(repo, all, n, true, &latest, err);
    if (ok)
        *bi = all[latest];
    free(all);
    return ok;
}

bool backup_info_resolve(storage *repo, const char *id_or_latest, backup_info *bi, pgd_error *err)
{
    if (strcmp(id_or_latest, "LATEST") == 0)
        return backup_info_resolve_latest(repo, bi, err);
    if (!backup_info_find(repo, id_or_latest, bi, err))
        return false;
    if (bi->damaged)
        return err_set(err, "backup %s is damaged: %s", id_or_latest, bi->damage);
    return true;
}
