"""compare.py GOT.npy WANT.npy TOL - how far GOT is from WANT, relative to WANT's largest
magnitude: prints "within TOL of the largest" or "differs by D of the largest"."""
import sys

import numpy as np

got, want = np.load(sys.argv[1]).astype(np.float64), np.load(sys.argv[2]).astype(np.float64)
tol = float(sys.argv[3])
d = float(np.max(np.abs(got - want))) / float(np.max(np.abs(want)))
print(f"within {tol:g} of the largest" if d <= tol else f"differs by {d:.2e} of the largest")
