"""Models as ONNX Runtime's quantize_dynamic writes them: DynamicQuantizeLinear ->
MatMulInteger (int8 weights) -> Cast -> Mul (the two scales) -> Add (the bias), the
int32 product also an output; and ConvInteger (uint8 weights with a zero point).
dynamic_matmul.onnx's weights are all 127, so an input of 3.0 everywhere quantizes to
255 and every product is 255 * 127: a pair of them saturates int16 (ORT without VNNI).
bad_zero_point.onnx gives MatMulInteger an int8 zero point for a uint8 operand.

usage: make_dynamic.py OUT_DIR"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]


def save(name, nodes, inputs, outputs, inits):
    g = helper.make_graph(nodes, name, inputs, outputs, inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=7),
              os.path.join(out, name + ".onnx"))


x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])
save("dynamic_matmul",
     [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
      helper.make_node("MatMulInteger", ["xq", "W", "xz", "W_zero"], ["acc"]),
      helper.make_node("Cast", ["acc"], ["accf"], to=TensorProto.FLOAT),
      helper.make_node("Mul", ["xs", "W_scale"], ["scale"]),
      helper.make_node("Mul", ["accf", "scale"], ["yw"]),
      helper.make_node("Add", ["yw", "B"], ["y"])],
     [x],
     [helper.make_tensor_value_info("acc", TensorProto.INT32, ["n", 2]),
      helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 2])],
     [numpy_helper.from_array(np.full((4, 2), 127, np.int8), "W"),
      numpy_helper.from_array(np.array(0, np.int8), "W_zero"),
      numpy_helper.from_array(np.array(0.01, np.float32), "W_scale"),
      numpy_helper.from_array(np.array([0.5, -0.5], np.float32), "B")])
save("bad_zero_point",
     [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
      helper.make_node("MatMulInteger", ["xq", "W", "W_zero"], ["acc"], name="mm")],
     [x], [helper.make_tensor_value_info("acc", TensorProto.INT32, ["n", 2])],
     [numpy_helper.from_array(np.full((4, 2), 127, np.int8), "W"),
      numpy_helper.from_array(np.array(0, np.int8), "W_zero")])
np.save(os.path.join(out, "threes.npy"), np.full((1, 4), 3.0, np.float32))
