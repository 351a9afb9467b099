#!/usr/bin/env python3
"""mct_compare.py - compare `tpcc emit --emit=mct-json` with what MCT writes.

Usage:
    mct_compare.py OURS GOLDEN [--differ 'PATH: OURS_VALUE | MCT_VALUE']...

OURS and GOLDEN are JSON files (GOLDEN from test/tools/mct_goldens.py). The two
must be equal as JSON values (key order aside: objects compare by keys, arrays
by position, numbers by value), except at each --differ PATH, a jsoncheck path
(see jsoncheck.py) ending in a key, where OURS must hold OURS_VALUE and GOLDEN
MCT_VALUE (JSON literals). Each listed difference is a deliberate one; one that
is not there any more is an error too. Prints the first difference and exits 1;
exits 0 when they agree. Python 3 standard library only.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jsoncheck  # noqa: E402


def first_difference(a, b, where="$"):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{where}.{k}: only in {'golden' if k in b else 'ours'}"
            d = first_difference(a[k], b[k], f"{where}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{where}: {len(a)} elements in ours, {len(b)} in golden"
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{where}[{i}]")
            if d:
                return d
        return None
    if jsoncheck.json_equal(a, b):
        return None
    return f"{where}: ours {jsoncheck.show(a, 200)}, golden {jsoncheck.show(b, 200)}"


def main(argv):
    args, differ = [], []
    it = iter(argv)
    for arg in it:
        if arg == "--differ":
            differ.append(next(it))
        else:
            args.append(arg)
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    docs = []
    for path in args:
        with open(path, encoding="utf-8") as f:
            docs.append(json.load(f))
    ours, golden = docs
    for spec in differ:
        path, _, values = spec.partition(":")
        mine, _, theirs = values.partition("|")
        steps = jsoncheck.parse_path(path.strip())
        if not steps or steps[-1][0] != "key":
            print(f"mct_compare: --differ path must end in a key: {path}", file=sys.stderr)
            return 2
        for doc, want, who in ((ours, mine, "ours"), (golden, theirs, "golden")):
            parent = jsoncheck.resolve(doc, steps[:-1])
            key = steps[-1][1]
            expected = jsoncheck.parse_value(want.strip())
            if not isinstance(parent, dict) or key not in parent or \
                    not jsoncheck.json_equal(parent[key], expected):
                got = jsoncheck.show(parent.get(key) if isinstance(parent, dict) else parent)
                print(f"mct_compare: {path.strip()} in {who} is {got}, not {want.strip()}",
                      file=sys.stderr)
                return 1
            parent[key] = None
    d = first_difference(ours, golden)
    if d:
        print(f"mct_compare: {args[0]} and {args[1]} differ at {d}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
