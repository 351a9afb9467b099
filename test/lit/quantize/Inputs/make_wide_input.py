"""Writes a model whose input moves through data movement to the op that reads it,
y = Abs(Reshape(x, [-1, 8, 8])) * 0.5, and calibration samples whose scales span three
decades (an 8-bit grid made for the loud ones rounds the quiet ones to a few steps):
make_wide_input.py MODEL X.npy"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper
from onnx import numpy_helper as nh

inits = [nh.from_array(np.array([-1, 8, 8], np.int64), "shape"),
         nh.from_array(np.array(0.5, np.float32), "half")]
nodes = [helper.make_node("Reshape", ["x", "shape"], ["grid"], name="reshape"),
         helper.make_node("Abs", ["grid"], ["magnitude"], name="abs"),
         helper.make_node("Mul", ["magnitude", "half"], ["y"], name="scale")]
graph = helper.make_graph(nodes, "wide_input",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 8, 8])],
                          inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])
rng = np.random.RandomState(0)
scale = 10 ** np.linspace(-2, 1, 16).reshape(16, 1)
np.save(sys.argv[2], (scale * rng.standard_normal((16, 64))).astype(np.float32))
