#!/usr/bin/python3
"""ort_float_conv.py - a float Conv, summed as ONNX Runtime sums it, bit for bit.

`tpcc run --ort-cpu` computes a float Conv (one ORT does not run as an integer
kernel) in MLAS's order (runtime/ops/OrtConv.cpp). This builds one-Conv models
over MLAS's cases, runs each through ONNX Runtime (onnxruntime-node, level
`extended`, one thread) and through `tpcc run --ort-cpu vnni`, and requires
every output element to have the same bits:

  pointwise (MLAS's direct GEMM), im2col with K over 128 (K cut in slices),
  N below K (larger slices), strides, dilations, asymmetric pads, groups,
  depthwise and single-filter convolutions (MLAS's single-row kernel: groups of
  4, 2, 1 products, no FMA), K not a multiple of 4, 1-D and 3-D convolutions,
  no bias, a batch of 2.

tpcc runs twice: with its AVX2 loops and capped at SSE2 (ONEDNN_MAX_CPU_ISA=SSE41:
the scalar fused multiply-adds), which must give the same bits; ORT runs on this
CPU and, when qemu-x86_64 is installed, as a Haswell (AVX2 + FMA3 kernels).

usage: ort_float_conv.py --tpcc BIN --node-modules DIR --work DIR
Exit 0: all agree; 1: a difference; 77: Node.js or onnxruntime-node is missing.
"""
import argparse
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ort_crosscheck import ORT_RUN, ort_missing  # noqa: E402
from ort_quantized import QEMU_HASWELL  # noqa: E402

# name: (batch, channels, out channels, spatial input, kernel, strides, pads, dilations, group, bias)
CASES = {
    "pointwise_k192": (1, 192, 64, [20, 20], [1, 1], [1, 1], [0, 0, 0, 0], [1, 1], 1, True),
    "pointwise_n_below_k": (1, 300, 8, [4, 4], [1, 1], [1, 1], [0, 0, 0, 0], [1, 1], 1, True),
    "im2col_k288": (1, 32, 16, [12, 12], [3, 3], [1, 1], [1, 1, 1, 1], [1, 1], 1, True),
    "im2col_stride2": (1, 32, 16, [13, 13], [3, 3], [2, 2], [1, 1, 1, 1], [1, 1], 1, True),
    "im2col_n_below_k": (1, 200, 4, [3, 3], [3, 3], [1, 1], [1, 1, 1, 1], [1, 1], 1, True),
    "dilated_grouped": (1, 8, 8, [10, 10], [3, 3], [1, 1], [2, 2, 2, 2], [2, 2], 2, True),
    "asymmetric_pads": (1, 12, 6, [9, 11], [3, 2], [1, 2], [0, 1, 2, 0], [1, 1], 1, True),
    "depthwise3": (1, 16, 16, [12, 12], [3, 3], [1, 1], [1, 1, 1, 1], [1, 1], 16, True),
    "depthwise5_stride2": (1, 16, 16, [12, 12], [5, 5], [2, 2], [2, 2, 2, 2], [1, 1], 16, True),
    "depthwise7_k49": (1, 8, 8, [30, 30], [7, 7], [1, 1], [3, 3, 3, 3], [1, 1], 8, True),
    "single_filter_k1800": (1, 200, 1, [20, 20], [3, 3], [1, 1], [1, 1, 1, 1], [1, 1], 1, True),
    "no_bias_batch2": (2, 24, 12, [10, 10], [3, 3], [1, 1], [1, 1, 1, 1], [1, 1], 1, False),
    "conv1d": (1, 40, 20, [50], [5], [2], [2, 2], [1], 1, True),
    "conv3d": (1, 6, 4, [5, 6, 7], [3, 3, 3], [1, 1, 1], [1, 1, 1, 1, 1, 1], [1, 1, 1], 1, True),
}


def model(case, seed):
    b, c, o, sp, k, s, p, d, g, bias = case
    rng = np.random.RandomState(seed)
    w = (rng.standard_normal([o, c // g] + k) * 0.3).astype(np.float32)
    inits = [numpy_helper.from_array(w, "w")]
    if bias:
        inits.append(numpy_helper.from_array(rng.standard_normal(o).astype(np.float32), "b"))
    node = helper.make_node("Conv", ["x", "w"] + (["b"] if bias else []), ["y"], kernel_shape=k,
                            strides=s, pads=p, dilations=d, group=g)
    out = [(sp[i] + p[i] + p[i + len(sp)] - d[i] * (k[i] - 1) - 1) // s[i] + 1
           for i in range(len(sp))]
    graph = helper.make_graph([node], "conv", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [b, c] + sp)], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, [b, o] + out)], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    return m, rng.standard_normal([b, c] + sp).astype(np.float32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tpcc", required=True)
    ap.add_argument("--node-modules", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    missing = ort_missing(args.node_modules)
    if missing:
        print(f"ort_float_conv: skipped, {missing}")
        return 77
    os.makedirs(args.work, exist_ok=True)
    env = dict(os.environ, NODE_PATH=args.node_modules)
    ort_cpus = [("this CPU", [])] + ([("qemu Haswell", QEMU_HASWELL)]
                                     if shutil.which(QEMU_HASWELL[0]) else [])
    tpcc_isas = [("AVX2", {}), ("SSE2", {"ONEDNN_MAX_CPU_ISA": "SSE41"})]
    failed = 0
    for seed, (name, case) in enumerate(sorted(CASES.items())):
        m, x = model(case, seed)
        path, xin = os.path.join(args.work, name + ".onnx"), os.path.join(args.work, name + "_x.npy")
        onnx.save(m, path)
        np.save(xin, x)
        results = {}
        for label, prefix in ort_cpus:
            out = os.path.join(args.work, f"{name}_ort_{len(results)}_")
            r = subprocess.run(prefix + [shutil.which("node"), ORT_RUN, "--level", "extended", path, out,
                                         f"x={xin}"], env=env, capture_output=True, text=True)
            if r.returncode:
                print(f"FAIL {name}: ONNX Runtime ({label}) fails: {r.stderr.strip()[-500:]}")
                return 1
            results[f"ORT on {label}"] = np.load(out + "0.npy")
        for label, extra in tpcc_isas:
            out = os.path.join(args.work, f"{name}_tpcc_{label}.npy")
            r = subprocess.run([args.tpcc, "run", path, "--ort-cpu", "vnni", "--input",
                                f"x={xin}", "--output", f"y={out}"],
                               env=dict(os.environ, **extra), capture_output=True, text=True)
            if r.returncode:
                print(f"FAIL {name}: tpcc run ({label}) fails: {r.stderr.strip()}")
                return 1
            results[f"tpcc with {label}"] = np.load(out)
        want = results[f"ORT on {ort_cpus[0][0]}"]
        bad = {k: int(np.sum(v.view(np.uint32) != want.view(np.uint32)))
               for k, v in results.items()}
        ok = not any(bad.values())
        failed += not ok
        detail = ", ".join(f"{k}: {n} of {want.size} differ" for k, n in bad.items() if n)
        print(f"{'ok  ' if ok else 'FAIL'} {name:22} {want.size:6} values"
              + ("" if ok else f"  ({detail})"), flush=True)
    print(f"ort_float_conv: {len(CASES) - failed} of {len(CASES)} convolutions bit for bit "
          f"({', '.join(l for l, _ in ort_cpus)}; tpcc {', '.join(l for l, _ in tpcc_isas)})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
