"""make_layernorm_spelled.py DIR: LayerNorm as PyTorch exports nn.LayerNorm before opset
17 (ReduceMean, Sub, Pow, ReduceMean, Add eps, Sqrt, Div, Mul scale, Add bias), once with
its affine parameters (`ln`) and once without (`ln_plain`), between two linear layers;
and a near miss (`cube`: Pow(., 3) where the variance takes Pow(., 2)) that no composite
must take. Writes layernorm_spelled.onnx and x.npy (calibration, 16 samples)."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.RandomState(5)
W = lambda name, *shape: numpy_helper.from_array(rng.normal(0, 0.3, shape).astype(np.float32), name)
K = lambda name, v: numpy_helper.from_array(np.array(v, np.float32), name)


def layernorm(prefix, x, affine, power="two"):
    n = lambda op, ins, out, **kw: helper.make_node(op, ins, [f"{prefix}/{out}"],
                                                    name=f"{prefix}/{out}", **kw)
    p = lambda s: f"{prefix}/{s}"
    nodes = [n("ReduceMean", [x], "mean", axes=[-1]),
             n("Sub", [x, p("mean")], "centred"),
             n("Pow", [p("centred"), power], "squared"),
             n("ReduceMean", [p("squared")], "var", axes=[-1]),
             n("Add", [p("var"), "eps"], "var_eps"),
             n("Sqrt", [p("var_eps")], "std"),
             n("Div", [p("centred"), p("std")], "normed")]
    if affine:
        nodes += [n("Mul", [p("normed"), f"{prefix}.weight"], "scaled"),
                  n("Add", [p("scaled"), f"{prefix}.bias"], "out")]
    return nodes, p("out" if affine else "normed")


ln, y1 = layernorm("ln", "h", True)
plain, y2 = layernorm("ln_plain", "h2", False)
cube, y3 = layernorm("cube", "h3", False, "three")
nodes = [helper.make_node("MatMul", ["x", "W1"], ["h"], name="lin1")] + ln + [
    helper.make_node("MatMul", [y1, "W2"], ["h2"], name="lin2")] + plain + [
    helper.make_node("Relu", [y2], ["h3"], name="relu")] + cube + [
    helper.make_node("MatMul", [y3, "W3"], ["y"], name="lin3")]
inits = [W("W1", 16, 16), W("W2", 16, 16), W("W3", 16, 8), K("eps", 1e-5), K("two", 2.0),
         K("three", 3.0), numpy_helper.from_array((1 + rng.normal(0, 0.1, 16)).astype(np.float32),
                                                  "ln.weight"),
         W("ln.bias", 16)]
g = helper.make_graph(nodes, "layernorm_spelled",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 16])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8])], inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 7
onnx.checker.check_model(m)
out = sys.argv[1]
onnx.save(m, os.path.join(out, "layernorm_spelled.onnx"))
np.save(os.path.join(out, "x.npy"), rng.normal(0, 1, (16, 4, 16)).astype(np.float32))
