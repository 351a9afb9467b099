#!/usr/bin/python3
"""formats_bench.py - number formats (issue 48) on fashion_vit.

fashion_vit (../shared/models; float 85.35 % on the 10,000 Fashion-MNIST test images) is
quantized weight-only (activations float) on every MatMul and Gemm weight with its 500
calibration images: 4-bit integers per output channel, in blocks of 32 along K
(float32 and float16 scales, MatMulNBits' form), and 8-bit integers in blocks of 32
with E8M0 scales (MXINT8 weights). Each row: test accuracy, the change from float and
the logit SQNR against the float model.

Targets (issue 48): 4-bit weight-only blocks of 32 with GPTQ's groups recover at least
2/3 of round-to-nearest's loss; second-order rounding within 3 s on fashion_vit.

usage: formats_bench.py --tpcc BIN --work DIR --models DIR
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from quantize_bench import bench_args, evaluate, run  # noqa: E402

FLOAT = 85.35  # shared/models/README.md

# (label, the weight attr)
FORMATS = [
    ("W4 per channel", "{ method: symmetric, bits: 4, per_channel: true }"),
    ("W4 blocks of 32", "{ method: symmetric, bits: 4, block: 32 }"),
    ("W4 blocks of 32, float16 scales", "{ method: symmetric, bits: 4, block: 32, scale: float16 }"),
    ("W8 blocks of 32, e8m0 scales (MXINT8)",
     "{ method: symmetric, bits: 8, block: 32, scale: e8m0 }"),
]


def spec(work, k, attr):
    path = os.path.join(work, f"fmt{k}.tpc")
    with open(path, "w") as f:
        f.write('import "onnx"\n'
                f"platform fmt{k} {{\n"
                "  config float_acts = { activation: { method: uniform, bits: 8, quantize: false } }\n"
                f"  config w = float_acts with {{ weights.kernel: {attr} }}\n"
                "  default [float_acts]\n"
                "  opset FullyConnected : [w]\n"
                "}\n"
                f"capabilities fmt{k}_onnx = fmt{k} on onnx {{\n"
                "  FullyConnected <- Gemm, MatMul\n"
                "}\n")
    return path


def main():
    args, tx, ty = bench_args()
    model = os.path.join(args.models, "fashion_vit.onnx")
    print(f"fashion_vit (float {FLOAT} %), weight-only on every MatMul and Gemm, 500 "
          "calibration images, 10,000 test images")
    print(f"  {'':44} {'accuracy':>9} {'vs float':>6} {'logits':>10} {'quantize':>9}")
    for k, (label, attr) in enumerate(FORMATS):
        for flags, how in (([], "nearest"), (["--gptq", "second_order"], "second order")):
            out = os.path.join(args.work, "q.onnx")
            _, wall = run([args.tpcc, "quantize", "--platform", spec(args.work, k, attr), model,
                           "--calib", os.path.join(args.models, "fashion_calib_x.npy"), "-o",
                           out, "--progress=never", *flags])
            acc, sqnr = evaluate(args, out, tx, ty, model)
            print(f"  {label + ', ' + how:44} {acc:7.2f} % {acc - FLOAT:+6.2f} {sqnr:>7} dB "
                  f"{wall:7.1f} s", flush=True)


if __name__ == "__main__":
    main()
