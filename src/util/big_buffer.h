/*
 * big_buffer.h - memory for a buffer of megabytes that is filled at once
 * (a whole WAL segment): backed by huge pages where the kernel allows it.
 * Filling 16 MiB of fresh memory takes 4,096 page faults in 4 KiB pages and
 * 8 in 2 MiB ones; in a virtual machine each fault may cost over 10 us
 * (measured here: 50 ms of a 130 ms wal-push).
 */
#ifndef PGD_BIG_BUFFER_H
#define PGD_BIG_BUFFER_H

#include <stddef.h>

/*
 * len bytes aligned to 4 KiB at least (for O_DIRECT), freed with free(); never NULL: a failed
 * allocation ends the process as util/xmalloc.h does.
 */
void *big_buffer_alloc(size_t len);

#endif
