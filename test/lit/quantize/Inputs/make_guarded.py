"""Writes a model whose main path sits in If branches, as exporters write them
(Silero VAD): make_guarded.py DIR writes DIR/guarded.onnx and DIR/x.npy (16 rows), DIR/state.npy
(one state, batch 1), DIR/state16.npy (batch 16), DIR/sr.npy.

- `If` on `state`'s first dimension (always 2, though the batch axis is symbolic):
  then: MatMul(x, w) -> Relu, plus the state's sum (an outer read), then a nested `If`
  on the rank of that result (2: known once the branch is part of the graph);
  else: a constant.
- `If` on the graph input `sr` == 16000: then y * 1, else y * 2 (a fact only the
  user knows)."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

d = sys.argv[1]
c = lambda name, dims, vals, t=TensorProto.INT64: helper.make_tensor(name, t, dims, vals)
nested_then = helper.make_graph(
    [helper.make_node("Mul", ["hs", "two"], ["hs2"])], "rank_then", [],
    [helper.make_tensor_value_info("hs2", TensorProto.FLOAT, None)],
    [c("two", [], [2.0], TensorProto.FLOAT)])
nested_else = helper.make_graph(
    [helper.make_node("Identity", ["hs"], ["hs_same"])], "rank_else", [],
    [helper.make_tensor_value_info("hs_same", TensorProto.FLOAT, None)])
then_branch = helper.make_graph([
    helper.make_node("MatMul", ["x", "w"], ["h"]),
    helper.make_node("Relu", ["h"], ["r"]),
    helper.make_node("ReduceSum", ["state", "axis0"], ["s"], keepdims=0),
    helper.make_node("Add", ["r", "s"], ["hs"]),
    helper.make_node("Shape", ["hs"], ["hs_shape"]),
    helper.make_node("Size", ["hs_shape"], ["rank"]),
    helper.make_node("Equal", ["rank", "two_i"], ["is2"]),
    helper.make_node("If", ["is2"], ["main"], then_branch=nested_then, else_branch=nested_else),
], "main_then", [], [helper.make_tensor_value_info("main", TensorProto.FLOAT, None)],
    [c("axis0", [1], [0]), c("two_i", [], [2])])
else_branch = helper.make_graph(
    [helper.make_node("Constant", [], ["zeros"], value=c("z", [1, 3], [0.0] * 3, TensorProto.FLOAT))],
    "main_else", [], [helper.make_tensor_value_info("zeros", TensorProto.FLOAT, None)])
sr_then = helper.make_graph([helper.make_node("Identity", ["main_out"], ["y16"])], "sr_then", [],
                            [helper.make_tensor_value_info("y16", TensorProto.FLOAT, None)])
sr_else = helper.make_graph([helper.make_node("Mul", ["main_out", "k2"], ["y8"])], "sr_else", [],
                            [helper.make_tensor_value_info("y8", TensorProto.FLOAT, None)],
                            [c("k2", [], [2.0], TensorProto.FLOAT)])
nodes = [
    helper.make_node("Shape", ["state"], ["state_shape"]),
    helper.make_node("Gather", ["state_shape", "zero"], ["layers"], axis=0),
    helper.make_node("Squeeze", ["layers", "zero"], ["layers0"]),
    helper.make_node("Cast", ["layers0"], ["guard"], to=TensorProto.BOOL),
    helper.make_node("If", ["guard"], ["main_out"], then_branch=then_branch, else_branch=else_branch),
    helper.make_node("Equal", ["sr", "k16000"], ["is16k"]),
    helper.make_node("If", ["is16k"], ["y"], then_branch=sr_then, else_branch=sr_else),
]
graph = helper.make_graph(
    nodes, "guarded",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4]),
     helper.make_tensor_value_info("state", TensorProto.FLOAT, [2, "batch", 3]),
     helper.make_tensor_value_info("sr", TensorProto.INT64, [])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])],
    [helper.make_tensor("w", TensorProto.FLOAT, [4, 3], np.linspace(-1, 1, 12).tolist()),
     c("zero", [1], [0]), c("k16000", [], [16000])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8
onnx.checker.check_model(model, full_check=True)
onnx.save(model, os.path.join(d, "guarded.onnx"))
rng = np.random.RandomState(0)
np.save(os.path.join(d, "x.npy"), rng.randn(16, 4).astype(np.float32))
np.save(os.path.join(d, "state.npy"), (0.1 * rng.randn(2, 1, 3)).astype(np.float32))
np.save(os.path.join(d, "state16.npy"), (0.1 * rng.randn(2, 16, 3)).astype(np.float32))
np.save(os.path.join(d, "sr.npy"), np.array(16000, np.int64))
