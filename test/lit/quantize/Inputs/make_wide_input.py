"""Writes a model whose input moves through data movement to the op that reads it,
y = Abs(Reshape(x, [-1, 8, 8])) * 0.5, and calibration samples whose scales span three
decades (an 8-bit grid made for the loud ones rounds the quiet ones to a few steps):
make_wide_input.py MODEL X.npy"""
import sys

import numpy as np
from onnx import helper
from onnx import numpy_helper as nh

from one_graph import save

inits = [nh.from_array(np.array([-1, 8, 8], np.int64), "shape"),
         nh.from_array(np.array(0.5, np.float32), "half")]
nodes = [helper.make_node("Reshape", ["x", "shape"], ["grid"], name="reshape"),
         helper.make_node("Abs", ["grid"], ["magnitude"], name="abs"),
         helper.make_node("Mul", ["magnitude", "half"], ["y"], name="scale")]
save(sys.argv[1], "wide_input", nodes, ["N", 64], ["N", 8, 8], inits)
rng = np.random.RandomState(0)
scale = 10 ** np.linspace(-2, 1, 16).reshape(16, 1)
np.save(sys.argv[2], (scale * rng.standard_normal((16, 64))).astype(np.float32))
