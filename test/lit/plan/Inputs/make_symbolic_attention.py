"""One self-attention block as transformers are exported (make_symbolic_attention.py DIR):
the input x is [batch, sequence, 8], and the heads are split and merged by Reshapes
whose shapes the model computes from Shape(x) (Shape -> Gather -> Concat). Until
`batch` and `sequence` have sizes, shape inference cannot size those Reshapes, nor
what follows them. Writes symbolic_attention.onnx and x.npy (4 samples of 6 tokens)."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper
from onnx import numpy_helper as nh

out = sys.argv[1]
rng = np.random.RandomState(0)
D, H = 8, 2
inits = [nh.from_array((rng.randn(D, D) * 0.3).astype(np.float32), n)
         for n in ("Wq", "Wk", "Wv", "Wo")]
inits += [nh.from_array(np.array([0], np.int64), "i0"),
          nh.from_array(np.array([1], np.int64), "i1"),
          nh.from_array(np.array([H, D // H], np.int64), "heads"),
          nh.from_array(np.array([D], np.int64), "width")]
node = helper.make_node
nodes = [node("MatMul", ["x", w], [t], name=t) for t, w in (("q", "Wq"), ("k", "Wk"), ("v", "Wv"))]
nodes += [node("Shape", ["x"], ["x_shape"], name="x_shape"),
          node("Gather", ["x_shape", "i0"], ["b"], name="b", axis=0),
          node("Gather", ["x_shape", "i1"], ["s"], name="s", axis=0),
          node("Concat", ["b", "s", "heads"], ["split_shape"], name="split_shape", axis=0),
          node("Concat", ["b", "s", "width"], ["merge_shape"], name="merge_shape", axis=0)]
for t in "qkv":
    nodes += [node("Reshape", [t, "split_shape"], [t + "4"], name=t + "4"),
              node("Transpose", [t + "4"], [t + "h"], name=t + "h", perm=[0, 2, 1, 3])]
nodes += [node("Transpose", ["kh"], ["kt"], name="kt", perm=[0, 1, 3, 2]),
          node("MatMul", ["qh", "kt"], ["scores"], name="scores"),
          node("Softmax", ["scores"], ["p"], name="softmax", axis=-1),
          node("MatMul", ["p", "vh"], ["context"], name="context"),
          node("Transpose", ["context"], ["merged4"], name="merged4", perm=[0, 2, 1, 3]),
          node("Reshape", ["merged4", "merge_shape"], ["merged"], name="merged"),
          node("MatMul", ["merged", "Wo"], ["o"], name="o"),
          node("Add", ["o", "x"], ["y"], name="residual")]
g = helper.make_graph(nodes, "symbolic_attention",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                     ["batch", "sequence", D])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                                     ["batch", "sequence", D])], inits)
model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, os.path.join(out, "symbolic_attention.onnx"))
np.save(os.path.join(out, "x.npy"), rng.randn(4, 6, D).astype(np.float32))
