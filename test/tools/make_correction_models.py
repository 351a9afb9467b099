#!/usr/bin/python3
"""Writes the models and calibration data of the quantizer-correction tests.

usage: make_correction_models.py [OUTDIR]
(default: test/lit/quantize/Inputs/corrections next to this script's test/)

Each model is built for one recipe correction (docs/quantize.md,
"Corrections"), with data that gives the correction something to fix; all
deterministic (seeded numpy.random.RandomState), opset 14, a few KB each:

  snc.onnx      Conv -> HardSwish -> Conv (padded): the HardSwish output is
                slightly negative (min -0.375), so its signed grid wastes half
                its codes: shift_negative.
  relu6.onnx    Conv -> Clip(0, 6) -> Conv: a ReLU6 bound that is not a power
                of two under power-of-two activations (threshold 8, 6/8 of
                the codes used): relu_unbound_correction.
  ace.onnx      Conv -> Relu -> Conv with output channels of very different
                scales (std ~30, 1, 0.1, 0.05) that matter equally downstream:
                activation_channel_equalization.
  inscale.onnx  an input in [-0.07, 0.07] into a Conv: its power-of-two
                threshold 0.125 leaves codes unused: input_scaling.
  ace_dw.onnx   a depthwise Conv -> 1x1 Conv with no activation between
                (MobileNet, BlazeFace), depthwise channels of scales 30, 1,
                0.05: activation_channel_equalization of Conv -> Conv.

and X_calib.npy (float32, [48, 3, 8, 8]) for each.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 14


def conv(name, x, w, b, out, pads=None):
    attrs = {"pads": pads} if pads else {}
    node = helper.make_node("Conv", [x, name + ".weight", name + ".bias"], [out], name=name,
                            **attrs)
    return node, [numpy_helper.from_array(w.astype(np.float32), name + ".weight"),
                  numpy_helper.from_array(b.astype(np.float32), name + ".bias")]


def save(outdir, name, nodes, inits, out_channels, data):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, out_channels, 8, 8])
    g = helper.make_graph(nodes, name, [x], [y], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)],
                          producer_name="make_correction_models.py")
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(outdir, name + ".onnx"))
    np.save(os.path.join(outdir, name + "_calib.npy"), data.astype(np.float32))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        here, "..", "lit", "quantize", "Inputs", "corrections")
    os.makedirs(outdir, exist_ok=True)
    rs = np.random.RandomState(20240611)
    n = 48

    # shift_negative: HardSwish of N(0.5, 2)-ish values: min -0.375, max ~6.
    x = rs.randn(n, 3, 8, 8)
    w1 = rs.randn(8, 3, 3, 3) * 0.4
    b1 = rs.randn(8) * 0.3
    w2 = rs.randn(8, 8, 3, 3) * 0.2
    b2 = rs.randn(8) * 0.1
    c1, i1 = conv("conv1", "x", w1, b1, "h", [1, 1, 1, 1])
    act = helper.make_node("HardSwish", ["h"], ["a"], name="hswish")
    c2, i2 = conv("conv2", "a", w2, b2, "y", [1, 1, 1, 1])
    save(outdir, "snc", [c1, act, c2], i1 + i2, 8, x)

    # relu_unbound_correction: Conv -> Clip(0, 6) -> Conv, the Clip output
    # mostly inside [0, 6] (values at the new bound 8 would be clipped to the
    # grid's 8 - step). The input is on its grid (multiples of 1/64).
    x = np.round(rs.uniform(-1, 1, (n, 3, 8, 8)) * 64) / 64
    w1 = rs.randn(8, 3, 3, 3) * 0.3
    b1 = rs.randn(8) * 0.3 + 2.5
    w2 = rs.randn(8, 8, 3, 3) * 0.2
    b2 = rs.randn(8) * 0.1
    c1, i1 = conv("conv1", "x", w1, b1, "h", [1, 1, 1, 1])
    lo = numpy_helper.from_array(np.array(0, np.float32), "clip_min")
    hi = numpy_helper.from_array(np.array(6, np.float32), "clip_max")
    clip = helper.make_node("Clip", ["h", "clip_min", "clip_max"], ["a"], name="relu6")
    c2, i2 = conv("conv2", "a", w2, b2, "y", [1, 1, 1, 1])
    save(outdir, "relu6", [c1, clip, c2], i1 + [lo, hi] + i2, 8, x)

    # activation_channel_equalization: channel scales 30, 1, 0.1, 0.05, and the
    # second conv weighs them back so each matters.
    x = rs.randn(n, 3, 8, 8)
    scales = np.array([30, 1, 0.1, 0.05])
    w1 = rs.randn(4, 3, 1, 1) * 0.6 * scales[:, None, None, None]
    b1 = rs.rand(4) * 0.5 * scales
    w2 = rs.randn(4, 4, 1, 1) * 0.5 / scales[None, :, None, None]
    b2 = rs.randn(4) * 0.1
    c1, i1 = conv("conv1", "x", w1, b1, "h")
    act = helper.make_node("Relu", ["h"], ["a"], name="relu")
    c2, i2 = conv("conv2", "a", w2, b2, "y")
    save(outdir, "ace", [c1, act, c2], i1 + i2, 4, x)

    # input_scaling: an input in [-0.07, 0.07] into a Conv.
    x = rs.uniform(-0.07, 0.07, (n, 3, 8, 8))
    w1 = rs.randn(8, 3, 3, 3) * 0.5
    b1 = rs.randn(8) * 0.01
    c1, i1 = conv("conv1", "x", w1, b1, "y", [1, 1, 1, 1])
    save(outdir, "inscale", [c1], i1, 8, x)

    # activation_channel_equalization without an activation: depthwise 3x3 with
    # channel scales 30, 1, 0.05, then a 1x1 conv that weighs them back.
    x = rs.randn(n, 3, 8, 8)
    scales = np.array([30, 1, 0.05])
    w1 = rs.randn(3, 1, 3, 3) * 0.4 * scales[:, None, None, None]
    b1 = rs.randn(3) * 0.2 * scales
    w2 = rs.randn(4, 3, 1, 1) * 0.5 / scales[None, :, None, None]
    b2 = rs.randn(4) * 0.1
    c1, i1 = conv("dw", "x", w1, b1, "h", [1, 1, 1, 1])
    c1.attribute.append(helper.make_attribute("group", 3))
    c2, i2 = conv("pw", "h", w2, b2, "y")
    save(outdir, "ace_dw", [c1, c2], i1 + i2, 4, x)


if __name__ == "__main__":
    main()
