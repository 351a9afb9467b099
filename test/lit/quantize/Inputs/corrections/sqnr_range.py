#!/usr/bin/env python3
"""sqnr_range.py TENSOR LO HI - `tpcc eval`'s SQNR of TENSOR within [LO, HI] dB, for lit.

Copies standard input (the output of `tpcc eval --reference`) to standard
output, so FileCheck can still read it, and exits 1 unless a line
`SQNR `TENSOR` X dB` has LO <= X <= HI. The range leaves room for another
CPU's rounding: tests pin the value's neighbourhood, not its last digits.
"""
import re
import sys

name, lo, hi = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
text = sys.stdin.read()
sys.stdout.write(text)
m = re.search(r"SQNR `" + re.escape(name) + r"`\s+(inf|[-0-9.]+) dB", text)
if not m:
    sys.exit(f"sqnr_range.py: no SQNR of `{name}` in the input")
value = float(m.group(1))
if not lo <= value <= hi:
    sys.exit(f"sqnr_range.py: SQNR of `{name}` is {value} dB, expected [{lo}, {hi}]")
