#!/usr/bin/env python3
"""Runs a command and checks its exit status.

usage: expect_exit.py CODE COMMAND [ARGS...]
Passes the command's stdout and stderr through. Exits 0 when the command exited
with CODE, else prints what happened and exits 1. A command killed by a signal
(a crash) never matches.
"""
import subprocess
import sys

want = int(sys.argv[1])
proc = subprocess.run(sys.argv[2:])
if proc.returncode != want:
    sys.stderr.write(f"expect_exit: `{' '.join(sys.argv[2:])}` exited with "
                     f"{proc.returncode}, expected {want}\n")
    sys.exit(1)
