"""Writes Conv -> Clip(0, 6) and calibration data whose MSE range search ends past 6
(normal values around 3): make_relu6.py MODEL X.npy"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper
from onnx import numpy_helper as nh

inits = [nh.from_array(np.ones((1, 1, 1, 1), np.float32), "w"),
         nh.from_array(np.array(0, np.float32), "lo"), nh.from_array(np.array(6, np.float32), "hi")]
nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
         helper.make_node("Clip", ["c", "lo", "hi"], ["y"], name="relu6")]
graph = helper.make_graph(nodes, "relu6",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 1, 8, 8])],
                          inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])
np.save(sys.argv[2], np.random.RandomState(0).normal(3, 2, (32, 1, 8, 8)).astype(np.float32))
