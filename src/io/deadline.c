/*
 * deadline.c - the deadline controller (see deadline.h).
 */
#include "io/deadline.h"

#include <string.h>

void deadline_init(deadline_control *c, double backup_start, double deadline_s,
                   double reading_start, uint64_t total, unsigned reserve)
{
    double end = deadline_s * DEADLINE_END_SHARE;

    memset(c, 0, sizeof(*c));
    if (end < DEADLINE_END_MIN_S)
        end = DEADLINE_END_MIN_S;
    c->start = reading_start;
    c->target = backup_start + deadline_s - end;
    c->total = total;
    c->reserve = reserve;
    c->since = reading_start;
}

unsigned deadline_step(deadline_control *c, double now, uint64_t done)
{
    double elapsed = now - c->since, left = c->target - now, rate, need;
    uint64_t remaining = done < c->total ? c->total - done : 0;
    bool behind, far;

    if (remaining == 0 || elapsed < DEADLINE_SETTLE_S)
        return c->released;
    rate = (double)(done - c->done_since) / elapsed;
    /* nothing read yet (reads in flight, a cap that holds them) says little until it lasts */
    if (rate <= 0) {
        behind = left <= 0 || elapsed > DEADLINE_STALL_SHARE * (c->target - c->since);
        far = left <= 0;
    } else {
        need = (double)remaining / rate;
        behind = left <= 0 || need > left * DEADLINE_MARGIN;
        far = left <= 0 || need > left * DEADLINE_FAR;
    }
    if (!behind)
        return c->released;
    if (c->released == c->reserve) {
        c->late = true;
        return c->released;
    }
    c->released = far ? c->reserve : c->released + 1;
    if (c->nreleases < DEADLINE_RELEASES_MAX)
        c->releases[c->nreleases++] =
            (deadline_release){.at = now - c->start,
                               .progress = c->total ? (double)done / (double)c->total : 1,
                               .released = c->released};
    c->since = now;
    c->done_since = done;
    return c->released;
}
