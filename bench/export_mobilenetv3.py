#!/usr/bin/python3
"""export_mobilenetv3.py - a real MobileNetV3-small, trained on Fashion-MNIST, as ONNX.

torchvision's mobilenet_v3_small (num_classes=10; its stem conv takes 1 channel at
stride 1 for 1x28x28 inputs; inverted residuals, depthwise 3x3/5x5, ReLU and
HardSwish, squeeze-and-excitation with hardsigmoid gates) is trained on CPU for a
fixed number of steps (AdamW, cosine schedule; seeded), its BatchNorm statistics
re-estimated, and exported with torch.onnx.export at opset 13 (BatchNorm folded
into the convolutions): nn.Hardswish is written HardSigmoid + Mul(x, .), an SE
gate Mul(x, HardSigmoid(conv(...))). Prints the float test accuracy, the training
time and how many HardSwish products and SE gates the graph has.

Needs Debian's python3-torch and python3-torchvision, and dataset-fashion-mnist.
usage: /usr/bin/python3 bench/export_mobilenetv3.py --out model.onnx [--calib-out calib.npy]
           [--steps 1000]   (about 7 minutes on 2 idle cores)
"""
import argparse
import gzip
import math
import time

import numpy as np
import onnx
import torch
import torch.nn as nn
import torchvision

FASHION = "/usr/share/datasets/fashion-mnist/"


def idx(name, offset, shape):
    with gzip.open(FASHION + name) as f:
        return np.frombuffer(f.read(), np.uint8, offset=offset).reshape(shape)


def images(name):
    return torch.from_numpy(idx(name, 16, (-1, 1, 28, 28)).astype(np.float32) / np.float32(255))


def labels(name):
    return torch.from_numpy(idx(name, 8, (-1,)).astype(np.int64))


def count_products(path):
    """(HardSwish products Mul(x, HardSigmoid(x)), other Mul(y, HardSigmoid(.)): SE gates)."""
    g = onnx.load(path).graph
    producer = {o: n for n in g.node for o in n.output}
    hswish = gates = 0
    for n in g.node:
        if n.op_type != "Mul":
            continue
        for a, b in (n.input, n.input[::-1]):
            p = producer.get(b)
            if p is not None and p.op_type == "HardSigmoid":
                hswish += p.input[0] == a
                gates += p.input[0] != a
                break
    return hswish, gates


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--calib-out")
    p.add_argument("--steps", type=int, default=1000)
    args = p.parse_args()
    torch.manual_seed(0)
    np.random.seed(0)
    torch.set_num_threads(2)

    xtr, ytr = images("train-images-idx3-ubyte.gz"), labels("train-labels-idx1-ubyte.gz")
    xte, yte = images("t10k-images-idx3-ubyte.gz"), labels("t10k-labels-idx1-ubyte.gz")
    model = torchvision.models.mobilenet_v3_small(num_classes=10)
    model.features[0][0] = nn.Conv2d(1, 16, 3, 1, 1, bias=False)
    decay = [p for p in model.parameters() if p.ndim > 1]
    rest = [p for p in model.parameters() if p.ndim <= 1]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.02},
                             {"params": rest, "weight_decay": 0}], lr=3e-3)
    t0, step, batch, warm = time.time(), 0, 128, 50
    model.train()
    while step < args.steps:
        perm = torch.randperm(len(xtr))
        for i in range(0, len(xtr) - batch + 1, batch):
            if step == args.steps:
                break
            lr = 3e-3 * (step / warm if step < warm else
                         0.5 * (1 + math.cos(math.pi * (step - warm) / (args.steps - warm))))
            for g in opt.param_groups:
                g["lr"] = lr
            b = perm[i:i + batch]
            loss = nn.functional.cross_entropy(model(xtr[b]), ytr[b])
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            if step % 100 == 0:
                print(f"  step {step}/{args.steps}  loss {loss.item():.3f}  "
                      f"{time.time() - t0:.0f} s", flush=True)
    # torchvision's BatchNorm momentum is 0.01: re-estimate the statistics of the
    # final weights (cumulative average over 40 batches) before exporting.
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.reset_running_stats()
            m.momentum = None
    with torch.no_grad():
        for i in range(40):
            model(xtr[i * 256:(i + 1) * 256])
    train_time = time.time() - t0
    model.eval()
    with torch.no_grad():
        pred = torch.cat([model(xte[i:i + 1000]) for i in range(0, 10000, 1000)]).argmax(1)
    acc = float((pred == yte).float().mean()) * 100
    torch.onnx.export(model, torch.zeros(1, 1, 28, 28), args.out, opset_version=13,
                      input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}},
                      do_constant_folding=True)
    if args.calib_out:  # the first 500 training images
        np.save(args.calib_out, xtr[:500].numpy())
    ops = {}
    for n in onnx.load(args.out).graph.node:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1
    hswish, gates = count_products(args.out)
    print(f"mobilenet_v3_small: {step} steps of {batch} in {train_time:.0f} s, "
          f"float test accuracy {acc:.2f} % (10,000 images)")
    print("ops: " + ", ".join(f"{k} {v}" for k, v in sorted(ops.items())))
    print(f"HardSwish as Mul(x, HardSigmoid(x)): {hswish}; "
          f"SE gates Mul(x, HardSigmoid(y)): {gates}")


if __name__ == "__main__":
    main()
