/*
 * repo_contents.c - what a repository holds, listed for delete (see
 * repo_contents.h).
 */
#define _GNU_SOURCE
#include "repo/repo_contents.h"

#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "compress/compress.h"
#include "pg/wal_name.h"
#include "util/text.h"
#include "util/xmalloc.h"

#define REPO_HOST_MAX 256

static bool repo_contents_collect_dir(void *arg, const char *name, uint64_t size, bool is_dir,
                                      pgd_error *err)
{
    repo_contents *c = arg;
    size_t slen = strlen(SENTINEL_SUFFIX);
    char id[BACKUP_ID_LEN + 1];
    bool sentinel = false;

    (void)size;
    (void)err;
    if (!is_dir && strlen(name) == BACKUP_ID_LEN + slen &&
        strcmp(name + BACKUP_ID_LEN, SENTINEL_SUFFIX) == 0)
        sentinel = true;
    else if (!is_dir || strlen(name) != BACKUP_ID_LEN)
        return true;
    memcpy(id, name, BACKUP_ID_LEN);
    id[BACKUP_ID_LEN] = '\0';
    if (!layout_is_backup_id(id))
        return true;
    for (size_t i = 0; i < c->ndirs; i++)
        if (strcmp(c->dirs[i].id, id) == 0) {
            c->dirs[i].sentinel |= sentinel;
            return true;
        }
    if (c->ndirs == c->dircap) {
        size_t cap = c->dircap ? c->dircap * 2 : 16;
        c->dirs = xrealloc(c->dirs, cap * sizeof(*c->dirs));
        c->dircap = cap;
    }
    memset(&c->dirs[c->ndirs], 0, sizeof(c->dirs[c->ndirs]));
    memcpy(c->dirs[c->ndirs].id, id, sizeof(id));
    c->dirs[c->ndirs].sentinel = sentinel;
    c->ndirs++;
    return true;
}

static void repo_contents_names_add(repo_contents_names *l, char *owned)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        l->names = xrealloc(l->names, cap * sizeof(*l->names));
        l->cap = cap;
    }
    l->names[l->n++] = owned;
}

void repo_contents_names_free(repo_contents_names *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->names[i]);
    free(l->names);
    memset(l, 0, sizeof(*l));
}

static int repo_contents_names_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void repo_contents_names_sort(repo_contents_names *l)
{
    if (l->n > 1)
        qsort(l->names, l->n, sizeof(*l->names), repo_contents_names_cmp);
}

/* A directory's objects, counted. */
typedef struct repo_dir_count {
    size_t n;
} repo_dir_count;

static bool repo_contents_count(void *arg, const char *name, uint64_t size, bool is_dir,
                                pgd_error *err)
{
    repo_dir_count *c = arg;

    (void)size;
    (void)is_dir;
    (void)name;
    (void)err;
    c->n++;
    return true;
}

/* What backups/<id>/claim.json says (backup/backup_id.c writes it). */
static bool repo_contents_read_claim(storage *repo, const char *id, retention_claim *c,
                                     pgd_error *err)
{
    char path[LAYOUT_PATH_MAX];
    json_int_t start, pid, pid_start = 0, pid_ns = 0;
    const char *host, *parent = NULL, *boot_id = "", *sysid = "";
    process_identity proc;
    bool missing = false;
    char *text;
    size_t len;
    json_t *o;

    memset(c, 0, sizeof(*c));
    snprintf(c->id, sizeof(c->id), "%s", id);
    layout_backup_object(id, CLAIM_NAME, path, sizeof(path));
    if (!storage_get(repo, path, &text, &len, &missing, err)) {
        if (!missing)
            return false;
        err_clear(err);
        return true;
    }
    c->present = true;
    o = json_loads(text, 0, NULL);
    free(text);
    /* boot_id, pid_start and pid_ns are absent from older claims: util/process.h decides less */
    if (o != NULL && json_unpack(o, "{s:I, s:s, s:I, s?s, s?I, s?I, s?s}", "start_time", &start,
                                 "host", &host, "pid", &pid, "boot_id", &boot_id, "pid_start",
                                 &pid_start, "pid_ns", &pid_ns, "system_identifier", &sysid) == 0) {
        c->readable = true;
        c->start_time = start;
        memset(&proc, 0, sizeof(proc));
        snprintf(proc.host, sizeof(proc.host), "%s", host);
        snprintf(proc.boot_id, sizeof(proc.boot_id), "%s", boot_id);
        proc.pid = pid;
        proc.start_ticks = pid_start > 0 ? (uint64_t)pid_start : 0;
        proc.pid_ns = pid_ns > 0 ? (uint64_t)pid_ns : 0;
        c->process = process_check(&proc, c->process_why, sizeof(c->process_why));
        snprintf(c->system_identifier, sizeof(c->system_identifier), "%s", sysid);
        snprintf(c->host, sizeof(c->host), "%s", host);
        c->pid = pid;
    }
    /* a delta's claim names its parent (backup/backup_id.h); older claims do not */
    if (o != NULL && json_unpack(o, "{s:s}", "parent", &parent) == 0 && layout_is_backup_id(parent))
        snprintf(c->parent, sizeof(c->parent), "%s", parent);
    json_decref(o);
    return true;
}

bool repo_contents_scan_dirs(storage *repo, int64_t garbage_age, repo_contents *c, pgd_error *err)
{
    int64_t now = (int64_t)time(NULL);

    if (!storage_list(repo, BACKUPS_DIR, repo_contents_collect_dir, c, err))
        return false;
    for (size_t i = 0; i < c->ndirs; i++) {
        repo_dir *d = &c->dirs[i];
        char dir[LAYOUT_PATH_MAX];
        repo_dir_count count = {0};
        retention_claim claim;

        if (d->sentinel)
            continue;
        layout_backup_dir(d->id, dir, sizeof(dir));
        if (!storage_list(repo, dir, repo_contents_count, &count, err))
            return false;
        d->objects = count.n;
        if (!repo_contents_read_claim(repo, d->id, &claim, err))
            return false;
        d->state = retention_claim_classify(&claim, now, garbage_age, d->why, sizeof(d->why));
        memcpy(d->parent, claim.parent, sizeof(d->parent));
        memcpy(d->system_identifier, claim.system_identifier, sizeof(d->system_identifier));
        memcpy(d->host, claim.host, sizeof(d->host));
        d->pid = claim.pid;
        d->start_time = claim.readable ? claim.start_time : 0;
    }
    return true;
}

bool repo_contents_scan_backups(storage *repo, repo_contents *c, pgd_error *err)
{
    /* the manifests restore LATEST depends on too: retention must not keep, as the newest
       usable backup, one whose manifest is damaged, and remove the older good one */
    if (!backup_info_scan(repo, &c->infos, &c->n, err) ||
        !backup_info_check_latest(repo, c->infos, c->n, err))
        return false;
    c->backups = xcalloc(c->n + 1, sizeof(*c->backups));
    for (size_t i = 0; i < c->n; i++) {
        const backup_info *bi = &c->infos[i];
        retention_backup *b = &c->backups[i];

        /*
         * The id even of a damaged backup: retention dates it by its id and
         * names it, and delete --backup ID must find it. Scan and sentinel
         * checks guarantee both lengths; a cut would only mean damage.
         */
        b->damaged = !str_format(b->id, sizeof(b->id), "%s", bi->id) || bi->damaged ||
                     !str_format(b->start_wal, sizeof(b->start_wal), "%s", bi->start_wal);
        if (b->damaged)
            continue;
        b->start_time = bi->start_time;
        b->stop_time = bi->stop_time;
        b->start_lsn = bi->start_lsn;
        /* the sentinel's parent (repo/backup_info.h); a delta without one cannot be restored */
        if (!str_format(b->parent, sizeof(b->parent), "%s", bi->parent) ||
            (bi->id[BACKUP_ID_LEN - 1] == 'D' && !layout_is_backup_id(b->parent)))
            b->damaged = true;
    }
    return true;
}

void repo_contents_free(repo_contents *c)
{
    free(c->infos);
    free(c->backups);
    free(c->dirs);
    memset(c, 0, sizeof(*c));
}

/* wal/<timeline>/ directories: 8 upper-case hex digits. */
static bool repo_contents_collect_timeline(void *arg, const char *name, uint64_t size, bool is_dir,
                                           pgd_error *err)
{
    (void)size;
    (void)err;
    if (!is_dir || !wal_name_timeline_hex(name, NULL))
        return true;
    repo_contents_names_add(arg, xstrdup(name));
    return true;
}

bool repo_contents_wal_timelines(storage *repo, repo_contents_names *out, pgd_error *err)
{
    memset(out, 0, sizeof(*out));
    if (!storage_list(repo, WAL_DIR, repo_contents_collect_timeline, out, err))
        return false;
    repo_contents_names_sort(out);
    return true;
}

/* The WAL file name under a stored name: its compression suffix removed. */
static void repo_contents_wal_base(const char *stored, char *out, size_t outlen)
{
    static const compress_kind kinds[] = {COMPRESS_LZ4, COMPRESS_ZSTD};
    size_t len = strlen(stored);

    snprintf(out, outlen, "%s", stored);
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        const char *suffix = compress_suffix(kinds[i]);
        size_t slen = strlen(suffix);
        if (len > slen && strcmp(stored + len - slen, suffix) == 0) {
            out[len - slen] = '\0';
            return;
        }
    }
}

typedef struct repo_wal_before {
    const char *keep_from;
    const char *timeline;
    repo_contents_names *out;
} repo_wal_before;

static bool repo_contents_collect_wal(void *arg, const char *name, uint64_t size, bool is_dir,
                                      pgd_error *err)
{
    repo_wal_before *w = arg;
    char base[LAYOUT_PATH_MAX];

    (void)size;
    (void)err;
    if (is_dir)
        return true;
    repo_contents_wal_base(name, base, sizeof(base));
    if (w->keep_from != NULL && !retention_wal_removable(base, w->keep_from))
        return true;
    repo_contents_names_add(w->out, xasprintf(WAL_DIR "/%s/%s", w->timeline, name));
    return true;
}

bool repo_contents_wal_all(storage *repo, const char *timeline, repo_contents_names *out,
                           pgd_error *err)
{
    return repo_contents_wal_before(repo, timeline, NULL, out, err);
}

bool repo_contents_wal_before(storage *repo, const char *timeline, const char *keep_from,
                              repo_contents_names *out, pgd_error *err)
{
    repo_wal_before w = {.keep_from = keep_from, .timeline = timeline, .out = out};
    char dir[LAYOUT_PATH_MAX];

    memset(out, 0, sizeof(*out));
    snprintf(dir, sizeof(dir), WAL_DIR "/%s", timeline);
    if (!storage_list(repo, dir, repo_contents_collect_wal, &w, err))
        return false;
    repo_contents_names_sort(out);
    return true;
}
