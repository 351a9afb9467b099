#!/usr/bin/python3
"""PyTorch autograd's gradients of an ONNX model: the reference tpcc's backward
pass is checked against (test/unit/GradTest.cpp, Grad.SharedModelsAgreeWithPyTorch).

usage: torch_grad.py MODEL.onnx X.npy DY.npy OUTDIR

Evaluates the model's nodes in order with torch operations (the operators of
the shared models and of MobileNet/ResNet-style CNNs), takes L = sum(DY * Y)
for the first output and writes dL/dW for every float initializer with more
than one element, and dL/dX, to OUTDIR/<index>.npy in initializer order
(x.npy for the input). Exit 77 when PyTorch is missing, 2 on an operator it
does not know."""
import sys

import numpy as np
import onnx
from onnx import numpy_helper

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("python3-torch is not installed", file=sys.stderr)
    sys.exit(77)


def attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def pads2d(p, n):
    """ONNX pads (begin..., end...) as symmetric per-dimension pads, or None."""
    if not p:
        return [0] * n
    if list(p[:n]) != list(p[n:]):
        return None
    return list(p[:n])


def evaluate(graph, env, hook=None):
    """Runs the nodes of `graph` in order on `env` (name -> tensor: the inputs and
    initializers) and returns `env` with every node output added. `hook(name, y)`,
    when given, may replace each node output as it is computed (fake quantization
    in bench/finetune_bench.py)."""
    for n in graph.node:
        a = attrs(n)
        i = [env[v] if v else None for v in n.input]
        op = n.op_type
        if op == "Constant":
            y = torch.from_numpy(numpy_helper.to_array(a["value"]).copy())
        elif op == "Conv":
            nsp = i[1].dim() - 2
            p = pads2d(a.get("pads"), nsp)
            if p is None or a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
                print("asymmetric or automatic Conv pads", file=sys.stderr)
                sys.exit(2)
            conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[nsp]
            y = conv(i[0], i[1], i[2] if len(i) > 2 else None, stride=a.get("strides", 1),
                     padding=p, dilation=a.get("dilations", 1), groups=a.get("group", 1))
        elif op == "Relu":
            y = F.relu(i[0])
        elif op == "LeakyRelu":
            y = F.leaky_relu(i[0], a.get("alpha", 0.01))
        elif op == "Clip":
            lo = i[1] if len(i) > 1 and i[1] is not None else a.get("min")
            hi = i[2] if len(i) > 2 and i[2] is not None else a.get("max")
            y = torch.clamp(i[0], None if lo is None else float(lo), None if hi is None else float(hi))
        elif op == "Sigmoid":
            y = torch.sigmoid(i[0])
        elif op == "Tanh":
            y = torch.tanh(i[0])
        elif op == "HardSigmoid":
            y = torch.clamp(a.get("alpha", 0.2) * i[0] + a.get("beta", 0.5), 0, 1)
        elif op == "HardSwish":
            y = F.hardswish(i[0])
        elif op in ("Add", "Sub", "Mul", "Div"):
            y = {"Add": torch.add, "Sub": torch.sub, "Mul": torch.mul, "Div": torch.div}[op](i[0], i[1])
        elif op == "MaxPool" or op == "AveragePool":
            k = a["kernel_shape"]
            p = pads2d(a.get("pads"), len(k))
            if p is None or a.get("ceil_mode", 0):
                print("asymmetric pads or ceil_mode in a pooling", file=sys.stderr)
                sys.exit(2)
            if op == "MaxPool":
                y = F.max_pool2d(i[0], k, a.get("strides", k), p, a.get("dilations", 1))
            else:
                y = F.avg_pool2d(i[0], k, a.get("strides", k), p,
                                 count_include_pad=bool(a.get("count_include_pad", 0)))
        elif op == "GlobalAveragePool":
            y = i[0].mean(dim=tuple(range(2, i[0].dim())), keepdim=True)
        elif op == "Flatten":
            ax = a.get("axis", 1)
            y = i[0].reshape(int(np.prod(i[0].shape[:ax])), -1)
        elif op == "Reshape":
            shape = [int(s) for s in i[1].tolist()]
            shape = [i[0].shape[k] if s == 0 else s for k, s in enumerate(shape)]
            y = i[0].reshape(shape)
        elif op == "Gemm":
            A = i[0].t() if a.get("transA", 0) else i[0]
            B = i[1].t() if a.get("transB", 0) else i[1]
            y = a.get("alpha", 1.0) * (A @ B)
            if len(i) > 2 and i[2] is not None:
                y = y + a.get("beta", 1.0) * i[2]
        elif op == "MatMul":
            y = i[0] @ i[1]
        elif op == "Softmax":
            y = F.softmax(i[0], a.get("axis", -1))
        elif op == "BatchNormalization":
            y = F.batch_norm(i[0], i[3], i[4], i[1], i[2], False, 0.0, a.get("epsilon", 1e-5))
        elif op == "Identity":
            y = i[0]
        else:
            print(f"operator {op} is not in torch_grad.py", file=sys.stderr)
            sys.exit(2)
        env[n.output[0]] = hook(n.output[0], y) if hook else y
    return env


def run(model, x, dy, out):
    torch.set_num_threads(1)
    g = model.graph
    env = {}
    params = []
    for init in g.initializer:
        a = numpy_helper.to_array(init)
        t = torch.from_numpy(a.copy())
        if a.dtype == np.float32 and a.size > 1:
            t.requires_grad_(True)
            params.append(t)
        env[init.name] = t
    inp = torch.from_numpy(x).requires_grad_(True)
    env[g.input[0].name] = inp
    yout = evaluate(g, env)[g.output[0].name]
    loss = (yout.double() * torch.from_numpy(dy).double()).sum()
    loss.backward()
    for k, t in enumerate(params):
        np.save(f"{out}/{k}.npy", t.grad.numpy().astype(np.float32))
    np.save(f"{out}/x.npy", inp.grad.numpy().astype(np.float32))


def main():
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    model = onnx.load(sys.argv[1])
    run(model, np.load(sys.argv[2]).astype(np.float32), np.load(sys.argv[3]).astype(np.float32),
        sys.argv[4])


if __name__ == "__main__":
    main()
