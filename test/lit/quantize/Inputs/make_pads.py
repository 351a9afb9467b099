"""Writes x -> Pad -> Conv -> LeakyRelu -> Pad -> Conv and its calibration data, for the
graph edits that meet an explicit zero Pad on their way (apply-replays-pads.test): the
input, in [-0.07, 0.07], is scaled through the first Pad (input_scaling), and the
slightly negative LeakyRelu output is shifted through the second, which then pads with
the shift (shift_negative). The second Conv has no bias: bias correction, and the
shift's compensation, give it one. usage: make_pads.py MODEL X.npy"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper
from onnx import numpy_helper as nh

rs = np.random.RandomState(7)
pads = np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64)
inits = [nh.from_array(pads, "pads"), nh.from_array(np.array(0, np.float32), "zero"),
         nh.from_array((rs.randn(8, 3, 3, 3) * 0.4).astype(np.float32), "w1"),
         nh.from_array((rs.randn(8) * 0.3).astype(np.float32), "b1"),
         nh.from_array((rs.randn(8, 8, 3, 3) * 0.2).astype(np.float32), "w2")]
nodes = [helper.make_node("Pad", ["x", "pads"], ["xp"], name="pad_in"),
         helper.make_node("Conv", ["xp", "w1", "b1"], ["h"], name="conv1"),
         helper.make_node("LeakyRelu", ["h"], ["a"], name="leaky", alpha=0.05),
         helper.make_node("Pad", ["a", "pads", "zero"], ["ap"], name="pad_mid"),
         helper.make_node("Conv", ["ap", "w2"], ["y"], name="conv2")]
graph = helper.make_graph(nodes, "pads",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 8, 8, 8])],
                          inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])
np.save(sys.argv[2], rs.uniform(-0.07, 0.07, (32, 3, 8, 8)).astype(np.float32))
