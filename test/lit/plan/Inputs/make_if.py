"""Writes a model whose If chooses between two branches (a Relu then a Neg, or a
Sigmoid) and reads an outer value inside them: make_if.py MODEL.onnx"""
import sys

import onnx
from onnx import TensorProto, helper

x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
out = helper.make_tensor_value_info("b", TensorProto.FLOAT, [2, 3])
then_branch = helper.make_graph(
    [helper.make_node("Relu", ["a"], ["t0"], name="then_relu"),
     helper.make_node("Neg", ["t0"], ["b"], name="then_neg")], "then", [], [out])
else_branch = helper.make_graph(
    [helper.make_node("Sigmoid", ["a"], ["b"], name="else_sigmoid")], "else", [], [out])
nodes = [
    helper.make_node("Conv", ["x4", "w"], ["c"], name="conv"),
    helper.make_node("Reshape", ["x", "shape4"], ["x4"], name="to4d"),
    helper.make_node("Reshape", ["c", "shape2"], ["a"], name="to2d"),
    helper.make_node("ReduceSum", ["x"], ["s"], name="sum", keepdims=0),
    helper.make_node("Greater", ["s", "zero"], ["cond"], name="positive"),
    helper.make_node("If", ["cond"], ["y"], name="choose", then_branch=then_branch,
                     else_branch=else_branch),
]
inits = [helper.make_tensor("w", TensorProto.FLOAT, [3, 3, 1, 1], [1, 0, 0, 0, 1, 0, 0, 0, 1]),
         helper.make_tensor("shape4", TensorProto.INT64, [4], [2, 3, 1, 1]),
         helper.make_tensor("shape2", TensorProto.INT64, [2], [2, 3]),
         helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0])]
graph = helper.make_graph(nodes, "if_model", [x], [y], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8
# the file order above is not topological (the conv first): sort as exporters do
order = ["to4d", "conv", "to2d", "sum", "positive", "choose"]
model.graph.node.sort(key=lambda n: order.index(n.name))
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])
