#!/usr/bin/env python3
"""test_prom_check.py - prom_check.py passes a good exposition and catches a sample that breaks
each rule it checks (run by meson test)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
from prom_check import check  # noqa: E402

GOOD = (
    "# HELP pgdirect_backup_last_end_timestamp_seconds When it ended.\n"
    "# TYPE pgdirect_backup_last_end_timestamp_seconds gauge\n"
    'pgdirect_backup_last_end_timestamp_seconds{type="full"} 1.7e9\n'
    'pgdirect_backup_last_end_timestamp_seconds{type="delta",} 1796538151 1796538151000\n'
    "# a comment\n"
    "\n"
    "# HELP pgdirect_pushes_total Pushes, a\\\\b\\nc.\n"
    "# TYPE pgdirect_pushes_total counter\n"
    'pgdirect_pushes_total{path="a\\"b\\\\c\\nd"} +Inf\n'
    "# HELP pgdirect_x_seconds A histogram.\n"
    "# TYPE pgdirect_x_seconds histogram\n"
    'pgdirect_x_seconds_bucket{le="1"} 0\n'
    "pgdirect_x_seconds_sum NaN\n"
    "pgdirect_x_seconds_count -3\n"
)


def rules(text):
    return sorted({rule for _, rule, _ in check(text)})


HEAD = "# HELP pgdirect_a A.\n# TYPE pgdirect_a gauge\n"


class PromCheck(unittest.TestCase):
    def test_good_sample_passes(self):
        self.assertEqual(check(GOOD), [])

    def test_newline_missing_at_the_end(self):
        self.assertEqual(rules(HEAD + "pgdirect_a 1"), ["newline"])

    def test_newline_carriage_return(self):
        self.assertEqual(rules(HEAD.replace("\n", "\r\n") + "pgdirect_a 1\r\n"), ["newline"])

    def test_comment_unknown_type(self):
        self.assertEqual(rules("# HELP pgdirect_a A.\n# TYPE pgdirect_a gauges\npgdirect_a 1\n"), ["comment"])

    def test_comment_bad_help_escape(self):
        self.assertEqual(rules("# HELP pgdirect_a A\\t.\n# TYPE pgdirect_a gauge\npgdirect_a 1\n"), ["comment"])

    def test_type_once_twice(self):
        self.assertEqual(rules(HEAD + "# TYPE pgdirect_a gauge\npgdirect_a 1\n"), ["type-once"])

    def test_type_once_after_samples(self):
        self.assertEqual(rules("# HELP pgdirect_a A.\npgdirect_a 1\n# TYPE pgdirect_a gauge\n"), ["type-once"])

    def test_help_once(self):
        self.assertEqual(rules(HEAD + "# HELP pgdirect_a Again.\npgdirect_a 1\n"), ["help-once"])

    def test_name_invalid(self):
        self.assertIn("name", rules(HEAD + "pgdirect_a 1\n9pgdirect_b 1\n"))

    def test_label_name_invalid(self):
        self.assertEqual(rules(HEAD + 'pgdirect_a{1x="v"} 1\n'), ["label"])

    def test_label_name_reserved(self):
        self.assertEqual(rules(HEAD + 'pgdirect_a{__x="v"} 1\n'), ["label"])

    def test_label_value_bad_escape(self):
        self.assertEqual(rules(HEAD + 'pgdirect_a{x="a\\tb"} 1\n'), ["label"])

    def test_label_value_not_quoted(self):
        self.assertEqual(rules(HEAD + "pgdirect_a{x=v} 1\n"), ["label"])

    def test_label_twice(self):
        self.assertEqual(rules(HEAD + 'pgdirect_a{x="1",x="2"} 1\n'), ["label"])

    def test_value_invalid(self):
        self.assertEqual(rules(HEAD + "pgdirect_a 1,5\n"), ["value"])

    def test_value_missing(self):
        self.assertEqual(rules(HEAD + "pgdirect_a\n"), ["value"])

    def test_value_bad_timestamp(self):
        self.assertEqual(rules(HEAD + "pgdirect_a 1 1.5\n"), ["value"])

    def test_grouped(self):
        text = HEAD + 'pgdirect_a{x="1"} 1\n# HELP pgdirect_b B.\n# TYPE pgdirect_b gauge\npgdirect_b 1\npgdirect_a{x="2"} 1\n'
        self.assertEqual(rules(text), ["grouped"])

    def test_unique(self):
        self.assertEqual(rules(HEAD + 'pgdirect_a{x="1"} 1\npgdirect_a{x="1"} 2\n'), ["unique"])

    def test_help_type_missing(self):
        self.assertEqual(rules("# TYPE pgdirect_a gauge\npgdirect_a 1\n"), ["help-type"])

    def test_prefix(self):
        self.assertEqual(rules("# HELP other_a A.\n# TYPE other_a gauge\nother_a 1\n"), ["prefix"])

    def test_total_counter_without_suffix(self):
        self.assertEqual(rules("# HELP pgdirect_a A.\n# TYPE pgdirect_a counter\npgdirect_a 1\n"), ["total"])

    def test_total_on_a_gauge(self):
        self.assertEqual(rules("# HELP pgdirect_a_total A.\n# TYPE pgdirect_a_total gauge\npgdirect_a_total 1\n"), ["total"])


if __name__ == "__main__":
    unittest.main()
