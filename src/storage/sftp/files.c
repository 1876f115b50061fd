/*
 * files.c - the storage operations of an SFTP repository: objects written
 * under a temporary name "<name>.tmp.<pid>.<n>" (as fs.c names them),
 * fsynced where the server offers fsync@openssh.com, then renamed into
 * place (rename.c for a rename that replaces); reading, listing, removal,
 * and the sweep of temporary files a killed writer left.
 *
 * Memory stays bounded while streaming: a write passes at most
 * SFTP_FILES_CHUNK bytes to libssh2 at a time (it copies what it is given
 * into its packets), and a read asks for no more than the caller's buffer.
 */
#define _GNU_SOURCE
#include "storage/sftp/internal.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/log.h"
#include "util/xmalloc.h"

/* What one libssh2 write call is given: a few of its 30,000-byte packets in flight. */
#define SFTP_FILES_CHUNK (256u * 1024)
/* A directory entry's name: NAME_MAX on the server, and room. */
#define SFTP_FILES_NAME_MAX 1024

static atomic_uint sftp_files_counter;

/* Take the lock and be connected; on failure the lock is not held. */
static bool sftp_files_begin(sftp_storage *s, pgd_error *err)
{
    pthread_mutex_lock(&s->lock);
    if (sftp_session_connect(s, err))
        return true;
    pthread_mutex_unlock(&s->lock);
    return false;
}

static void sftp_files_end(sftp_storage *s)
{
    pthread_mutex_unlock(&s->lock);
}

/* A handle of generation gen: still usable? (The lock is held.) */
static bool sftp_files_alive(sftp_storage *s, unsigned gen, const char *path, pgd_error *err)
{
    if (s->session != NULL && s->generation == gen && s->pid == getpid())
        return true;
    err_set(err, "could not use \"%s\" on %s: the connection was lost", path, s->where);
    err_mark(err, PGD_ERR_TRANSIENT);
    return false;
}

static int sftp_files_stat(sftp_storage *s, const char *path, LIBSSH2_SFTP_ATTRIBUTES *attrs)
{
    return libssh2_sftp_stat_ex(s->sftp, path, (unsigned)strlen(path), LIBSSH2_SFTP_STAT, attrs);
}

/*
 * After a failed call: true, reporting nothing, when the SFTP status is
 * `allowed` (a missing file where that is an answer); false with err set
 * otherwise (lock held).
 */
static bool sftp_files_failed_with(sftp_storage *s, unsigned long allowed, const char *op,
                                   const char *object, pgd_error *err)
{
    pgd_error mine = {0};
    unsigned long status;

    sftp_session_fail(s, &mine, &status, op, object);
    if (status != 0 && status == allowed)
        return true;
    err_set(err, "%s", mine.msg);
    err_mark(err, mine.kind);
    return false;
}

/*
 * mkdir -p of the directories above `path` (lock held). OpenSSH answers a
 * mkdir of a directory that is there with a bare failure: a failed mkdir is
 * an error only when the directory is not there after it.
 */
static bool sftp_files_make_parents(sftp_storage *s, const char *path, pgd_error *err)
{
    char *dir = xstrdup(path);
    bool ok = true;

    for (char *p = dir + 1; ok && *p != '\0'; p++) {
        LIBSSH2_SFTP_ATTRIBUTES attrs;
        pgd_error mkdir_err = {0};
        unsigned long status;

        if (*p != '/')
            continue;
        *p = '\0';
        if (libssh2_sftp_mkdir_ex(s->sftp, dir, (unsigned)strlen(dir), SFTP_DIR_MODE) != 0) {
            sftp_session_fail(s, &mkdir_err, &status, "create directory", dir);
            if (status == 0 || sftp_files_stat(s, dir, &attrs) != 0 ||
                !(attrs.flags & LIBSSH2_SFTP_ATTR_PERMISSIONS) ||
                !LIBSSH2_SFTP_S_ISDIR(attrs.permissions)) {
                err_set(err, "%s", mkdir_err.msg);
                err_mark(err, mkdir_err.kind);
                ok = false;
            }
        }
        *p = '/';
    }
    free(dir);
    return ok;
}

/* ---- writer ---- */

typedef struct sftp_files_writer {
    out_stream base;
    sftp_storage *s;
    LIBSSH2_SFTP_HANDLE *h;
    unsigned gen, flags;
    char *final_path, *tmp_path;
} sftp_files_writer;

static void sftp_files_writer_free(sftp_files_writer *w)
{
    free(w->final_path);
    free(w->tmp_path);
    free(w);
}

/* Close the handle and remove the temporary file, where the connection still allows (lock held). */
static void sftp_files_writer_discard(sftp_files_writer *w)
{
    sftp_storage *s = w->s;

    if (s->session == NULL || s->generation != w->gen || s->pid != getpid())
        return; /* a killed writer's garbage: remove_stale_temp sweeps it */
    if (w->h != NULL)
        libssh2_sftp_close_handle(w->h);
    w->h = NULL;
    if (s->session != NULL)
        libssh2_sftp_unlink_ex(s->sftp, w->tmp_path, (unsigned)strlen(w->tmp_path));
}

static bool sftp_files_writer_write(out_stream *os, const void *buf, size_t len, pgd_error *err)
{
    sftp_files_writer *w = (sftp_files_writer *)os;
    sftp_storage *s = w->s;
    const char *p = buf;
    bool ok = true;

    pthread_mutex_lock(&s->lock);
    if (!sftp_files_alive(s, w->gen, w->tmp_path, err))
        ok = false;
    while (ok && len > 0) {
        ssize_t n = libssh2_sftp_write(w->h, p, len < SFTP_FILES_CHUNK ? len : SFTP_FILES_CHUNK);
        if (n < 0) {
            ok = sftp_session_fail(s, err, NULL, "write", w->tmp_path);
            break;
        }
        p += n;
        len -= (size_t)n;
    }
    pthread_mutex_unlock(&s->lock);
    return ok;
}

/* Rename the temporary file into place, as the flags ask (lock held). */
static bool sftp_files_writer_rename(sftp_files_writer *w, pgd_error *err)
{
    sftp_storage *s = w->s;
    LIBSSH2_SFTP_ATTRIBUTES attrs;
    pgd_error mine = {0};
    unsigned long status;

    if (!(w->flags & STORAGE_WRITE_NO_REPLACE))
        return sftp_rename_replace(s, w->tmp_path, w->final_path, err);
    /* SFTP v3's rename never replaces (OpenSSH's server links the new name) */
    if (libssh2_sftp_rename_ex(s->sftp, w->tmp_path, (unsigned)strlen(w->tmp_path), w->final_path,
                               (unsigned)strlen(w->final_path), LIBSSH2_SFTP_RENAME_ATOMIC) == 0)
        return true;
    sftp_session_fail(s, &mine, &status, "rename temporary file into", w->final_path);
    if (status != 0 && sftp_files_stat(s, w->final_path, &attrs) == 0) {
        err_set(err, "could not rename \"%s\" to \"%s\" on %s: the target already exists",
                w->tmp_path, w->final_path, s->where);
        err_mark(err, PGD_ERR_EXISTS);
        return false;
    }
    err_set(err, "%s", mine.msg);
    err_mark(err, mine.kind);
    return false;
}

static bool sftp_files_writer_close(out_stream *os, pgd_error *err)
{
    sftp_files_writer *w = (sftp_files_writer *)os;
    sftp_storage *s = w->s;
    bool ok;

    pthread_mutex_lock(&s->lock);
    ok = sftp_files_alive(s, w->gen, w->tmp_path, err);
    if (ok && libssh2_sftp_fsync(w->h) != 0) {
        /* fsync@openssh.com is an extension: a server without it has nothing to sync with */
        ok = sftp_files_failed_with(s, LIBSSH2_FX_OP_UNSUPPORTED, "fsync", w->tmp_path, err);
        if (ok)
            log_debug("sftp server %s has no fsync@openssh.com: \"%s\" not fsynced", s->where,
                      w->tmp_path);
    }
    if (ok) {
        ok = libssh2_sftp_close_handle(w->h) == 0 ||
             sftp_session_fail(s, err, NULL, "close", w->tmp_path);
        w->h = NULL;
    }
    ok = ok && sftp_files_writer_rename(w, err);
    if (!ok)
        sftp_files_writer_discard(w);
    pthread_mutex_unlock(&s->lock);
    sftp_files_writer_free(w);
    return ok;
}

static void sftp_files_writer_abort(out_stream *os)
{
    sftp_files_writer *w = (sftp_files_writer *)os;

    pthread_mutex_lock(&w->s->lock);
    sftp_files_writer_discard(w);
    pthread_mutex_unlock(&w->s->lock);
    sftp_files_writer_free(w);
}

static const out_stream_ops sftp_files_writer_ops = {
    sftp_files_writer_write, sftp_files_writer_close, sftp_files_writer_abort};

static LIBSSH2_SFTP_HANDLE *sftp_files_create(sftp_storage *s, const char *path)
{
    return libssh2_sftp_open_ex(s->sftp, path, (unsigned)strlen(path),
                                LIBSSH2_FXF_WRITE | LIBSSH2_FXF_CREAT | LIBSSH2_FXF_EXCL,
                                SFTP_FILE_MODE, LIBSSH2_SFTP_OPENFILE);
}

static out_stream *sftp_files_write_open(storage *st, const char *path, unsigned flags,
                                         pgd_error *err)
{
    sftp_storage *s = (sftp_storage *)st;
    sftp_files_writer *w;

    if (!sftp_files_begin(s, err))
        return NULL;
    w = xcalloc(1, sizeof(*w));
    w->base.ops = &sftp_files_writer_ops;
    w->s = s;
    w->flags = flags;
    w->gen = s->generation;
    w->final_path = sftp_config_remote_path(s, path);
    w->tmp_path = xasprintf("%s.tmp.%ld.%u", w->final_path, (long)getpid(),
                            atomic_fetch_add(&sftp_files_counter, 1));
    w->h = sftp_files_create(s, w->tmp_path);
    if (w->h == NULL &&
        sftp_files_failed_with(s, LIBSSH2_FX_NO_SUCH_FILE, "create file", w->tmp_path, err)) {
        if (sftp_files_make_parents(s, w->tmp_path, err) &&
            (w->h = sftp_files_create(s, w->tmp_path)) == NULL)
            sftp_session_fail(s, err, NULL, "create file", w->tmp_path);
    }
    sftp_files_end(s);
    if (w->h == NULL) {
        sftp_files_writer_free(w);
        return NULL;
    }
    return &w->base;
}

/* ---- reader ---- */

typedef struct sftp_files_reader {
    in_stream base;
    sftp_storage *s;
    LIBSSH2_SFTP_HANDLE *h;
    unsigned gen;
    char *path;
} sftp_files_reader;

static bool sftp_files_reader_read(in_stream *is, void *buf, size_t len, size_t *n, pgd_error *err)
{
    sftp_files_reader *r = (sftp_files_reader *)is;
    sftp_storage *s = r->s;
    ssize_t got = -1;
    bool ok;

    pthread_mutex_lock(&s->lock);
    ok = sftp_files_alive(s, r->gen, r->path, err);
    if (ok && (got = libssh2_sftp_read(r->h, buf, len)) < 0)
        ok = sftp_session_fail(s, err, NULL, "read file", r->path);
    pthread_mutex_unlock(&s->lock);
    *n = ok ? (size_t)got : 0;
    return ok;
}

static void sftp_files_reader_close(in_stream *is)
{
    sftp_files_reader *r = (sftp_files_reader *)is;
    sftp_storage *s = r->s;

    pthread_mutex_lock(&s->lock);
    if (s->session != NULL && s->generation == r->gen && s->pid == getpid())
        libssh2_sftp_close_handle(r->h);
    pthread_mutex_unlock(&s->lock);
    free(r->path);
    free(r);
}

static const in_stream_ops sftp_files_reader_ops = {sftp_files_reader_read,
                                                    sftp_files_reader_close};

static in_stream *sftp_files_read_open(storage *st, const char *path, bool *missing, pgd_error *err)
{
    sftp_storage *s = (sftp_storage *)st;
    sftp_files_reader *r;
    LIBSSH2_SFTP_HANDLE *h;
    char *full;

    *missing = false;
    if (!sftp_files_begin(s, err))
        return NULL;
    full = sftp_config_remote_path(s, path);
    h = libssh2_sftp_open_ex(s->sftp, full, (unsigned)strlen(full), LIBSSH2_FXF_READ, 0,
                             LIBSSH2_SFTP_OPENFILE);
    if (h == NULL) {
        *missing = sftp_files_failed_with(s, LIBSSH2_FX_NO_SUCH_FILE, "open file", full, err);
        sftp_files_end(s);
        free(full);
        return NULL;
    }
    r = xcalloc(1, sizeof(*r));
    r->base.ops = &sftp_files_reader_ops;
    r->s = s;
    r->h = h;
    r->gen = s->generation;
    r->path = full;
    sftp_files_end(s);
    return &r->base;
}

/* ---- the other operations ---- */

static bool sftp_files_exists(storage *st, const char *path, bool *exists, pgd_error *err)
{
    sftp_storage *s = (sftp_storage *)st;
    LIBSSH2_SFTP_ATTRIBUTES attrs;
    char *full;
    bool ok = true;

    if (!sftp_files_begin(s, err))
        return false;
    full = sftp_config_remote_path(s, path);
    *exists = sftp_files_stat(s, full, &attrs) == 0;
    if (!*exists)
        ok = sftp_files_failed_with(s, LIBSSH2_FX_NO_SUCH_FILE, "stat", full, err);
    sftp_files_end(s);
    free(full);
    return ok;
}

typedef struct sftp_files_entry {
    char *name;
    uint64_t size;
    bool is_dir;
    int64_t mtime; /* -1 when the server did not say */
} sftp_files_entry;

static void sftp_files_entries_free(sftp_files_entry *e, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(e[i].name);
    free(e);
}

/*
 * The entries of a remote directory, read whole with the lock held (the
 * callbacks that get them may use the repository). A missing directory
 * has none.
 */
static bool sftp_files_read_dir(sftp_storage *s, const char *full, sftp_files_entry **out,
                                size_t *count, pgd_error *err)
{
    LIBSSH2_SFTP_HANDLE *d;
    LIBSSH2_SFTP_ATTRIBUTES attrs;
    sftp_files_entry *e = NULL;
    size_t n = 0, cap = 0;
    char name[SFTP_FILES_NAME_MAX];
    bool ok = true;
    int len;

    *out = NULL;
    *count = 0;
    d = libssh2_sftp_open_ex(s->sftp, full, (unsigned)strlen(full), 0, 0, LIBSSH2_SFTP_OPENDIR);
    if (d == NULL)
        return sftp_files_failed_with(s, LIBSSH2_FX_NO_SUCH_FILE, "open directory", full, err);
    while ((len = libssh2_sftp_readdir_ex(d, name, sizeof(name), NULL, 0, &attrs)) > 0) {
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
            continue;
        if (n == cap) {
            cap = cap == 0 ? 64 : cap * 2;
            e = xrealloc(e, cap * sizeof(*e));
        }
        e[n].name = xstrndup(name, (size_t)len);
        e[n].size = (attrs.flags & LIBSSH2_SFTP_ATTR_SIZE) ? attrs.filesize : 0;
        e[n].is_dir = (attrs.flags & LIBSSH2_SFTP_ATTR_PERMISSIONS) &&
                      LIBSSH2_SFTP_S_ISDIR(attrs.permissions);
        e[n].mtime = (attrs.flags & LIBSSH2_SFTP_ATTR_ACMODTIME) ? (int64_t)attrs.mtime : -1;
        n++;
    }
    if (len < 0)
        ok = sftp_session_fail(s, err, NULL, "read directory", full);
    if (s->session != NULL)
        libssh2_sftp_close_handle(d);
    if (!ok) {
        sftp_files_entries_free(e, n);
        return false;
    }
    *out = e;
    *count = n;
    return true;
}

static bool sftp_files_list(storage *st, const char *dir, storage_list_cb cb, void *arg,
                            pgd_error *err)
{
    sftp_storage *s = (sftp_storage *)st;
    sftp_files_entry *e;
    size_t n;
    char *full;
    bool ok;

    if (!sftp_files_begin(s, err))
        return false;
    full = sftp_config_remote_path(s, dir);
    ok = sftp_files_read_dir(s, full, &e, &n, err);
    sftp_files_end(s);
    free(full);
    for (size_t i = 0; ok && i < n; i++)
        if (strstr(e[i].name, ".tmp.") == NULL) /* writers' temporary names, as fs.c hides them */
            ok = cb(arg, e[i].name, e[i].size, e[i].is_dir, err);
    sftp_files_entries_free(e, n);
    return ok;
}

/* Remove a file, or an empty directory (as fs.c does); a missing one is removed (lock held). */
static bool sftp_files_remove_locked(sftp_storage *s, const char *full, pgd_error *err)
{
    LIBSSH2_SFTP_ATTRIBUTES attrs;
    pgd_error unlink_err = {0};

    if (libssh2_sftp_unlink_ex(s->sftp, full, (unsigned)strlen(full)) == 0)
        return true;
    /* OpenSSH answers a directory with a failure: look at what is there */
    if (!sftp_files_failed_with(s, LIBSSH2_FX_NO_SUCH_FILE, "remove", full, &unlink_err) &&
        err_is(&unlink_err, PGD_ERR_TRANSIENT)) {
        err_set(err, "%s", unlink_err.msg);
        err_mark(err, PGD_ERR_TRANSIENT);
        return false;
    }
    if (sftp_files_stat(s, full, &attrs) != 0)
        return sftp_files_failed_with(s, LIBSSH2_FX_NO_SUCH_FILE, "stat", full, err);
    if ((attrs.flags & LIBSSH2_SFTP_ATTR_PERMISSIONS) && LIBSSH2_SFTP_S_ISDIR(attrs.permissions))
        return libssh2_sftp_rmdir_ex(s->sftp, full, (unsigned)strlen(full)) == 0 ||
               sftp_session_fail(s, err, NULL, "remove directory", full);
    err_set(err, "%s", unlink_err.msg);
    err_mark(err, unlink_err.kind);
    return false;
}

static bool sftp_files_remove(storage *st, const char *path, pgd_error *err)
{
    sftp_storage *s = (sftp_storage *)st;
    char *full;
    bool ok;

    if (!sftp_files_begin(s, err))
        return false;
    full = sftp_config_remote_path(s, path);
    ok = sftp_files_remove_locked(s, full, err);
    sftp_files_end(s);
    free(full);
    return ok;
}

/*
 * Temporary files under `full` (recursively) last written at or before cutoff (lock held);
 * of: only those of the object of that name in `full`, not recursively.
 */
static bool sftp_files_sweep(sftp_storage *s, const char *full, const char *of, int64_t cutoff,
                             pgd_error *err)
{
    sftp_files_entry *e;
    size_t n;
    bool ok;

    if (!sftp_files_read_dir(s, full, &e, &n, err))
        return false;
    ok = true;
    for (size_t i = 0; ok && i < n; i++) {
        char *child;

        if (!e[i].is_dir && !storage_is_temp_name(e[i].name))
            continue;
        if (of != NULL && (e[i].is_dir || strncmp(e[i].name, of, strlen(of)) != 0 ||
                           strncmp(e[i].name + strlen(of), ".tmp.", 5) != 0))
            continue;
        child = xasprintf("%s/%s", full, e[i].name);
        if (e[i].is_dir)
            ok = sftp_files_sweep(s, child, NULL, cutoff, err);
        else if (e[i].mtime >= 0 && e[i].mtime <= cutoff &&
                 libssh2_sftp_unlink_ex(s->sftp, child, (unsigned)strlen(child)) != 0)
            ok = sftp_files_failed_with(s, LIBSSH2_FX_NO_SUCH_FILE, "remove stale temporary file",
                                        child, err);
        free(child);
    }
    sftp_files_entries_free(e, n);
    return ok;
}

static bool sftp_files_remove_stale_temp(storage *st, const char *dir, int64_t older_than_s,
                                         pgd_error *err)
{
    sftp_storage *s = (sftp_storage *)st;
    char *full;
    bool ok;

    if (!sftp_files_begin(s, err))
        return false;
    full = sftp_config_remote_path(s, dir);
    /* the server's clock stamps the files: on another host, it is assumed close to this one's */
    ok = sftp_files_sweep(s, full, NULL, (int64_t)time(NULL) - older_than_s, err);
    sftp_files_end(s);
    free(full);
    return ok;
}

static bool sftp_files_remove_stale_temp_of(storage *st, const char *path, int64_t older_than_s,
                                            pgd_error *err)
{
    sftp_storage *s = (sftp_storage *)st;
    char *full, *slash;
    bool ok;

    if (!sftp_files_begin(s, err))
        return false;
    full = sftp_config_remote_path(s, path);
    if ((slash = strrchr(full, '/')) == NULL) {
        ok = err_set(err, "no folder holds \"%s\"", full);
    } else {
        *slash = '\0';
        ok = sftp_files_sweep(s, slash == full ? "/" : full, slash + 1,
                              (int64_t)time(NULL) - older_than_s, err);
    }
    sftp_files_end(s);
    free(full);
    return ok;
}

static bool sftp_files_root_exists(storage *st, bool *exists, pgd_error *err)
{
    sftp_storage *s = (sftp_storage *)st;
    LIBSSH2_SFTP_ATTRIBUTES attrs;
    bool ok = true;

    *exists = false;
    if (!sftp_files_begin(s, err))
        return false;
    if (sftp_files_stat(s, s->uri.path, &attrs) != 0)
        ok =
            sftp_files_failed_with(s, LIBSSH2_FX_NO_SUCH_FILE, "stat repository", s->uri.path, err);
    else if ((attrs.flags & LIBSSH2_SFTP_ATTR_PERMISSIONS) &&
             !LIBSSH2_SFTP_S_ISDIR(attrs.permissions)) {
        ok = err_set(err, "repository \"%s\" is not a directory", s->base.uri);
    } else {
        *exists = true;
    }
    sftp_files_end(s);
    return ok;
}

static void sftp_files_free(storage *st)
{
    sftp_storage *s = (sftp_storage *)st;

    sftp_session_drop(s);
    pthread_mutex_destroy(&s->lock);
    sftp_config_uri_free(&s->uri);
    free(s->key_file);
    free(s->known_hosts);
    free(s->where);
    free(s->base.uri);
    free(s);
}

const storage_ops sftp_files_ops = {
    .write_open = sftp_files_write_open,
    .read_open = sftp_files_read_open,
    .exists = sftp_files_exists,
    .list = sftp_files_list,
    .remove = sftp_files_remove,
    .free = sftp_files_free,
    .remove_stale_temp = sftp_files_remove_stale_temp,
    .remove_stale_temp_of = sftp_files_remove_stale_temp_of,
    .root_exists = sftp_files_root_exists,
};
