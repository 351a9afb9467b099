"""Writes a model that stores its weights as Constant nodes, as PaddlePaddle's and some
TensorFlow exporters do: Conv (kernel and bias Constants) -> BatchNormalization (four
Constants) -> Relu: make_constant_weights.py MODEL.onnx X.npy"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.RandomState(0)


def const(name, array):
    return helper.make_node("Constant", [], [name], name=name + "_const",
                            value=numpy_helper.from_array(array.astype(np.float32), name))


nodes = [
    const("w", rng.randn(4, 3, 3, 3) * 0.3), const("b", rng.randn(4) * 0.1),
    const("gamma", rng.uniform(0.5, 1.5, 4)), const("beta", rng.randn(4) * 0.1),
    const("mean", rng.randn(4) * 0.1), const("var", rng.uniform(0.5, 1.5, 4)),
    helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
    helper.make_node("BatchNormalization", ["c", "gamma", "beta", "mean", "var"], ["n"], name="bn"),
    helper.make_node("Relu", ["n"], ["y"], name="relu"),
]
graph = helper.make_graph(nodes, "constant_weights",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, 8, 8])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])
np.save(sys.argv[2], rng.uniform(-1, 1, (8, 3, 8, 8)).astype(np.float32))
