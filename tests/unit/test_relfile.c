/* test_relfile.c - covers src/pg/relfile.c: which backup paths are relation files. */
#include "helpers.h"

#include "pg/relfile.h"

static void test_relation_files_are_recognised(void **state)
{
    relfile r;

    (void)state;
    assert_true(relfile_parse("base/5/16384", &r));
    assert_int_equal(r.db_oid, 5);
    assert_int_equal(r.relfilenode, 16384);
    assert_int_equal(r.fork, RELFILE_MAIN);
    assert_int_equal(r.segment, 0);
    assert_true(relfile_parse("base/5/16384.3", &r));
    assert_int_equal(r.segment, 3);
    assert_true(relfile_parse("base/5/16384_fsm", &r));
    assert_int_equal(r.fork, RELFILE_FSM);
    assert_true(relfile_parse("base/5/16384_vm.1", &r));
    assert_int_equal(r.fork, RELFILE_VM);
    assert_int_equal(r.segment, 1);
    assert_true(relfile_parse("base/5/16384_init", &r));
    assert_int_equal(r.fork, RELFILE_INIT);
    assert_true(relfile_parse("global/1262", &r));
    assert_int_equal(r.db_oid, 0);
    assert_int_equal(r.relfilenode, 1262);
    assert_true(relfile_parse("pg_tblspc/16385/PG_15_202209061/5/16390.2", &r));
    assert_int_equal(r.spc_oid, 16385);
    assert_int_equal(r.db_oid, 5);
    assert_int_equal(r.relfilenode, 16390);
    assert_int_equal(r.segment, 2);
}

static void test_other_files_are_not(void **state)
{
    relfile r;

    (void)state;
    assert_false(relfile_parse("PG_VERSION", &r));
    assert_false(relfile_parse("base/5/PG_VERSION", &r));
    assert_false(relfile_parse("base/5/pg_filenode.map", &r));
    assert_false(relfile_parse("base/5/pg_internal.init", &r));
    assert_false(relfile_parse("global/pg_control", &r));
    assert_false(relfile_parse("base/5", &r));
    assert_false(relfile_parse("base/5/t3_16384", &r));
    assert_false(relfile_parse("base/5/16384_xyz", &r));
    assert_false(relfile_parse("base/5/16384.", &r));
    assert_false(relfile_parse("base/5/16384.0", &r));
    assert_false(relfile_parse("base/5/016384", &r));
    assert_false(relfile_parse("base/5/16384/x", &r));
    assert_false(relfile_parse("base/5/99999999999", &r));
    assert_false(relfile_parse("base/5/16384.99999", &r)); /* block numbers would overflow */
    assert_false(relfile_parse("pg_tblspc/16385/other/5/16390", &r));
    assert_false(relfile_parse("pg_wal/000000010000000000000001", &r));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_relation_files_are_recognised),
        cmocka_unit_test(test_other_files_are_not),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
