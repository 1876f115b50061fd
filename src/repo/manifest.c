/*
 * manifest.c - manifest.json writer and validating reader (jansson).
 */
#include "repo/manifest.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "repo/increment.h"
#include "repo/layout.h"
#include "util/text.h"
#include "util/xmalloc.h"

void manifest_init(manifest *m)
{
    memset(m, 0, sizeof(*m));
}

void manifest_free(manifest *m)
{
    for (size_t i = 0; i < m->nfiles; i++)
        free(m->files[i].path);
    for (size_t i = 0; i < m->nlinks; i++) {
        free(m->links[i].path);
        free(m->links[i].target);
    }
    free(m->links);
    for (size_t i = 0; i < m->npartitions; i++)
        free(m->partitions[i].name);
    for (size_t i = 0; i < m->ntablespaces; i++) {
        free(m->tablespaces[i].name);
        free(m->tablespaces[i].location);
    }
    free(m->files);
    free(m->partitions);
    free(m->tablespaces);
    for (size_t i = 0; i < m->ndatabases; i++)
        free(m->databases[i].name);
    free(m->databases);
    free(m->id);
    free(m->backup_label);
    free(m->tablespace_map);
    free(m->parent);
    for (size_t i = 0; i < m->ngone; i++)
        free(m->gone[i]);
    free(m->gone);
    manifest_init(m);
}

void manifest_add_file(manifest *m, const manifest_file *f)
{
    if (m->nfiles == m->cap_files) {
        size_t cap = m->cap_files ? m->cap_files * 2 : 256;
        m->files = xrealloc(m->files, cap * sizeof(*m->files));
        m->cap_files = cap;
    }
    m->files[m->nfiles] = *f;
    m->files[m->nfiles].path = xstrdup(f->path);
    m->nfiles++;
}

void manifest_add_link(manifest *m, const manifest_link *l)
{
    manifest_link *added;

    if (m->nlinks == m->cap_links) {
        size_t cap = m->cap_links ? m->cap_links * 2 : 16;
        m->links = xrealloc(m->links, cap * sizeof(*m->links));
        m->cap_links = cap;
    }
    added = &m->links[m->nlinks];
    *added = *l;
    added->path = xstrdup(l->path);
    added->target = xstrdup(l->target);
    m->nlinks++;
}

void manifest_add_gone(manifest *m, const char *path)
{
    if (m->ngone == m->cap_gone) {
        size_t cap = m->cap_gone ? m->cap_gone * 2 : 16;
        m->gone = xrealloc(m->gone, cap * sizeof(*m->gone));
        m->cap_gone = cap;
    }
    m->gone[m->ngone++] = xstrdup(path);
}

void manifest_add_partition(manifest *m, const char *name, uint64_t size, uint32_t crc)
{
    m->partitions = xrealloc(m->partitions, (m->npartitions + 1) * sizeof(*m->partitions));
    m->partitions[m->npartitions++] = (manifest_partition){xstrdup(name), size, crc};
}

void manifest_add_tablespace(manifest *m, uint32_t oid, const char *name, const char *location)
{
    m->tablespaces = xrealloc(m->tablespaces, (m->ntablespaces + 1) * sizeof(*m->tablespaces));
    m->tablespaces[m->ntablespaces++] =
        (manifest_tablespace){oid, xstrdup(name), xstrdup(location)};
}

void manifest_add_database(manifest *m, uint32_t oid, const char *name, bool is_template)
{
    m->databases = xrealloc(m->databases, (m->ndatabases + 1) * sizeof(*m->databases));
    m->databases[m->ndatabases++] = (manifest_database){oid, xstrdup(name), is_template};
    m->has_databases = true;
}

static json_t *manifest_crc_json(uint32_t crc)
{
    char hex[9];

    snprintf(hex, sizeof(hex), "%08x", crc);
    return json_string(hex);
}

/* Append one small JSON value, serialised on its own, and free it. */
static void manifest_append_json(text_buf *t, json_t *v)
{
    char *s = v ? json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY) : NULL;

    if (s == NULL)
        t->failed = true;
    else
        text_buf_append(t, s);
    free(s);
    json_decref(v);
}

/*
 * Serialised element by element, not as one jansson tree: a tree of every
 * file costs about a kilobyte per file, and backups can hold millions.
 */
bool manifest_to_json(const manifest *m, char **json, pgd_error *err)
{
    text_buf t = {0};

    text_buf_append(&t, "{\n \"format\": ");
    manifest_append_json(&t, json_integer(m->delta ? MANIFEST_FORMAT_DELTA : MANIFEST_FORMAT));
    text_buf_append(&t, ",\n \"id\": ");
    manifest_append_json(&t, json_string(m->id));
    text_buf_append(&t, ",\n \"type\": ");
    manifest_append_json(&t, json_string(m->delta ? "delta" : "full"));
    if (m->delta) {
        text_buf_append(&t, ",\n \"parent\": ");
        manifest_append_json(&t, json_string(m->parent ? m->parent : ""));
        text_buf_append(&t, ",\n \"gone\": [");
        for (size_t i = 0; i < m->ngone; i++) {
            text_buf_append(&t, i ? ",\n  " : "\n  ");
            manifest_append_json(&t, json_string(m->gone[i]));
        }
        text_buf_append(&t, m->ngone ? "\n ]" : "]");
    }
    text_buf_append(&t, ",\n \"compression\": ");
    manifest_append_json(&t, json_string(compress_name(m->compression)));
    text_buf_append(&t, ",\n \"partitions\": [");
    for (size_t i = 0; i < m->npartitions; i++) {
        text_buf_append(&t, i ? ",\n  " : "\n  ");
        manifest_append_json(&t, json_pack("{s:s, s:I, s:o}", "name", m->partitions[i].name, "size",
                                           (json_int_t)m->partitions[i].size, "crc32c",
                                           manifest_crc_json(m->partitions[i].crc)));
    }
    text_buf_append(&t, "\n ],\n \"tablespaces\": [");
    for (size_t i = 0; i < m->ntablespaces; i++) {
        text_buf_append(&t, i ? ",\n  " : "\n  ");
        manifest_append_json(
            &t, json_pack("{s:I, s:s, s:s}", "oid", (json_int_t)m->tablespaces[i].oid, "name",
                          m->tablespaces[i].name, "location", m->tablespaces[i].location));
    }
    if (m->has_databases) {
        text_buf_append(&t, "\n ],\n \"databases\": [");
        for (size_t i = 0; i < m->ndatabases; i++) {
            text_buf_append(&t, i ? ",\n  " : "\n  ");
            manifest_append_json(
                &t, json_pack("{s:I, s:s, s:b}", "oid", (json_int_t)m->databases[i].oid, "name",
                              m->databases[i].name, "template", m->databases[i].is_template));
        }
    }
    text_buf_append(&t, "\n ],\n \"files\": [");
    for (size_t i = 0; i < m->nfiles; i++) {
        const manifest_file *f = &m->files[i];
        json_t *o =
            json_pack("{s:s, s:s, s:I, s:I}", "path", f->path, "type", f->is_dir ? "dir" : "file",
                      "mode", (json_int_t)f->mode, "mtime", (json_int_t)f->mtime);
        if (o != NULL && !f->is_dir) {
            json_object_set_new(o, "size", json_integer((json_int_t)f->size));
            json_object_set_new(o, "crc32c", manifest_crc_json(f->crc));
            json_object_set_new(o, "partition", json_integer(f->partition));
        }
        if (o != NULL && !f->is_dir && f->increment)
            json_object_set_new(o, "increment",
                                json_pack("{s:I, s:I}", "file_size", (json_int_t)f->file_size,
                                          "blocks", (json_int_t)f->inc_blocks));
        if (o != NULL && f->pages_bad > 0) {
            json_t *blocks = json_array();
            for (uint32_t b = 0; b < f->pages_bad && b < MANIFEST_BAD_BLOCKS_MAX; b++)
                json_array_append_new(blocks, json_integer(f->bad_blocks[b]));
            json_object_set_new(o, "checksum_errors", json_integer(f->pages_bad));
            json_object_set_new(o, "bad_blocks", blocks);
        }
        text_buf_append(&t, i ? ",\n  " : "\n  ");
        manifest_append_json(&t, o);
    }
    for (size_t i = 0; i < m->nlinks; i++) {
        const manifest_link *l = &m->links[i];
        text_buf_append(&t, i || m->nfiles ? ",\n  " : "\n  ");
        manifest_append_json(&t, json_pack("{s:s, s:s, s:s, s:I, s:I, s:I}", "path", l->path,
                                           "type", "link", "target", l->target, "mode",
                                           (json_int_t)l->mode, "mtime", (json_int_t)l->mtime,
                                           "partition", (json_int_t)l->partition));
    }
    text_buf_append(&t, "\n ],\n \"backup_label\": ");
    manifest_append_json(&t, json_string(m->backup_label ? m->backup_label : ""));
    text_buf_append(&t, ",\n \"tablespace_map\": ");
    manifest_append_json(&t, json_string(m->tablespace_map ? m->tablespace_map : ""));
    text_buf_append(&t, "\n}\n");
    *json = text_buf_take(&t);
    if (*json == NULL)
        return err_set(err, "could not serialise manifest of backup \"%s\"", m->id);
    return true;
}

static bool manifest_parse_crc(const char *hex, uint32_t *out)
{
    char *end;
    unsigned long v;

    if (hex == NULL || strlen(hex) != 8)
        return false;
    v = strtoul(hex, &end, 16);
    if (*end != '\0')
        return false;
    *out = (uint32_t)v;
    return true;
}

static char *manifest_dup_or_empty(const char *s)
{
    return xstrdup(s != NULL ? s : "");
}

/* The block numbers a file's entry lists (a report: what is not a block number is left out). */
static void manifest_parse_bad_blocks(json_t *blocks, manifest_file *f)
{
    size_t i, n = 0;
    json_t *b;

    json_array_foreach(blocks, i, b)
    {
        if (n < MANIFEST_BAD_BLOCKS_MAX && json_is_integer(b) && json_integer_value(b) >= 0 &&
            json_integer_value(b) <= UINT32_MAX)
            f->bad_blocks[n++] = (uint32_t)json_integer_value(b);
    }
}

/*
 * type, parent and gone[]: a format 2 manifest must be a delta with a
 * parent, a format 1 one a full (type absent in manifests written before
 * deltas).
 */
static bool manifest_delta_from_json(manifest *m, json_t *root, bool format_delta, const char *what,
                                     pgd_error *err)
{
    json_error_t jerr;
    const char *type = "full", *parent = "";
    json_t *gone = NULL, *v;
    size_t i;

    if (json_unpack_ex(root, &jerr, 0, "{s?s, s?s, s?o}", "type", &type, "parent", &parent, "gone",
                       &gone) != 0)
        return err_set(err, "invalid %s: %s", what, jerr.text);
    m->delta = strcmp(type, "delta") == 0;
    if ((!m->delta && strcmp(type, "full") != 0) || m->delta != format_delta ||
        (m->delta && parent[0] == '\0') || (gone != NULL && !json_is_array(gone)))
        return err_set(err, "invalid %s: type \"%s\" with format %d%s", what, type,
                       format_delta ? MANIFEST_FORMAT_DELTA : MANIFEST_FORMAT,
                       m->delta && parent[0] == '\0' ? " and no parent" : "");
    if (m->delta)
        m->parent = xstrdup(parent);
    json_array_foreach(gone, i, v)
    {
        if (!json_is_string(v))
            return err_set(err, "invalid %s: gone entry %zu is not a path", what, i);
        manifest_add_gone(m, json_string_value(v));
    }
    return true;
}

/* A file's "increment" object, only in a delta's manifest. */
static bool manifest_increment_from_json(const manifest *m, json_t *inc, manifest_file *f)
{
    json_error_t jerr;
    json_int_t file_size, blocks;

    if (inc == NULL) {
        f->file_size = f->size;
        return true;
    }
    if (!m->delta ||
        json_unpack_ex(inc, &jerr, 0, "{s:I, s:I}", "file_size", &file_size, "blocks", &blocks) !=
            0 ||
        file_size < 0 || blocks < 0 || blocks > UINT32_MAX ||
        (uint64_t)blocks * INCREMENT_PAGE_SIZE > (uint64_t)file_size + INCREMENT_PAGE_SIZE - 1 ||
        f->size != increment_size((uint32_t)blocks))
        return false;
    f->increment = true;
    f->file_size = (uint64_t)file_size;
    f->inc_blocks = (uint32_t)blocks;
    return true;
}

/* databases[], when the backup recorded it: each oid, name and template flag. */
static bool manifest_databases_from_json(manifest *m, json_t *dbs, const char *what, pgd_error *err)
{
    json_error_t jerr;
    json_t *v;
    size_t i;

    if (dbs == NULL)
        return true;
    if (!json_is_array(dbs))
        return err_set(err, "invalid databases in %s", what);
    m->has_databases = true;
    json_array_foreach(dbs, i, v)
    {
        const char *name;
        json_int_t oid;
        int is_template;
        if (json_unpack_ex(v, &jerr, 0, "{s:I, s:s, s:b}", "oid", &oid, "name", &name, "template",
                           &is_template) != 0 ||
            oid <= 0 || oid > UINT32_MAX || name[0] == '\0')
            return err_set(err, "invalid database %zu in %s", i, what);
        manifest_add_database(m, (uint32_t)oid, name, is_template != 0);
    }
    return true;
}

bool manifest_from_json(manifest *m, const char *json, const char *what, pgd_error *err)
{
    json_error_t jerr;
    json_t *root = json_loads(json, 0, &jerr), *files, *parts, *spcs, *v;
    const char *id = NULL, *compression = NULL, *label = NULL, *spcmap = NULL;
    json_int_t format = 0;
    size_t i;
    bool ok = false;

    manifest_init(m);
    if (root == NULL)
        return err_set(err, "could not parse %s: %s (line %d)", what, jerr.text, jerr.line);
    if (json_unpack_ex(root, &jerr, 0, "{s:I, s:s, s:s, s:o, s:o, s:o, s?s, s?s}", "format",
                       &format, "id", &id, "compression", &compression, "partitions", &parts,
                       "tablespaces", &spcs, "files", &files, "backup_label", &label,
                       "tablespace_map", &spcmap) != 0) {
        err_set(err, "invalid %s: %s", what, jerr.text);
        goto done;
    }
    if (format != MANIFEST_FORMAT && format != MANIFEST_FORMAT_DELTA) {
        err_set(err, "%s has format %lld; this pgdirect reads formats %d and %d", what,
                (long long)format, MANIFEST_FORMAT, MANIFEST_FORMAT_DELTA);
        goto done;
    }
    if (!manifest_delta_from_json(m, root, format == MANIFEST_FORMAT_DELTA, what, err))
        goto done;
    if (!compress_parse(compression, &m->compression)) {
        err_set(err, "%s names unknown compression \"%s\"", what, compression);
        goto done;
    }
    m->id = xstrdup(id);
    m->backup_label = manifest_dup_or_empty(label);
    m->tablespace_map = manifest_dup_or_empty(spcmap);
    json_array_foreach(parts, i, v)
    {
        const char *name, *crc;
        json_int_t size;
        uint32_t crcv;
        if (json_unpack_ex(v, &jerr, 0, "{s:s, s:I, s:s}", "name", &name, "size", &size, "crc32c",
                           &crc) != 0 ||
            size < 0 || !manifest_parse_crc(crc, &crcv)) {
            err_set(err, "invalid partition %zu in %s", i, what);
            goto done;
        }
        manifest_add_partition(m, name, (uint64_t)size, crcv);
    }
    json_array_foreach(spcs, i, v)
    {
        const char *name, *location;
        json_int_t oid;
        if (json_unpack_ex(v, &jerr, 0, "{s:I, s:s, s:s}", "oid", &oid, "name", &name, "location",
                           &location) != 0 ||
            oid <= 0 || oid > UINT32_MAX) {
            err_set(err, "invalid tablespace %zu in %s", i, what);
            goto done;
        }
        manifest_add_tablespace(m, (uint32_t)oid, name, location);
    }
    if (!manifest_databases_from_json(m, json_object_get(root, "databases"), what, err))
        goto done;
    json_array_foreach(files, i, v)
    {
        manifest_file f = {0};
        const char *path, *type, *crc = NULL, *target = NULL;
        json_int_t mode, mtime, size = 0, partition = 0, bad = 0;

        if (json_unpack_ex(v, &jerr, 0, "{s:s, s:s, s:I, s:I, s?I, s?s, s?I, s?s, s?I}", "path",
                           &path, "type", &type, "mode", &mode, "mtime", &mtime, "size", &size,
                           "crc32c", &crc, "partition", &partition, "target", &target,
                           "checksum_errors", &bad) != 0) {
            err_set(err, "invalid file entry %zu in %s: %s", i, what, jerr.text);
            goto done;
        }
        if (strcmp(type, "link") == 0) {
            manifest_link l = {.path = (char *)path,
                               .target = (char *)target,
                               .mode = (uint32_t)mode & 07777,
                               .mtime = mtime,
                               .partition = (uint32_t)partition};
            if (target == NULL || target[0] == '\0' || partition < 1 ||
                (size_t)partition > m->npartitions) {
                err_set(err, "invalid link entry \"%s\" in %s", path, what);
                goto done;
            }
            manifest_add_link(m, &l);
            continue;
        }
        f.path = (char *)path;
        f.is_dir = strcmp(type, "dir") == 0;
        f.mode = (uint32_t)mode & 07777;
        f.mtime = mtime;
        if (!f.is_dir) {
            if (strcmp(type, "file") != 0 || size < 0 || !manifest_parse_crc(crc, &f.crc) ||
                bad < 0 || bad > UINT32_MAX || partition < 1 ||
                (size_t)partition > m->npartitions) {
                err_set(err, "invalid file entry \"%s\" in %s", path, what);
                goto done;
            }
            f.size = (uint64_t)size;
            f.partition = (uint32_t)partition;
            f.pages_bad = (uint32_t)bad;
            manifest_parse_bad_blocks(json_object_get(v, "bad_blocks"), &f);
            if (!manifest_increment_from_json(m, json_object_get(v, "increment"), &f)) {
                err_set(err, "invalid increment entry of file \"%s\" in %s", path, what);
                goto done;
            }
        }
        manifest_add_file(m, &f);
    }
    ok = true;
done:
    json_decref(root);
    if (!ok)
        manifest_free(m);
    return ok;
}

bool manifest_load(storage *repo, const char *id, manifest *m, pgd_error *err)
{
    char path[LAYOUT_PATH_MAX], what[LAYOUT_PATH_MAX + 64];
    char *json;
    size_t len;
    bool missing = false, ok;

    manifest_init(m);
    layout_manifest_path(id, path, sizeof(path));
    if (!storage_get(repo, path, &json, &len, &missing, err) && !missing)
        return false;
    if (missing) {
        err_set(err, "manifest of backup \"%s\" is missing from repository \"%s\"", id, repo->uri);
        err_mark(err, PGD_ERR_DAMAGED);
        return false;
    }
    snprintf(what, sizeof(what), "manifest of backup \"%s\"", id);
    if (strlen(json) != len)
        ok = err_set(err, "%s holds a NUL byte", what);
    else
        ok = manifest_from_json(m, json, what, err);
    free(json);
    if (!ok)
        err_mark(err, PGD_ERR_DAMAGED);
    return ok;
}

static int manifest_file_cmp(const void *a, const void *b)
{
    return strcmp(((const manifest_file *)a)->path, ((const manifest_file *)b)->path);
}

static int manifest_link_cmp(const void *a, const void *b)
{
    return strcmp(((const manifest_link *)a)->path, ((const manifest_link *)b)->path);
}

void manifest_build_index(manifest *m)
{
    if (m->nfiles > 1)
        qsort(m->files, m->nfiles, sizeof(*m->files), manifest_file_cmp);
    if (m->nlinks > 1)
        qsort(m->links, m->nlinks, sizeof(*m->links), manifest_link_cmp);
}

/* Binary search of `path` in n elements of `size` bytes whose first member is their path. */
static long manifest_search(const void *base, size_t n, size_t size, const char *path)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(path, *(char *const *)((const char *)base + mid * size));
        if (c == 0)
            return (long)mid;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return -1;
}

long manifest_find(const manifest *m, const char *path)
{
    return manifest_search(m->files, m->nfiles, sizeof(*m->files), path);
}

long manifest_find_link(const manifest *m, const char *path)
{
    return manifest_search(m->links, m->nlinks, sizeof(*m->links), path);
}

bool manifest_path_is_safe(const char *path)
{
    const char *p = path;

    if (path[0] == '\0' || path[0] == '/' || strlen(path) >= PATH_MAX / 2)
        return false;
    while (*p != '\0') {
        size_t len = strcspn(p, "/");
        if (len == 0 || (len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
            return false;
        p += len;
        if (*p == '/') {
            p++;
            if (*p == '\0')
                return false; /* trailing slash: an empty last component */
        }
    }
    return true;
}

bool manifest_partition_name_is_valid(const char *name, compress_kind kind)
{
    static const char prefix[] = "part_";
    const char *digits = name + strlen(prefix);
    char expected[LAYOUT_PATH_MAX];
    unsigned long number;
    char *end;

    /* exactly what layout_partition_name writes: never a path */
    if (strncmp(name, prefix, strlen(prefix)) != 0 || *digits < '0' || *digits > '9')
        return false;
    errno = 0;
    number = strtoul(digits, &end, 10);
    if (errno != 0 || number == 0 || number > UINT32_MAX)
        return false;
    layout_partition_name((unsigned)number, kind, expected, sizeof(expected));
    return strcmp(name, expected) == 0;
}
