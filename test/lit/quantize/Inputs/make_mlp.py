"""Writes an MLP of four 128x128 MatMul + Add + Relu layers (trained-like weights: normal,
a few large input channels) and 64 calibration samples: make_mlp.py MODEL X.npy"""
import sys

import numpy as np
from onnx import helper
from onnx import numpy_helper as nh

from one_graph import save

rng = np.random.RandomState(3)
nodes, inits, x = [], [], "x"
for i in range(4):
    w = rng.normal(0, 1 / np.sqrt(128), (128, 128)).astype(np.float32)
    w[rng.choice(128, 4, replace=False)] *= 6  # outlier input channels
    inits += [nh.from_array(w, f"w{i}"), nh.from_array(rng.normal(0, 0.1, 128).astype(np.float32), f"b{i}")]
    out = "y" if i == 3 else f"r{i}"
    nodes += [helper.make_node("MatMul", [x, f"w{i}"], [f"m{i}"], name=f"fc{i}"),
              helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"] if i < 3 else [out], name=f"add{i}")]
    if i < 3:
        nodes.append(helper.make_node("Relu", [f"a{i}"], [out], name=f"relu{i}"))
    x = out
save(sys.argv[1], "mlp", nodes, ["N", 128], ["N", 128], inits)
np.save(sys.argv[2], rng.normal(0, 1, (64, 128)).astype(np.float32))
