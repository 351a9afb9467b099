"""Writes a log power spectrum in miniature, 10 * log(Clip(x * x, 1e-10)), and
calibration data whose magnitudes span five decades: make_log_power.py MODEL X.npy"""
import sys

import numpy as np
from onnx import helper
from onnx import numpy_helper as nh

from one_graph import save

inits = [nh.from_array(np.array(1e-10, np.float32), "floor"),
         nh.from_array(np.array(10, np.float32), "ten")]
nodes = [helper.make_node("Mul", ["x", "x"], ["power"], name="square"),
         helper.make_node("Clip", ["power", "floor"], ["clipped"], name="floor"),
         helper.make_node("Log", ["clipped"], ["log"], name="log"),
         helper.make_node("Mul", ["log", "ten"], ["y"], name="db")]
save(sys.argv[1], "log_power", nodes, ["N", 64], ["N", 64], inits)
rng = np.random.RandomState(0)
np.save(sys.argv[2], (10 ** rng.uniform(-3, 2, (16, 64))).astype(np.float32))
