"""Writes a model whose inputs lay out their batch differently (a recurrent-style model):
x [batch, 4] (axis 0 the batch), state [2, batch, 3] (the batch on axis 1, named as x's),
sr (a scalar), plus data files for them: make_layouts.py DIR"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

d = sys.argv[1]
inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4]),
          helper.make_tensor_value_info("state", TensorProto.FLOAT, [2, "batch", 3]),
          helper.make_tensor_value_info("sr", TensorProto.INT64, [])]
nodes = [
    helper.make_node("MatMul", ["x", "w"], ["h"]),  # [batch, 3]
    helper.make_node("ReduceSum", ["state", "axis0"], ["s"], keepdims=0),  # [batch, 3]
    helper.make_node("Cast", ["sr"], ["srf"], to=TensorProto.FLOAT),
    helper.make_node("Div", ["srf", "k"], ["rate"]),
    helper.make_node("Add", ["h", "s"], ["hs"]),
    helper.make_node("Mul", ["hs", "rate"], ["y"]),
]
inits = [helper.make_tensor("w", TensorProto.FLOAT, [4, 3], np.linspace(-1, 1, 12).tolist()),
         helper.make_tensor("axis0", TensorProto.INT64, [1], [0]),
         helper.make_tensor("k", TensorProto.FLOAT, [], [16000.0])]
graph = helper.make_graph(nodes, "layouts", inputs,
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])],
                          inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, os.path.join(d, "layouts.onnx"))
rng = np.random.RandomState(0)
np.save(os.path.join(d, "x.npy"), rng.randn(6, 4).astype(np.float32))            # 6 rows
np.save(os.path.join(d, "state.npy"), np.zeros((2, 1, 3), np.float32))          # one, batch 1
np.save(os.path.join(d, "states.npy"), rng.randn(6, 2, 1, 3).astype(np.float32))  # 6 of them
np.save(os.path.join(d, "bad_state.npy"), np.zeros((3, 1, 3), np.float32))
np.save(os.path.join(d, "sr.npy"), np.array(16000, np.int64))                    # a scalar
