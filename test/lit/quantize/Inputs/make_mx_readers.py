"""Writes r = Relu(x) read by MatMul(r, W) (it reduces over r's last axis) and by
MatMul(r, r) as its second input too (over r's second-to-last): an MX activation's
readers that disagree on the blocks' axis. make_mx_readers.py MODEL X.npy"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper
from onnx import numpy_helper as nh

rng = np.random.RandomState(0)
inits = [nh.from_array(rng.normal(0, 0.2, (32, 32)).astype(np.float32), "w")]
nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
         helper.make_node("MatMul", ["r", "w"], ["a"], name="fc"),
         helper.make_node("MatMul", ["a", "r"], ["y"], name="mix")]
graph = helper.make_graph(nodes, "mx_readers",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 32, 32])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 32, 32])],
                          inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])
np.save(sys.argv[2], rng.normal(0, 1, (8, 32, 32)).astype(np.float32))
