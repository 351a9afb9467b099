#!/usr/bin/python3
"""ort_formats.py - number formats (blocked int4, FP8, MX, two-level): ONNX Runtime and `tpcc run` on one file.

Quantizes digits_cnn and fashion_vit with specs of test/lit/quantize/Inputs and runs each
QDQ file (ai.onnx opset 21) through ONNX Runtime 1.30 and through `tpcc run` on 32
samples:

- blocked int4 weights (blocks.tpc: digits_cnn's W4A8 convolutions and weight-only
  classifier, blocks of 16; vit_w4.tpc: fashion_vit weight-only, blocks of 32 on all
  MatMul and Gemm weights), ORT at its basic graph level: the dequantization is exact
  in both and the float layers after it sum in other orders, so the logits agree
  within 1e-5 of the largest. (From the 'extended' level ORT replaces DequantizeLinear
  -> MatMul by MatMulNBits, which quantizes the activations per block:
  docs/quantize.md, "Blocked weights".)
- FP8 E4M3 W8A8 (fp8.tpc; the logits are FP8 too), ORT with graph optimizations
  disabled against `tpcc run`; for digits_cnn also ORT at its basic level against
  `tpcc run --ort-cpu vnni`. (ORT's basic level rewrites FP8 QDQ models in ways
  --ort-cpu does not compute yet: on fashion_vit 28 of 320 logits move against the
  unoptimized session, from a LayerNormalization's codes on; from 'extended' on, ORT
  1.30 fails to load FP8 QDQ models: microsoft/onnxruntime#22269.) At most 3 % of the
  logits may differ at all, each by at most 8 FP8 steps of its value: a float sum a
  last bit apart decides a value on a rounding tie of the coarse FP8 grid (a step is
  1/8 to 1/16 of the value), and such flips carry through the layers (measured:
  digits_cnn 0 and 0.3 % of its logits, 1 step; fashion_vit, four encoder blocks,
  0.9 % and up to 5 steps). A systematic difference moves far more: ORT's basic level
  against plain `tpcc run` differs on 9 % of fashion_vit's logits, up to 17 steps.

- OCP MX activations (mx.tpc: MXINT8; mxfp8.tpc: MXFP8 E4M3; both with MXFP4
  kernels) on fashion_vit, ORT with graph optimizations disabled and at 'all': the
  MX subgraphs are float operators (quant/ptq/qdq/Mx.h), so every level runs the same
  arithmetic, except that a float sum a last bit apart can flip a rounding tie of the
  elements and the flip carries through the layers. Measured: MXFP8 0.3–0.6 % of the
  logits, by at most 3.6e-2 of the largest; MXINT8 equal bit for bit until bias
  correction reached the encoder's MatMul layers, now 1 of 320 logits (one image),
  8.6e-3 of the largest, the same with `--ort-cpu` (taken for such a flip, not traced);
  allowed 3 % and 0.1.

- Two-level scales (lpbq.tpc: digits_cnn's 4-bit kernels in blocks of 16 with uint4
  factors under a float32 scale per output channel, W4A8 convolutions; nvfp4.tpc:
  fashion_vit weight-only FP4 E2M1 in blocks of 16 with FP8 E4M3 factors under one
  float32 scale per tensor), ORT at 'basic' and 'all': the blocks' scales are a
  DequantizeLinear of the factors, which ORT keeps as a node at every level, so its
  weights are dequantized as tpcc's are (within 1e-5 of the largest logit; measured 0
  and 2.7e-7 with AVX-512, up to 3e-7 with oneDNN capped at AVX2).

- `--matmul-nbits` (fashion_vit weight-only blocks of 32: all 17 MatMul and Gemm; digits_cnn's
  weight-only classifier, a Gemm with its bias): the blocked products written as
  MatMulNBits at accuracy level 0, which ORT computes in float at every level as `tpcc
  run` does (within 1e-5 of the largest logit; measured 2.4e-7 and 0 with AVX-512, up to
  3e-7 with oneDNN capped at AVX2).
- com.microsoft MatMulNBits files (2-, 4- and 8-bit codes in blocks of 32, with and
  without zero points and bias; test/lit/run/Inputs/make_matmulnbits.py), ORT at 'all':
  at accuracy level 0 ORT dequantizes and multiplies in float as `tpcc run` does
  (measured: equal with AVX-512, 1.9e-7 with oneDNN capped at AVX2); at level 4 it
  quantizes A to int8 per block, which `tpcc run --ort-cpu` computes too, its float sums
  in another order (measured 1.5e-7 and 2e-7 of the largest output, ORT native and under
  qemu -cpu Haswell; allowed 1e-6).

usage: ort_formats.py --tpcc BIN --node-modules DIR --work DIR --models DIR
Exit 0: all agree; 1: a difference or a failure; 77: Node.js or onnxruntime-node is
missing.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ort_crosscheck import ORT_RUN, ort_missing  # noqa: E402

INPUTS = os.path.join(HERE, "..", "lit", "quantize", "Inputs")
# (model, calibration set, spec, [(ORT level, tpcc run flags)], FP8 logits)
CASES = [("digits_cnn.onnx", "digits_calib_x.npy", "blocks.tpc", [("basic", [])], False),
         ("fashion_vit.onnx", "fashion_calib_x.npy", "vit_w4.tpc", [("basic", [])], False),
         ("digits_cnn.onnx", "digits_calib_x.npy", "fp8.tpc",
          [("disabled", []), ("basic", ["--ort-cpu", "vnni"])], True),
         ("fashion_vit.onnx", "fashion_calib_x.npy", "fp8.tpc", [("disabled", [])], True),
         ("fashion_vit.onnx", "fashion_calib_x.npy", "mx.tpc", [("disabled", []), ("all", [])],
          "mx"),
         ("fashion_vit.onnx", "fashion_calib_x.npy", "mxfp8.tpc",
          [("disabled", []), ("all", [])], "mx"),
         ("digits_cnn.onnx", "digits_calib_x.npy", "lpbq.tpc", [("basic", []), ("all", [])],
          False),
         ("fashion_vit.onnx", "fashion_calib_x.npy", "nvfp4.tpc", [("basic", []), ("all", [])],
          False),
         ("fashion_vit.onnx", "fashion_calib_x.npy", "vit_w4.tpc --matmul-nbits",
          [("disabled", []), ("all", [])], False),
         ("digits_cnn.onnx", "digits_calib_x.npy", "blocks.tpc --matmul-nbits",
          [("disabled", []), ("all", [])], False)]
RELATIVE = 1e-5
FLIP_SHARE = 0.03
FP8_STEPS = 8
MX_RELATIVE = 0.1


def fp8_steps(got, want, scale):
    """|got - want| in FP8 E4M3 steps at the larger magnitude (scale: the grid's)."""
    mag = np.maximum(np.abs(got), np.abs(want)) / scale
    e = np.floor(np.log2(np.maximum(mag, 2.0 ** -6)))  # subnormals: the smallest normal's step
    return np.abs(got - want) / (np.exp2(e - 3) * scale)


def check(model, calib, spec, runs, fp8, args):
    spec, *qflags = spec.split()  # a spec file, then `tpcc quantize` flags
    work = os.path.join(args.work, model.replace(".onnx", "") + "." + spec.replace(".tpc", "") +
                        "".join(f.replace("--", ".") for f in qflags))
    os.makedirs(work, exist_ok=True)
    out, report = os.path.join(work, "q.onnx"), os.path.join(work, "report.json")
    q = subprocess.run([args.tpcc, "quantize", "--platform", os.path.join(INPUTS, spec),
                        "--calib", os.path.join(args.models, calib),
                        os.path.join(args.models, model), "-o", out, "--report", report,
                        "--progress=never", *qflags], capture_output=True, text=True)
    if q.returncode:
        return f"tpcc quantize failed: {q.stderr.strip()}"
    scale = {t["name"]: t.get("scale") for t in json.load(open(report))["tensors"]}.get("logits")
    x = os.path.join(work, "x.npy")
    np.save(x, np.load(os.path.join(args.models, calib))[:32])
    env = dict(os.environ, NODE_PATH=args.node_modules)
    for level, flags in runs:
        o = subprocess.run(["node", ORT_RUN, "--level", level, out, os.path.join(work, level),
                            f"input={x}"], capture_output=True, text=True, env=env)
        if o.returncode:
            return f"ONNX Runtime ({level}) failed: {o.stderr.strip()[-400:]}"
        got_path = os.path.join(work, f"tpcc_{level}.npy")
        t = subprocess.run([args.tpcc, "run", out, "--input", f"input={x}", "--output",
                            f"logits={got_path}", *flags], capture_output=True, text=True)
        if t.returncode:
            return f"tpcc run failed: {t.stderr.strip()}"
        want = np.load(os.path.join(work, f"{level}0.npy")).astype(np.float64)
        got = np.load(got_path).astype(np.float64)
        if want.shape != got.shape:
            return f"shapes differ: ORT {want.shape}, tpcc {got.shape}"
        against = f"ORT {level} vs tpcc run {' '.join(flags)}".rstrip()
        spec_name = " ".join([spec, *qflags])
        if fp8 == "mx":
            share = float(np.mean(got != want))
            worst = float(np.max(np.abs(got - want))) / float(np.max(np.abs(want)))
            print(f"  {model} {spec_name}, {against}: {share:.1%} of the logits differ, by at "
                  f"most {worst:.2e} of the largest")
            if share > FLIP_SHARE or worst > MX_RELATIVE:
                return f"{against}: {share:.1%} differ, up to {worst:.2e} of the largest"
        elif fp8:
            steps = fp8_steps(got, want, scale)
            share = float(np.mean(got != want))
            print(f"  {model} {spec_name}, {against}: {share:.1%} of the logits differ, "
                  f"at most {float(steps.max()):.2f} FP8 steps")
            if steps.max() > FP8_STEPS or share > FLIP_SHARE:
                return f"{against}: {share:.1%} differ, up to {float(steps.max()):.2f} steps"
        else:
            worst = float(np.max(np.abs(got - want))) / float(np.max(np.abs(want)))
            print(f"  {model} {spec_name}, {against}: largest difference {worst:.2e} of the "
                  "largest logit")
            if worst > RELATIVE:
                return f"{against}: differs by {worst:.2e} (allowed {RELATIVE})"
    return None


# MatMulNBits files (test/lit/run/Inputs/make_matmulnbits.py): bits, zero points, bias,
# accuracy level.
NBITS = [(4, 1, 1, 0), (8, 0, 1, 0), (2, 1, 0, 0), (4, 1, 1, 4), (8, 1, 1, 4)]
NBITS_RELATIVE = 1e-6


def check_nbits(args):
    """ORT's MatMulNBits against `tpcc run` (accuracy level 4: --ort-cpu)."""
    make = os.path.join(HERE, "..", "lit", "run", "Inputs", "make_matmulnbits.py")
    work = os.path.join(args.work, "matmulnbits")
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ, NODE_PATH=args.node_modules)
    for cfg in NBITS:
        name = "w{}_zp{}_bias{}_level{}".format(*cfg)
        model, x, ref = (os.path.join(work, name + e) for e in (".onnx", "_x.npy", "_ref.npy"))
        subprocess.run(["/usr/bin/python3", make, model, x, ref, *map(str, cfg)], check=True)
        o = subprocess.run(["node", ORT_RUN, "--level", "all", model, os.path.join(work, name),
                            f"a={x}"], capture_output=True, text=True, env=env)
        if o.returncode:
            return f"ONNX Runtime failed on {name}: {o.stderr.strip()[-400:]}"
        got = os.path.join(work, name + "_tpcc.npy")
        flags = ["--ort-cpu", "vnni"] if cfg[3] == 4 else []
        t = subprocess.run([args.tpcc, "run", model, "--input", f"a={x}", "--output", f"y={got}",
                            *flags], capture_output=True, text=True)
        if t.returncode:
            return f"tpcc run failed on {name}: {t.stderr.strip()}"
        want = np.load(os.path.join(work, name + "0.npy")).astype(np.float64)
        worst = float(np.max(np.abs(np.load(got) - want))) / float(np.max(np.abs(want)))
        print(f"  MatMulNBits {name}, ORT all vs {' '.join(['tpcc run', *flags])}: largest "
              f"difference {worst:.2e} of the largest output")
        if worst > NBITS_RELATIVE:
            return f"MatMulNBits {name}: differs by {worst:.2e} (allowed {NBITS_RELATIVE})"
    return None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tpcc", required=True)
    p.add_argument("--node-modules", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--models", required=True)
    args = p.parse_args()
    why = ort_missing(args.node_modules)
    if why:
        print(f"ort_formats: skipped: {why}")
        return 77
    failed = 0
    for model, calib, spec, runs, fp8 in CASES:
        why = check(model, calib, spec, runs, fp8, args)
        if why:
            print(f"FAIL {model}: {why}")
            failed += 1
    why = check_nbits(args)
    if why:
        print(f"FAIL {why}")
        failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
