/* test_cache_report.c - covers src/cache/report.c and meminfo.c: the residency math and parsers. */
#include "helpers.h"

#include <fcntl.h>

#include "cache/meminfo.h"
#include "cache/report.h"
#include "cache/residency.h"

#define OS_PAGE 4096

static void test_fully_cached_segment(void **state)
{
    unsigned char os[4] = {1, 1, 1, 1};
    cache_figures f = {0};

    (void)state;
    cache_add_segment(&f, 4 * OS_PAGE, os, OS_PAGE, NULL);
    assert_int_equal(f.size, 16384);
    assert_int_equal(f.os_cache, 16384);
    assert_int_equal(f.disk_only, 0);
    assert_int_equal(f.shared_buffers, 0);
}

static void test_mixed_segment(void **state)
{
    /* 3 blocks of 8 KiB = 6 OS pages: block 0 in the OS cache (one of its pages),
       block 1 in shared_buffers only, block 2 nowhere */
    unsigned char os[6] = {0, 1, 0, 0, 0, 0};
    unsigned char sb[3] = {0, 1, 0};
    cache_figures f = {0};

    (void)state;
    cache_add_segment(&f, 3 * PG_PAGE_SIZE, os, OS_PAGE, sb);
    assert_int_equal(f.os_cache, OS_PAGE);
    assert_int_equal(f.shared_buffers, PG_PAGE_SIZE);
    assert_int_equal(f.disk_only, PG_PAGE_SIZE);
}

static void test_partial_last_page_and_unknown_os(void **state)
{
    unsigned char os[2] = {1, 1};
    cache_figures f = {0};

    (void)state;
    cache_add_segment(&f, OS_PAGE + 100, os, OS_PAGE, NULL); /* 100 bytes in the last page */
    assert_int_equal(f.os_cache, OS_PAGE + 100);
    /* without an OS map (unreadable file) every block counts as disk only */
    cache_add_segment(&f, PG_PAGE_SIZE, NULL, OS_PAGE, NULL);
    assert_int_equal(f.size, OS_PAGE + 100 + PG_PAGE_SIZE);
    assert_int_equal(f.disk_only, PG_PAGE_SIZE);
}

static void test_totals_and_sorting(void **state)
{
    cache_row rows[2] = {{.name = "small", .f = {.size = 10, .os_cache = 5}},
                         {.name = "big", .f = {.size = 100, .os_cache = 50, .evicted_pages = 3}}};
    cache_report r = {.rows = rows, .n = 2};
    cache_figures t;

    (void)state;
    cache_sort_by_size(&r);
    assert_string_equal(r.rows[0].name, "big");
    t = cache_totals(&r);
    assert_int_equal(t.size, 110);
    assert_int_equal(t.os_cache, 55);
    assert_int_equal(t.evicted_pages, 3);
}

/* What a scan of every buffer finds for one fork: the definition cache_sb_map must match. */
static bool sb_expected(const pg_buffer *bufs, size_t n, uint32_t spc, uint32_t node, int fork,
                        uint32_t block)
{
    for (size_t i = 0; i < n; i++)
        if (bufs[i].filenode == node && bufs[i].tablespace == spc && bufs[i].fork == fork &&
            bufs[i].block == block)
            return true;
    return false;
}

/*
 * Buffers of many relations in pg_buffercache's (arbitrary) order: after one sort, each fork's
 * map holds exactly its own blocks, not those of another fork, of a relation with the same
 * relfilenode in another tablespace (pg_default, pg_global's shared catalogs, a tablespace of
 * the user's), or past the fork's size.
 */
static void test_shared_buffers_map_after_one_sort(void **state)
{
    enum { NODES = 40, BLOCKS = 50, NBUFS = 6000 };
    static const uint32_t spcs[] = {1663, 1664, 16400};
    pg_buffer *bufs = calloc(NBUFS, sizeof(*bufs)), *sorted = calloc(NBUFS, sizeof(*bufs));
    uint64_t x = 88172645463325252ull;

    (void)state;
    for (size_t i = 0; i < NBUFS; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        bufs[i].filenode = 16384 + (uint32_t)(x % NODES);
        bufs[i].fork = (int)((x >> 8) % 4);
        bufs[i].block = (uint32_t)((x >> 16) % (BLOCKS + 10)); /* some past the fork's end */
        bufs[i].tablespace = spcs[(x >> 32) % 3];
    }
    memcpy(sorted, bufs, NBUFS * sizeof(*bufs));
    cache_sort_buffers(sorted, NBUFS);
    for (uint32_t node = 16384 - 1; node < 16384 + NODES + 1; node++)
        for (int s = 0; s < 4; s++) /* and 0, a tablespace no buffer has */
            for (int fork = 0; fork < 4; fork++) {
                uint32_t spc = s < 3 ? spcs[s] : 0;
                bool any = false;
                unsigned char *map = cache_sb_map(sorted, NBUFS, spc, node, fork, 0, BLOCKS);
                for (uint32_t b = 0; b < BLOCKS; b++) {
                    bool want = sb_expected(bufs, NBUFS, spc, node, fork, b);
                    any |= want;
                    assert_int_equal(map != NULL && map[b], want);
                }
                if (!any)
                    assert_null(map);
                free(map);
            }
    assert_null(cache_sb_map(sorted, 0, 1663, 16384, 0, 0, BLOCKS));
    free(bufs);
    free(sorted);
}

/* A fork's later segment: its map is indexed from the segment's first block, not from 0. */
static void test_shared_buffers_map_of_a_later_segment(void **state)
{
    pg_buffer bufs[] = {
        {.filenode = 7, .fork = 0, .block = 5, .tablespace = 1663},
        {.filenode = 7, .fork = 0, .block = PG_SEGMENT_PAGES + 5, .tablespace = 1663},
        {.filenode = 7, .fork = 0, .block = 2 * PG_SEGMENT_PAGES, .tablespace = 1663}};
    unsigned char *map;

    (void)state;
    cache_sort_buffers(bufs, 3);
    map = cache_sb_map(bufs, 3, 1663, 7, 0, PG_SEGMENT_PAGES, 10);
    assert_non_null(map);
    for (int b = 0; b < 10; b++)
        assert_int_equal(map[b], b == 5);
    free(map);
    assert_null(cache_sb_map(bufs, 3, 1663, 7, 0, 3 * PG_SEGMENT_PAGES, 10));
}

/*
 * One open gives size, per-page residency and evictions: a file dropped from the page cache is
 * all zeros, one read back in part is seen page by page (the mincore path), one fully cached is
 * all ones; a missing file is "missing", not an error.
 */
static void test_residency_pages_of_a_file(void **state)
{
    enum { PAGES = 8 };
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    char *dir = test_tmpdir(), path[4200];
    unsigned char *data = calloc(PAGES, page), buf[64];
    residency_pages res;
    pgd_error err = {0};
    bool missing;
    int fd;

    (void)state;
    snprintf(path, sizeof(path), "%s/seg", dir);
    write_test_file(path, (const char *)data, PAGES * page - 100);
    fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(fdatasync(fd), 0);
    assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
    assert_true(residency_pages_of_file(AT_FDCWD, path, path, &res, &missing, &err));
    assert_int_equal(res.size, PAGES * page - 100);
    assert_int_equal(res.npages, PAGES);
    /* from page 1: valgrind reads the first page of every file mapped (is it ELF?) */
    for (int i = 1; i < PAGES; i++)
        assert_int_equal(res.vec[i] & 1, 0);
    free(res.vec);
    /* pages 2 and 5 back in */
    assert_int_equal(pread(fd, buf, sizeof(buf), 2 * (off_t)page), sizeof(buf));
    assert_int_equal(pread(fd, buf, sizeof(buf), 5 * (off_t)page), sizeof(buf));
    assert_true(residency_pages_of_file(AT_FDCWD, path, path, &res, &missing, &err));
    for (int i = 1; i < PAGES; i++)
        if ((res.vec[i] & 1) != (i == 2 || i == 5))
            fail_msg("page %d: resident %d", i, res.vec[i] & 1);
    free(res.vec);
    for (int i = 0; i < PAGES; i++)
        assert_true(pread(fd, buf, sizeof(buf), i * (off_t)page) > 0);
    assert_true(residency_pages_of_file(AT_FDCWD, path, path, &res, &missing, &err));
    for (int i = 0; i < PAGES; i++)
        assert_int_equal(res.vec[i] & 1, 1);
    free(res.vec);
    close(fd);

    snprintf(path, sizeof(path), "%s/none", dir);
    assert_false(residency_pages_of_file(AT_FDCWD, path, path, &res, &missing, &err));
    assert_true(missing);
    assert_false(err.set);
    free(data);
    rm_rf(dir);
}

static void test_meminfo_and_cgroup_parsers(void **state)
{
    meminfo m;
    uint64_t bytes;

    (void)state;
    assert_true(meminfo_parse("MemTotal:  100 kB\nMemFree:   20 kB\nBuffers: 1 kB\nCached:  "
                              "   30 kB\nSwapCached: 9 kB\nDirty:  4 kB\n",
                              &m));
    assert_int_equal(m.mem_free, 20 * 1024);
    assert_int_equal(m.cached, 30 * 1024); /* not SwapCached */
    assert_int_equal(m.dirty, 4 * 1024);
    assert_false(meminfo_parse("nothing here", &m));
    assert_true(cgroup_parse_stat("rss 5\ncache 12345\nmapped_file 1\n", false, &bytes));
    assert_int_equal(bytes, 12345);
    assert_true(cgroup_parse_stat("anon 5\nfile 777\nkernel 1\n", true, &bytes));
    assert_int_equal(bytes, 777);
    assert_false(cgroup_parse_stat("total_cache 5\n", false, &bytes));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fully_cached_segment),
        cmocka_unit_test(test_mixed_segment),
        cmocka_unit_test(test_partial_last_page_and_unknown_os),
        cmocka_unit_test(test_totals_and_sorting),
        cmocka_unit_test(test_shared_buffers_map_after_one_sort),
        cmocka_unit_test(test_shared_buffers_map_of_a_later_segment),
        cmocka_unit_test(test_residency_pages_of_a_file),
        cmocka_unit_test(test_meminfo_and_cgroup_parsers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
