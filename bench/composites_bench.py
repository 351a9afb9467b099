#!/usr/bin/python3
"""composites_bench.py - what composite activations change in `tpcc quantize` for imx500.

For fashion_mbv2 (shared; SiLU and HardSwish as Sigmoid/HardSigmoid + Mul) and a
real torchvision MobileNetV3-small (export_mobilenetv3.py: HardSwish as
HardSigmoid + Mul, squeeze-and-excitation gates Mul(x, HardSigmoid(fc(...))) that
are no activation), with each tpcc binary given (--before, then --tpcc):
  - quantizers: activation tensors with "quantize": true in `tpcc plan -o` JSON;
  - accuracy and logit SQNR against the float model (`tpcc eval`, 10,000
    Fashion-MNIST test images) of `tpcc quantize` at W8A8 and with 4-bit weights (W4A8),
    each with the default recipe and with MCT's shift_negative.
Then, for each binary's W8A8 models: the integer kernels ONNX Runtime's optimized
graph runs (onnxruntime-node, test/ort/ort_optimized.js, 'extended' optimizations), the
float ops it leaves, and the top-1 agreement of ORT's and `tpcc run`'s logits on 1,000
test images. (ORT 1.30 on x86-64 keeps a Conv float when its output is fused with a
chain, and also when a signed int8 activation beside it feeds two nodes: a residual Add,
a HardSigmoid and its Mul.) --tpcc's plan summary of each model (its composites and the
activation-like products left op by op) is printed too.

usage: composites_bench.py --tpcc BIN [--before BIN] --work DIR --models DIR
           --mbv3 MODEL.onnx --mbv3-calib CALIB.npy --node-modules DIR
(bench/run_composites.sh sets these up.)
"""
import argparse
import collections
import json
import os
import subprocess
import sys
from types import SimpleNamespace

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from quantize_bench import evaluate, idx, run  # noqa: E402

ORT_OPTIMIZED = os.path.join(HERE, "..", "test", "ort", "ort_optimized.js")
SETTINGS = [("W8A8", None),
            ("W8A8 MCT", "recipe mct { shift_negative: { enabled: true, ratio: 0.05 } }"),
            ("W4A8", "recipe w4 { weights_bits: 4 }"),
            ("W4A8 MCT", "recipe w4mct {\n  weights_bits: 4\n"
                         "  shift_negative: { enabled: true, ratio: 0.05 }\n}")]


def quantizers(tpcc, model, work):
    """The plan's quantized activation tensors, and its summary text."""
    plan = os.path.join(work, "plan.json")
    text, _ = run([tpcc, "plan", "--platform", "imx500", model, "-o", plan])
    return sum(t["quantize"] for t in json.load(open(plan))["tensors"]), text


def quantize(tpcc, model, calib, recipe, out, work):
    cmd = [tpcc, "quantize", "--platform", "imx500", "--calib", calib, model, "-o", out,
           "--progress=never"]
    if recipe:
        rfile = os.path.join(work, "recipe.tpc")
        with open(rfile, "w") as f:
            f.write(recipe + "\n")
        cmd += ["--recipe", rfile]
    run(cmd)


def ort_check(tpcc, qmodel, x, y, work, node_modules):
    """ORT's optimized graph's op counts (domains dropped), and the top-1 agreement of ORT
    and `tpcc run` (and ORT's accuracy)."""
    env = dict(os.environ, NODE_PATH=node_modules)
    p = subprocess.run(["node", ORT_OPTIMIZED, qmodel, "--out", os.path.join(work, "ort"),
                        f"input={x}"], env=env, capture_output=True, text=True)
    if p.returncode:
        sys.exit("ONNX Runtime failed: " + p.stderr[-2000:])
    line = next(l for l in p.stdout.splitlines() if l.startswith("ops:"))
    ops = collections.Counter(op.split(":")[-1] for op in line.split()[1:])
    run([tpcc, "run", qmodel, "--input", f"input={x}", "--output",
         f"logits={os.path.join(work, 'tpcc.npy')}"])
    o, t = (np.load(os.path.join(work, f)).argmax(1) for f in ("ort0.npy", "tpcc.npy"))
    return ops, float((o == t).mean() * 100), float((o == np.load(y)).mean() * 100)


def main():
    p = argparse.ArgumentParser()
    for a in ("--tpcc", "--work", "--models", "--mbv3", "--mbv3-calib", "--node-modules"):
        p.add_argument(a, required=True)
    p.add_argument("--before")
    args = p.parse_args()
    w = args.work
    tx, ty, tx1k, ty1k = (os.path.join(w, f) for f in
                          ("test_x.npy", "test_y.npy", "test1k_x.npy", "test1k_y.npy"))
    x = idx("t10k-images-idx3-ubyte.gz", 16, (-1, 1, 28, 28)).astype(np.float32) / 255
    y = idx("t10k-labels-idx1-ubyte.gz", 8, (-1,)).astype(np.int64)
    for f, a in ((tx, x), (ty, y), (tx1k, x[:1000]), (ty1k, y[:1000])):
        np.save(f, a)
    models = [("fashion_mbv2", os.path.join(args.models, "fashion_mbv2.onnx"),
               os.path.join(args.models, "fashion_calib_x.npy")),
              ("mobilenetv3", args.mbv3, args.mbv3_calib)]
    binaries = ([("before", args.before)] if args.before else []) + [("after", args.tpcc)]

    rows, summaries = [], {}
    for name, model, calib in models:
        facc, _ = evaluate(SimpleNamespace(tpcc=args.tpcc), model, tx, ty, model)
        rows.append((name, "float", "", "", facc, "-"))
        for tag, tpcc in binaries:
            ev = SimpleNamespace(tpcc=tpcc)
            count, text = quantizers(tpcc, model, w)
            summaries[name] = text
            for setting, recipe in SETTINGS:
                out = os.path.join(w, f"{name}.{tag}.{setting.replace(' ', '_')}.onnx")
                quantize(tpcc, model, calib, recipe, out, w)
                acc, sqnr = evaluate(ev, out, tx, ty, model)
                rows.append((name, setting, tag, count, acc, sqnr))
                print(f"  {name} {setting} {tag}: {count} quantizers, {acc:.2f} %, {sqnr} dB",
                      flush=True)

    print("\nimx500, 10,000 Fashion-MNIST test images (logit SQNR against the float model)")
    print(f"{'model':<13} {'setting':<9} {'tpcc':<7} {'quantizers':>10} {'accuracy':>9} "
          f"{'logit SQNR':>11}")
    for name, setting, tag, count, acc, sqnr in rows:
        print(f"{name:<13} {setting:<9} {tag:<7} {count:>10} {acc:>8.2f}% {sqnr:>8} dB")

    for name, _, _ in models:
        print(f"\n`tpcc plan --platform imx500` of {name} (--tpcc):")
        print("\n".join("  " + l for l in summaries[name].splitlines()
                        if not l.lstrip().startswith(("weights:", "plan:"))))

    print("\nONNX Runtime (onnxruntime-node, 'extended' optimizations) on the W8A8 models, "
          "1,000 test images:")
    integer = ("QLinearConv", "QGemm", "QLinearMatMul", "QLinearAdd", "QLinearMul",
               "QLinearGlobalAveragePool", "QLinearSigmoid")
    for name, _, _ in models:
        for tag, tpcc in binaries:
            qmodel = os.path.join(w, f"{name}.{tag}.W8A8.onnx")
            ops, agree, acc = ort_check(tpcc, qmodel, tx1k, ty1k, w, args.node_modules)
            kernels = ", ".join(f"{k} {ops[k]}" for k in integer if ops[k])
            floats = ", ".join(f"{k} {ops[k]}" for k in ("Conv", "FusedConv", "Gemm", "HardSigmoid",
                                                         "Sigmoid", "QuickGelu", "Mul") if ops[k])
            print(f"  {name} {tag}: integer kernels {kernels}; float ops left {floats or 'none'}; "
                  f"top-1 agreement with tpcc {agree:.1f} %; ORT accuracy {acc:.1f} %")


if __name__ == "__main__":
    main()
