/*
 * resume.c - partition records, and an interrupted full backup's partitions
 * proven and copied for backup --resume (see resume.h for the rules).
 */
#define _GNU_SOURCE
#include "backup/resume.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "repo/manifest.h"
#include "repo/partition_read.h"
#include "repo/repo_contents.h"
#include "util/log.h"
#include "util/xmalloc.h"

#define RESUME_CHUNK (1024 * 1024)

static json_t *resume_crc_json(uint32_t crc)
{
    char hex[9];

    snprintf(hex, sizeof(hex), "%08x", crc);
    return json_string(hex);
}

static json_t *resume_entry_json(const pipeline_file *f)
{
    json_t *o = json_pack("{s:s, s:s, s:I, s:I}", "path", f->path, "type",
                          f->is_dir         ? "dir"
                          : f->link != NULL ? "link"
                                            : "file",
                          "mode", (json_int_t)f->mode, "mtime", (json_int_t)f->mtime);
    json_t *blocks;

    if (o == NULL || f->is_dir)
        return o;
    if (f->link != NULL) {
        json_object_set_new(o, "target", json_string(f->link));
        return o;
    }
    blocks = json_array();
    for (uint32_t b = 0; b < f->result.pages_bad && b < FILE_FILTER_BAD_BLOCKS_MAX; b++)
        json_array_append_new(blocks, json_integer(f->result.bad_blocks[b]));
    json_object_set_new(o, "size", json_integer((json_int_t)f->result.size));
    json_object_set_new(o, "crc32c", resume_crc_json(f->result.crc));
    json_object_set_new(o, "mtime_ns", json_integer((json_int_t)f->mtime_ns));
    json_object_set_new(o, "ino", json_integer((json_int_t)f->ino));
    json_object_set_new(o, "dev", json_integer((json_int_t)f->dev));
    json_object_set_new(o, "opened_at", json_integer((json_int_t)f->opened_at));
    json_object_set_new(o, "pages_checked", json_integer(f->result.pages_checked));
    json_object_set_new(o, "pages_bad", json_integer(f->result.pages_bad));
    json_object_set_new(o, "bad_blocks", blocks);
    return o;
}

static bool resume_put(storage *repo, const char *id, const char *partition, const char *text,
                       pgd_error *err)
{
    char name[128], path[LAYOUT_PATH_MAX];

    snprintf(name, sizeof(name), "%s%s", partition, RESUME_RECORD_SUFFIX);
    layout_backup_object(id, name, path, sizeof(path));
    return storage_put(repo, path, text, strlen(text), STORAGE_WRITE_NO_REPLACE, err);
}

static bool resume_write_text(out_stream *out, const char *text, pgd_error *err)
{
    return out_write(out, text, strlen(text), err);
}

/*
 * The record is written entry by entry: a partition of 20,000 small files
 * would otherwise be a tree of 20,000 JSON objects and their text at once,
 * tens of MiB beside --max-memory. The text is the same JSON document.
 */
bool resume_record_partition(void *arg, const pipeline_partition *p, pipeline_file *const *files,
                             size_t n, pgd_error *err)
{
    const resume_writer *rw = arg;
    char name[128], path[LAYOUT_PATH_MAX], head[256], crc[9];
    json_t *part_name = json_string(p->name);
    char *quoted = part_name != NULL ? json_dumps(part_name, JSON_ENCODE_ANY) : NULL;
    out_stream *out;
    bool ok;

    json_decref(part_name);
    if (quoted == NULL)
        return err_set(err, "could not serialise the record of partition \"%s\"", p->name);
    snprintf(crc, sizeof(crc), "%08x", p->crc);
    snprintf(head, sizeof(head),
             "{\"partition\":%s,\"size\":%" PRIu64 ",\"crc32c\":\"%s\",\"files\":[", quoted,
             p->size, crc);
    free(quoted);
    snprintf(name, sizeof(name), "%s%s", p->name, RESUME_RECORD_SUFFIX);
    layout_backup_object(rw->backup_id, name, path, sizeof(path));
    if ((out = storage_write_open(rw->repo, path, STORAGE_WRITE_NO_REPLACE, err)) == NULL)
        return false;
    ok = resume_write_text(out, head, err);
    for (size_t i = 0; ok && i < n; i++) {
        json_t *e = resume_entry_json(files[i]);
        char *text = e != NULL ? json_dumps(e, JSON_COMPACT) : NULL;

        json_decref(e);
        if (text == NULL)
            ok = err_set(err, "could not serialise the record of partition \"%s\"", p->name);
        else
            ok = (i == 0 || resume_write_text(out, ",", err)) && resume_write_text(out, text, err);
        free(text);
    }
    ok = ok && resume_write_text(out, "]}", err);
    if (!ok) {
        out_abort(out);
        return false;
    }
    return out_close(out, err);
}

/* ---- reading a record ---- */

typedef struct resume_entry {
    const char *path, *type, *target;
    json_int_t mode, mtime, size, mtime_ns, ino, dev, opened_at, checked, bad;
    uint32_t crc;
    json_t *blocks;
} resume_entry;

typedef struct resume_record {
    json_t *root;
    const char *partition;
    json_int_t size;
    uint32_t crc;
    resume_entry *e;
    size_t n;
} resume_record;

static bool resume_parse_crc(const char *hex, uint32_t *out)
{
    char *end;
    unsigned long v;

    if (hex == NULL || strlen(hex) != 8)
        return false;
    errno = 0;
    v = strtoul(hex, &end, 16);
    *out = (uint32_t)v;
    return errno == 0 && *end == '\0';
}

static bool resume_parse_entry(json_t *v, resume_entry *e)
{
    const char *crc = NULL;

    memset(e, 0, sizeof(*e));
    if (json_unpack(v, "{s:s, s:s, s:I, s:I, s?s, s?I, s?s, s?I, s?I, s?I, s?I, s?I, s?I, s?o}",
                    "path", &e->path, "type", &e->type, "mode", &e->mode, "mtime", &e->mtime,
                    "target", &e->target, "size", &e->size, "crc32c", &crc, "mtime_ns",
                    &e->mtime_ns, "ino", &e->ino, "dev", &e->dev, "opened_at", &e->opened_at,
                    "pages_checked", &e->checked, "pages_bad", &e->bad, "bad_blocks",
                    &e->blocks) != 0 ||
        !manifest_path_is_safe(e->path))
        return false;
    if (strcmp(e->type, "file") == 0)
        return crc != NULL && resume_parse_crc(crc, &e->crc) && e->size >= 0 && e->bad >= 0 &&
               e->bad <= UINT32_MAX && e->checked >= 0 && e->checked <= UINT32_MAX;
    if (strcmp(e->type, "link") == 0)
        return e->target != NULL && e->target[0] != '\0';
    return strcmp(e->type, "dir") == 0;
}

static bool resume_parse(const char *text, compress_kind kind, resume_record *r, char *why,
                         size_t whylen)
{
    const char *crc;
    json_t *files, *v;
    size_t i;

    memset(r, 0, sizeof(*r));
    r->root = json_loads(text, 0, NULL);
    if (r->root == NULL ||
        json_unpack(r->root, "{s:s, s:I, s:s, s:o}", "partition", &r->partition, "size", &r->size,
                    "crc32c", &crc, "files", &files) != 0 ||
        !json_is_array(files) || r->size < 0 || !resume_parse_crc(crc, &r->crc) ||
        !manifest_partition_name_is_valid(r->partition, kind)) {
        snprintf(why, whylen, "its record does not parse");
        return false;
    }
    r->e = xcalloc(json_array_size(files) + 1, sizeof(*r->e));
    json_array_foreach(files, i, v)
    {
        if (!resume_parse_entry(v, &r->e[r->n])) {
            snprintf(why, whylen, "entry %zu of its record is invalid", i);
            return false;
        }
        r->n++;
    }
    return true;
}

static void resume_record_free(resume_record *r)
{
    json_decref(r->root);
    free(r->e);
    memset(r, 0, sizeof(*r));
}

/* ---- matching the walk ---- */

static int resume_path_cmp(const void *a, const void *b, void *arg)
{
    const pipeline_file *files = arg;

    return strcmp(files[*(const size_t *)a].path, files[*(const size_t *)b].path);
}

typedef struct resume_walk {
    pipeline_file *files;
    size_t n;
    size_t *sorted; /* indexes by path */
} resume_walk;

static size_t resume_walk_find(const resume_walk *w, const char *path)
{
    size_t lo = 0, hi = w->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(w->files[w->sorted[mid]].path, path);
        if (c == 0)
            return w->sorted[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return SIZE_MAX;
}

/* Is the walk's file f what entry e recorded, untouched since it was read? */
static bool resume_same_file(const pipeline_file *f, const resume_entry *e, char *why,
                             size_t whylen)
{
    struct stat st;
    int64_t mtime_ns;

    if (strcmp(e->type, "dir") == 0) {
        if (!f->is_dir)
            snprintf(why, whylen, "\"%s\" is no longer a directory", e->path);
        return f->is_dir;
    }
    if (strcmp(e->type, "link") == 0) {
        if (f->link == NULL || strcmp(f->link, e->target) != 0)
            snprintf(why, whylen, "link \"%s\" changed", e->path);
        return f->link != NULL && strcmp(f->link, e->target) == 0;
    }
    if (f->is_dir || f->link != NULL || f->plan != NULL || lstat(f->source, &st) != 0 ||
        !S_ISREG(st.st_mode)) {
        snprintf(why, whylen, "\"%s\" is no longer that file", e->path);
        return false;
    }
    mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
    if ((uint64_t)st.st_ino != (uint64_t)e->ino || (uint64_t)st.st_dev != (uint64_t)e->dev ||
        (uint64_t)st.st_size != (uint64_t)e->size || f->size != (uint64_t)e->size ||
        mtime_ns != e->mtime_ns || (st.st_mode & 07777) != (e->mode & 07777) ||
        f->mode != (uint32_t)e->mode) {
        snprintf(why, whylen, "\"%s\" changed since it was read", e->path);
        return false;
    }
    if (e->mtime_ns / 1000000000LL + RESUME_QUIET_S > e->opened_at) {
        snprintf(why, whylen, "\"%s\" was written less than %d s before it was read", e->path,
                 RESUME_QUIET_S);
        return false;
    }
    return true;
}

/* ---- proving the stored partition ---- */

typedef struct resume_verify {
    size_t files, links;
} resume_verify;

static bool resume_verify_data(void *arg, const char *buf, size_t n, uint64_t off, pgd_error *err)
{
    (void)arg;
    (void)buf;
    (void)n;
    (void)off;
    (void)err;
    return true;
}

static bool resume_verify_file(void *arg, partition_read *pr, const partition_read_file *pf,
                               pgd_error *err)
{
    resume_verify *v = arg;
    partition_read_sink sink = {.data = resume_verify_data};

    (void)pf;
    v->files++;
    return partition_read_file_data(pr, &sink, err);
}

static void resume_verify_link(void *arg, size_t idx)
{
    (void)idx;
    ((resume_verify *)arg)->links++;
}

static const partition_read_ops resume_verify_ops = {
    .strict_dirs = true,
    .file = resume_verify_file,
    .link_seen = resume_verify_link,
};

/* The partition read again: its size and CRC, its entries the record's, each file's CRC. */
static bool resume_verify_partition(storage *repo, const char *from, compress_kind kind,
                                    const resume_record *r, pgd_error *err)
{
    manifest m;
    resume_verify v = {0};
    size_t nfiles = 0, nlinks = 0;
    char *buf = xmalloc(RESUME_CHUNK);
    partition_read pr = {.repo = repo,
                         .backup_id = from,
                         .m = &m,
                         .part_idx = 0,
                         .buf = buf,
                         .buflen = RESUME_CHUNK,
                         .ops = &resume_verify_ops,
                         .arg = &v};
    bool ok;

    manifest_init(&m);
    m.id = xstrdup(from);
    m.compression = kind;
    manifest_add_partition(&m, r->partition, (uint64_t)r->size, r->crc);
    for (size_t i = 0; i < r->n; i++) {
        const resume_entry *e = &r->e[i];
        if (strcmp(e->type, "link") == 0) {
            manifest_link l = {
                .path = (char *)e->path, .target = (char *)e->target, .partition = 1};
            manifest_add_link(&m, &l);
            nlinks++;
        } else {
            manifest_file f = {.path = (char *)e->path,
                               .is_dir = strcmp(e->type, "dir") == 0,
                               .size = (uint64_t)e->size,
                               .crc = e->crc,
                               .partition = 1};
            manifest_add_file(&m, &f);
            nfiles += !f.is_dir;
        }
    }
    manifest_build_index(&m);
    ok = partition_read_run(&pr, err);
    if (ok && (v.files != nfiles || v.links != nlinks))
        ok = err_set(err, "partition \"%s\" holds %zu files and %zu links, its record %zu and %zu",
                     r->partition, v.files, v.links, nfiles, nlinks);
    manifest_free(&m);
    free(buf);
    return ok;
}

/* ---- the plan ---- */

typedef struct resume_names {
    char **names;
    size_t n;
} resume_names;

static bool resume_list_cb(void *arg, const char *name, uint64_t size, bool is_dir, pgd_error *err)
{
    resume_names *l = arg;
    size_t len = strlen(name), slen = strlen(RESUME_RECORD_SUFFIX);

    (void)size;
    (void)err;
    if (is_dir || len <= slen || strcmp(name + len - slen, RESUME_RECORD_SUFFIX) != 0)
        return true;
    l->names = xrealloc(l->names, (l->n + 1) * sizeof(*l->names));
    l->names[l->n++] = xstrdup(name);
    return true;
}

static int resume_name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The newest interrupted full backup of this system: its claim names a process that is gone. */
static bool resume_find(storage *repo, const char *system_id, char *from, pgd_error *err)
{
    repo_contents c;
    bool ok;

    memset(&c, 0, sizeof(c));
    from[0] = '\0';
    ok = repo_contents_scan_dirs(repo, RETENTION_GARBAGE_AGE_DEFAULT_S, &c, err);
    for (size_t i = 0; ok && i < c.ndirs; i++) {
        const repo_dir *d = &c.dirs[i];
        if (d->sentinel || d->state != RETENTION_CLAIM_DEAD || d->id[BACKUP_ID_LEN - 1] != 'F' ||
            strcmp(d->system_identifier, system_id) != 0 || strcmp(d->id, from) <= 0)
            continue;
        snprintf(from, BACKUP_ID_LEN + 1, "%s", d->id);
    }
    repo_contents_free(&c);
    return ok;
}

/* One record: parsed, its files the walk's and unchanged, its partition proven; then reused. */
static bool resume_consider(storage *repo, resume_plan *plan, compress_kind kind, resume_walk *w,
                            unsigned char *taken, const char *name, pgd_error *err)
{
    char path[LAYOUT_PATH_MAX], why[PGD_ERROR_MAX] = "";
    char *text = NULL;
    size_t len, *idx = NULL;
    bool missing, usable;
    resume_record r;
    pgd_error verr = {0};

    layout_backup_object(plan->from, name, path, sizeof(path));
    if (!storage_get(repo, path, &text, &len, &missing, err))
        return missing ? (err_clear(err), true) : false;
    usable = resume_parse(text, kind, &r, why, sizeof(why));
    idx = xcalloc(r.n + 1, sizeof(*idx));
    for (size_t i = 0; usable && i < r.n; i++) {
        idx[i] = resume_walk_find(w, r.e[i].path);
        if (idx[i] == SIZE_MAX || taken[idx[i]]) {
            snprintf(why, sizeof(why), "\"%s\" is not in the data directory now", r.e[i].path);
            usable = false;
        } else {
            usable = resume_same_file(&w->files[idx[i]], &r.e[i], why, sizeof(why));
        }
    }
    if (usable && !resume_verify_partition(repo, plan->from, kind, &r, &verr)) {
        snprintf(why, sizeof(why), "it does not read back as recorded: %.900s", verr.msg);
        usable = false;
    }
    if (!usable) {
        log_info("partition \"%s\" of interrupted backup %s is not reused: %s",
                 r.partition ? r.partition : name, plan->from, why);
        plan->refused++;
        free(idx);
        free(text);
        resume_record_free(&r);
        return true;
    }
    plan->parts = xrealloc(plan->parts, (plan->nparts + 1) * sizeof(*plan->parts));
    resume_part *p = &plan->parts[plan->nparts++];
    *p = (resume_part){
        .size = (uint64_t)r.size, .crc = r.crc, .record = text, .files = idx, .nfiles = r.n};
    snprintf(p->name, sizeof(p->name), "%s", r.partition);
    for (size_t i = 0; i < r.n; i++) {
        pipeline_file *f = &w->files[idx[i]];
        const resume_entry *e = &r.e[i];
        taken[idx[i]] = 1;
        f->reused = f->done = true;
        if (strcmp(e->type, "file") != 0)
            continue;
        memset(&f->result, 0, sizeof(f->result));
        f->result.size = (uint64_t)e->size;
        f->result.crc = e->crc;
        f->result.pages_checked = (uint32_t)e->checked;
        f->result.pages_bad = (uint32_t)e->bad;
        for (size_t b = 0; b < json_array_size(e->blocks) && b < FILE_FILTER_BAD_BLOCKS_MAX; b++)
            f->result.bad_blocks[b] = (uint32_t)json_integer_value(json_array_get(e->blocks, b));
        plan->files++;
        plan->bytes += (uint64_t)e->size;
    }
    resume_record_free(&r);
    return true;
}

bool resume_plan_make(storage *repo, const char *system_id, compress_kind kind,
                      pipeline_file *files, size_t n, resume_plan *plan, pgd_error *err)
{
    resume_walk w = {.files = files, .n = n};
    resume_names l = {0};
    char dir[LAYOUT_PATH_MAX];
    unsigned char *taken;
    bool ok;

    memset(plan, 0, sizeof(*plan));
    if (!resume_find(repo, system_id, plan->from, err))
        return false;
    if (plan->from[0] == '\0')
        return true;
    layout_backup_dir(plan->from, dir, sizeof(dir));
    if (!storage_list(repo, dir, resume_list_cb, &l, err))
        return false;
    qsort(l.names, l.n, sizeof(*l.names), resume_name_cmp);
    w.sorted = xcalloc(n + 1, sizeof(*w.sorted));
    for (size_t i = 0; i < n; i++)
        w.sorted[i] = i;
    qsort_r(w.sorted, n, sizeof(*w.sorted), resume_path_cmp, files);
    taken = xcalloc(n + 1, 1);
    ok = true;
    for (size_t i = 0; ok && i < l.n; i++)
        ok = resume_consider(repo, plan, kind, &w, taken, l.names[i], err);
    for (size_t i = 0; i < l.n; i++)
        free(l.names[i]);
    free(l.names);
    free(w.sorted);
    free(taken);
    return ok;
}

/* ---- the copy ---- */

static bool resume_copy_object(storage *repo, const char *from, const resume_part *p,
                               const char *id, const char *name, pgd_error *err)
{
    char src[LAYOUT_PATH_MAX], dst[LAYOUT_PATH_MAX];
    char *buf = xmalloc(RESUME_CHUNK);
    bool missing = false, ok = true;
    in_stream *in;
    out_stream *out;

    layout_backup_object(from, p->name, src, sizeof(src));
    layout_backup_object(id, name, dst, sizeof(dst));
    in = storage_read_open(repo, src, &missing, err);
    if (in == NULL) {
        free(buf);
        return missing ? err_set(err, "partition \"%s\" of backup %s is gone", p->name, from)
                       : false;
    }
    in = crc_in_new(in, src, p->size, p->crc);
    out = storage_write_open(repo, dst, STORAGE_WRITE_NO_REPLACE, err);
    ok = out != NULL;
    while (ok) {
        size_t got = 0;
        ok = in_read(in, buf, RESUME_CHUNK, &got, err);
        if (!ok || got == 0)
            break;
        ok = out_write(out, buf, got, err);
    }
    in_close(in);
    if (ok)
        ok = out_close(out, err);
    else
        out_abort(out);
    free(buf);
    return ok;
}

bool resume_copy(storage *repo, const resume_plan *plan, const char *id, compress_kind kind,
                 pipeline_file *files, pipeline_partition *out, pgd_error *err)
{
    for (size_t k = 0; k < plan->nparts; k++) {
        const resume_part *p = &plan->parts[k];
        json_t *root = json_loads(p->record, 0, NULL);
        char *text;
        bool ok;

        out[k] = (pipeline_partition){.number = (uint32_t)(k + 1), .size = p->size, .crc = p->crc};
        layout_partition_name((unsigned)(k + 1), kind, out[k].name, sizeof(out[k].name));
        if (!resume_copy_object(repo, plan->from, p, id, out[k].name, err)) {
            json_decref(root);
            return false;
        }
        /* the copy's own record, so that this backup can be resumed from in turn */
        json_object_set_new(root, "partition", json_string(out[k].name));
        text = json_dumps(root, JSON_COMPACT);
        json_decref(root);
        ok = text != NULL && resume_put(repo, id, out[k].name, text, err);
        free(text);
        if (!ok)
            return err->set ? false
                            : err_set(err, "could not serialise the record of \"%s\"", out[k].name);
        for (size_t i = 0; i < p->nfiles; i++)
            files[p->files[i]].partition = (uint32_t)(k + 1);
    }
    return true;
}

void resume_plan_free(resume_plan *plan)
{
    for (size_t k = 0; k < plan->nparts; k++) {
        free(plan->parts[k].record);
        free(plan->parts[k].files);
    }
    free(plan->parts);
    memset(plan, 0, sizeof(*plan));
}
