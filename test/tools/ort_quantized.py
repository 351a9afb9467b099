#!/usr/bin/python3
"""ort_quantized.py - quantized models through ONNX Runtime and through tpcc.

Each shared model (fashion_cnn, digits_cnn) is quantized with `tpcc quantize` for
each shipped platform (imx500, tflite, qnnpack, default; imx500 also with 4-bit
weights, imx500_v4 with a 16-bit output through com.microsoft Q/DQ) on its
calibration set; the public zoo models (mnist-8, squeezenet_cifar10, HAR-CNN,
KWS-DNN_S: old opsets and IR versions, NHWC with Transposes, Concat, Softmax) for
imx500 and default on 32 random samples, as their data sets are not here. The QDQ model then runs on 64 calibration samples
through ONNX Runtime (onnxruntime-node, which uses its integer kernels) and through
`tpcc run`; every output element must agree within one quantization step of that
output (its scale, from the --report JSON). When test/ort/ort_optimized.js exists,
the model ORT optimizes must contain integer kernels (QLinearConv, QGemm,
QLinearMatMul, MatMulInteger...).

usage: ort_quantized.py --tpcc BIN --node-modules DIR --work DIR --models DIR
Exit 0: all agree; 1: a disagreement or a failure; 77: Node.js or onnxruntime-node
is missing (the reason printed).
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ort_crosscheck import inputs_of, ort_missing, run_both  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ORT_OPTIMIZED = os.path.join(HERE, "..", "ort", "ort_optimized.js")
INTEGER_OPS = {"QLinearConv", "QGemm", "QLinearMatMul", "MatMulInteger", "ConvInteger",
               "MatMulIntegerToFloat", "DynamicQuantizeMatMul"}
MODELS = ["fashion_cnn.onnx", "digits_cnn.onnx"]
# (platform, recipe, the last Gemm's candidate config or None, tag suffix)
CASES = [("imx500", None, None, ""), ("tflite", None, None, ""), ("qnnpack", None, None, ""),
         ("default", None, None, ""), ("imx500", "recipe w4 { weights_bits: 4 }", None, ".w4"),
         ("imx500_v4", None, "FullyConnected.3", ".a16out")]
LAST_GEMM = {"fashion_cnn.onnx": "/13/Gemm", "digits_cnn.onnx": "/f/f.11/Gemm"}
ZOO = ["mnist-8.onnx", "squeezenet_cifar10.onnx", "HAR-CNN.onnx", "KWS-DNN_S.onnx"]
ZOO_CASES = [("imx500", None, None, ""), ("default", None, None, "")]


def shared_data(model, args, work):
    """The model's calibration file, and its first 64 samples as the input."""
    calib = os.path.join(args.models, model.replace("_cnn.onnx", "_calib_x.npy"))
    feed = os.path.join(work, "x.npy")
    np.save(feed, np.load(calib)[:64].astype(np.float32))
    return calib, [("input", feed)]


def zoo_data(model, args, work):
    """32 random samples in [0, 1) to calibrate on; the model's own batch of
    them (batch 8 when symbolic) as the input."""
    (name, _, shape), = inputs_of(os.path.join(args.models, "zoo", model))
    x = np.random.RandomState(7).uniform(0, 1, [32] + shape[1:]).astype(np.float32)
    calib, feed = os.path.join(work, "calib.npy"), os.path.join(work, "x.npy")
    np.save(calib, x)
    np.save(feed, x[:shape[0]])
    return calib, [(name, feed)]


def check(model, data, platform, recipe, choose, suffix, args):
    tag = f"{model.replace('.onnx', '')}.{platform}{suffix}"
    work = os.path.join(args.work, tag)
    os.makedirs(work, exist_ok=True)
    calib, feeds = data(model, args, work)
    path = os.path.join(args.models, "zoo" if data is zoo_data else "", model)
    out, report = os.path.join(work, "q.onnx"), os.path.join(work, "report.json")
    cmd = [args.tpcc, "quantize", "--platform", platform, "--calib", calib, path, "-o", out,
           "--report", report, "--progress=never"]
    if choose:
        cmd += ["--choose", f"{LAST_GEMM[model]}={choose}"]
    if recipe:
        rfile = os.path.join(work, "recipe.tpc")
        with open(rfile, "w") as f:
            f.write(recipe + "\n")
        cmd += ["--recipe", rfile]
    q = subprocess.run(cmd, capture_output=True, text=True)
    if q.returncode:
        return tag, f"tpcc quantize failed: {q.stderr.strip()}"
    steps = {t["name"]: t["scale"] for t in json.load(open(report))["tensors"]
             if t["kind"] == "activation"}
    r = run_both(out, feeds, args, work)
    if isinstance(r, str):
        return tag, r
    notes = []
    for name, want, got in zip(*r):
        if name not in steps:
            return tag, f"output `{name}` is not quantized; no step to compare within"
        diff = float(np.max(np.abs(got.astype(np.float64) - want)))
        steps_off = diff / steps[name]
        notes.append(f"{name} max |tpcc-ort| = {steps_off:.2f} steps")
        if steps_off > 1 + 1e-6:
            return tag, f"output `{name}`: tpcc and ORT differ by {steps_off:.2f} quantization steps"
    if os.path.exists(ORT_OPTIMIZED):
        env = dict(os.environ, NODE_PATH=args.node_modules)
        o = subprocess.run(["node", ORT_OPTIMIZED, out, "--save", os.path.join(work, "optimized.onnx")],
                           env=env, capture_output=True, text=True)
        if o.returncode:
            return tag, f"ORT optimization failed: {o.stderr.strip()}"
        line = [l for l in o.stdout.splitlines() if l.startswith("ops:")]
        ops = {op.split(":")[-1] for op in (line[0].split()[1:] if line else [])}
        integer = sorted(ops & INTEGER_OPS)
        if not integer:
            return tag, f"ORT ran no integer kernel; its optimized graph has {' '.join(sorted(ops))}"
        notes.append("ORT kernels " + " ".join(integer))
    return tag, "; ".join(notes)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tpcc", required=True)
    p.add_argument("--node-modules", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--models", required=True)
    args = p.parse_args()
    missing = ort_missing(args.node_modules)
    if missing:
        print("SKIPPED: " + missing)
        return 77
    failed = total = 0
    runs = [(m, shared_data, c) for m in MODELS for c in CASES] + \
           [(m, zoo_data, c) for m in ZOO for c in ZOO_CASES]
    for model, data, case in runs:
        total += 1
        tag, note = check(model, data, *case, args)
        ok = not note.startswith(("tpcc", "ONNX", "output", "ORT ran", "ORT opt"))
        print(f"{'ok  ' if ok else 'FAIL'} {tag}: {note}")
        failed += not ok
    print(f"ort quantized check: {total - failed} agree, {failed} differ, of {total} models")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
