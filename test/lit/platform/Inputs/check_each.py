#!/usr/bin/env python3
"""check_each.py TPCC DIR... - run `TPCC check -Werror` on every .tpc file found
(recursively) in each DIR, one compilation per file. Prints each failing file
with its diagnostics; exits 1 if any file fails or no file was found."""
import os
import subprocess
import sys

tpcc, dirs = sys.argv[1], sys.argv[2:]
files = sorted(os.path.join(d, f) for top in dirs for d, _, fs in os.walk(top)
               for f in fs if f.endswith(".tpc"))
failed = 0
for f in files:
    proc = subprocess.run([tpcc, "check", "-Werror", f], capture_output=True, text=True)
    if proc.returncode != 0 or proc.stderr:
        failed += 1
        print(f"FAIL {f} (exit {proc.returncode})\n{proc.stderr}")
    else:
        print(f"ok {f}")
print(f"{len(files)} files, {failed} failed")
sys.exit(1 if failed or not files else 0)
