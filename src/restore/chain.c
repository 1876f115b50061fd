/*
 * chain.c - load and check the parents of a delta backup (see chain.h).
 */
#include "restore/chain.h"

#include <stdlib.h>
#include <string.h>

#include "pg/lsn.h"
#include "repo/layout.h"
#include "repo/backup_read.h"
#include "restore/links.h"
#include "util/xmalloc.h"

#define CHAIN_TYPE_FULL  "full"
#define CHAIN_TYPE_DELTA "delta"

/* The sentinel and the manifest of one backup agree on which backup it is and what it is. */
static bool chain_check_member(const backup_info *bi, const manifest *m, pgd_error *err)
{
    bool delta = strcmp(bi->type, CHAIN_TYPE_DELTA) == 0;

    if (m->id == NULL || strcmp(m->id, bi->id) != 0)
        return err_set(err, "backup \"%s\" is damaged: its manifest is that of backup \"%s\"",
                       bi->id, m->id != NULL ? m->id : "");
    if (delta != (bi->parent[0] != '\0'))
        return err_set(err, "backup \"%s\" is damaged: its sentinel says type \"%s\" %s a parent",
                       bi->id, bi->type, delta ? "without" : "with");
    if (delta != m->delta || (delta && (m->parent == NULL || strcmp(m->parent, bi->parent) != 0)))
        return err_set(err,
                       "backup \"%s\" is damaged: its manifest and its sentinel disagree about "
                       "its parent",
                       bi->id);
    return true;
}

/*
 * The backup under the parent's id is the one the child was taken on: it
 * started at the LSN the child recorded as its parent's (the threshold of
 * its pages), and before the child. A backup put in its place (another
 * backup's files, or an id reused) would lend its pages to the restore.
 */
static bool chain_check_lineage(const backup_info *child, const backup_info *parent, pgd_error *err)
{
    pg_lsn recorded = child->parent_start_lsn, parent_start = parent->start_lsn;
    char recorded_s[LSN_TEXT_MAX], parent_start_s[LSN_TEXT_MAX];

    /* the LSNs were checked when the sentinels were loaded (repo/backup_info.h) */
    if (parent_start != recorded || parent_start >= child->start_lsn)
        return err_set(err,
                       "backup \"%s\" was taken on a parent \"%s\" that started at %s, but the "
                       "backup \"%s\" in the repository started at %s%s: it is not that parent",
                       child->id, parent->id, lsn_format(recorded, recorded_s), parent->id,
                       lsn_format(parent_start, parent_start_s),
                       parent_start >= child->start_lsn ? ", after it" : "");
    return true;
}

/* Load parent `id` of backup `child` into *out; every failure names both. */
static bool chain_load_parent(storage *repo, const backup_info *child, bool allow_external_links,
                              chain_member *out, pgd_error *err)
{
    const char *id = child->parent;
    bool missing = false;

    if (!layout_is_backup_id(id))
        return err_set(err, "backup \"%s\" is damaged: its parent \"%s\" is not a backup id",
                       child->id, id);
    if (!backup_info_load(repo, id, &out->bi, &missing, err)) {
        if (missing)
            return err_set(err,
                           "backup \"%s\" needs its parent \"%s\", which is not in the "
                           "repository",
                           child->id, id);
        err_prefix(err, "backup \"%s\" needs its parent \"%s\", which is damaged", child->id, id);
        return false;
    }
    if (!chain_check_lineage(child, &out->bi, err))
        return false;
    if (strcmp(out->bi.system_identifier, child->system_identifier) != 0)
        return err_set(err,
                       "backup \"%s\" needs its parent \"%s\", which is of another system "
                       "(system identifier %s, not %s)",
                       child->id, id, out->bi.system_identifier, child->system_identifier);
    if (!backup_read_manifest(repo, id, &out->m, err) ||
        !links_check(&out->m, id, allow_external_links, err)) {
        err_prefix(err, "backup \"%s\" needs its parent \"%s\", which is damaged", child->id, id);
        return false;
    }
    if (!chain_check_member(&out->bi, &out->m, err)) {
        err_prefix(err, "backup \"%s\" needs its parent \"%s\"", child->id, id);
        return false;
    }
    return true;
}

bool chain_load(storage *repo, const backup_info *bi, const manifest *m, bool allow_external_links,
                chain *c, pgd_error *err)
{
    memset(c, 0, sizeof(*c));
    if (!chain_check_member(bi, m, err))
        return false;
    for (;;) {
        /* after the realloc below: parents may have moved */
        const backup_info *child = c->n == 0 ? bi : &c->parents[c->n - 1].bi;
        chain_member *grown;
        if (child->parent[0] == '\0')
            break;
        if (c->n == CHAIN_MEMBERS_MAX)
            return err_set(err,
                           "the chain of backup \"%s\" has more than %d members: its parents "
                           "form a loop",
                           bi->id, CHAIN_MEMBERS_MAX);
        grown = xrealloc(c->parents, (c->n + 1) * sizeof(*grown));
        c->parents = grown;
        manifest_init(&c->parents[c->n].m);
        child = c->n == 0 ? bi : &c->parents[c->n - 1].bi;
        c->n++;
        if (!chain_load_parent(repo, child, allow_external_links, &c->parents[c->n - 1], err))
            return false;
    }
    return true;
}

void chain_free(chain *c)
{
    for (size_t i = 0; i < c->n; i++)
        manifest_free(&c->parents[i].m);
    free(c->parents);
    memset(c, 0, sizeof(*c));
}
