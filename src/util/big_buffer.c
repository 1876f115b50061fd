/*
 * big_buffer.c - see big_buffer.h.
 */
#define _GNU_SOURCE
#include "util/big_buffer.h"

#include <stdlib.h>
#include <sys/mman.h>

#include "util/xmalloc.h"

#define BIG_BUFFER_PAGE      ((size_t)4096)
#define BIG_BUFFER_HUGE_PAGE ((size_t)2 << 20)

void *big_buffer_alloc(size_t len)
{
    void *p;

    if (posix_memalign(&p, len < BIG_BUFFER_HUGE_PAGE ? BIG_BUFFER_PAGE : BIG_BUFFER_HUGE_PAGE,
                       len > 0 ? len : 1) != 0)
        xmalloc_fail(len); /* the alignments are valid: only memory can be missing */
    if (len < BIG_BUFFER_HUGE_PAGE)
        return p;
#ifdef MADV_HUGEPAGE
    /* a hint: transparent huge pages off, or another kernel, leave 4 KiB pages */
    (void)madvise(p, len & ~(BIG_BUFFER_HUGE_PAGE - 1), MADV_HUGEPAGE);
#endif
    return p;
}
