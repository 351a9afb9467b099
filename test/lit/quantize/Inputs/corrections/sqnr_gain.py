#!/usr/bin/env python3
"""sqnr_gain.py OFF.json ON.json TENSOR MIN_DB - a correction's effect, for lit.

Reads two `tpcc quantize --report` files (the correction off, then on) and
prints `TENSOR: OFF dB -> ON dB (gain G dB)`; exits 1 unless the SQNR of
TENSOR (a measured tensor, usually the model output) grew by at least MIN_DB.
"""
import json
import sys


def sqnr(path, name):
    for t in json.load(open(path))["tensors"]:
        if t["name"] == name and t["kind"] != "weight":
            v = t.get("sqnr_db")
            return float("inf") if v is None else v
    sys.exit(f"sqnr_gain.py: `{name}` is not measured in {path}")


off_path, on_path, name, min_db = sys.argv[1:5]
off, on = sqnr(off_path, name), sqnr(on_path, name)
gain = on - off
print(f"{name}: {off:.2f} dB -> {on:.2f} dB (gain {gain:.2f} dB)")
if not gain >= float(min_db):
    print(f"sqnr_gain.py: expected a gain of at least {min_db} dB", file=sys.stderr)
    sys.exit(1)
