#!/usr/bin/python3
"""executor_bench.py - float inference throughput: tpcc vs PyTorch eager vs ONNX Runtime.

Models: ../shared/models/fashion_cnn.onnx (3x Conv-ReLU, pools, Gemm; 1x28x28) and a
MobileNetV2-style network (inverted residuals with depthwise 3x3 convolutions, ReLU6,
3x96x96, BatchNorm folded) built and exported here with PyTorch. Each runs at batch 1
and batch 64 on the same number of threads (2 by default) in tpcc (`tpcc eval`), in
PyTorch eager (torch.no_grad, the same architecture, BN fused into the convolutions as
in the ONNX file) and in ONNX Runtime (onnxruntime-node). Prints samples/s, the
ratios, and the fraction of the machine's attainable peak (the best float32 GEMM
rate PyTorch reaches on 2048x2048 matrices) that tpcc reaches.

usage: executor_bench.py --tpcc BIN --node-modules DIR --work DIR --models DIR
"""
import argparse
import os
import re
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import shape_inference
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))


def fashion_torch():
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                         nn.Flatten(), nn.Linear(64, 10))


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hidden = cin * expand
        layers = []
        if expand != 1:
            layers += [nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6()]
        layers += [nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False),
                   nn.BatchNorm2d(hidden), nn.ReLU6(),
                   nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        self.conv = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.conv(x) if self.residual else self.conv(x)


def mobilenet_v2(num_classes=10):
    cfg = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
           (6, 160, 3, 2), (6, 320, 1, 1)]
    layers = [nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU6()]
    cin = 32
    for t, c, n, s in cfg:
        for i in range(n):
            layers.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
            cin = c
    layers += [nn.Conv2d(cin, 1280, 1, bias=False), nn.BatchNorm2d(1280), nn.ReLU6(),
               nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(1280, num_classes)]
    return nn.Sequential(*layers)


def fuse_bn(module):
    """Conv+BN pairs fused (what the ONNX export does), for a fair eager baseline."""
    from torch.nn.utils.fusion import fuse_conv_bn_eval
    for name, child in module.named_children():
        if isinstance(child, nn.Sequential):
            items = list(child)
            out, i = [], 0
            while i < len(items):
                if i + 1 < len(items) and isinstance(items[i], nn.Conv2d) and isinstance(items[i + 1], nn.BatchNorm2d):
                    out.append(fuse_conv_bn_eval(items[i], items[i + 1]))
                    i += 2
                else:
                    out.append(fuse_bn(items[i]))
                    i += 1
            setattr(module, name, nn.Sequential(*out))
        else:
            fuse_bn(child)
    return module


def flops_per_sample(path):
    """2 x multiply-adds of Conv, Gemm and MatMul, from shapes at batch 1."""
    m = onnx.load(path)
    for i in m.graph.input:
        d = i.type.tensor_type.shape.dim
        if d and not d[0].HasField("dim_value"):
            d[0].dim_value = 1
    m = shape_inference.infer_shapes(m)
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
              for v in list(m.graph.value_info) + list(m.graph.output) + list(m.graph.input)}
    for t in m.graph.initializer:
        shapes[t.name] = list(t.dims)
    total = 0
    for n in m.graph.node:
        if n.op_type == "Conv":
            w, out = shapes[n.input[1]], shapes[n.output[0]]
            total += 2 * int(np.prod(out)) * int(np.prod(w[1:]))
        elif n.op_type in ("Gemm", "MatMul"):
            a, out = shapes[n.input[0]], shapes[n.output[0]]
            total += 2 * int(np.prod(out)) * a[-1]
    return total


def tpcc_rate(args, model, batch, samples, shape):
    x = np.random.RandomState(0).uniform(-1, 1, (samples,) + shape).astype(np.float32)
    data = os.path.join(args.work, f"data_{batch}_{'x'.join(map(str, shape))}.npy")
    np.save(data, x)
    best = 0.0
    for _ in range(2):
        out = subprocess.run([args.tpcc, "eval", model, "--data", data, "--batch", str(batch),
                              "--progress=never"], capture_output=True, text=True,
                             env=dict(os.environ, OMP_NUM_THREADS=str(args.threads)))
        if out.returncode:
            sys.exit("tpcc eval failed: " + out.stderr)
        best = max(best, float(re.search(r"throughput\s+([\d.]+)", out.stdout).group(1)))
    return best


def torch_rate(net, batch, samples, shape):
    x = torch.from_numpy(np.random.RandomState(0).uniform(-1, 1, (batch,) + shape).astype(np.float32))
    runs = max(1, samples // batch)
    with torch.no_grad():
        for _ in range(3):
            net(x)
        best = 0.0
        for _ in range(2):
            t0 = time.perf_counter()
            for _ in range(runs):
                net(x)
            best = max(best, runs * batch / (time.perf_counter() - t0))
    return best


def ort_rate(args, model, batch, samples):
    out = subprocess.run(["node", os.path.join(HERE, "ort_bench.js"), model, str(batch), str(samples),
                          str(args.threads)], capture_output=True, text=True,
                         env=dict(os.environ, NODE_PATH=args.node_modules))
    if out.returncode:
        return None
    return float(out.stdout.strip())


def gemm_peak():
    a = torch.randn(2048, 2048)
    b = torch.randn(2048, 2048)
    best = 0.0
    for _ in range(5):
        t0 = time.perf_counter()
        torch.mm(a, b)
        best = max(best, 2 * 2048 ** 3 / (time.perf_counter() - t0))
    return best


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tpcc", required=True)
    p.add_argument("--node-modules", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--models", required=True)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    mobilenet = fuse_bn(mobilenet_v2().eval())
    mpath = os.path.join(args.work, "mobilenet_v2_96.onnx")
    torch.onnx.export(mobilenet_v2().eval(), torch.zeros(1, 3, 96, 96), mpath, input_names=["input"],
                      output_names=["logits"], dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}},
                      opset_version=13)
    cases = [("fashion_cnn", os.path.join(args.models, "fashion_cnn.onnx"), fashion_torch().eval(), (1, 28, 28)),
             ("mobilenet_v2_96", mpath, mobilenet, (3, 96, 96))]
    peak = gemm_peak()
    print(f"threads {args.threads}; attainable peak (PyTorch sgemm 2048^3): {peak / 1e9:.1f} GFLOP/s")
    print(f"{'model':<16} {'batch':>5} {'tpcc/s':>9} {'torch/s':>9} {'ort/s':>9} {'tpcc/torch':>10} "
          f"{'tpcc/ort':>9} {'GFLOP/s':>8} {'of peak':>7}")
    verdict = True
    for name, path, net, shape in cases:
        flops = flops_per_sample(path)
        for batch, samples in ((1, 200), (64, 1024)):
            # tpcc's rate includes its one-time set-up (oneDNN primitives, weight
            # reorders), which PyTorch's warm-up runs leave out: 4x the samples amortize it.
            t = tpcc_rate(args, path, batch, 4 * samples, shape)
            pt = torch_rate(net, batch, samples, shape)
            o = ort_rate(args, path, batch, samples)
            gf = t * flops / 1e9
            print(f"{name:<16} {batch:>5} {t:>9.1f} {pt:>9.1f} {o or float('nan'):>9.1f} {t / pt:>10.2f} "
                  f"{(t / o) if o else float('nan'):>9.2f} {gf:>8.2f} {100 * gf * 1e9 / peak:>6.1f}%")
            if batch == 64 and t < pt:
                verdict = False
    print("target (tpcc >= PyTorch eager at batch 64):", "MET" if verdict else "NOT MET")


if __name__ == "__main__":
    main()
