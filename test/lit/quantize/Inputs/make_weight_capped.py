"""Writes a model whose output is capped by its kernel's 8-bit grid,
y = Relu(Conv(x, W) + b) with a 16 -> 16 channel, 3-tap kernel, and calibration
samples that sit exactly on an 8-bit grid (the input's grid loses nothing):
make_weight_capped.py MODEL X.npy"""
import sys

import numpy as np
from onnx import helper
from onnx import numpy_helper as nh

from one_graph import save

rng = np.random.RandomState(0)
inits = [nh.from_array(rng.standard_normal((16, 16, 3)).astype(np.float32), "w"),
         nh.from_array((0.1 * rng.standard_normal(16)).astype(np.float32), "b")]
nodes = [helper.make_node("Conv", ["x", "w", "b"], ["conv"], name="conv", pads=[1, 1]),
         helper.make_node("Relu", ["conv"], ["y"], name="relu")]
save(sys.argv[1], "weight_capped", nodes, ["N", 16, 32], ["N", 16, 32], inits)
codes = rng.randint(0, 256, (16, 16, 32))
codes[0, 0, 0], codes[0, 0, 1] = 0, 255  # the calibrated range is the grid's
np.save(sys.argv[2], (codes / 255.0).astype(np.float32))
