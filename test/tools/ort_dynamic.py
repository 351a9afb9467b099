#!/usr/bin/python3
"""ort_dynamic.py - ONNX Runtime-dynamic-quantized models, bit for bit.

The models on npm that ONNX Runtime's `quantize_dynamic` made (a turn detector,
ISNet) run DynamicQuantizeLinear -> MatMulInteger / ConvInteger -> Cast -> Mul
(the two scales) -> Add (the bias). This builds such models, one pattern each,
with weights at the ends of int8 and activations that reach the top of uint8
(so that u8 x s8 products saturate int16 pairs where ORT's kernels form them):

- `matmul_int32`: MatMulInteger's int32 output as a graph output (no fusion);
- `matmul_float`: the whole pattern as quantize_dynamic writes it (ORT fuses it
  into DynamicQuantizeMatMul at level `extended`);
- `matmul_per_column`: int8 weights with a zero point per column;
- `matmul_u8u8`: uint8 weights (ORT's older default);
- `matmul_batched`: a 3-D activation against a 3-D constant;
- `matmul_odd_k`: a reduction of odd length (the last product unpaired);
- `conv_integer`: ConvInteger (uint8 weights, padded, strided, grouped).

Each runs through ONNX Runtime (onnxruntime-node, level `extended`, one thread)
and `tpcc run --ort-cpu vnni|no-vnni` as the CPU ORT ran on has VNNI or not;
every output must have the same bits. ORT runs on this CPU and, when
qemu-x86_64 is installed, as a Haswell (AVX2, no VNNI: saturating pairs).

usage: ort_dynamic.py --tpcc BIN --node-modules DIR --work DIR [--native-only]
Exit 0: all agree; 1: a difference; 77: Node.js or onnxruntime-node is missing.
"""
import argparse
import os
import shutil
import sys
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ort_quantized  # noqa: E402
from ort_crosscheck import ort_missing, run_both  # noqa: E402

ORT_OPTIMIZED = os.path.join(HERE, "..", "ort", "ort_optimized.js")


def weights(rng, shape, dtype):
    """Random weights, a third of them at the type's ends."""
    info = np.iinfo(dtype)
    w = rng.integers(info.min, int(info.max) + 1, size=shape)
    ends = rng.random(shape) < 0.35
    w[ends] = np.where(rng.random(shape)[ends] < 0.5, info.min, info.max)
    return w.astype(dtype)


def dynamic_matmul(name, x_shape, w, w_zero, fuse=True, int32_out=False):
    """DynamicQuantizeLinear(x) -> MatMulInteger(., W) -> Cast -> Mul -> Add,
    as quantize_dynamic writes it (or its int32 product as the output)."""
    n = w.shape[-1]
    inits = [numpy_helper.from_array(w, "W"), numpy_helper.from_array(w_zero, "W_zero"),
             numpy_helper.from_array(np.array(0.0123, np.float32), "W_scale"),
             numpy_helper.from_array(np.linspace(-1, 1, n).astype(np.float32), "B")]
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
             helper.make_node("MatMulInteger", ["xq", "W", "xz", "W_zero"], ["acc"])]
    rank = max(len(x_shape), w.ndim)
    dims = [f"d{i}" for i in range(rank)]
    outs = [helper.make_tensor_value_info("acc", TensorProto.INT32, dims)]
    if not int32_out:
        nodes += [helper.make_node("Cast", ["acc"], ["accf"], to=TensorProto.FLOAT),
                  helper.make_node("Mul", ["xs", "W_scale"], ["scale"]),
                  helper.make_node("Mul", ["accf", "scale"], ["yw"]),
                  helper.make_node("Add", ["yw", "B"], ["y"])]
        outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, dims)]
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                      x_shape)], outs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=7)


def conv_integer(rng):
    x_shape, w_shape = [2, 6, 13, 11], [8, 3, 3, 3]
    w = rng.integers(0, 256, size=w_shape).astype(np.uint8)
    inits = [numpy_helper.from_array(w, "W"),
             numpy_helper.from_array(np.array(131, np.uint8), "W_zero"),
             numpy_helper.from_array(np.array(0.0071, np.float32), "W_scale")]
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
             helper.make_node("ConvInteger", ["xq", "W", "xz", "W_zero"], ["acc"],
                              pads=[1, 0, 1, 2], strides=[2, 1], group=2),
             helper.make_node("Cast", ["acc"], ["accf"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["xs", "W_scale"], ["scale"]),
             helper.make_node("Mul", ["accf", "scale"], ["y"])]
    g = helper.make_graph(nodes, "conv_integer",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", "m", "h", "w"])],
                          inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=7), x_shape


def cases():
    rng = np.random.default_rng(47)
    s8, u8 = np.int8, np.uint8
    yield "matmul_int32", dynamic_matmul("m", [4, 96], weights(rng, (96, 20), s8),
                                         np.array(0, s8), int32_out=True), [4, 96]
    yield "matmul_float", dynamic_matmul("m", [3, 7, 160], weights(rng, (160, 33), s8),
                                         np.array(0, s8)), [3, 7, 160]
    yield "matmul_per_column", dynamic_matmul("m", [5, 64], weights(rng, (64, 12), s8),
                                              rng.integers(-20, 20, 12).astype(s8)), [5, 64]
    yield "matmul_u8u8", dynamic_matmul("m", [5, 300], weights(rng, (300, 9), u8),
                                        np.array(128, u8)), [5, 300]
    yield "matmul_batched", dynamic_matmul("m", [2, 4, 80], weights(rng, (2, 80, 6), s8),
                                           np.array(0, s8), int32_out=True), [2, 4, 80]
    yield "matmul_odd_k", dynamic_matmul("m", [3, 37], weights(rng, (37, 5), s8),
                                         np.array(0, s8), int32_out=True), [3, 37]
    model, shape = conv_integer(rng)
    yield "conv_integer", model, shape


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tpcc", required=True)
    ap.add_argument("--node-modules", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--native-only", action="store_true")
    args = ap.parse_args()
    why = ort_missing(args.node_modules)
    if why:
        print(f"skipped: {why}")
        return 77
    ort_quantized.NATIVE_ONLY = args.native_only
    failures = 0
    for name, model, shape in cases():
        work = os.path.join(args.work, name)
        os.makedirs(work, exist_ok=True)
        path = os.path.join(work, "model.onnx")
        onnx.save(model, path)
        # Activations whose largest values quantize to the top of uint8.
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        x = rng.normal(0, 1, shape).astype(np.float32)
        x.flat[::7] = 3.0
        feed = os.path.join(work, "x.npy")
        np.save(feed, x)
        for label, prefix, exact in ort_quantized.cpus():
            flags = ["--ort-cpu", "vnni" if exact else "no-vnni"]
            r = run_both(path, [("x", feed)], args, work, prefix + [shutil.which("node"),
                                                                    ORT_OPTIMIZED], flags)
            if isinstance(r, str):
                print(f"FAIL {name} on {label}: {r}")
                failures += 1
                continue
            names, want, got, head = r
            ops = " ".join(op.split(":")[-1] for op in head[0].split()[1:]) if head else ""
            diff = [int(np.sum(w.view(np.int32) != g.view(np.int32))) for w, g in zip(want, got)]
            ok = all(d == 0 for d in diff)
            failures += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {name} on {label} vs tpcc {' '.join(flags)}: "
                  f"{sum(diff)} of {sum(w.size for w in want)} values differ (ORT ran {ops})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
