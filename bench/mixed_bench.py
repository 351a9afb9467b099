#!/usr/bin/python3
"""mixed_bench.py - mixed precision under budgets: accuracy, bytes, time, scaling.

fashion_cnn and fashion_mbv2 (Fashion-MNIST, 500 calibration images, the 10,000 test
images) are quantized for imx500 (kernels 8/4/2 bits) at W8A8 and with weights budgets
of 75 % and 50 % of the all-8-bit kernels; each model is evaluated (accuracy, logit SQNR
against the float model) and the bytes its kernels take are counted from the QDQ model
itself (elements x the bits their integers span). digits_cnn gets the same budgets; an
activation-memory budget runs on imx500_v4 (16-bit activation candidates), a BOPs budget
on fashion_cnn. Then models with 10, 100 and 1,000 quantized layers (Conv 3x3 -> Relu
chains, 8 channels, 8x8) are searched and the sensitivity pass and ILP timed.
MCT 2.2.2's figures on this machine (from issue 14) are printed beside ours.

usage: mixed_bench.py --tpcc BIN --work DIR --models DIR
"""
import json
import math
import os
import re
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(__file__))
from quantize_bench import bench_args, evaluate, run  # noqa: E402

MCT = {  # issue 14: MCT 2.2.2 on this machine, 500 calibration images
    ("fashion_cnn", "75%"): "8/8/4/8 bits, 14,608 B, 86.70 %, 30.34 dB",
    ("fashion_cnn", "50%"): "8/4/4/2 bits, 11,824 B, 83.15 %, 19.84 dB",
    ("fashion_mbv2", "75%"): "92.57 % of a 92.55 % float model, 3.4 s",
    ("fashion_mbv2", "50%"): "92.35 % of a 92.55 % float model, 3.4 s",
}


def integer_bits(q):
    """The fewest bits whose integer range (unsigned when no value is negative,
    else two's complement) holds every value of `q`."""
    lo, hi = int(q.min()), int(q.max())
    if lo >= 0:
        return max(1, math.ceil(math.log2(hi + 1)))
    k = 1
    while lo < -(1 << (k - 1)) or hi > (1 << (k - 1)) - 1:
        k += 1
    return k


def stored_kernel_bytes(path):
    """Bytes of the quantized kernels as the QDQ model holds them: per weight
    initializer feeding a DequantizeLinear (not the int32 biases), elements x
    the bits its integers span."""
    m = onnx.load(path)
    inits = {t.name: t for t in m.graph.initializer}
    total = 0.0
    for n in m.graph.node:
        if n.op_type != "DequantizeLinear" or n.input[0] not in inits:
            continue
        q = numpy_helper.to_array(inits[n.input[0]])
        if q.ndim < 2:
            continue
        total += q.size * integer_bits(q) / 8
    return total


def quantize(args, model, calib, out, platform="imx500", extra=()):
    report = out + ".report.json"
    t0 = time.time()
    text, _ = run([args.tpcc, "quantize", "--platform", platform, "--calib", calib, model,
                   "-o", out, "--report", report, "--progress=never", *extra])
    wall = time.time() - t0
    with open(report) as f:
        rep = json.load(f)
    return text, wall, rep


def bits_of(rep):
    mp = rep.get("mixed_precision")
    if not mp:
        return "-"
    out = []
    for layer in mp["layers"]:
        c = next(c for c in layer["candidates"] if c["config"] == layer["chosen"])
        out.append(c["bits"].split()[0][1:] if layer["candidates"] else "?")
    return "/".join(out)


def budget_line(rep, resource):
    for b in rep.get("mixed_precision", {}).get("budgets", []):
        if b["resource"] == resource:
            return b
    return None


def weights_section(args, name, model, calib, tx, ty, budgets=("75%", "50%")):
    w = args.work
    base_out = os.path.join(w, f"{name}.w8a8.onnx")
    _, wall8, _ = quantize(args, model, calib, base_out)
    acc8, sqnr8 = evaluate(args, base_out, tx, ty, model)
    kb8 = stored_kernel_bytes(base_out)
    print(f"\n{name} on imx500: W8A8 {acc8:.2f} %, logit SQNR {sqnr8} dB, kernels {kb8:,.0f} B, "
          f"quantize {wall8:.2f} s")
    print(f"  {'budget':<7} {'bits':<22} {'stored B':>9} {'allowed B':>10} {'accuracy':>9} "
          f"{'vs W8A8':>8} {'SQNR dB':>8} {'search s':>9} {'wall s':>7}  MCT 2.2.2")
    rows = {}
    for b in budgets:
        out = os.path.join(w, f"{name}.{b.rstrip('%')}.onnx")
        _, wall, rep = quantize(args, model, calib, out, extra=("--weights-memory", b))
        acc, sqnr = evaluate(args, out, tx, ty, model)
        used = budget_line(rep, "weights_memory")
        stored = stored_kernel_bytes(out)
        secs = rep["seconds"].get("sensitivity", 0) + rep["seconds"].get("solver", 0)
        ok = "" if stored <= used["allowed"] + 1e-9 else "  OVER BUDGET"
        bits = bits_of(rep)
        if len(bits) > 22:
            bits = bits[:19] + "..."
        print(f"  {b:<7} {bits:<22} {stored:>9,.0f} {used['allowed']:>10,.0f} {acc:>8.2f}% "
              f"{acc - acc8:>+8.2f} {sqnr:>8} {secs:>9.2f} {wall:>7.2f}  "
              f"{MCT.get((name, b), '')}{ok}")
        rows[b] = (acc, acc8, wall)
    return rows


def chain_model(path, layers):
    """Conv 3x3 (8 -> 8, He-initialized, fixed seed) -> Relu, `layers` times."""
    rng = np.random.default_rng(layers)
    nodes, inits, prev = [], [], "x"
    for i in range(layers):
        w = (rng.standard_normal((8, 8, 3, 3)) * math.sqrt(2 / 72)).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"W{i}"),
                  numpy_helper.from_array(np.zeros(8, np.float32), f"B{i}")]
        nodes += [helper.make_node("Conv", [prev, f"W{i}", f"B{i}"], [f"c{i}"], name=f"conv_{i}",
                                   pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu_{i}")]
        prev = f"r{i}"
    g = helper.make_graph(nodes, "chain",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8, 8, 8])],
                          [helper.make_tensor_value_info(prev, TensorProto.FLOAT, ["N", 8, 8, 8])],
                          inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.save(m, path)


def main():
    args, tx, ty = bench_args()
    m = args.models
    fcalib = os.path.join(m, "fashion_calib_x.npy")
    weights_section(args, "fashion_cnn", os.path.join(m, "fashion_cnn.onnx"), fcalib, tx, ty)
    mb = weights_section(args, "fashion_mbv2", os.path.join(m, "fashion_mbv2.onnx"), fcalib,
                         tx, ty)
    for b, limit in (("75%", 0.1), ("50%", 0.3)):
        acc, acc8, wall = mb[b]
        print(f"  target {b}: within {limit} points of W8A8: "
              f"{'MET' if acc8 - acc <= limit + 1e-9 else 'NOT MET'}; end to end "
              f"{3.4 / wall:.1f}x MCT's 3.4 s (target 3x): {'MET' if wall * 3 <= 3.4 else 'NOT MET'}")

    digits = os.path.join(m, "digits_cnn.onnx")
    dcalib, dx, dy = (os.path.join(m, f) for f in
                      ("digits_calib_x.npy", "digits_test_x.npy", "digits_test_y.npy"))
    weights_section(args, "digits_cnn", digits, dcalib, dx, dy)

    # An activation-memory budget with 16-bit candidates, a BOPs budget.
    print("\nother budgets")
    for name, model, calib, x, y, platform, flag, value in (
            ("digits_cnn", digits, dcalib, dx, dy, "imx500_v4", "--activation-memory", "150%"),
            ("fashion_cnn", os.path.join(m, "fashion_cnn.onnx"), fcalib, tx, ty, "imx500",
             "--bops", "50%")):
        out = os.path.join(args.work, f"{name}.{flag.strip('-')}.onnx")
        _, wall, rep = quantize(args, model, calib, out, platform, (flag, value))
        acc, sqnr = evaluate(args, out, x, y, model)
        b = rep["mixed_precision"]["budgets"][0]
        print(f"  {name} {platform} {flag} {value}: used {b['used']:,.0f} of {b['allowed']:,.0f} "
              f"(base {b['base']:,.0f}); bits {bits_of(rep)}; {acc:.2f} %, {sqnr} dB, "
              f"{wall:.2f} s")

    print("\nscaling (Conv 3x3 -> Relu chains, imx500, --weights-memory 50%, 32 images)")
    print(f"  {'layers':>6} {'sensitivity s':>14} {'runs':>7} {'ILP s':>7} {'wall s':>7}")
    for n in (10, 100, 1000):
        path = os.path.join(args.work, f"chain{n}.onnx")
        chain_model(path, n)
        calib = os.path.join(args.work, "chain_calib.npy")
        np.save(calib, np.random.default_rng(0).random((64, 8, 8, 8), np.float32))
        out = os.path.join(args.work, f"chain{n}.q.onnx")
        _, wall, rep = quantize(args, path, calib, out, extra=("--weights-memory", "50%"))
        s = rep["seconds"]
        print(f"  {n:>6} {s['sensitivity']:>14.2f} {len(rep['mixed_precision']['layers']) * 2:>7} "
              f"{s['solver']:>7.2f} {wall:>7.2f}")


if __name__ == "__main__":
    main()
