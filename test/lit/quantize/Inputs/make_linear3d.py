"""Writes a transformer MLP as PyTorch exports nn.Linear on [N, 8, 16] tokens: MatMul + Add
(bias) -> exact GELU spelled out (Div, Erf, Add, Mul, Mul) -> MatMul + Add, then a MatMul
with no bias (the output); and 64 calibration samples: make_linear3d.py MODEL X.npy"""
import sys

import numpy as np
from onnx import helper
from onnx import numpy_helper as nh

from one_graph import save

rng = np.random.RandomState(5)
f = np.float32
inits = [nh.from_array(rng.normal(0, 0.25, (16, 32)).astype(f), "w1"),
         nh.from_array(rng.normal(0, 0.1, 32).astype(f), "b1"),
         nh.from_array(rng.normal(0, 0.18, (32, 16)).astype(f), "w2"),
         nh.from_array(rng.normal(0, 0.1, 16).astype(f), "b2"),
         nh.from_array(rng.normal(0, 0.25, (16, 4)).astype(f), "w3"),
         nh.from_array(np.array(np.sqrt(2), f), "sqrt2"),
         nh.from_array(np.array(1, f), "one"), nh.from_array(np.array(0.5, f), "half")]
nodes = [helper.make_node("MatMul", ["x", "w1"], ["m1"], name="fc1"),
         helper.make_node("Add", ["m1", "b1"], ["h"], name="fc1_bias"),
         helper.make_node("Div", ["h", "sqrt2"], ["d"], name="gelu_div"),
         helper.make_node("Erf", ["d"], ["e"], name="gelu_erf"),
         helper.make_node("Add", ["e", "one"], ["e1"], name="gelu_add"),
         helper.make_node("Mul", ["h", "e1"], ["p"], name="gelu_mul"),
         helper.make_node("Mul", ["p", "half"], ["g"], name="gelu"),
         helper.make_node("MatMul", ["g", "w2"], ["m2"], name="fc2"),
         helper.make_node("Add", ["m2", "b2"], ["z"], name="fc2_bias"),
         helper.make_node("MatMul", ["z", "w3"], ["y"], name="fc3")]
save(sys.argv[1], "linear3d", nodes, ["N", 8, 16], ["N", 8, 4], inits)
np.save(sys.argv[2], rng.normal(0, 1, (64, 8, 16)).astype(f))
