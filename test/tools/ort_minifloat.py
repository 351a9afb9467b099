#!/usr/bin/python3
"""ort_minifloat.py - FP8 rounding (support/MiniFloat) against ONNX Runtime's Cast.

Builds Cast(float -> float8e4m3fn | float8e5m2, saturate=1) -> Cast(-> float)
at opset 19, runs it through ONNX Runtime (onnxruntime-node) on every 2^12-th
positive float32 bit pattern below infinity, their negatives, and the edges
(infinities, NaN, the ties beside the largest finite values), and has
tpcc_minifloat_check compare each result with tpcc's rounding, bit for bit.
(FP4 E2M1: ONNX Runtime 1.30's CPU provider has no Cast to float4e2m1.)

usage: ort_minifloat.py --check BIN --node-modules DIR --work DIR
Exit 0: all agree; 1: a difference; 77: Node.js or onnxruntime-node is missing.
"""
import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ort_crosscheck import ORT_RUN, ort_missing  # noqa: E402

FORMATS = {"e4m3fn": 17, "e5m2": 19}  # TensorProto.FLOAT8E4M3FN, FLOAT8E5M2 (ONNX 1.14)


def cast_model(to):
    nodes = [helper.make_node("Cast", ["x"], ["c"], to=to, saturate=1),
             helper.make_node("Cast", ["c"], ["y"], to=onnx.TensorProto.FLOAT)]
    g = helper.make_graph(nodes, "cast", [helper.make_tensor_value_info("x", 1, [None])],
                          [helper.make_tensor_value_info("y", 1, [None])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])
    m.ir_version = 9  # libonnx 1.12 knows neither the opset nor the types: no checker
    return m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", required=True)
    ap.add_argument("--node-modules", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    why = ort_missing(args.node_modules)
    if why:
        print(f"skipped: {why}")
        return 77
    os.makedirs(args.work, exist_ok=True)
    bits = np.arange(0, 0x7F800000, 1 << 12, dtype=np.uint32).view(np.float32)
    edges = np.array([np.inf, -np.inf, np.nan, 448, 464, 465, 480, 496, 57344, 61439, 61440,
                      65536, 1e9, -1e9], np.float32)
    x = np.concatenate([bits, -bits, edges]).astype(np.float32)
    xs = os.path.join(args.work, "x.npy")
    np.save(xs, x)
    env = dict(os.environ, NODE_PATH=args.node_modules)
    failed = False
    for name, to in FORMATS.items():
        path = os.path.join(args.work, f"cast_{name}.onnx")
        with open(path, "wb") as f:
            f.write(cast_model(to).SerializeToString())
        prefix = os.path.join(args.work, f"ort_{name}")
        ort = subprocess.run(["node", ORT_RUN, path, prefix, f"x={xs}"], env=env,
                             capture_output=True, text=True)
        if ort.returncode:
            print(f"{name}: ONNX Runtime failed: {ort.stderr.strip()[-2000:]}")
            failed = True
            continue
        r = subprocess.run([args.check, name, xs, prefix + "0.npy"], capture_output=True, text=True)
        sys.stdout.write(r.stdout + r.stderr)
        failed |= r.returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
