#!/usr/bin/python3
"""gen_model.py N OUT.onnx [silu] - a planner benchmark model with N nodes.

Blocks of Conv (8 -> 8 channels, 1x1 kernel, weight and bias initializers) -> Relu ->
Add (the block's input: a residual), 3 nodes each, cut at exactly N nodes; with `silu`,
the Relu is a SiLU spelled as Mul(c, Sigmoid(c)) (4 nodes a block: a composite chain); input `x`
float [1, 8, 8, 8]. 1x1 kernels keep the 1M-node file near 150 MB. Run with Debian's
python3 (python3-onnx). Deterministic: same N, same bytes.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    n, out = int(sys.argv[1]), sys.argv[2]
    silu = len(sys.argv) > 3 and sys.argv[3] == "silu"
    nodes, inits = [], []
    prev, i = "x", 0
    w = np.linspace(-0.5, 0.5, 64, dtype=np.float32).reshape(8, 8, 1, 1)
    b = np.zeros(8, np.float32)
    while len(nodes) < n:
        inits.append(numpy_helper.from_array(w, f"W{i}"))
        inits.append(numpy_helper.from_array(b, f"B{i}"))
        act = [helper.make_node("Sigmoid", [f"c{i}"], [f"s{i}"], name=f"sig_{i}"),
               helper.make_node("Mul", [f"c{i}", f"s{i}"], [f"r{i}"], name=f"silu_{i}")] if silu \
            else [helper.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu_{i}")]
        block = [helper.make_node("Conv", [prev, f"W{i}", f"B{i}"], [f"c{i}"], name=f"conv_{i}"),
                 *act, helper.make_node("Add", [f"r{i}", prev], [f"a{i}"], name=f"add_{i}")]
        nodes += block[: n - len(nodes)]
        prev = nodes[-1].output[0]
        i += 1
    g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 8, 8])],
                          [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, 8, 8, 8])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="tpcc-bench")
    m.ir_version = 7
    with open(out + ".tmp", "wb") as f:
        f.write(m.SerializeToString())
    import os
    os.replace(out + ".tmp", out)


if __name__ == "__main__":
    main()
