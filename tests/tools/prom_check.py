#!/usr/bin/env python3
"""prom_check.py - check a file against Prometheus' text exposition format (version 0.0.4),
as published at https://prometheus.io/docs/instrumenting/exposition_formats/ (promtool, which
checks it, is not in Debian). The tests run it on what pgdirect writes (--metrics-file,
pgdirect metrics); test_prom_check.py gives it a sample that breaks each rule.

Rules of the format:
  newline      lines end with \\n (the last one too), never \\r
  comment      "# HELP name text" (text escapes only \\\\ and \\n), "# TYPE name type" with type
               counter|gauge|histogram|summary|untyped; other "#" lines are comments
  type-once    at most one TYPE line per metric name, before its first sample
  help-once    at most one HELP line per metric name
  name         metric names match [a-zA-Z_:][a-zA-Z0-9_:]*
  label        label names match [a-zA-Z_][a-zA-Z0-9_]* and do not start with __; values are
               double-quoted with only \\\\, \\" and \\n escaped; a name appears once per sample
  value        a Go float (NaN, +Inf, -Inf included); an optional timestamp is an int64
  grouped      the lines of one metric family form one group
  unique       no two samples with the same name and labels
And the conventions pgdirect keeps (Prometheus' naming guide, what promtool's lint checks):
  help-type    every family has HELP and TYPE
  prefix       names start with pgdirect_
  total        a counter's name ends with _total, and only a counter's does
Exit 0 and nothing printed when the file passes; else one line per problem, "LINE: rule: why".
"""
import re
import sys

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")
FLOAT = re.compile(r"[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|Inf|inf|NaN)\Z")
INT64 = re.compile(r"-?\d{1,19}\Z")
TYPES = ("counter", "gauge", "histogram", "summary", "untyped")
SUFFIXES = {"histogram": ("_bucket", "_sum", "_count"), "summary": ("_sum", "_count")}


def parse_labels(text, problems, n):
    """Labels of text starting after '{'; returns (labels, rest after '}') or (None, None)."""
    labels, i = {}, 0
    while True:
        while i < len(text) and text[i] in " \t":
            i += 1
        if i < len(text) and text[i] == "}":
            return labels, text[i + 1:]
        m = re.match(r"([^=\s}]*)\s*=\s*\"", text[i:])
        if not m:
            problems.append((n, "label", "expected name=\"value\" in the labels"))
            return None, None
        lname = m.group(1)
        if not LABEL.match(lname) or lname.startswith("__"):
            problems.append((n, "label", "invalid label name %r" % lname))
        if lname in labels:
            problems.append((n, "label", "label %r twice" % lname))
        i += m.end()
        value = []
        while True:
            if i >= len(text):
                problems.append((n, "label", "label value of %r not closed" % lname))
                return None, None
            c = text[i]
            if c == "\\":
                if i + 1 >= len(text) or text[i + 1] not in '\\"n':
                    problems.append((n, "label", "invalid escape in the value of %r" % lname))
                value.append(text[i:i + 2])
                i += 2
            elif c == '"':
                i += 1
                break
            else:
                value.append(c)
                i += 1
        labels[lname] = "".join(value)
        while i < len(text) and text[i] in " \t":
            i += 1
        if i < len(text) and text[i] == ",":
            i += 1
        elif i < len(text) and text[i] != "}":
            problems.append((n, "label", "expected , or } after the value of %r" % lname))
            return None, None


def help_escapes_ok(text):
    """A HELP text escapes only backslash and newline."""
    i = 0
    while i < len(text):
        if text[i] == "\\":
            if i + 1 >= len(text) or text[i + 1] not in "\\n":
                return False
            i += 1
        i += 1
    return True


def family_of(name, types):
    if name in types:
        return name
    for base, t in types.items():
        for s in SUFFIXES.get(t, ()):
            if name == base + s:
                return base
    return name


def check(text):
    problems = []
    if "\r" in text:
        problems.append((0, "newline", "carriage return in the file"))
    if text and not text.endswith("\n"):
        problems.append((0, "newline", "the last line does not end with a newline"))
    types, helps, seen_sample, series = {}, {}, set(), set()
    groups, current = [], None
    for n, line in enumerate(text.split("\n")[:-1] if text.endswith("\n") else text.split("\n"), 1):
        if line.strip() == "":
            continue
        if line.startswith("#"):
            parts = line[1:].strip().split(None, 2)
            if len(parts) >= 2 and parts[0] in ("HELP", "TYPE"):
                kind, name = parts[0], parts[1]
                rest = parts[2] if len(parts) > 2 else ""
                if not NAME.match(name):
                    problems.append((n, "name", "invalid metric name %r" % name))
                if kind == "HELP":
                    if name in helps:
                        problems.append((n, "help-once", "second HELP for %s" % name))
                    if not help_escapes_ok(rest):
                        problems.append((n, "comment", "invalid escape in the HELP of %s" % name))
                    helps[name] = rest
                else:
                    if rest not in TYPES:
                        problems.append((n, "comment", "invalid type %r for %s" % (rest, name)))
                    if name in types:
                        problems.append((n, "type-once", "second TYPE for %s" % name))
                    if name in seen_sample:
                        problems.append((n, "type-once", "TYPE of %s after its samples" % name))
                    types[name] = rest
                fam = name
                if fam != current:
                    if fam in groups:
                        problems.append((n, "grouped", "lines of %s are not together" % fam))
                    groups.append(fam)
                    current = fam
            continue
        m = re.match(r"([^\s{]+)\s*(\{?)", line)
        name = m.group(1)
        rest = line[m.end():]
        if not NAME.match(name):
            problems.append((n, "name", "invalid metric name %r" % name))
            continue
        labels = {}
        if m.group(2) == "{":
            labels, rest = parse_labels(rest, problems, n)
            if labels is None:
                continue
        fields = rest.split()
        if not fields or len(fields) > 2:
            problems.append((n, "value", "expected a value and at most a timestamp"))
            continue
        if not FLOAT.match(fields[0]):
            problems.append((n, "value", "invalid value %r" % fields[0]))
        if len(fields) == 2 and not INT64.match(fields[1]):
            problems.append((n, "value", "invalid timestamp %r" % fields[1]))
        key = (name, tuple(sorted(labels.items())))
        if key in series:
            problems.append((n, "unique", "second sample of %s%s" % (name, dict(labels))))
        series.add(key)
        seen_sample.add(name)
        fam = family_of(name, types)
        if fam != current:
            if fam in groups:
                problems.append((n, "grouped", "lines of %s are not together" % fam))
            groups.append(fam)
            current = fam
    for fam in dict.fromkeys(groups):
        if fam not in helps or fam not in types:
            problems.append((0, "help-type", "%s has no %s line" % (fam, "HELP" if fam not in helps else "TYPE")))
        if not fam.startswith("pgdirect_"):
            problems.append((0, "prefix", "%s does not start with pgdirect_" % fam))
        if types.get(fam) == "counter" and not fam.endswith("_total"):
            problems.append((0, "total", "counter %s does not end with _total" % fam))
        if fam.endswith("_total") and types.get(fam) not in (None, "counter"):
            problems.append((0, "total", "%s ends with _total but is a %s" % (fam, types[fam])))
    return problems


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: prom_check.py FILE (- for standard input)")
    text = sys.stdin.read() if sys.argv[1] == "-" else open(sys.argv[1], newline="").read()
    problems = check(text)
    for n, rule, why in problems:
        print("%d: %s: %s" % (n, rule, why))
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
