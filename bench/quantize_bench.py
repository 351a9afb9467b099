#!/usr/bin/python3
"""quantize_bench.py - accuracy, logit SQNR and speed of `tpcc quantize`.

fashion_cnn (Fashion-MNIST, float 86.44 % on the 10,000 test images) is quantized
with its 500-image calibration set for imx500, tflite, qnnpack and default at W8A8 and
with 4-bit weights; each QDQ model is evaluated on the full test set (accuracy, logit
SQNR against the float model, through `tpcc eval`). digits_cnn is quantized for
every platform with its 200 calibration digits (imx500_v4 also with its last Gemm's
16-bit-output candidate, `--choose`) and its logit SQNR measured on the 450
held-out digits and on the calibration digits. Then `tpcc quantize` is timed (calibration, thresholds, weights and
corrections, measuring; wall and peak memory) with 100, 500 and 5,000 calibration
images (the 5,000 from the Fashion-MNIST training set).

usage: quantize_bench.py --tpcc BIN --work DIR --models DIR
"""
import argparse
import gzip
import os
import re
import subprocess
import sys
import time

import numpy as np

FASHION = "/usr/share/datasets/fashion-mnist/"


def idx(name, offset, shape):
    with gzip.open(os.path.join(FASHION, name)) as f:
        return np.frombuffer(f.read(), np.uint8, offset=offset).reshape(shape)


def run(cmd):
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        sys.exit(" ".join(cmd) + " failed:\n" + p.stderr)
    return p.stdout, time.time() - t0


def evaluate(args, model, x, y, ref):
    labels = ["--labels", y] if y else []
    out, _ = run([args.tpcc, "eval", model, "--data", x, *labels, "--reference", ref,
                  "--progress=never"])
    acc = float(re.search(r"accuracy\s+([\d.]+) %", out).group(1)) if y else None
    sqnr = re.search(r"SQNR `[^`]+`\s+([\d.]+|inf)", out).group(1)
    return acc, sqnr


def kernels_at(work, bits, base="imx500"):
    """A .tpc file in `work`: `base` (imx500, or its LUT variant imx500_lut) with
    every Conv and FullyConnected kernel at `bits` bits (its linear<bits> config),
    8-bit activations."""
    path = os.path.join(work, f"w{bits}_{base}.tpc")
    with open(path, "w") as f:
        f.write(f'import "imx500"\nplatform {base}_w{bits} extends {base} {{\n'
                f"  override opset Conv, FullyConnected : [linear{bits}]\n}}\n")
    return path


def measured(cmd):
    """Runs `cmd`: (stdout, wall seconds, the child's own peak RSS in MiB); exits
    with its stderr when it fails."""
    # os.wait4 gives this child's own peak memory (RUSAGE_CHILDREN is the
    # maximum over every child so far).
    t0 = time.time()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out_fd, err_fd = proc.stdout, proc.stderr
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.time() - t0
    text, err = out_fd.read(), err_fd.read()
    if os.waitstatus_to_exitcode(status):
        sys.exit(" ".join(cmd) + " failed:\n" + err)
    return text, wall, usage.ru_maxrss / 1024


def quantize(args, platform, model, calib, out, recipe=None, extra=()):
    cmd = [args.tpcc, "quantize", "--platform", platform, "--calib", calib, model, "-o", out,
           "--progress=never", *extra]
    if recipe:
        cmd += ["--recipe", recipe]
    text, wall, peak = measured(cmd)
    times = re.search(r"time: calibration ([\d.]+) s, thresholds ([\d.]+) s, weights and "
                      r"corrections ([\d.]+) s, measuring ([\d.]+) s", text).groups()
    return [float(t) for t in times], wall, peak


def bench_args():
    """--tpcc, --work and --models, and the Fashion-MNIST test set written into
    --work as .npy: (args, images, labels)."""
    p = argparse.ArgumentParser()
    p.add_argument("--tpcc", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--models", required=True)
    args = p.parse_args()
    tx, ty = (os.path.join(args.work, f) for f in ("fashion_test_x.npy", "fashion_test_y.npy"))
    np.save(tx, idx("t10k-images-idx3-ubyte.gz", 16, (-1, 1, 28, 28)).astype(np.float32) / 255)
    np.save(ty, idx("t10k-labels-idx1-ubyte.gz", 8, (-1,)).astype(np.int64))
    return args, tx, ty


def main():
    args, tx, ty = bench_args()
    w = args.work
    train = idx("train-images-idx3-ubyte.gz", 16, (-1, 1, 28, 28))
    fashion = os.path.join(args.models, "fashion_cnn.onnx")
    calib500 = os.path.join(args.models, "fashion_calib_x.npy")
    w4 = os.path.join(w, "w4.tpc")
    with open(w4, "w") as f:
        f.write("recipe w4 { weights_bits: 4 }\n")

    facc, _ = evaluate(args, fashion, tx, ty, fashion)
    print(f"fashion_cnn float accuracy: {facc:.2f} % (10,000 test images)")
    print(f"{'platform':<10} {'weights':>7} {'accuracy':>9} {'vs float':>9} {'logit SQNR':>11}")
    worst8 = 0.0
    for platform in ("imx500", "tflite", "qnnpack", "default"):
        for tag, recipe in (("8-bit", None), ("4-bit", w4)):
            out = os.path.join(w, f"fashion.{platform}.{tag}.onnx")
            quantize(args, platform, fashion, calib500, out, recipe)
            acc, sqnr = evaluate(args, out, tx, ty, fashion)
            if tag == "8-bit":
                worst8 = max(worst8, facc - acc)
            print(f"{platform:<10} {tag:>7} {acc:>8.2f}% {acc - facc:>+8.2f} {sqnr:>8} dB")
    print(f"target (W8A8 within 0.3 points of float): {'MET' if worst8 <= 0.3 else 'NOT MET'}")

    digits = os.path.join(args.models, "digits_cnn.onnx")
    dcalib, dx, dy = (os.path.join(args.models, f) for f in
                      ("digits_calib_x.npy", "digits_test_x.npy", "digits_test_y.npy"))
    print(f"\ndigits_cnn W8A8 (float 99.33 %), logit SQNR on the 450 held-out / 200 calibration "
          f"digits (peers: about 41-43 dB)")
    a16 = ["--choose", "/f/f.11/Gemm=FullyConnected.3"]
    for platform, extra, tag in (("imx500", (), ""), ("imx500_v4", (), ""),
                                 ("imx500_v4", a16, " + 16-bit logits"), ("tflite", (), ""),
                                 ("qnnpack", (), ""), ("default", (), "")):
        out = os.path.join(w, "digits.q.onnx")
        quantize(args, platform, digits, dcalib, out, extra=extra)
        acc, sqnr = evaluate(args, out, dx, dy, digits)
        _, csqnr = evaluate(args, out, dcalib, None, digits)
        print(f"  {platform + tag:<27} accuracy {acc:.2f} %  SQNR {sqnr} / {csqnr} dB")

    print(f"\n{'calibration':>11} {'calibrate':>9} {'thresholds':>10} {'weights':>8} {'measure':>8} "
          f"{'wall':>7} {'peak MB':>8}")
    for n in (100, 500, 5000):
        calib = os.path.join(w, f"calib{n}.npy")
        np.save(calib, train[:n].astype(np.float32) / 255)
        times, wall, peak = quantize(args, "imx500", fashion, calib, os.path.join(w, "t.onnx"))
        print(f"{n:>11} {times[0]:>8.2f}s {times[1]:>9.2f}s {times[2]:>7.2f}s {times[3]:>7.2f}s "
              f"{wall:>6.2f}s {peak:>8.0f}")


if __name__ == "__main__":
    main()
