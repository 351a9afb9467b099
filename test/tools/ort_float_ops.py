#!/usr/bin/python3
"""ort_float_ops.py - the ops ONNX Runtime computes in its own order, bit for bit.

`tpcc run --ort-cpu` computes some ops of a QDQ model as ONNX Runtime's CPU
kernels do, because a value on a rounding tie of the QuantizeLinear after them
goes the other way on a last-bit difference:

- a float Conv (one ORT does not run as an integer kernel), in MLAS's order
  (runtime/ops/OrtConv.cpp): pointwise (MLAS's direct GEMM), im2col with K over
  128 (K cut in slices), N below K (larger slices), strides, dilations,
  asymmetric pads, groups, depthwise and single-filter convolutions (MLAS's
  single-row kernel: groups of 4, 2, 1 products, no FMA), K not a multiple of
  4, 1-D and 3-D convolutions, no bias, a batch of 2, and one output position
  (MLAS's dot-product kernel, as in a squeeze-and-excitation block);
- a float MatMul (runtime/ort/ops/OrtMatMul.cpp): a packed initializer weight
  (slices of 256) for M = 1, N = 1 and a folded batch, a 16-bit weight behind a
  DequantizeLinear (unpacked), and products of two activations: batched,
  broadcast, N below K, M = 1 and N = 1;
- a float bilinear Resize (runtime/ops/OrtResize.cpp): ORT's four-term
  expression on its float coordinates, for each coordinate rule, by scales and
  by sizes, 2-D and 4-D, upsampling and downsampling;
- a float Sigmoid (runtime/ops/Activation.cpp): MLAS's rational approximation
  with FMA3, over both tails and the values between;
- a float GlobalAveragePool (runtime/ops/Pool.cpp): MLAS's four running sums,
  for 1-D, 2-D and 3-D planes whose sizes are and are not multiples of four
  (between 16-bit Q/DQ pairs ORT runs it in float);
- a float Pow by 2 or 3 (x * x, runtime/ops/Elementwise.cpp) and ReduceMean and
  ReduceSum along the last axis of rows of a multiple of 8 floats
  (runtime/ort/ops/OrtReduce.cpp: eight lanes, halved pairwise), as RMSNorm has them
  where --min-sqnr leaves it float;
- a quantized MatMul and its bias Add, which ORT fuses into a Gemm
  (MatMulAddFusion: a 2-D input, or a static shape it reshapes) whose float
  bias becomes int32 on the accumulator grid, rounded half to even
  (WeightBiasQuantization), and then a QGemm (runtime/ort/IntegerPairs.cpp);
  the output grid's step is the accumulator's and the biases lie on ties, so
  a bias added in float lands a code apart. And the forms ORT leaves apart:
  a symbolic 3-D input (MatMulIntegerToFloat, then the Add) and a [1, N] bias
  (a float Gemm);
- a quantized MatMul whose output no QuantizeLinear reads: ORT's
  MatMulIntegerToFloat, float(int32 sum) * (x_scale * w_scale), which the
  float product of the dequantized operands misses in the last bits (per
  column and per tensor weights, int8 activations ORT moves to uint8, a
  2-D and a 3-D input, a float bias Add after it); and a 2-D one with a bias
  Add, which ORT makes a float Gemm instead;
- a MatMul of two quantized activations, as attention's (runtime/ort/CodeMatMul.cpp):
  QLinearMatMul on the codes when a QuantizeLinear reads it, MatMulIntegerToFloat
  when none does; uint8 and int8 codes (ORT moves int8 to uint8), batched and
  broadcast, its inner dimension odd;
- QLinearAdd (runtime/OrtBinary.cpp): every one of the 65,536 code pairs,
  on uint8 grids of arbitrary scales (M-LSD's for ort_cpu among them, whose
  sums land on ties).

Each case is a one-op model run through ONNX Runtime (onnxruntime-node, level
`extended`, one thread) and through `tpcc run --ort-cpu vnni`; every output
element must have the same bits. tpcc runs twice: with its AVX2 loops and
capped at SSE2 (ONEDNN_MAX_CPU_ISA=SSE41: the scalar fused multiply-adds), which
must give the same bits; ORT runs on this CPU and, when qemu-x86_64 is
installed, as a Haswell (AVX2 + FMA3 kernels).

usage: ort_float_ops.py --tpcc BIN --node-modules DIR --work DIR [--native-only]
Exit 0: all agree; 1: a difference; 77: Node.js or onnxruntime-node is missing.
"""
import argparse
import os
import shutil
import subprocess
import sys
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ort_crosscheck import ORT_RUN, ort_missing  # noqa: E402
from ort_quantized import QEMU_HASWELL  # noqa: E402

# name: (batch, channels, out channels, spatial input, kernel, strides, pads, dilations, group, bias)
CONVS = {
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
    # One output position (MLAS's dot-product kernel): a squeeze-and-excitation 1x1
    # convolution (rows in blocks of 4, 4, 2; K a multiple of 8), a 3x3 one over a
    # 3x3 input (blocks of 4, 2, 1; K % 8 = 3), and blocks of 4, 4, 4, 1.
    "one_position_m10": (1, 40, 10, [1, 1], [1, 1], [1, 1], [0, 0, 0, 0], [1, 1], 1, True),
    "one_position_m7_k99": (2, 11, 7, [3, 3], [3, 3], [1, 1], [0, 0, 0, 0], [1, 1], 1, True),
    # Three whole blocks of 4 rows, then one.
    "one_position_m13": (1, 24, 13, [1, 1], [1, 1], [1, 1], [0, 0, 0, 0], [1, 1], 1, True),
}


def finish(nodes, inputs, outputs, inits, domains=()):
    graph = helper.make_graph(nodes, "op", inputs, outputs, inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]
                          + [helper.make_opsetid(d, 1) for d in domains])
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    return m


def conv(case, rng):
    b, c, o, sp, k, s, p, d, g, bias = case
    w = (rng.standard_normal([o, c // g] + k) * 0.3).astype(np.float32)
    inits = [numpy_helper.from_array(w, "w")]
    if bias:
        inits.append(numpy_helper.from_array(rng.standard_normal(o).astype(np.float32), "b"))
    node = helper.make_node("Conv", ["x", "w"] + (["b"] if bias else []), ["y"], kernel_shape=k,
                            strides=s, pads=p, dilations=d, group=g)
    out = [(sp[i] + p[i] + p[i + len(sp)] - d[i] * (k[i] - 1) - 1) // s[i] + 1
           for i in range(len(sp))]
    m = finish([node], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [b, c] + sp)],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, [b, o] + out)], inits)
    return m, {"x": rng.standard_normal([b, c] + sp).astype(np.float32)}


# name: (input shape, scales or None, sizes or None, coordinate_transformation_mode)
RESIZES = {
    "resize_half_pixel_x2": ([1, 4, 10, 10], [1, 1, 2, 2], None, "half_pixel"),
    "resize_sizes_x2": ([2, 3, 7, 9], None, [2, 3, 14, 18], "half_pixel"),
    "resize_asymmetric": ([1, 2, 6, 5], [1, 1, 3, 2.5], None, "asymmetric"),
    "resize_pytorch_down": ([1, 3, 12, 10], [1, 1, 0.5, 0.75], None, "pytorch_half_pixel"),
    "resize_align_corners": ([1, 2, 5, 7], None, [1, 2, 9, 13], "align_corners"),
    "resize_2d": ([11, 8], [1.5, 2], None, "half_pixel"),
}


def resize(case, rng):
    shape, scales, sizes, coord = case
    # Dequantized uint8 codes on a grid whose steps are not powers of two: the
    # values a QDQ model resizes, and whose 2x blends land on ties.
    x = ((rng.randint(0, 256, shape) - 17) * np.float32(0.035646904)).astype(np.float32)
    inits = [numpy_helper.from_array(np.array([], np.float32), "roi")]
    ins = ["x", "roi"]
    if scales is not None:
        inits.append(numpy_helper.from_array(np.array(scales, np.float32), "scales"))
        ins.append("scales")
        out = [int(np.floor(np.float32(s) * n)) for s, n in zip(scales, shape)]
    else:
        inits += [numpy_helper.from_array(np.array([], np.float32), "no_scales"),
                  numpy_helper.from_array(np.array(sizes, np.int64), "sizes")]
        ins += ["no_scales", "sizes"]
        out = sizes
    node = helper.make_node("Resize", ins, ["y"], mode="linear",
                            coordinate_transformation_mode=coord)
    m = finish([node], [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)], inits)
    return m, {"x": x}


# name: (scale A, zero point A, scale B, zero point B, scale C, zero point C)
ADDS = {
    "qlinear_add_mlsd": (0.10757322, 115, 0.13573141, 135, 0.14751749, 129),
    "qlinear_add_random": None,  # drawn from the case's seed
}


def qlinear_add(case, rng):
    if case is None:
        case = tuple(v for _ in range(3)
                     for v in (float(rng.uniform(0.01, 0.3)), int(rng.randint(0, 256))))
    sa, za, sb, zb, sc, zc = case
    inits = [numpy_helper.from_array(np.array(v, t), n) for v, t, n in
             [(sa, np.float32, "sa"), (za, np.uint8, "za"), (sb, np.float32, "sb"),
              (zb, np.uint8, "zb"), (sc, np.float32, "sc"), (zc, np.uint8, "zc")]]
    nodes = [helper.make_node("DequantizeLinear", ["a", "sa", "za"], ["da"]),
             helper.make_node("DequantizeLinear", ["b", "sb", "zb"], ["db"]),
             helper.make_node("Add", ["da", "db"], ["s"]),
             helper.make_node("QuantizeLinear", ["s", "sc", "zc"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "sc", "zc"], ["y"])]
    u8 = lambda n: helper.make_tensor_value_info(n, TensorProto.UINT8, [65536])  # noqa: E731
    m = finish(nodes, [u8("a"), u8("b")],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, [65536])], inits)
    codes = np.arange(65536)
    return m, {"a": (codes & 255).astype(np.uint8), "b": (codes >> 8).astype(np.uint8)}


def sigmoid(case, rng):
    # Both tails past the clamp at +-18 and everything between (tpcc refuses NaN
    # and infinite inputs).
    x = np.concatenate([np.linspace(-25, 25, 40001, dtype=np.float32),
                        rng.standard_normal(10000).astype(np.float32) * 4])
    m = finish([helper.make_node("Sigmoid", ["x"], ["y"])],
               [helper.make_tensor_value_info("x", TensorProto.FLOAT, [x.size])],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, [x.size])], [])
    return m, {"x": x}


# name: input shape
GLOBAL_AVERAGES = {
    "global_average_2d": [2, 3, 13, 9],
    "global_average_2d_by_4": [1, 4, 8, 8],
    "global_average_1d": [1, 5, 7],
    "global_average_3d": [1, 2, 3, 5, 7],
}


def global_average(shape, rng):
    # Dequantized uint16 codes on a grid whose steps are not powers of two.
    x = ((rng.randint(0, 65536, shape) - 9485) * np.float32(8.823424e-05)).astype(np.float32)
    out = shape[:2] + [1] * (len(shape) - 2)
    m = finish([helper.make_node("GlobalAveragePool", ["x"], ["y"])],
               [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)], [])
    return m, {"x": x}


# name: (input shape, AveragePool attributes). MLAS's vector kernel (2-D and 3-D, last
# stride 1 or 2: column sums first), its generic one (row-major sums), a window the size
# of the input (its global kernel), padding counted or not.
AVERAGES = {
    "average_2d_stride2": ([1, 3, 13, 17], dict(kernel_shape=[3, 2], strides=[3, 2])),
    "average_2d_pads": ([2, 2, 9, 11], dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])),
    "average_2d_pads_counted": ([2, 2, 9, 11], dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                                                    count_include_pad=1)),
    "average_2d_stride3": ([1, 2, 12, 15], dict(kernel_shape=[3, 3], strides=[3, 3])),
    "average_2d_whole": ([1, 2, 6, 5], dict(kernel_shape=[6, 5])),
    "average_1d": ([1, 3, 20], dict(kernel_shape=[4], strides=[2], pads=[1, 1])),
    "average_3d": ([1, 2, 5, 6, 7], dict(kernel_shape=[2, 3, 2], strides=[1, 2, 2],
                                         pads=[0, 1, 0, 0, 1, 1])),
}


def average(case, rng):
    shape, attrs = case
    x = ((rng.randint(0, 65536, shape) - 9485) * np.float32(8.823424e-05)).astype(np.float32)
    n = len(shape) - 2
    pads, strides = attrs.get("pads", [0] * 2 * n), attrs.get("strides", [1] * n)
    out = shape[:2] + [(shape[2 + i] + pads[i] + pads[n + i] - attrs["kernel_shape"][i])
                       // strides[i] + 1 for i in range(n)]
    m = finish([helper.make_node("AveragePool", ["x"], ["y"], **attrs)],
               [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)], [])
    return m, {"x": x}


# name: (A's shape, B's shape, B an initializer (ORT packs it), B behind a
# DequantizeLinear (a 16-bit weight, which ORT leaves unfolded: not packed))
MATMULS = {
    "matmul_packed_k576": ([2, 24, 576], [576, 64], True, False),
    "matmul_packed_m1": ([1, 300], [300, 700], True, False),
    "matmul_packed_n1": ([5, 300], [300, 1], True, False),
    "matmul_dq_weight_k576": ([1, 16, 576], [576, 96], False, True),
    "matmul_acts_batched": ([2, 4, 16, 24], [2, 4, 24, 16], False, False),
    "matmul_acts_n_below_k": ([7, 300], [300, 20], False, False),
    "matmul_acts_m1": ([1, 1000], [1000, 3], False, False),
    "matmul_acts_n1": ([7, 37], [37, 1], False, False),
    "matmul_acts_broadcast": ([3, 5, 40], [1, 40, 6], False, False),
}


def matmul(case, rng):
    ashape, bshape, packed, dq = case
    a = rng.standard_normal(ashape).astype(np.float32)
    b = (rng.standard_normal(bshape) * 0.3).astype(np.float32)
    out = list(np.broadcast_shapes(tuple(ashape[:-2]), tuple(bshape[:-2]))) + [ashape[-2],
                                                                              bshape[-1]]
    x = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ashape)]
    y = [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)]
    if packed:
        return finish([helper.make_node("MatMul", ["x", "b"], ["y"])], x, y,
                      [numpy_helper.from_array(b, "b")]), {"x": a}
    if dq:
        scale = np.float32(np.abs(b).max() / 32767)
        codes = np.round(b / scale).astype(np.int16)
        inits = [numpy_helper.from_array(codes, "bq"),
                 numpy_helper.from_array(np.array(scale, np.float32), "s"),
                 numpy_helper.from_array(np.array(0, np.int16), "z")]
        nodes = [helper.make_node("DequantizeLinear", ["bq", "s", "z"], ["b"], domain="com.microsoft"),
                 helper.make_node("MatMul", ["x", "b"], ["y"])]
        return finish(nodes, x, y, inits, ["com.microsoft"]), {"x": a}
    x.append(helper.make_tensor_value_info("b", TensorProto.FLOAT, bshape))
    return finish([helper.make_node("MatMul", ["x", "b"], ["y"])], x, y, []), {"x": a, "b": b}


# name: (input shape (a string: symbolic), bias shape, a Relu before the QuantizeLinear)
LINEAR_BIAS = {
    "qgemm_matmul_add_2d": (["N", 24], [16], False),
    "qgemm_matmul_add_static_3d": ([2, 5, 24], [16], False),
    "qgemm_matmul_add_relu": (["N", 24], [16], True),
    "matmul_add_symbolic_3d": (["N", 5, 24], [16], False),
    "matmul_add_bias_1n": (["N", 24], [1, 16], False),
}


def linear_bias(case, rng):
    xshape, bshape, relu = case
    k, n = xshape[-1], bshape[-1]
    # Power-of-two scales (every float product and sum exact) and an output step
    # equal to the accumulator's, so the int32 bias is the output code's offset: a
    # bias on a tie (b / (x_scale * w_scale) = j + 0.5) rounds half to even in ORT's
    # QGemm, and with the sum's parity when added in float.
    xs, ws = np.float32(2.0 ** -3), np.float32(2.0 ** -5)
    w = rng.randint(-2, 3, [k, n]).astype(np.int8)
    bias = ((rng.randint(-40, 40, bshape) + 0.5) * xs * ws).astype(np.float32)
    zy = 0 if relu else 128
    inits = [numpy_helper.from_array(np.array(xs), "xs"),
             numpy_helper.from_array(np.array(128, np.uint8), "xz"),
             numpy_helper.from_array(w, "wq"), numpy_helper.from_array(np.full(n, ws), "ws"),
             numpy_helper.from_array(np.zeros(n, np.int8), "wz"),
             numpy_helper.from_array(bias, "b"),
             numpy_helper.from_array(np.array(xs * ws), "ys"),
             numpy_helper.from_array(np.array(zy, np.uint8), "yz")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"], axis=1),
             helper.make_node("MatMul", ["xd", "wd"], ["mm"]),
             helper.make_node("Add", ["mm", "b"], ["a"])]
    if relu:
        nodes.append(helper.make_node("Relu", ["a"], ["r"]))
    nodes += [helper.make_node("QuantizeLinear", ["r" if relu else "a", "ys", "yz"], ["yq"]),
              helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])]
    shape = [2 if isinstance(d, str) else d for d in xshape]
    # Activation codes within 5 of the zero point: sums within the output grid.
    x = ((rng.randint(-5, 6, shape)) * xs).astype(np.float32)
    m = finish(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, xshape)],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, xshape[:-1] + [n])], inits)
    return m, {"x": x}


# name: (input shape (a string: symbolic), bias shape or None, per-column weight scales,
# int8 activations)
MATMUL_TO_FLOAT = {
    "matmul_integer_to_float_3d": (["N", 5, 24], None, True, False),
    "matmul_integer_to_float_2d": (["N", 24], None, True, False),
    "matmul_integer_to_float_per_tensor": (["N", 5, 24], None, False, False),
    "matmul_integer_to_float_int8": (["N", 5, 24], None, True, True),
    "matmul_integer_to_float_add_3d": (["N", 5, 24], [16], True, False),
    "matmul_add_float_gemm_2d": (["N", 24], [16], True, False),
}


def matmul_to_float(case, rng):
    xshape, bshape, per_column, s8 = case
    k, n = xshape[-1], 16
    xs, z = np.float32(0.0371), np.array(3 if s8 else 131, np.int8 if s8 else np.uint8)
    ws = rng.uniform(0.001, 0.01, n).astype(np.float32) if per_column else np.float32(0.0043)
    # Weights within +-63: no u8 x s8 pair saturates without VNNI (ORT under qemu).
    inits = [numpy_helper.from_array(np.array(xs), "xs"), numpy_helper.from_array(z, "xz"),
             numpy_helper.from_array(rng.randint(-63, 64, [k, n]).astype(np.int8), "wq"),
             numpy_helper.from_array(np.array(ws), "ws")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             helper.make_node("DequantizeLinear", ["wq", "ws"], ["wd"],
                              **({"axis": 1} if per_column else {})),
             helper.make_node("MatMul", ["xd", "wd"], ["mm" if bshape else "y"])]
    if bshape:
        inits.append(numpy_helper.from_array(rng.standard_normal(bshape).astype(np.float32), "b"))
        nodes.append(helper.make_node("Add", ["mm", "b"], ["y"]))
    shape = [2 if isinstance(d, str) else d for d in xshape]
    m = finish(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, xshape)],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, xshape[:-1] + [n])], inits)
    return m, {"x": (rng.standard_normal(shape) * 3).astype(np.float32)}


# name: (A's shape, B's shape, A and B int8, a QuantizeLinear after the product); the
# "ties" case's output step is 16 of the sums' (a code lies on a rounding tie for every
# sum 8 modulo 16), its operands a few codes from their zero points.
CODE_MATMULS = {
    "qlinear_matmul_acts_ties": ([2, 4, 50, 16], [2, 4, 16, 50], False, True),
    "qlinear_matmul_acts_scores": ([2, 4, 50, 16], [2, 4, 16, 50], False, True),
    "qlinear_matmul_acts_values": ([2, 4, 50, 50], [2, 4, 50, 16], False, True),
    "qlinear_matmul_acts_int8_broadcast": ([3, 7, 33], [1, 33, 10], True, True),
    "matmul_integer_to_float_acts": ([2, 4, 50, 16], [2, 4, 16, 50], False, False),
}


def code_matmul(case, rng):
    ashape, bshape, s8, quantized = case
    t, zt = (np.int8, 5) if s8 else (np.uint8, 130)
    a_s, b_s = np.float32(0.0371), np.float32(0.0893)
    ties = case is CODE_MATMULS["qlinear_matmul_acts_ties"]
    y_s = a_s * b_s * np.float32(16) if ties else np.float32(0.7153)
    inits = [numpy_helper.from_array(np.array(v, np.float32), n)
             for v, n in ((a_s, "as"), (b_s, "bs"), (y_s, "ys"))]
    inits += [numpy_helper.from_array(np.array(z, t), n) for z, n in ((zt, "az"), (zt - 3, "bz"))]
    inits.append(numpy_helper.from_array(np.array(128, np.uint8), "yz"))
    nodes = [helper.make_node("QuantizeLinear", ["a", "as", "az"], ["aq"]),
             helper.make_node("DequantizeLinear", ["aq", "as", "az"], ["ad"]),
             helper.make_node("QuantizeLinear", ["b", "bs", "bz"], ["bq"]),
             helper.make_node("DequantizeLinear", ["bq", "bs", "bz"], ["bd"]),
             helper.make_node("MatMul", ["ad", "bd"], ["mm" if quantized else "y"])]
    if quantized:
        nodes += [helper.make_node("QuantizeLinear", ["mm", "ys", "yz"], ["yq"]),
                  helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])]
    out = list(np.broadcast_shapes(tuple(ashape[:-2]), tuple(bshape[:-2]))) + [ashape[-2],
                                                                              bshape[-1]]
    m = finish(nodes, [helper.make_tensor_value_info("a", TensorProto.FLOAT, ashape),
                       helper.make_tensor_value_info("b", TensorProto.FLOAT, bshape)],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)], inits)
    if ties:
        return m, {"a": (rng.standard_normal(ashape) * 4 * a_s).astype(np.float32),
                   "b": (rng.standard_normal(bshape) * 4 * b_s).astype(np.float32)}
    return m, {"a": (rng.standard_normal(ashape) * 3).astype(np.float32),
               "b": (rng.standard_normal(bshape) * 6).astype(np.float32)}


# name: (op, input shape, opset: 13; the axes of ReduceSum an input, of ReduceMean an
# attribute). RMSNorm's square and mean over the hidden axis (a
# multiple of 8: ORT's eight lanes, halved pairwise).
REDUCES = {
    "pow_square": ("Pow2", [48, 576], 13),
    "pow_cube": ("Pow3", [7, 33], 13),
    "reduce_mean_last": ("ReduceMean", [48, 576], 13),
    "reduce_mean_last_3d": ("ReduceMean", [2, 5, 1728], 13),
    "reduce_sum_last": ("ReduceSum", [64, 96], 13),
}


def reduce(case, rng):
    op, shape, opset = case
    x = (rng.standard_normal(shape) * rng.uniform(0.1, 30, shape[:-1] + [1])).astype(np.float32)
    if op.startswith("Pow"):
        inits = [numpy_helper.from_array(np.array(float(op[3]), np.float32), "e")]
        node, out = helper.make_node("Pow", ["x", "e"], ["y"]), shape
    else:
        axes_input = opset >= 18 or op == "ReduceSum"
        inits = [numpy_helper.from_array(np.array([-1], np.int64), "axes")] if axes_input else []
        node = helper.make_node(op, ["x", "axes"] if axes_input else ["x"], ["y"], keepdims=1,
                                **({} if axes_input else {"axes": [-1]}))
        out = shape[:-1] + [1]
    m = finish([node], [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)], inits)
    return m, {"x": x}


CASES = {**{k: (conv, v) for k, v in CONVS.items()},
         **{k: (matmul, v) for k, v in MATMULS.items()}, **{k: (resize, v) for k, v in RESIZES.items()},
         **{k: (qlinear_add, v) for k, v in ADDS.items()}, "sigmoid": (sigmoid, None),
         **{k: (global_average, v) for k, v in GLOBAL_AVERAGES.items()},
         **{k: (average, v) for k, v in AVERAGES.items()},
         **{k: (reduce, v) for k, v in REDUCES.items()},
         **{k: (linear_bias, v) for k, v in LINEAR_BIAS.items()},
         **{k: (matmul_to_float, v) for k, v in MATMUL_TO_FLOAT.items()},
         **{k: (code_matmul, v) for k, v in CODE_MATMULS.items()}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tpcc", required=True)
    ap.add_argument("--node-modules", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--native-only", action="store_true",
                    help="ORT on this CPU only, not also under qemu (the sanitizer build: "
                    "ORT's bits do not depend on how tpcc was built)")
    args = ap.parse_args()
    missing = ort_missing(args.node_modules)
    if missing:
        print(f"ort_float_ops: skipped, {missing}")
        return 77
    os.makedirs(args.work, exist_ok=True)
    env = dict(os.environ, NODE_PATH=args.node_modules)
    ort_cpus = [("this CPU", [])] + ([("qemu Haswell", QEMU_HASWELL)]
                                     if shutil.which(QEMU_HASWELL[0]) and not args.native_only
                                     else [])
    tpcc_isas = [("AVX2", {}), ("SSE2", {"ONEDNN_MAX_CPU_ISA": "SSE41"})]
    failed = 0
    for name, (build, case) in sorted(CASES.items()):
        # Each case's data from its name: adding a case changes no other's.
        m, feeds = build(case, np.random.RandomState(zlib.crc32(name.encode())))
        path = os.path.join(args.work, name + ".onnx")
        onnx.save(m, path)
        inputs = []
        for n, v in feeds.items():
            np.save(os.path.join(args.work, f"{name}_{n}.npy"), v)
            inputs.append(f"{n}={os.path.join(args.work, f'{name}_{n}.npy')}")
        results = {}
        # MLAS's pooling kernels are SSE2 code on every x86-64 CPU (no ISA dispatch):
        # ORT under qemu's Haswell adds nothing there, and CI's time is bounded.
        pooling = "average" in name
        for label, prefix in ort_cpus[:1] if pooling else ort_cpus:
            out = os.path.join(args.work, f"{name}_ort_{len(results)}_")
            r = subprocess.run(prefix + [shutil.which("node"), ORT_RUN, "--level", "extended", path, out]
                               + inputs, env=env, capture_output=True, text=True)
            if r.returncode:
                print(f"FAIL {name}: ONNX Runtime ({label}) fails: {r.stderr.strip()[-500:]}")
                return 1
            results[f"ORT on {label}"] = np.load(out + "0.npy")
        for label, extra in tpcc_isas:
            out = os.path.join(args.work, f"{name}_tpcc_{label}.npy")
            r = subprocess.run([args.tpcc, "run", path, "--ort-cpu", "vnni", "--output", f"y={out}"]
                               + [a for i in inputs for a in ("--input", i)],
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
    print(f"ort_float_ops: {len(CASES) - failed} of {len(CASES)} ops bit for bit "
          f"({', '.join(l for l, _ in ort_cpus)}, pooling on this CPU; "
          f"tpcc {', '.join(l for l, _ in tpcc_isas)})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
