"""A model that computes in float16, as exporters' half-precision models do: float16
input, weights, a Constant, a Cast to float16 and an If whose branches hold float16
constants. Writes the model, a float16 input, a calibration set and the expected output
(numpy in float32 with the float16 weights: what tpcc computes)."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out, x_path, calib_path, expected_path = sys.argv[1:5]
rng = np.random.RandomState(0)
W = (rng.randn(4, 3, 3, 3) * 0.3).astype(np.float16)
B = rng.randn(4).astype(np.float16)
shift = np.float16(0.5)


def branch(name, value):
    c = helper.make_node("Constant", [], [name + "_out"],
                         value=numpy_helper.from_array(np.array(value, np.float16)))
    return helper.make_graph([c], name, [], [helper.make_tensor_value_info(
        name + "_out", TensorProto.FLOAT16, [])])


nodes = [
    helper.make_node("Conv", ["x", "W", "B"], ["y"], pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["y"], ["r"]),
    helper.make_node("Constant", [], ["shift"], value=numpy_helper.from_array(
        np.array(shift, np.float16))),
    helper.make_node("Cast", ["flag"], ["flag_half"], to=TensorProto.FLOAT16),
    helper.make_node("Cast", ["flag_half"], ["cond"], to=TensorProto.BOOL),
    helper.make_node("If", ["cond"], ["gain"], then_branch=branch("then", 2.0),
                     else_branch=branch("else", 1.0)),
    helper.make_node("Mul", ["r", "gain"], ["m"]),
    helper.make_node("Add", ["m", "shift"], ["z"]),
]
graph = helper.make_graph(
    nodes, "half", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, ["N", 3, 8, 8])],
    [helper.make_tensor_value_info("z", TensorProto.FLOAT16, ["N", 4, 8, 8])],
    [numpy_helper.from_array(W, "W"), numpy_helper.from_array(B, "B"),
     numpy_helper.from_array(np.array(1.0, np.float32), "flag")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8
onnx.checker.check_model(model, full_check=True)
onnx.save(model, out)

x = rng.randn(2, 3, 8, 8).astype(np.float16)
np.save(x_path, x)
np.save(calib_path, rng.randn(16, 3, 8, 8).astype(np.float16))
xf, Wf = x.astype(np.float32), W.astype(np.float32)
padded = np.pad(xf, ((0, 0), (0, 0), (1, 1), (1, 1)))
y = np.zeros((2, 4, 8, 8), np.float32)
for i in range(8):
    for j in range(8):
        y[:, :, i, j] = np.einsum("nchw,ochw->no", padded[:, :, i:i + 3, j:j + 3], Wf)
y += B.astype(np.float32)[None, :, None, None]
np.save(expected_path, np.maximum(y, 0) * 2 + np.float32(shift))
