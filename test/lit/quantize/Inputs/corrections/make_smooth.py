"""make_smooth.py DIR (test/lit/quantize/Inputs/corrections: smooth.onnx and
smooth_calib.npy there are its output): smooth_quant's cases. A LayerNormalization whose scale gives
three of 16 channels 40 times the others' range (the outlier channels of a
transformer's residual stream after its norm) read by two linear layers, one through a
Transpose(1, 0, 2) as PyTorch's attention writes it (`ln` -> `q`, `t` -> `k`); an
RMSNorm spelled as Llama's exporters write it, Mul(x, 1/rms(x)) * g, read by one
(`rms` -> `up`); and a LayerNormalization that a Relu also reads, which smooth_quant
must leave alone (`ln_relu`). Writes smooth.onnx and smooth_calib.npy (32 samples)."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.RandomState(11)
C, T = 16, 6
f32 = lambda a: np.asarray(a, np.float32)
scale = f32(np.where(np.arange(C) % 6 == 1, 8.0, 0.2) * (1 + 0.1 * rng.rand(C)))
inits = [numpy_helper.from_array(a, n) for n, a in [
    ("ln.scale", scale), ("ln.bias", f32(rng.normal(0, 0.05, C))),
    ("Wq", f32(rng.normal(0, 0.3, (C, 8)))), ("Wk", f32(rng.normal(0, 0.3, (C, 8)))),
    ("rms.g", scale[::-1].copy()), ("Wup", f32(rng.normal(0, 0.3, (C, 8)))),
    ("two", f32(2.0)), ("eps", f32(1e-5)), ("one", f32(1.0)),
    ("r.scale", scale), ("r.bias", f32(np.zeros(C))), ("Wr", f32(rng.normal(0, 0.3, (C, 8))))]]
N = helper.make_node
nodes = [
    N("LayerNormalization", ["x", "ln.scale", "ln.bias"], ["h"], name="ln", axis=-1),
    N("MatMul", ["h", "Wq"], ["yq"], name="q"),
    N("Transpose", ["h"], ["ht"], name="t", perm=[1, 0, 2]),
    N("MatMul", ["ht", "Wk"], ["yk"], name="k"),
    N("Pow", ["x", "two"], ["sq"], name="rms/pow"),
    N("ReduceMean", ["sq"], ["ms"], name="rms/mean", axes=[-1]),
    N("Add", ["ms", "eps"], ["mse"], name="rms/add"),
    N("Sqrt", ["mse"], ["rt"], name="rms/sqrt"),
    N("Div", ["one", "rt"], ["inv"], name="rms/div"),
    N("Mul", ["x", "inv"], ["normed"], name="rms/normed"),
    N("Mul", ["normed", "rms.g"], ["r"], name="rms"),
    N("MatMul", ["r", "Wup"], ["yup"], name="up"),
    N("LayerNormalization", ["x", "r.scale", "r.bias"], ["hr"], name="ln_relu", axis=-1),
    N("Relu", ["hr"], ["yrelu"], name="relu"),
    N("MatMul", ["hr", "Wr"], ["yr"], name="r_lin"),
]
out = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
g = helper.make_graph(nodes, "smooth", [out("x", ["N", T, C])],
                      [out("yq", ["N", T, 8]), out("yk", [T, "N", 8]), out("yup", ["N", T, 8]),
                       out("yrelu", ["N", T, C]), out("yr", ["N", T, 8])], inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
m.ir_version = 8
onnx.checker.check_model(m)
d = sys.argv[1]
onnx.save(m, os.path.join(d, "smooth.onnx"))
np.save(os.path.join(d, "smooth_calib.npy"), f32(rng.normal(0, 1, (32, T, C))))
