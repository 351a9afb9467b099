"""Writes a small decoder (Conv, then two ConvTranspose layers, one grouped,
with biases and ReLUs; random weights, fixed seed) and calibration inputs:
make_decoder.py MODEL.onnx CALIB.npy"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(11)


def weight(name, shape, scale):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


inits = [
    weight("w0", (8, 1, 3, 3), 0.5), weight("b0", (8,), 0.1),
    weight("w1", (8, 6, 3, 3), 0.3), weight("b1", (6,), 0.1),
    weight("w2", (6, 2, 4, 4), 0.3), weight("b2", (4,), 0.1),
]
nodes = [
    helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], name="enc", kernel_shape=[3, 3],
                     strides=[2, 2], pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c0"], ["r0"], name="relu0"),
    helper.make_node("ConvTranspose", ["r0", "w1", "b1"], ["c1"], name="up1",
                     kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                     output_padding=[1, 1]),
    helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
    helper.make_node("ConvTranspose", ["r1", "w2", "b2"], ["y"], name="up2",
                     kernel_shape=[4, 4], strides=[2, 2], pads=[1, 1, 1, 1], group=2),
]
graph = helper.make_graph(
    nodes, "decoder", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 12, 12])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, 24, 24])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8
onnx.checker.check_model(model, full_check=True)
onnx.save(model, sys.argv[1])
np.save(sys.argv[2], rng.standard_normal((96, 1, 12, 12)).astype(np.float32))
