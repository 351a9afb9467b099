#!/usr/bin/python3
"""gptq_bench.py - GPTQ (`tpcc quantize --gptq soft_rounding|ste|second_order`)
against issue 17's targets.

fashion_mbv2 (float 92.46 % on the 10,000 Fashion-MNIST test images) is quantized
with its 500 calibration images for imx500 with every kernel at 4 bits, at 2 bits
(`override opset Conv, FullyConnected : [linear4]` / `[linear2]`) and as shipped
(8-bit kernels), with plain PTQ, second-order rounding, and gradient GPTQ (soft
rounding and STE, 20 epochs as MCT's figure): test accuracy, the share of PTQ's loss
recovered, wall time and seconds per epoch. LUT kernels (imx500_lut at 4 and 2 bits)
with PTQ and second-order rounding. digits_cnn at 4 bits the same (accuracy on
its 450 held-out digits and logit SQNR). Then the time as the calibration set grows
(100 / 500 / 5,000 Fashion-MNIST training images) and across models of growing size
(digits_cnn, fashion_cnn, fashion_mbv2, the zoo's SqueezeNet on random CIFAR-sized
inputs). MCT 2.2.2's GPTQ figures from the issue are printed beside ours.

usage: gptq_bench.py --tpcc BIN --work DIR --models DIR
"""
import json
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from quantize_bench import bench_args, idx, kernels_at, measured, run  # noqa: E402

FLOAT = 92.46  # shared/models/README.md


def quantize(args, platform, model, calib, out, gptq=(), batch=None):
    """Runs tpcc quantize with the `gptq` flags: wall, peak MB and the report's gptq
    section ({} without)."""
    report = out + ".json"
    cmd = [args.tpcc, "quantize", "--platform", platform, "--calib", calib, model, "-o", out,
           "--report", report, "--progress=never", *gptq]
    if batch:
        cmd += ["--batch", str(batch)]
    _, wall, peak = measured(cmd)
    with open(report) as f:
        rep = json.load(f)
    return wall, peak, rep.get("gptq", {})


SECOND = ("--gptq", "second_order")
EPOCHS = 20  # MCT's figure in the issue: 20 epochs, 29 s


def trained(method, epochs=EPOCHS):
    return ("--gptq", method, "--gptq-epochs", str(epochs))


def per_epoch(g):
    return g["train_seconds"] / max(1, g["epochs"])


def evaluate(args, model, x, y, ref):
    out, _ = run([args.tpcc, "eval", model, "--data", x, "--labels", y, "--reference", ref,
                  "--progress=never"])
    acc = float(re.search(r"accuracy\s+([\d.]+) %", out).group(1))
    sqnr = re.search(r"SQNR `[^`]+`\s+([\d.]+|inf)", out).group(1)
    return acc, sqnr


def main():
    args, tx, ty = bench_args()
    w = args.work
    mbv2 = os.path.join(args.models, "fashion_mbv2.onnx")
    calib = os.path.join(args.models, "fashion_calib_x.npy")
    print("fashion_mbv2 (float 92.46 %), 500 calibration images; recovered = share of PTQ's "
          f"loss won back; soft rounding and STE: {EPOCHS} epochs")
    print(f"{'kernels':8} {'method':14} {'accuracy':>9} {'recovered':>10} {'quantize s':>11} "
          f"{'s/epoch':>8}")
    for name, platform in (("4-bit", kernels_at(w, 4)), ("2-bit", kernels_at(w, 2)),
                           ("8-bit", "imx500")):
        a0 = None
        for method, flags in (("PTQ", ()), ("second_order", SECOND),
                              ("soft_rounding", trained("soft_rounding")),
                              ("ste", trained("ste"))):
            out = os.path.join(w, f"{method}_{name}.onnx")
            wall, _, g = quantize(args, platform, mbv2, calib, out, flags)
            acc, _ = evaluate(args, out, tx, ty, mbv2)
            a0 = acc if a0 is None else a0
            lost = FLOAT - a0
            rec = (f"{100 * (acc - a0) / lost:9.0f}%" if lost > 0.05 and method != "PTQ"
                   else f"{'-':>10}")
            epoch = f"{per_epoch(g):7.2f}s" if "epochs" in g else f"{'-':>8}"
            print(f"{name:8} {method:14} {acc:8.2f}% {rec} {wall:10.2f}s {epoch}", flush=True)
    print("targets: both methods recover at least 2/3 of PTQ's 4-bit loss; second order under "
          "2 s end to end; gradient GPTQ 5x faster per epoch than MCT; at 8 bits no loss "
          "against PTQ. MCT 2.2.2 GPTQ (issue 17): 0.2 of 3.0 points in 20 epochs (29 s, "
          "1.45 s/epoch), 0.6 in 100 epochs (82 s)")

    print("\nLUT kernels (imx500_lut: lut_sym tables of 2^bits entries per channel): PTQ and "
          "second order (tables refitted after rounding)")
    for bits in (4, 2):
        accs = []
        for method, flags in (("PTQ", ()), ("second_order", SECOND)):
            out = os.path.join(w, f"lut{bits}_{method}.onnx")
            wall, _, g = quantize(args, kernels_at(w, bits, "imx500_lut"), mbv2, calib, out,
                                  flags)
            acc, sqnr = evaluate(args, out, tx, ty, mbv2)
            accs.append(acc)
            refit = (f", {sum(l['lut']['refitted'] for l in g['layers'])} of "
                     f"{sum(l['lut']['tables'] for l in g['layers'])} tables refitted"
                     if g else "")
            print(f"  {bits}-bit {method:14} {acc:6.2f} %, logit SQNR {sqnr} dB, quantize "
                  f"{wall:.2f} s{refit}", flush=True)

    digits = os.path.join(args.models, "digits_cnn.onnx")
    dcal = os.path.join(args.models, "digits_calib_x.npy")
    dx, dy = (os.path.join(args.models, f) for f in ("digits_test_x.npy", "digits_test_y.npy"))
    print("\ndigits_cnn, 4-bit kernels, 200 calibration digits (450 held-out digits)")
    for method, flags in (("PTQ", ()), ("second_order", SECOND),
                          ("soft_rounding", trained("soft_rounding", 100)),
                          ("ste", trained("ste", 100))):
        out = os.path.join(w, f"digits_{method}.onnx")
        quantize(args, kernels_at(w, 4), digits, dcal, out, flags)
        acc, sqnr = evaluate(args, out, dx, dy, digits)
        print(f"  {method:14} accuracy {acc:.2f} %, logit SQNR {sqnr} dB"
              + (" (100 epochs)" if flags and "--gptq-epochs" in flags else ""))

    print("\ntime with the calibration set (fashion_mbv2, 4-bit kernels)")
    train = idx("train-images-idx3-ubyte.gz", 16, (-1, 1, 28, 28))
    for n in (100, 500, 5000):
        path = os.path.join(w, f"calib{n}.npy")
        np.save(path, train[:n].astype(np.float32) / np.float32(255))
        w4 = kernels_at(w, 4)
        p0, _, _ = quantize(args, w4, mbv2, path, os.path.join(w, "t0.onnx"))
        wall, peak, g = quantize(args, w4, mbv2, path, os.path.join(w, "t.onnx"), SECOND)
        gw, gpeak, gg = quantize(args, w4, mbv2, path, os.path.join(w, "tg.onnx"),
                                 trained("soft_rounding", 2))
        print(f"  {n:5d} images: PTQ {p0:6.2f} s; second order {wall:6.2f} s (rounding "
              f"{g['seconds']:.2f} s), peak {peak:.0f} MB; soft rounding {per_epoch(gg):.2f} "
              f"s/epoch, 2 epochs {gw:.2f} s, peak {gpeak:.0f} MB", flush=True)

    print("\ntime with the model (imx500, 8-bit kernels)")
    zoo = os.path.join(args.models, "zoo", "squeezenet_cifar10.onnx")
    rng = np.random.default_rng(0)
    sq = os.path.join(w, "cifar_random.npy")
    np.save(sq, rng.random((200, 32, 32, 3), dtype=np.float32))
    for name, model, data in (("digits_cnn", digits, dcal),
                              ("fashion_cnn", os.path.join(args.models, "fashion_cnn.onnx"), calib),
                              ("fashion_mbv2", mbv2, calib), ("squeezenet_cifar10", zoo, sq)):
        wall, _, g = quantize(args, "imx500", model, data, os.path.join(w, "m.onnx"), SECOND)
        weights = sum(l["rows"] * l["columns"] for l in g["layers"])
        _, _, gg = quantize(args, "imx500", model, data, os.path.join(w, "mg.onnx"),
                            trained("soft_rounding", 2))
        print(f"  {name:20} {len(g['layers']):3d} layers, {weights:8d} weights: second order "
              f"{g['seconds']:.2f} s (quantize {wall:.2f} s); soft rounding "
              f"{per_epoch(gg):.2f} s/epoch", flush=True)


if __name__ == "__main__":
    main()
