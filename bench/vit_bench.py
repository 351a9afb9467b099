#!/usr/bin/python3
"""vit_bench.py - the Fashion-MNIST vision transformer against issue 47's targets.

fashion_vit (../shared/models: 4 pre-norm encoder blocks, LayerNormalization, exact
GELU, opset 17; float 85.35 % on the 10,000 test images) is quantized with its 500
calibration images for imx500, imx500_v4 and ort_cpu, W8A8 (every MatMul and Gemm at
8 bits, attention included), with each platform's default recipe, with
`smooth_quant` on top, and with `activation_threshold: [mse, no_clipping, kl]` (each
method tried, the one whose logits keep the most signal on the calibration images kept:
what takes ort_cpu past 34 dB, since clipping the attention scores and the GELU's inputs
costs the logits more than MSE on each tensor says); then imx500_v4 with `--min-sqnr
34` (16-bit outputs where the platform offers them, every kernel at 8 bits), then W4A8
for imx500 (every kernel at 4 bits: the recipe
override `weights_bits: 4`) with plain PTQ and `--gptq second_order`. Each row: test
accuracy and the logit SQNR against the float model. The same model exported at
opset 13 (LayerNorm spelled out as nine ops, which the stdlib's LayerNormSpelled
composite plans as LayerNormalization) is measured too when Debian's PyTorch
(python3-torch) can export it from fashion_vit.pt.

Targets (issue 47): W8A8 at least 34 dB and within 0.2 points of float, from both
exports, for all three platforms; W4A8 with second-order GPTQ within 0.5 points.
MCT 2.2.2's PTQ with its IMX500 TPC keeps 33.0 dB on a comparable ViT (the issue).

usage: vit_bench.py --tpcc BIN --work DIR --models DIR
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from quantize_bench import bench_args, evaluate, run  # noqa: E402

FLOAT = 85.35  # shared/models/README.md
DEFAULTS = {"imx500": "pot_defaults", "imx500_v4": "pot_defaults", "ort_cpu": "uniform_defaults"}


def recipe(work, name, base, body):
    path = os.path.join(work, name + ".tpc")
    with open(path, "w") as f:
        f.write(f'import "recipes"\nrecipe {name} extends {base} {{\n  {body}\n}}\n')
    return path


def export13(args):
    """fashion_vit exported at opset 13 with Debian's PyTorch, or None."""
    out = os.path.join(args.work, "fashion_vit_op13.onnx")
    code = (
        "import sys, torch\n"
        f"sys.path.insert(0, {args.models!r})\n"
        "import train_fashion_vit as t\n"
        f"m = t.ViT(); m.load_state_dict(torch.load({os.path.join(args.models, 'fashion_vit.pt')!r}))\n"
        "m.eval()\n"
        f"torch.onnx.export(m, torch.zeros(1, 1, 28, 28), {out!r}, opset_version=13,\n"
        "    input_names=['input'], output_names=['logits'],\n"
        "    dynamic_axes={'input': {0: 'N'}, 'logits': {0: 'N'}}, do_constant_folding=True)\n")
    r = subprocess.run(["/usr/bin/python3", "-c", code], capture_output=True, text=True)
    return out if r.returncode == 0 else None


def row(args, label, model, platform, flags, tx, ty):
    out = os.path.join(args.work, "q.onnx")
    _, wall = run([args.tpcc, "quantize", "--platform", platform, model, "--calib",
                   os.path.join(args.models, "fashion_calib_x.npy"), "-o", out,
                   "--progress=never", *flags])
    acc, sqnr = evaluate(args, out, tx, ty, model)
    print(f"  {label:44} {acc:7.2f} % {acc - FLOAT:+6.2f} {sqnr:>7} dB {wall:7.1f} s", flush=True)


def main():
    args, tx, ty = bench_args()
    exports = [("opset 17", os.path.join(args.models, "fashion_vit.onnx"))]
    op13 = export13(args)
    exports += [("opset 13", op13)] if op13 else []
    print(f"fashion_vit (float {FLOAT} %), 500 calibration images, 10,000 test images"
          + ("" if op13 else "; opset-13 export skipped (no python3-torch)"))
    print(f"  {'':44} {'accuracy':>9} {'vs float':>6} {'logits':>10} {'quantize':>9}")
    for name, model in exports:
        for p in ("imx500", "imx500_v4", "ort_cpu"):
            row(args, f"{name} {p} W8A8", model, p, [], tx, ty)
            sq = recipe(args.work, "smooth", DEFAULTS[p], "smooth_quant: { enabled: true }")
            row(args, f"{name} {p} W8A8 + smooth_quant", model, p, ["--recipe", sq], tx, ty)
            ch = recipe(args.work, "choose", DEFAULTS[p],
                        "activation_threshold: [mse, no_clipping, kl]")
            row(args, f"{name} {p} W8A8, threshold chosen", model, p,
                ["--recipe", ch], tx, ty)
    # imx500_v4 offers 16-bit outputs (MCT's v4 facts: the linear ops, Add/Sub/Mul,
    # Concatenate, the activations): --min-sqnr widens the ones the measurement asks
    # for; kernels stay 8-bit.
    row(args, "opset 17 imx500_v4 W8, --min-sqnr 34", exports[0][1], "imx500_v4",
        ["--min-sqnr", "34"], tx, ty)
    w4 = recipe(args.work, "w4", "pot_defaults", "weights_bits: 4")
    model = exports[0][1]
    row(args, "opset 17 imx500 W4A8", model, "imx500", ["--recipe", w4], tx, ty)
    row(args, "opset 17 imx500 W4A8 --gptq second_order", model, "imx500",
        ["--recipe", w4, "--gptq", "second_order"], tx, ty)
    print("targets: W8A8 >= 34 dB and within 0.2 points of float, both exports, all three "
          "platforms; W4A8 with second-order GPTQ within 0.5 points. MCT 2.2.2 PTQ (IMX500 "
          "TPC) on a comparable ViT: 33.0 dB (issue 47)")


if __name__ == "__main__":
    main()
