#!/usr/bin/python3
"""Recovers the float model from one that ONNX Runtime's quantize_dynamic made.

quantize_dynamic replaces each MatMul with a constant weight by
DynamicQuantizeLinear(x) -> MatMulInteger(xq, Wq, xz, Wz) -> Cast -> Mul(., xs * Ws)
and each Gather of a constant table by a Gather of the uint8 table ->
DequantizeLinear. This puts the MatMul / Gather back with the weights the package
ships, dequantized: W = (Wq - Wz) * Ws (exact in float32: a small integer times the
scale), so the float model computes what the package's model computes before its
activations are quantized. DynamicQuantizeLinear nodes nothing reads any more are
dropped, and so are the initializers nothing reads.

usage: dequantize_dynamic.py IN.onnx OUT.onnx
Prints what it replaced; exit 1 when the model has a pattern it does not know
(a MatMulInteger whose weight is not a constant, or a zero point per column).
"""
import collections
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper


def main(src, dst):
    m = onnx.load(src)
    g = m.graph
    init = {t.name: t for t in g.initializer}
    prod = {o: n for n in g.node for o in n.output}
    readers = collections.defaultdict(list)
    for n in g.node:
        for i in n.input:
            readers[i].append(n)

    def const(name):
        if name in init:
            return numpy_helper.to_array(init[name])
        n = prod.get(name)
        if n is not None and n.op_type == "Constant":
            return numpy_helper.to_array(n.attribute[0].t)
        return None

    def new_init(name, array):
        t = numpy_helper.from_array(array.astype(np.float32), name)
        g.initializer.append(t)
        init[name] = t

    drop, replace = set(), {}  # node names dropped; node name -> replacement
    counts = collections.Counter()
    for n in g.node:
        if n.op_type == "MatMulInteger":
            dq = prod.get(n.input[0])
            wq, wz = const(n.input[1]), const(n.input[3]) if len(n.input) > 3 else 0
            casts = readers[n.output[0]]
            if dq is None or dq.op_type != "DynamicQuantizeLinear" or wq is None or \
                    np.size(wz) != 1 or len(casts) != 1 or casts[0].op_type != "Cast":
                sys.exit(f"{n.name}: not the MatMulInteger pattern of quantize_dynamic")
            muls = readers[casts[0].output[0]]
            if len(muls) != 1 or muls[0].op_type != "Mul":
                sys.exit(f"{n.name}: no Mul of the scales after the Cast")
            mul = muls[0]
            scales = prod[[i for i in mul.input if i != casts[0].output[0]][0]]
            ws = [const(i) for i in scales.input if const(i) is not None]
            if scales.op_type != "Mul" or len(ws) != 1 or np.size(ws[0]) != 1:
                sys.exit(f"{n.name}: the scale product is not activation scale x weight scale")
            w = (wq.astype(np.float32) - np.float32(wz)) * np.float32(ws[0])
            wname = n.input[1].replace("_quantized", "") + "_float"
            new_init(wname, w)
            replace[mul.name or mul.output[0]] = helper.make_node(
                "MatMul", [dq.input[0], wname], [mul.output[0]], name=n.name.replace("_quant", ""))
            drop.update([n.name, casts[0].name, scales.name])
            counts["MatMulInteger"] += 1
        elif n.op_type == "DequantizeLinear":
            gather = prod.get(n.input[0])
            table = const(gather.input[0]) if gather is not None and gather.op_type == "Gather" else None
            if table is None:
                continue
            s, z = const(n.input[1]), const(n.input[2]) if len(n.input) > 2 else 0
            tname = gather.input[0].replace("_quantized", "") + "_float"
            new_init(tname, (table.astype(np.float32) - np.float32(z)) * np.float32(s))
            attrs = {a.name: helper.get_attribute_value(a) for a in gather.attribute}
            replace[n.name or n.output[0]] = helper.make_node(
                "Gather", [tname, gather.input[1]], [n.output[0]], name=gather.name, **attrs)
            drop.add(gather.name)
            counts["Gather table"] += 1
    nodes = []
    for n in g.node:
        key = n.name or n.output[0]
        if key in replace:
            nodes.append(replace[key])
        elif n.name not in drop:
            nodes.append(n)
    # DynamicQuantizeLinear nodes nothing reads any more, then unread initializers.
    used = {i for n in nodes for i in n.input} | {o.name for o in g.output}
    nodes = [n for n in nodes if n.op_type != "DynamicQuantizeLinear" or
             any(o in used for o in n.output)]
    used = {i for n in nodes for i in n.input} | {o.name for o in g.output}
    del g.node[:]
    g.node.extend(nodes)
    kept = [t for t in g.initializer if t.name in used]
    del g.initializer[:]
    g.initializer.extend(kept)
    left = [n.op_type for n in g.node if n.op_type in
            ("DynamicQuantizeLinear", "MatMulInteger", "DequantizeLinear", "ConvInteger")]
    if left:
        sys.exit(f"quantized ops left: {collections.Counter(left)}")
    onnx.save(m, dst)
    print(", ".join(f"{v} {k}" for k, v in counts.items()) + " dequantized")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(*sys.argv[1:])
