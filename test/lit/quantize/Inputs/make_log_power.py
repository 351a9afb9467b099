"""Writes a log power spectrum in miniature, 10 * log(Clip(x * x, 1e-10)), and
calibration data whose magnitudes span five decades: make_log_power.py MODEL X.npy"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper
from onnx import numpy_helper as nh

inits = [nh.from_array(np.array(1e-10, np.float32), "floor"),
         nh.from_array(np.array(10, np.float32), "ten")]
nodes = [helper.make_node("Mul", ["x", "x"], ["power"], name="square"),
         helper.make_node("Clip", ["power", "floor"], ["clipped"], name="floor"),
         helper.make_node("Log", ["clipped"], ["log"], name="log"),
         helper.make_node("Mul", ["log", "ten"], ["y"], name="db")]
graph = helper.make_graph(nodes, "log_power",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 64])],
                          inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])
rng = np.random.RandomState(0)
np.save(sys.argv[2], (10 ** rng.uniform(-3, 2, (16, 64))).astype(np.float32))
