"""Self-attention in miniature with the two masks transformers add to their scores
(make_masked_attention.py DIR): a causal mask built from constants (Trilu -> Where,
-inf above the diagonal; clean-up folds it into a constant) and a padding mask computed
from the input `attention_mask` as Hugging Face does, (1 - mask) * float32 min. The
scores the masks are added to hold -inf and -3.4e38 where a token is masked. Writes
masked_attention.onnx, x.npy and mask.npy (16 samples of 6 tokens, the last tokens of
some samples padding)."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper
from onnx import numpy_helper as nh

out = sys.argv[1]
rng = np.random.RandomState(0)
T, D = 6, 8
f32min = np.finfo(np.float32).min
inits = [nh.from_array((rng.randn(D, D) * 0.4).astype(np.float32), n) for n in ("Wq", "Wk", "Wv")]
inits += [nh.from_array(np.ones((T, T), np.float32), "ones"),
          nh.from_array(np.array(-np.inf, np.float32), "neg_inf"),
          nh.from_array(np.array(0, np.float32), "zero"),
          nh.from_array(np.array(1, np.float32), "one"),
          nh.from_array(np.array(f32min, np.float32), "f32min"),
          nh.from_array(np.array(1 / np.sqrt(D), np.float32), "scale"),
          nh.from_array(np.array([1], np.int64), "axis1"),
          nh.from_array(np.array(1, np.int64), "k1")]
nodes = [
    helper.make_node("MatMul", ["x", "Wq"], ["q"], name="q"),
    helper.make_node("MatMul", ["x", "Wk"], ["k"], name="k"),
    helper.make_node("MatMul", ["x", "Wv"], ["v"], name="v"),
    helper.make_node("Transpose", ["k"], ["kt"], name="kt", perm=[0, 2, 1]),
    helper.make_node("MatMul", ["q", "kt"], ["qk"], name="qk"),
    helper.make_node("Mul", ["qk", "scale"], ["scores"], name="scaled"),
    # The causal mask: -inf above the diagonal.
    helper.make_node("Trilu", ["ones", "k1"], ["above"], name="above", upper=1),
    helper.make_node("Equal", ["above", "one"], ["is_above"], name="is_above"),
    helper.make_node("Where", ["is_above", "neg_inf", "zero"], ["causal"], name="causal"),
    helper.make_node("Add", ["scores", "causal"], ["causal_scores"], name="causal_scores"),
    # The padding mask: (1 - mask) * float32 min, broadcast over the query axis.
    helper.make_node("Sub", ["one", "attention_mask"], ["inverted"], name="inverted"),
    helper.make_node("Mul", ["inverted", "f32min"], ["padding"], name="padding"),
    helper.make_node("Unsqueeze", ["padding", "axis1"], ["padding3"], name="padding3"),
    helper.make_node("Add", ["causal_scores", "padding3"], ["masked"], name="masked"),
    helper.make_node("Softmax", ["masked"], ["attn"], name="softmax", axis=-1),
    helper.make_node("MatMul", ["attn", "v"], ["y"], name="context"),
]
# The causal mask hides nothing from a query's own position, so no row is all -inf.
g = helper.make_graph(nodes, "masked_attention",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", T, D]),
                       helper.make_tensor_value_info("attention_mask", TensorProto.FLOAT,
                                                     ["N", T])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", T, D])], inits)
model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, os.path.join(out, "masked_attention.onnx"))
np.save(os.path.join(out, "x.npy"), rng.randn(16, T, D).astype(np.float32))
mask = np.ones((16, T), np.float32)
for i in range(16):
    mask[i, T - i % 3:] = 0  # 0, 2 or 1 padding tokens at the end
np.save(os.path.join(out, "mask.npy"), mask)
