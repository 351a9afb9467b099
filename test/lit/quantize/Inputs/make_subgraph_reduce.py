"""Writes a model whose If branches reduce with ReduceMean / ReduceMax, whose `axes`
became an input at opset 18, after a MatMul with a constant weight:
make_subgraph_reduce.py MODEL.onnx X.npy (quantize/format-blocks-raise.test)"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.RandomState(0)


def branch(op):
    return helper.make_graph([helper.make_node(op, ["y"], ["z_" + op], axes=[1])], op.lower(),
                             [], [helper.make_tensor_value_info("z_" + op, TensorProto.FLOAT,
                                                                ["N", 1])])


nodes = [
    helper.make_node("MatMul", ["x", "w"], ["y"], name="mm"),
    helper.make_node("ReduceSum", ["x"], ["s"], name="sum", keepdims=0),
    helper.make_node("Greater", ["s", "zero"], ["cond"], name="positive"),
    helper.make_node("If", ["cond"], ["z"], name="choose", then_branch=branch("ReduceMean"),
                     else_branch=branch("ReduceMax")),
]
inits = [numpy_helper.from_array((rng.randn(32, 8) * 0.3).astype(np.float32), "w"),
         numpy_helper.from_array(np.array(0, np.float32), "zero")]
graph = helper.make_graph(nodes, "subgraph_reduce",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 32])],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["N", 1])],
                          inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])
np.save(sys.argv[2], rng.randn(16, 32).astype(np.float32))
