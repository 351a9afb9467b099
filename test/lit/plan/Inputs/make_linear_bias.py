"""make_linear_bias.py DIR: a transformer-like block as PyTorch exports nn.Linear on
rank-3 inputs (MatMul of a constant weight, then an Add of a constant bias), with the
two look-alikes LinearBias must not match: a bias-less projection added to the
residual, and a MatMul of two activations (attention scores) plus a constant."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.RandomState(3)
c = lambda name, *shape: numpy_helper.from_array(
    rng.normal(0, 0.3, shape).astype(np.float32), name)
nodes = [
    helper.make_node("MatMul", ["x", "W1"], ["m1"], name="lin/MatMul"),
    helper.make_node("Add", ["b1", "m1"], ["h"], name="lin/Add"),  # bias first, as torch
    helper.make_node("MatMul", ["h", "W2"], ["m2"], name="proj/MatMul"),
    helper.make_node("Add", ["m2", "x"], ["r"], name="residual"),
    helper.make_node("Transpose", ["r"], ["rt"], name="t", perm=[0, 2, 1]),
    helper.make_node("MatMul", ["r", "rt"], ["s"], name="scores"),
    helper.make_node("Add", ["s", "mask"], ["y"], name="masked"),
]
g = helper.make_graph(nodes, "linear_bias", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 4])],
                      [c("W1", 8, 8), c("b1", 8), c("W2", 8, 8), c("mask", 4, 4)])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
m.ir_version = 8
onnx.checker.check_model(m)
out = sys.argv[1]
onnx.save(m, os.path.join(out, "linear_bias.onnx"))
np.save(os.path.join(out, "x.npy"), rng.normal(0, 1, (8, 4, 8)).astype(np.float32))
