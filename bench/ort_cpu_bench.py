#!/usr/bin/python3
"""ort_cpu_bench.py - which ONNX Runtime platform for which deployment CPU.

fashion_cnn and fashion_mbv2 (the 10,000 Fashion-MNIST test images) and digits_cnn
(the 450 held-out digits) are quantized for ort_cpu (full-range int8 kernels) and
ort_cpu_no_vnni (7-bit kernels), and imx500 for comparison, and evaluated three ways
with `tpcc eval`: the float QDQ model, and its integer groups computed as ONNX
Runtime's kernels on an x86-64 CPU with VNNI (`--ort-cpu vnni`) and without
(`--ort-cpu no-vnni`, int16 pairs that saturate). Accuracy and logit SQNR against the
float model.

usage: ort_cpu_bench.py --tpcc BIN --work DIR --models DIR   (bench/run_quantize.sh --ort-cpu)
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from quantize_bench import bench_args, quantize  # noqa: E402


def evaluate(args, model, x, y, ref, extra=()):
    p = subprocess.run([args.tpcc, "eval", model, "--data", x, "--labels", y, "--reference", ref,
                        "--progress=never", *extra], capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"tpcc eval {model} failed:\n{p.stderr}")
    acc = float(re.search(r"accuracy\s+([\d.]+) %", p.stdout).group(1))
    sqnr = re.search(r"SQNR `[^`]+`\s+([\d.]+|inf)", p.stdout).group(1)
    return acc, sqnr


def main():
    args, tx, ty = bench_args()
    w, m = args.work, args.models
    sets = [("fashion_cnn", "fashion_calib_x.npy", tx, ty),
            ("fashion_mbv2", "fashion_calib_x.npy", tx, ty),
            ("digits_cnn", "digits_calib_x.npy", os.path.join(m, "digits_test_x.npy"),
             os.path.join(m, "digits_test_y.npy"))]
    print(f"{'model':<13} {'platform':<16} {'float QDQ':>18} {'ORT with VNNI':>18} "
          f"{'ORT without VNNI':>18}   (accuracy %, logit SQNR dB)")
    for name, calib, x, y in sets:
        model = os.path.join(m, name + ".onnx")
        facc, _ = evaluate(args, model, x, y, model)
        print(f"{name:<13} {'(float)':<16} {facc:>8.2f}")
        for platform in ("ort_cpu", "ort_cpu_no_vnni", "imx500"):
            out = os.path.join(w, f"{name}.{platform}.onnx")
            quantize(args, platform, model, os.path.join(m, calib), out)
            cells = []
            for extra in ((), ("--ort-cpu", "vnni"), ("--ort-cpu", "no-vnni")):
                acc, sqnr = evaluate(args, out, x, y, model, extra)
                cells.append(f"{acc:>7.2f} {sqnr:>6} dB")
            print(f"{'':<13} {platform:<16} " + " ".join(f"{c:>18}" for c in cells))


if __name__ == "__main__":
    main()
