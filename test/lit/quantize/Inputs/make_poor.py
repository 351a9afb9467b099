"""Writes a model with ten near-zero probabilities (Sigmoid(x - 12 - k): below one step
of the [0, 1] grid) and a Conv -> Relu, and calibration data: make_poor.py MODEL X.npy"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper
from onnx import numpy_helper as nh

nodes, outputs, inits = [], [], []
for k in range(10):
    inits.append(nh.from_array(np.array(12 + k, np.float32), f"shift{k}"))
    nodes += [helper.make_node("Sub", ["x", f"shift{k}"], [f"s{k}"], name=f"shift{k}"),
              helper.make_node("Sigmoid", [f"s{k}"], [f"p{k}"], name=f"prob{k}")]
    outputs.append(helper.make_tensor_value_info(f"p{k}", TensorProto.FLOAT, ["N", 2, 4, 4]))
inits.append(nh.from_array(np.array([[[[1]], [[0]]], [[[0]], [[1]]]], np.float32), "w"))
nodes += [helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
          helper.make_node("Relu", ["c"], ["y"], name="relu")]
outputs.append(helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2, 4, 4]))
graph = helper.make_graph(nodes, "poor",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2, 4, 4])],
                          outputs, inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])
np.save(sys.argv[2], np.random.RandomState(0).uniform(-1, 1, (16, 2, 4, 4)).astype(np.float32))
