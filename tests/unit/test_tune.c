/*
 * test_tune.c - covers src/io/device.c and src/io/tune.c on captured sysfs
 * trees (tests/unit/sysfs/): single NVMe, md RAID0 of 4 NVMe with 512 KiB
 * chunks, SATA SSD, rotational disk, device-mapper over md, virtio; and
 * what their hardware queues mean for the queries beside a backup.
 */
#include "helpers.h"

#include "backup/io_plan.h"
#include "io/device.h"
#include "io/tune.h"

#define CPUS 16

static void facts(const char *tree, unsigned maj, unsigned min, device_facts *f)
{
    char root[4096];
    pgd_error err = {0};
    const char *base = getenv("PGD_TEST_SYSFS");

    assert_non_null(base);
    snprintf(root, sizeof(root), "%s/%s", base, tree);
    if (!device_facts_for_dev(root, maj, min, f, &err))
        fail_msg("%s", err.msg);
}

static void test_single_nvme(void **state)
{
    device_facts f;
    tune_decision t;

    (void)state;
    facts("nvme", 259, 1, &f);
    assert_string_equal(f.name, "nvme0n1p1");
    assert_string_equal(f.disk, "nvme0n1");
    assert_int_equal(f.logical_block_size, 4096);
    assert_true(f.nvme);
    assert_false(f.rotational);
    assert_int_equal(f.drives, 1);
    tune_decide(&f, CPUS, 16384, &t);
    assert_int_equal(t.block_count, 256);
    assert_int_equal(t.concurrency, CPUS * TUNE_READAHEAD_SSD); /* 16 streams, 8 ahead each */
    assert_int_equal(t.streams, CPUS);
}

static void test_md_raid0_of_four_nvme(void **state)
{
    device_facts f;
    tune_decision t;

    (void)state;
    facts("md_raid0_nvme", 9, 0, &f);
    assert_string_equal(f.md_level, "raid0");
    assert_int_equal(f.md_raid_disks, 4);
    assert_int_equal(f.md_chunk_size, 512 * 1024);
    assert_int_equal(f.optimal_io_size, 2097152);
    assert_int_equal(f.drives, 4);
    assert_true(f.nvme);
    tune_decide(&f, CPUS, 16384, &t);
    assert_int_equal(t.block_count, 1024); /* 4 MiB: 1 MiB per drive */
    assert_int_equal(t.concurrency, CPUS * TUNE_READAHEAD_SSD);
    assert_non_null(strstr(f.stack, "md0 (raid0, 4 drives, 512 KiB chunks)"));
}

static void test_sata_ssd(void **state)
{
    device_facts f;
    tune_decision t;

    (void)state;
    facts("sata_ssd", 8, 2, &f);
    assert_string_equal(f.disk, "sda");
    assert_false(f.nvme);
    assert_false(f.rotational);
    tune_decide(&f, CPUS, 16384, &t);
    assert_int_equal(t.block_count, 256);
    assert_int_equal(t.concurrency, CPUS / 2 * TUNE_READAHEAD_SSD); /* 8 streams */
    assert_int_equal(t.streams, CPUS / 2);
}

static void test_rotational_disk(void **state)
{
    device_facts f;
    tune_decision t;

    (void)state;
    facts("rotational", 8, 16, &f);
    assert_true(f.rotational);
    assert_false(f.nvme);
    tune_decide(&f, 2, 16384, &t);
    assert_int_equal(t.block_count, 256);
    /* half of 2 vCPUs: one stream, 2 reads ahead on a rotating disk (never fewer than 2) */
    assert_int_equal(t.concurrency, TUNE_READAHEAD_ROTATIONAL);
    assert_int_equal(t.streams, 1);
    /* one vCPU: still one stream */
    tune_decide(&f, 1, 16384, &t);
    assert_int_equal(t.streams, 1);
    assert_int_equal(t.concurrency, TUNE_CONCURRENCY_MIN);
}

static void test_device_mapper_over_md(void **state)
{
    device_facts f;
    tune_decision t;

    (void)state;
    facts("dm_over_md", 254, 0, &f);
    assert_true(f.device_mapper);
    assert_string_equal(f.md_level, "raid0");
    assert_int_equal(f.drives, 4);
    assert_false(f.nvme);
    assert_non_null(strstr(f.stack, "dm-0 -> md127"));
    tune_decide(&f, 8, 16384, &t);
    assert_int_equal(t.block_count, 1024);
    assert_int_equal(t.concurrency, 4 * TUNE_READAHEAD_SSD); /* 4 streams (half of 8 vCPUs) */
    /* the cap on --block-count holds */
    tune_decide(&f, 8, 512, &t);
    assert_int_equal(t.block_count, 512);
}

static void test_virtio(void **state)
{
    device_facts f;
    tune_decision t;

    (void)state;
    facts("virtio", 254, 1, &f);
    assert_true(f.virtio);
    assert_string_equal(f.disk, "vda");
    assert_int_equal(f.drives, 1);
    assert_true(f.rotational); /* virtio reports rotational = 1 whatever backs it */
    tune_decide(&f, 2, 16384, &t);
    assert_int_equal(t.block_count, 256);
    /* one stream of 2 vCPUs, 8 ahead: it is not taken as a rotating disk */
    assert_int_equal(t.concurrency, TUNE_READAHEAD_SSD);
    assert_int_equal(t.streams, 1);
    assert_non_null(strstr(t.why, "1 stream (one per two of 2 vCPUs, at least one)"));
}

/* One queue for 2 vCPUs is worth a line in the log; a queue per vCPU is not. */
static void test_hardware_queues(void **state)
{
    device_facts f;
    char note[320];

    (void)state;
    facts("virtio", 254, 1, &f);
    assert_int_equal(f.queues, 1);
    assert_true(tune_queue_note(&f, 2, note, sizeof(note)));
    assert_string_equal(note, "1 hardware queue for 2 vCPUs: every read completes with an "
                              "interrupt on one vCPU, and queries running there pay for the "
                              "reading whatever the backup's CPU or I/O class");
    assert_false(tune_queue_note(&f, 1, note, sizeof(note)));
    assert_string_equal(note, "1 hardware queue for 1 vCPU: each read completes near the vCPU "
                              "that asked");

    facts("nvme", 259, 1, &f);
    assert_int_equal(f.queues, 16);
    assert_false(tune_queue_note(&f, CPUS, note, sizeof(note)));
    assert_non_null(strstr(note, "16 hardware queues for 16 vCPUs: each read completes near"));

    /* an array has the queues of its drive with the fewest: 4 each, for 16 vCPUs */
    facts("md_raid0_nvme", 9, 0, &f);
    assert_int_equal(f.queues, 4);
    assert_true(tune_queue_note(&f, CPUS, note, sizeof(note)));
    assert_non_null(strstr(note, "4 hardware queues for 16 vCPUs: every read completes with an "
                                 "interrupt on 4 of them"));

    /* a tree without blk-mq queues: unknown, and nothing to say in the log */
    facts("sata_ssd", 8, 2, &f);
    assert_int_equal(f.queues, 0);
    assert_false(tune_queue_note(&f, CPUS, note, sizeof(note)));
    assert_string_equal(note, "hardware queues unknown (none in sysfs)");
}

static void plan_for(unsigned cpus, unsigned concurrency, io_plan *p)
{
    /* no sysfs to find the device in: a single drive that is not NVMe */
    io_plan_request req = {.sysfs_root = "/nonexistent-sysfs",
                           .pgdata = "/",
                           .concurrency = concurrency,
                           .engine = IO_ENGINE_THREADS,
                           .max_memory = 1ull << 30,
                           .compression = COMPRESS_LZ4,
                           .compression_level = COMPRESS_LEVEL_DEFAULT,
                           .cpus = cpus};
    pgd_error err = {0};

    if (!io_plan_make(&req, p, &err))
        fail_msg("%s", err.msg);
}

/*
 * The backup reads in the streams the rule decided, each reading ahead: a stream's thread also
 * compresses, and with more threads than vCPUs the one with the largest file finishes alone.
 */
static void test_plan_reads_in_the_decided_streams(void **state)
{
    io_plan p;

    (void)state;
    plan_for(2, IO_PLAN_AUTO, &p); /* half of 2 vCPUs: 1 stream, 8 ahead */
    assert_int_equal(p.workers, 1);
    assert_int_equal(p.depth, TUNE_READAHEAD_SSD);
    io_plan_free(&p);
    plan_for(8, IO_PLAN_AUTO, &p);
    assert_int_equal(p.workers, 4);
    assert_int_equal(p.depth, TUNE_READAHEAD_SSD);
    io_plan_free(&p);
    /* an explicit --concurrency N is N reads in flight, in at most the decided streams, dividing it
     */
    plan_for(2, 6, &p);
    assert_int_equal(p.workers, 1);
    assert_int_equal(p.depth, 6);
    io_plan_free(&p);
    plan_for(8, 6, &p);
    assert_int_equal(p.workers, 3);
    assert_int_equal(p.depth, 2);
    io_plan_free(&p);
    plan_for(2, 3, &p);
    assert_int_equal(p.workers * p.depth, 3);
    io_plan_free(&p);
    plan_for(2, 1, &p);
    assert_int_equal(p.workers, 1);
    assert_int_equal(p.depth, 1);
    io_plan_free(&p);
}

static void test_missing_device_is_named(void **state)
{
    device_facts f;
    pgd_error err = {0};

    (void)state;
    assert_false(device_facts_for_dev("/nonexistent-sysfs", 1, 2, &f, &err));
    assert_non_null(strstr(err.msg, "1:2"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_nvme),
        cmocka_unit_test(test_md_raid0_of_four_nvme),
        cmocka_unit_test(test_sata_ssd),
        cmocka_unit_test(test_rotational_disk),
        cmocka_unit_test(test_device_mapper_over_md),
        cmocka_unit_test(test_virtio),
        cmocka_unit_test(test_hardware_queues),
        cmocka_unit_test(test_missing_device_is_named),
        cmocka_unit_test(test_plan_reads_in_the_decided_streams),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
