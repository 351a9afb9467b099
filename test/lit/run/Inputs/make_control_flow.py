"""Writes a model with If, Loop (a nested If in its body) and Scan whose subgraphs read
outer values (one of them through an Identity a clean-up removes), its input, and the
outputs numpy computes for it: make_control_flow.py MODEL.onnx X.npy EXPECTED.npz"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

F = TensorProto.FLOAT
vec = lambda name: helper.make_tensor_value_info(name, F, [3])
mat = lambda name: helper.make_tensor_value_info(name, F, [2, 3])
scalar = lambda name, t: helper.make_tensor_value_info(name, t, [])

# If: u + w or u * w (u: an Identity of x; w: an initializer).
then_b = helper.make_graph([helper.make_node("Add", ["u", "w"], ["r"])], "then", [], [mat("r")])
else_b = helper.make_graph([helper.make_node("Mul", ["u", "w"], ["r"])], "else", [], [mat("r")])

# Loop, 3 trips: acc += w on even iterations, acc -= w on odd ones (a nested If
# reading the outer w and the body's own iteration number); scan output: sum(acc).
plus = helper.make_graph([helper.make_node("Add", ["acc_in", "w"], ["step"])], "plus", [],
                         [mat("step")])
minus = helper.make_graph([helper.make_node("Sub", ["acc_in", "w"], ["step"])], "minus", [],
                          [mat("step")])
body = helper.make_graph(
    [helper.make_node("Mod", ["i", "two"], ["parity"]),
     helper.make_node("Equal", ["parity", "zero_i"], ["even"]),
     helper.make_node("If", ["even"], ["acc_out"], then_branch=plus, else_branch=minus),
     helper.make_node("ReduceSum", ["acc_out"], ["total"], keepdims=0),
     helper.make_node("Identity", ["c_in"], ["c_out"])],
    "body", [scalar("i", TensorProto.INT64), scalar("c_in", TensorProto.BOOL), mat("acc_in")],
    [scalar("c_out", TensorProto.BOOL), mat("acc_out"), scalar("total", F)])

# Scan over the rows of x: s += row * w; scan output: s after each row.
scan_body = helper.make_graph(
    [helper.make_node("Mul", ["row", "w"], ["p"]), helper.make_node("Add", ["s_in", "p"], ["s_out"]),
     helper.make_node("Identity", ["s_out"], ["s_seen"])],
    "scan_body", [vec("s_in"), vec("row")], [vec("s_out"), vec("s_seen")])

nodes = [
    helper.make_node("Identity", ["x"], ["u"], name="copy"),
    helper.make_node("ReduceSum", ["x"], ["sum"], name="sum", keepdims=0),
    helper.make_node("Greater", ["sum", "zero"], ["cond"], name="positive"),
    helper.make_node("If", ["cond"], ["chosen"], name="choose", then_branch=then_b,
                     else_branch=else_b),
    helper.make_node("Loop", ["trips", "", "x"], ["acc", "totals"], name="loop", body=body),
    helper.make_node("Scan", ["s0", "x"], ["s", "partial"], name="scan", body=scan_body,
                     num_scan_inputs=1),
]
inits = [helper.make_tensor("w", F, [3], [0.5, -1.0, 2.0]),
         helper.make_tensor("zero", F, [], [0.0]),
         helper.make_tensor("two", TensorProto.INT64, [], [2]),
         helper.make_tensor("zero_i", TensorProto.INT64, [], [0]),
         helper.make_tensor("trips", TensorProto.INT64, [], [3]),
         helper.make_tensor("s0", F, [3], [0.0, 0.0, 0.0])]
outs = [mat("chosen"), mat("acc"), helper.make_tensor_value_info("totals", F, [3]), vec("s"),
        helper.make_tensor_value_info("partial", F, [2, 3])]
graph = helper.make_graph(nodes, "control_flow", [mat("x")], outs, inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8
onnx.checker.check_model(model, full_check=True)
onnx.save(model, sys.argv[1])

x = np.array([[1.0, -2.0, 3.5], [0.25, 4.0, -1.5]], np.float32)
w = np.array([0.5, -1.0, 2.0], np.float32)
np.save(sys.argv[2], x)
acc, totals = x.copy(), []
for i in range(3):
    acc = acc + w if i % 2 == 0 else acc - w
    totals.append(acc.sum())
s, partial = np.zeros(3, np.float32), []
for row in x:
    s = s + row * w
    partial.append(s)
np.savez(sys.argv[3], chosen=x + w if x.sum() > 0 else x * w, acc=acc,
         totals=np.array(totals, np.float32), s=s, partial=np.array(partial))
