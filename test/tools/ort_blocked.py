#!/usr/bin/python3
"""ort_blocked.py - blocked int4 weights: ONNX Runtime and `tpcc run` on the same file.

Quantizes digits_cnn (4-bit kernels in blocks of 16: W4A8 convolutions, a weight-only
classifier; test/lit/quantize/Inputs/blocks.tpc) and fashion_vit (4-bit weight-only
blocks of 32 along K on every MatMul and Gemm; Inputs/vit_w4.tpc), then runs each QDQ
file (ai.onnx opset 21, packed int4 behind blocked DequantizeLinear) through ONNX
Runtime 1.30 with its basic graph optimizations and through `tpcc run` on 32 samples.
The dequantization is exact in both (the codes times their block's scale); the float
layers after it sum in different orders, so outputs must agree within 1e-5 of the
largest output magnitude. (At the 'extended' level ORT replaces DequantizeLinear ->
MatMul by its MatMulNBits kernel, which quantizes the activations to 8 bits per block:
docs/quantize.md, "Blocked weights".)

usage: ort_blocked.py --tpcc BIN --node-modules DIR --work DIR --models DIR
Exit 0: all agree; 1: a difference or a failure; 77: Node.js or onnxruntime-node is
missing.
"""
import argparse
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ort_crosscheck import ORT_RUN, ort_missing  # noqa: E402

INPUTS = os.path.join(HERE, "..", "lit", "quantize", "Inputs")
CASES = [("digits_cnn.onnx", "digits_calib_x.npy", "blocks.tpc"),
         ("fashion_vit.onnx", "fashion_calib_x.npy", "vit_w4.tpc")]
RELATIVE = 1e-5


def check(model, calib, spec, args):
    work = os.path.join(args.work, model.replace(".onnx", ""))
    os.makedirs(work, exist_ok=True)
    out = os.path.join(work, "q.onnx")
    q = subprocess.run([args.tpcc, "quantize", "--platform", os.path.join(INPUTS, spec),
                        "--calib", os.path.join(args.models, calib),
                        os.path.join(args.models, model), "-o", out, "--progress=never"],
                       capture_output=True, text=True)
    if q.returncode:
        return f"tpcc quantize failed: {q.stderr.strip()}"
    x = os.path.join(work, "x.npy")
    np.save(x, np.load(os.path.join(args.models, calib))[:32])
    env = dict(os.environ, NODE_PATH=args.node_modules)
    o = subprocess.run(["node", ORT_RUN, "--level", "basic", out, os.path.join(work, "ort"),
                        f"input={x}"], capture_output=True, text=True, env=env)
    if o.returncode:
        return f"ONNX Runtime failed: {o.stderr.strip()[-400:]}"
    t = subprocess.run([args.tpcc, "run", out, "--input", f"input={x}", "--output",
                        f"logits={os.path.join(work, 'tpcc.npy')}"], capture_output=True, text=True)
    if t.returncode:
        return f"tpcc run failed: {t.stderr.strip()}"
    want = np.load(os.path.join(work, "ort0.npy")).astype(np.float64)
    got = np.load(os.path.join(work, "tpcc.npy")).astype(np.float64)
    if want.shape != got.shape:
        return f"shapes differ: ORT {want.shape}, tpcc {got.shape}"
    worst = float(np.max(np.abs(got - want))) / float(np.max(np.abs(want)))
    print(f"  {model}: largest difference {worst:.2e} of the largest logit")
    return None if worst <= RELATIVE else f"differs by {worst:.2e} (allowed {RELATIVE})"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tpcc", required=True)
    p.add_argument("--node-modules", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--models", required=True)
    args = p.parse_args()
    why = ort_missing(args.node_modules)
    if why:
        print(f"ort_blocked: skipped: {why}")
        return 77
    failed = 0
    for model, calib, spec in CASES:
        why = check(model, calib, spec, args)
        if why:
            print(f"FAIL {model}: {why}")
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
