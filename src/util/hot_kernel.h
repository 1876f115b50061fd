/*
 * hot_kernel.h - arithmetic loops that the checking builds leave uninstrumented.
 *
 * The page checksum and CRC-32C loops run once per 4 or 8 bytes of every byte
 * a backup, restore or verify moves. In the build make check runs the
 * integration suite on (-O0, ASan+UBSan, gcov counters updated atomically by
 * every thread), their instrumentation, not their arithmetic, was 97 % of a
 * backup's CPU: 17 CPU seconds for a 900 MB table, the suite's longest test
 * 354 CPU seconds. HOT_KERNEL marks such a loop: no sanitizer checks and no
 * coverage counters inside it. What the checks would have caught is caught
 * at its door instead: the function that calls the kernel passes the whole
 * buffer to hot_kernel_check, ASan's interval check (the one its interceptors
 * of memcpy make), so a wrong length still fails there, by name. A kernel
 * reads only the buffer it is given and arrays of its own; the unit tests
 * compare each against a reference (bitwise CRC, pages a server wrote).
 */
#ifndef PGD_HOT_KERNEL_H
#define PGD_HOT_KERNEL_H

#include <stddef.h>

#define HOT_KERNEL                                                                                 \
    __attribute__((no_sanitize("address", "undefined"), no_profile_instrument_function))

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>

/* ASan: report a read of [p, p + len) that touches memory the program may not read. */
static inline void hot_kernel_check(const void *p, size_t len)
{
    void *bad = __asan_region_is_poisoned((void *)p, len);

    if (bad != NULL)
        __asan_report_error(__builtin_return_address(0), __builtin_frame_address(0),
                            __builtin_frame_address(0), bad, 0, len);
}
#else
static inline void hot_kernel_check(const void *p, size_t len)
{
    (void)p;
    (void)len;
}
#endif

#endif
