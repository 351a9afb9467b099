#!/usr/bin/python3
"""make_qdq_models.py - writes the float models of the QDQ rewrite tests.

Run with Debian's python3 (python3-onnx, python3-numpy):

    /usr/bin/python3 test/tools/make_qdq_models.py

Writes test/unit/Inputs/qdq/*.onnx and their inputs (.npy). test/unit/QDQTest.cpp
rewrites each into QDQ form, runs it through the executor against the float
model and, where Node.js and onnxruntime-node are installed, through ONNX
Runtime (test/ort/ort_optimized.js) to see which integer kernels it fuses:

  conv.onnx       x[N,4,8,8] -> Conv(W[8,4,3,3], B[8], pads 1) -> y
  conv_relu.onnx  x -> Conv(W, B) -> c -> Relu -> y
  gemm.onnx       x[N,16] -> Gemm(W[8,16], C[8], transB 1) -> y
  matmul.onnx     x[N,16] -> MatMul(W[16,8]) -> y
  matmul_add.onnx x[N,16] -> MatMul(W[16,8]) -> m -> Add(m, B[8]) -> y (a linear
                  layer as PyTorch and TensorFlow export it)
  add_relu.onnx   x -> Conv c1 -> a; x -> Conv c2 -> b; Add(a, b) -> Relu -> y
  net.onnx        x -> Conv c1 (W1, B1) -> r1 = Relu -> Conv c2 (W1, B1 again)
                  -> Relu r2 -> GlobalAveragePool -> Flatten -> Gemm fc -> y;
                  r1 is a second graph output (a quantized output with readers)

Weights come from numpy's legacy generator, seeded: the same on every machine.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "unit", "Inputs", "qdq")


def vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def tensor(name, dims, seed, scale=0.3):
    a = np.random.RandomState(seed).standard_normal(dims).astype(np.float32) * scale
    return numpy_helper.from_array(a, name)


def model(nodes, inputs, outputs, inits):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)],
                          producer_name="tpcc-tests")
    m.ir_version = 7
    onnx.checker.check_model(m)
    onnx.shape_inference.infer_shapes(m, strict_mode=True)
    return m


def node(op, name, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, name=name, **attrs)


def save(m, name):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(m.SerializeToString())


def main():
    os.makedirs(OUT, exist_ok=True)
    img = vi("x", ["N", 4, 8, 8])
    conv = node("Conv", "conv", ["x", "W", "B"], ["c"], pads=[1, 1, 1, 1])
    w, b = tensor("W", [8, 4, 3, 3], 1), tensor("B", [8], 2, 0.1)
    save(model([node("Conv", "conv", ["x", "W", "B"], ["y"], pads=[1, 1, 1, 1])],
               [img], [vi("y", ["N", 8, 8, 8])], [w, b]), "conv.onnx")
    save(model([conv, node("Relu", "relu", ["c"], ["y"])], [img], [vi("y", ["N", 8, 8, 8])],
               [w, b]), "conv_relu.onnx")

    vec = vi("x", ["N", 16])
    save(model([node("Gemm", "fc", ["x", "W", "C"], ["y"], transB=1)], [vec],
               [vi("y", ["N", 8])], [tensor("W", [8, 16], 3), tensor("C", [8], 4, 0.1)]),
         "gemm.onnx")
    save(model([node("MatMul", "mm", ["x", "W"], ["y"])], [vec], [vi("y", ["N", 8])],
               [tensor("W", [16, 8], 5)]), "matmul.onnx")
    save(model([node("MatMul", "mm", ["x", "W"], ["m"]), node("Add", "bias", ["m", "B"], ["y"])],
               [vec], [vi("y", ["N", 8])], [tensor("W", [16, 8], 10), tensor("B", [8], 11, 0.1)]),
         "matmul_add.onnx")

    nodes = [
        node("Conv", "c1", ["x", "W1", "B1"], ["k1"], pads=[1, 1, 1, 1]),
        node("Relu", "r1", ["k1"], ["r1"]),
        node("Conv", "c2", ["r1", "W1", "B1"], ["k2"], pads=[1, 1, 1, 1]),
        node("Relu", "r2", ["k2"], ["r2"]),
        node("GlobalAveragePool", "gap", ["r2"], ["g"]),
        node("Flatten", "flat", ["g"], ["f"]),
        node("Gemm", "fc", ["f", "W3", "C3"], ["y"], transB=1),
    ]
    save(model(nodes, [img], [vi("y", ["N", 5]), vi("r1", ["N", 4, 8, 8])],
               [tensor("W1", [4, 4, 3, 3], 6), tensor("B1", [4], 7, 0.1),
                tensor("W3", [5, 4], 8), tensor("C3", [5], 9, 0.1)]), "net.onnx")

    save(model([node("Conv", "c1", ["x", "W", "B"], ["a"], pads=[1, 1, 1, 1]),
                node("Conv", "c2", ["x", "W2", "B2"], ["b"], pads=[1, 1, 1, 1]),
                node("Add", "add", ["a", "b"], ["s"]), node("Relu", "relu", ["s"], ["y"])],
               [img], [vi("y", ["N", 8, 8, 8])],
               [w, b, tensor("W2", [8, 4, 3, 3], 11), tensor("B2", [8], 12, 0.1)]),
         "add_relu.onnx")

    rng = np.random.RandomState(10)
    np.save(os.path.join(OUT, "x_img.npy"), rng.standard_normal([2, 4, 8, 8]).astype(np.float32))
    np.save(os.path.join(OUT, "x_vec.npy"), rng.standard_normal([2, 16]).astype(np.float32))


if __name__ == "__main__":
    main()
