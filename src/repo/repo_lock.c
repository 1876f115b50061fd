/*
 * repo_lock.c - a lease on a repository built on create-exclusive objects;
 * see repo_lock.h for the protocol and what it assumes.
 */
#include "repo/repo_lock.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "repo/layout.h"
#include "util/log.h"
#include "util/xmalloc.h"

#define REPO_LOCK_NAME_MAX  64
#define REPO_LOCK_TOKEN_LEN 16 /* random bytes, hex in the object */
#define REPO_LOCK_HOST_MAX  256
/* Rounds of list-then-create before giving up: each lost round means another run took it. */
#define REPO_LOCK_TRIES      3
#define REPO_LOCK_GEN_DIGITS 10

struct repo_lock {
    storage *repo;
    char name[REPO_LOCK_NAME_MAX];
    uint64_t generation;
    int64_t lease_s, expires, renewed;
    char host[REPO_LOCK_HOST_MAX];
    char token[REPO_LOCK_TOKEN_LEN * 2 + 1];
};

/* What a lease object says. */
typedef struct repo_lock_lease {
    char host[REPO_LOCK_HOST_MAX];
    char token[REPO_LOCK_TOKEN_LEN * 2 + 1];
    long long pid;
    int64_t expires;
    bool released;
} repo_lock_lease;

typedef struct repo_lock_gens {
    const char *name;
    uint64_t *gens;
    size_t n, cap;
} repo_lock_gens;

static void repo_lock_path(const char *name, uint64_t gen, char *out, size_t outlen)
{
    snprintf(out, outlen, REPO_LOCK_DIR "/%s.%0*" PRIu64 ".json", name, REPO_LOCK_GEN_DIGITS, gen);
}

static void repo_lock_format_time(int64_t t, char *out, size_t outlen)
{
    time_t tt = (time_t)t;
    struct tm tm;

    gmtime_r(&tt, &tm);
    strftime(out, outlen, "%Y-%m-%d %H:%M:%S UTC", &tm);
}

/* "<name>.<digits>.json" -> the generation. */
static bool repo_lock_parse_name(const char *name, const char *entry, uint64_t *gen)
{
    size_t nlen = strlen(name);
    const char *p = entry + nlen + 1;
    char *end;

    if (strncmp(entry, name, nlen) != 0 || entry[nlen] != '.' || *p < '0' || *p > '9')
        return false;
    errno = 0;
    *gen = strtoull(p, &end, 10);
    return errno == 0 && strcmp(end, ".json") == 0;
}

static bool repo_lock_collect(void *arg, const char *entry, uint64_t size, bool is_dir,
                              pgd_error *err)
{
    repo_lock_gens *g = arg;
    uint64_t gen;

    (void)size;
    (void)err;
    if (is_dir || !repo_lock_parse_name(g->name, entry, &gen))
        return true;
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 8;
        g->gens = xrealloc(g->gens, cap * sizeof(*g->gens));
        g->cap = cap;
    }
    g->gens[g->n++] = gen;
    return true;
}

/* Every generation of lease `name`, and the highest (0: none). */
static bool repo_lock_list(storage *repo, const char *name, repo_lock_gens *g, uint64_t *max,
                           pgd_error *err)
{
    memset(g, 0, sizeof(*g));
    g->name = name;
    *max = 0;
    if (!storage_list(repo, REPO_LOCK_DIR, repo_lock_collect, g, err)) {
        free(g->gens);
        err_prefix(err, "could not list the locks of repository \"%s\"", repo->uri);
        return false;
    }
    for (size_t i = 0; i < g->n; i++)
        if (g->gens[i] > *max)
            *max = g->gens[i];
    return true;
}

static bool repo_lock_read(storage *repo, const char *name, uint64_t gen, repo_lock_lease *lease,
                           bool *missing, pgd_error *err)
{
    char path[LAYOUT_PATH_MAX];
    const char *host, *token;
    json_int_t pid, expires;
    json_error_t jerr;
    int released;
    char *text;
    size_t len;
    json_t *o;

    memset(lease, 0, sizeof(*lease));
    repo_lock_path(name, gen, path, sizeof(path));
    if (!storage_get(repo, path, &text, &len, missing, err))
        return false;
    o = json_loads(text, 0, &jerr);
    free(text);
    if (o == NULL ||
        json_unpack_ex(o, &jerr, 0, "{s:s, s:I, s:s, s:I, s:b}", "host", &host, "pid", &pid,
                       "token", &token, "expires", &expires, "released", &released) != 0) {
        json_decref(o);
        return err_set(err,
                       "lock \"%s\" in repository \"%s\" is unreadable (%s): if no run holds it, "
                       "remove it",
                       path, repo->uri, jerr.text);
    }
    snprintf(lease->host, sizeof(lease->host), "%s", host);
    snprintf(lease->token, sizeof(lease->token), "%s", token);
    lease->pid = pid;
    lease->expires = expires;
    lease->released = released != 0;
    json_decref(o);
    return true;
}

static bool repo_lock_write(repo_lock *l, bool released, unsigned flags, pgd_error *err)
{
    char path[LAYOUT_PATH_MAX];
    char *text;
    json_t *o;
    bool ok;

    repo_lock_path(l->name, l->generation, path, sizeof(path));
    o = json_pack("{s:s, s:I, s:s, s:I, s:s, s:I, s:b}", "lock", l->name, "generation",
                  (json_int_t)l->generation, "host", l->host, "pid", (json_int_t)getpid(), "token",
                  l->token, "expires", (json_int_t)l->expires, "released", released);
    text = o != NULL ? json_dumps(o, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    if (text == NULL) /* jansson allocates with xmalloc: the host name is not UTF-8 */
        return err_set(err, "could not encode lease \"%s\" in JSON: host name \"%s\" is not UTF-8",
                       l->name, l->host);
    ok = storage_put(l->repo, path, text, strlen(text), flags, err);
    free(text);
    return ok;
}

static bool repo_lock_token(char *out, pgd_error *err)
{
    unsigned char raw[REPO_LOCK_TOKEN_LEN];

    if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
        return err_errno(err, errno, "could not read random bytes for a lock token");
    for (size_t i = 0; i < sizeof(raw); i++)
        snprintf(out + 2 * i, 3, "%02x", raw[i]);
    return true;
}

/* Remove the generations below the one just taken: they are released or expired. */
static void repo_lock_prune(repo_lock *l, const repo_lock_gens *g)
{
    for (size_t i = 0; i < g->n; i++) {
        char path[LAYOUT_PATH_MAX];
        pgd_error ignore = {0};
        if (g->gens[i] >= l->generation)
            continue;
        repo_lock_path(l->name, g->gens[i], path, sizeof(path));
        if (!storage_remove(l->repo, path, &ignore))
            log_debug("could not remove old lock \"%s\": %s", path, ignore.msg);
    }
}

/* Whether the highest generation `max` lets us take the next one; err names its holder if not. */
static bool repo_lock_free_to_take(repo_lock *l, uint64_t max, bool *retry, pgd_error *err)
{
    repo_lock_lease lease;
    char until[32], path[LAYOUT_PATH_MAX];
    bool missing = false;

    *retry = false;
    if (max == 0)
        return true;
    if (!repo_lock_read(l->repo, l->name, max, &lease, &missing, err)) {
        if (missing) { /* pruned while we looked: list again */
            err_clear(err);
            *retry = true;
        }
        return false;
    }
    if (lease.released || lease.expires <= (int64_t)time(NULL))
        return true;
    repo_lock_format_time(lease.expires, until, sizeof(until));
    repo_lock_path(l->name, max, path, sizeof(path));
    return err_set(err,
                   "repository \"%s\" is locked by another %s run (host %s, pid %lld) until %s "
                   "unless it renews its lease (\"%s\")",
                   l->repo->uri, l->name, lease.host, lease.pid, until, path);
}

repo_lock *repo_lock_acquire(storage *repo, const char *name, int64_t lease_s, pgd_error *err)
{
    repo_lock *l = xcalloc(1, sizeof(*l));

    l->repo = repo;
    l->lease_s = lease_s;
    snprintf(l->name, sizeof(l->name), "%s", name);
    if (gethostname(l->host, sizeof(l->host) - 1) != 0)
        snprintf(l->host, sizeof(l->host), "unknown");
    if (!repo_lock_token(l->token, err)) {
        free(l);
        return NULL;
    }
    for (int attempt = 0; attempt < REPO_LOCK_TRIES; attempt++) {
        repo_lock_gens g;
        pgd_error put_err = {0};
        uint64_t max;
        bool retry;

        if (!repo_lock_list(repo, name, &g, &max, err))
            break;
        if (!repo_lock_free_to_take(l, max, &retry, err)) {
            free(g.gens);
            if (retry)
                continue;
            break;
        }
        l->generation = max + 1;
        l->renewed = (int64_t)time(NULL);
        l->expires = l->renewed + lease_s;
        if (repo_lock_write(l, false, STORAGE_WRITE_NO_REPLACE, &put_err)) {
            repo_lock_prune(l, &g);
            free(g.gens);
            log_debug("took lock %s generation %" PRIu64, name, l->generation);
            return l;
        }
        free(g.gens);
        /* another run created that generation first: look again (it now holds the lease) */
        if (!err_is(&put_err, PGD_ERR_EXISTS)) {
            *err = put_err;
            err_prefix(err, "could not take lock \"%s\" in repository \"%s\"", name, repo->uri);
            break;
        }
    }
    if (!err->set)
        err_set(err, "could not take lock \"%s\" in repository \"%s\": other runs kept taking it",
                name, repo->uri);
    free(l);
    return NULL;
}

/* Whether the lease is still ours: no higher generation, our token in ours. */
static bool repo_lock_still_ours(repo_lock *l, pgd_error *err)
{
    repo_lock_gens g;
    repo_lock_lease lease;
    uint64_t max;
    bool missing = false;

    if (!repo_lock_list(l->repo, l->name, &g, &max, err))
        return false;
    free(g.gens);
    if (max > l->generation)
        return err_set(err, "lost lock \"%s\" in repository \"%s\": another run took it over",
                       l->name, l->repo->uri);
    if (!repo_lock_read(l->repo, l->name, l->generation, &lease, &missing, err))
        return missing ? err_set(err, "lost lock \"%s\" in repository \"%s\": it was removed",
                                 l->name, l->repo->uri)
                       : false;
    if (strcmp(lease.token, l->token) != 0 || lease.released)
        return err_set(err, "lost lock \"%s\" in repository \"%s\": another run holds it", l->name,
                       l->repo->uri);
    return true;
}

bool repo_lock_keep(repo_lock *l, pgd_error *err)
{
    int64_t now = (int64_t)time(NULL);

    if (now >= l->expires - REPO_LOCK_CLOCK_MARGIN_S)
        return err_set(err,
                       "lost lock \"%s\" in repository \"%s\": its lease ran out before it was "
                       "renewed",
                       l->name, l->repo->uri);
    /* checked every time: a run that lost the lease stops before its next step */
    if (!repo_lock_still_ours(l, err))
        return false;
    if (now < l->renewed + l->lease_s / 3)
        return true;
    l->renewed = now;
    l->expires = now + l->lease_s;
    if (!repo_lock_write(l, false, 0, err)) {
        err_prefix(err, "could not renew lock \"%s\"", l->name);
        return false;
    }
    return true;
}

bool repo_lock_release(repo_lock *l, pgd_error *err)
{
    pgd_error mine = {0};
    bool ok = true;

    if (l == NULL)
        return true;
    if (repo_lock_still_ours(l, &mine))
        ok = repo_lock_write(l, true, 0, err);
    else
        log_warn("%s", mine.msg);
    free(l);
    return ok;
}
