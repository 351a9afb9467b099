#!/usr/bin/python3
"""Writes fusion.onnx and x.npy: every chain runtime/Fusion.h fuses into a
convolution (SiLU, HardSwish as HardSigmoid*Mul, a residual Add + Relu,
LeakyRelu -> Tanh -> HardSigmoid -> Clip, ConvTranspose -> HardSwish -> Add)
and MaxPool / AveragePool / GlobalAveragePool between convolutions,
for test/unit/ExecutorFusionTest.cpp. Run with Debian's python3 (onnx, numpy)."""
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

rng = np.random.RandomState(7)


def w(name, *shape):
    return numpy_helper.from_array((rng.randn(*shape) * 0.3).astype(np.float32), name)


def scalar(name, v):
    return numpy_helper.from_array(np.array(v, dtype=np.float32), name)


nodes = [
    helper.make_node("Conv", ["x", "W1", "B1"], ["c1"], pads=[1, 1, 1, 1]),
    helper.make_node("Sigmoid", ["c1"], ["s1"]),
    helper.make_node("Mul", ["c1", "s1"], ["m1"]),
    helper.make_node("Conv", ["m1", "W2"], ["c2"], pads=[1, 1, 1, 1], group=16),
    helper.make_node("HardSigmoid", ["c2"], ["h2"], alpha=1.0 / 6),
    helper.make_node("Mul", ["h2", "c2"], ["m2"]),
    helper.make_node("Conv", ["m2", "W3", "B3"], ["c3"]),
    helper.make_node("Add", ["m2", "c3"], ["a3"]),
    helper.make_node("Relu", ["a3"], ["r3"]),
    helper.make_node("Conv", ["r3", "W4"], ["c4"], pads=[1, 1, 1, 1]),
    helper.make_node("LeakyRelu", ["c4"], ["l4"], alpha=0.1),
    helper.make_node("Tanh", ["l4"], ["t4"]),
    helper.make_node("HardSigmoid", ["t4"], ["g4"], alpha=0.3, beta=0.4),
    helper.make_node("Clip", ["g4", "lo", "hi"], ["k4"]),
    helper.make_node("ConvTranspose", ["k4", "W5", "B5"], ["c5"], pads=[1, 1, 1, 1]),
    helper.make_node("HardSwish", ["c5"], ["w5"]),
    helper.make_node("Add", ["w5", "r3"], ["y"]),
    # Pooling between convolutions, in the blocked layout.
    helper.make_node("MaxPool", ["r3"], ["p6"], kernel_shape=[2, 2], strides=[2, 2]),
    helper.make_node("Conv", ["p6", "W6"], ["c6"], pads=[1, 1, 1, 1]),
    helper.make_node("AveragePool", ["c6"], ["p7"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                     count_include_pad=1),
    helper.make_node("Conv", ["p7", "W7"], ["c7"]),
    helper.make_node("MaxPool", ["c7"], ["p8"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
    helper.make_node("Conv", ["p8", "W7"], ["c8"]),
    helper.make_node("GlobalAveragePool", ["c8"], ["z"]),
]
inits = [w("W1", 16, 8, 3, 3), w("B1", 16), w("W2", 16, 1, 3, 3), w("W3", 16, 16, 1, 1), w("B3", 16),
         w("W4", 16, 16, 3, 3), w("W5", 16, 16, 3, 3), w("B5", 16),
         w("W6", 16, 16, 3, 3), w("W7", 16, 16, 1, 1), scalar("lo", 0.45), scalar("hi", 0.6)]
graph = helper.make_graph(nodes, "fusion",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8, 10, 10])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 16, 10, 10]),
                           helper.make_tensor_value_info("z", TensorProto.FLOAT, ["N", 16, 1, 1])],
                          inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, "fusion.onnx")
np.save("x.npy", rng.uniform(-2, 2, (3, 8, 10, 10)).astype(np.float32))
