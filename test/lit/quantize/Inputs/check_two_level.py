"""check_two_level.py FILE PLAN WEIGHT NODE - the two-level scales of one weight.

Prints what quantize/format-two-level.test checks: the factors' type, shape and range
(and each group's largest one), the group scales' shape and axis, the
blocked DequantizeLinear, and whether float32(factor x group scale) gives the plan's
scales for every block. Reads FP8 by hand (onnx 1.12 has no FP8 types).
"""
import json
import sys

import numpy as np
import onnx

TYPES = {2: "uint8", 17: "float8e4m3fn", 21: "uint4", 22: "int4"}


def e4m3(codes):
    """FP8 E4M3FN codes as float32 (no NaN codes expected)."""
    c = codes.astype(np.int32)
    sign = np.where(c & 0x80, -1.0, 1.0)
    e, m = (c >> 3) & 0xF, c & 0x7
    v = np.where(e == 0, m / 8.0 * 2.0 ** -6, (1 + m / 8.0) * 2.0 ** (e - 7))
    return (sign * v).astype(np.float32)


def main():
    path, plan_path, weight, node = sys.argv[1:5]
    m = onnx.load(path)
    inits = {t.name: t for t in m.graph.initializer}
    by_out = {o: n for n in m.graph.node for o in n.output}
    dq = [n for n in m.graph.node
          if n.op_type == "DequantizeLinear" and n.input[0] == weight + "_quantized"][0]
    sdq = by_out[dq.input[1]]
    f = inits[sdq.input[0]]
    raw = np.frombuffer(f.raw_data, dtype=np.uint8)
    factors = e4m3(raw) if f.data_type == 17 else raw.astype(np.float32)
    factors = factors.reshape(list(f.dims))
    g = inits[sdq.input[1]]
    group = np.frombuffer(g.raw_data, dtype=np.float32)
    axis = {a.name: a.i for a in sdq.attribute}.get("axis")
    if axis is None:
        largest = [factors.max()]
    else:
        largest = np.moveaxis(factors, axis, 0).reshape(factors.shape[axis], -1).max(axis=1)
    same = np.all(np.asarray(largest) == largest[0])
    print(f"factors {TYPES[f.data_type]} {list(f.dims)} in [{factors.min():g}, {factors.max():g}], "
          f"largest per group {largest[0]:g}" if same else f"largest per group {largest}")
    print(f"group scales {list(g.dims)} " + (f"along axis {axis}" if axis is not None else "per tensor"))
    attrs = {a.name: a.i for a in dq.attribute}
    codes = TYPES[inits[dq.input[0]].data_type]
    print(f"block DequantizeLinear axis {attrs['axis']} block_size {attrs['block_size']}, {codes} codes")
    plan = json.load(open(plan_path))
    grids = [n for n in plan["nodes"] if n["name"] == node][0]["weight_grids"]["kernel"]
    shape = [1] * factors.ndim
    if axis is not None:
        shape[axis] = -1
    scales = (factors * group.reshape(shape)).astype(np.float32).ravel()
    want = np.asarray(grids["scales"], dtype=np.float32)
    ok = scales.shape == want.shape and np.array_equal(scales, want) and \
        np.array_equal(factors.ravel(), np.asarray(grids["factors"], dtype=np.float32))
    print(f"scales = float32(factor x group scale): the plan's {want.size} scales" if ok
          else f"MISMATCH: {scales[:8]} vs {want[:8]}")


if __name__ == "__main__":
    main()
