/*
 * test_big_buffer.c - covers src/util/big_buffer.c: every size comes back
 * aligned for O_DIRECT, whole and writable; from 2 MiB on the buffer is
 * 2 MiB-aligned and its mapping carries the huge-page hint (smaps "hg"),
 * wherever the kernel has transparent huge pages.
 */
#include "helpers.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/big_buffer.h"

#define MIB ((size_t)1 << 20)

/* The VmFlags of the mapping holding addr, from /proc/self/smaps; false when not found. */
static bool vm_flags_of(const void *addr, char *flags, size_t len)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    bool in = false, found = false;

    if (f == NULL)
        return false;
    while (!found && fgets(line, sizeof(line), f) != NULL) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) { /* a mapping's first line */
            in = (uintptr_t)addr >= lo && (uintptr_t)addr < hi;
        } else if (in && strncmp(line, "VmFlags:", 8) == 0) {
            snprintf(flags, len, "%s", line + 8);
            found = true;
        }
    }
    fclose(f);
    return found;
}

static void test_every_size_aligned_and_writable(void **state)
{
    const size_t sizes[] = {0, 1, 4095, 4096, 4097, MIB, 2 * MIB - 1, 2 * MIB, 16 * MIB + 4096 + 1};

    (void)state;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        unsigned char *p = big_buffer_alloc(sizes[i]);
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % 4096, 0);
        if (sizes[i] >= 2 * MIB)
            assert_int_equal((uintptr_t)p % (2 * MIB), 0);
        memset(p, 0xA5, sizes[i]);
        if (sizes[i] > 0)
            assert_int_equal(p[sizes[i] - 1], 0xA5);
        free(p);
    }
}

static void test_huge_page_hint(void **state)
{
    char flags[512];
    unsigned char *p = big_buffer_alloc(16 * MIB);

    (void)state;
    assert_non_null(p);
    if (access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) != 0) {
        free(p);
        skip(); /* a kernel without transparent huge pages takes no hint */
    }
    assert_true(vm_flags_of(p, flags, sizeof(flags)));
    assert_non_null(strstr(flags, " hg"));
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_size_aligned_and_writable),
        cmocka_unit_test(test_huge_page_hint),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
