#!/usr/bin/env python3
"""Generates a large .tpc spec for the compiler benchmark.

usage: gen_spec.py N [--capabilities] > big.tpc
One platform with N configs (a `with` chain every 10), N opsets (each with
options of up to two configs), N fusing patterns (distinct, over groups and
inline unions); with --capabilities also a capabilities binding every opset to
an ONNX op with a predicate.
"""
import sys

n = int(sys.argv[1])
with_caps = "--capabilities" in sys.argv[2:]
out = []
w = out.append
w('import "onnx"')
w("platform big {")
w("  version 1.0")
w("  attr k8 = { method: symmetric, bits: 8, per_channel: true }")
w("  attr b32 = { bits: 32 }")
w("  config base = { activation: { method: power_of_two, bits: 8 }, weights.kernel: k8, weights.bias: b32 }")
w("  default [base]")
for i in range(n):
    if i % 10 == 0:
        w(f"  config c{i} = base with {{ simd: {32 + (i % 3) * 32} }}")
    else:
        w(f"  config c{i} = c{i - i % 10} with {{ weights.kernel.bits: {2 + i % 7} }}")
for i in range(n):
    j, k = i, (i + 1) % n
    if i % 3 == 0:
        w(f"  opset S{i} : [c{j}, c{k}] base c{j}")
    elif i % 3 == 1:
        w(f"  opset S{i} : [c{j}]")
    else:
        w(f"  opset S{i}")
groups = max(1, n // 10)
for g in range(groups):
    w(f"  group G{g} = S{g} | S{(g + 1) % n}")
for i in range(n):
    a, b = i, (i * 7 + 3) % n
    if i % 2 == 0:
        w(f"  fuse S{a} -> S{b}")
    else:
        w(f"  fuse S{a} -> (S{b} | G{i % groups}) -> S{(a + 5) % n}")
w("}")
if not with_caps:
    sys.stdout.write("\n".join(out) + "\n")
    sys.exit(0)
ops = ["Relu", "Sigmoid", "Tanh", "Add", "Mul", "Conv", "Gemm", "MatMul", "Clip", "Softmax"]
w("capabilities big_onnx = big on onnx {")
for i in range(n):
    w(f"  S{i} <- {ops[i % len(ops)]} where input[0] != none and rank(input[0]) == {i % 5 + 1}")
w("}")
sys.stdout.write("\n".join(out) + "\n")
