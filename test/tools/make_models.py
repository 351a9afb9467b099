#!/usr/bin/python3
"""make_models.py - writes the small ONNX models of the model and plan lit tests.

Run with Debian's python3 (python3-onnx, python3-numpy):

    /usr/bin/python3 test/tools/make_models.py

Writes test/lit/plan/Inputs/models/*.onnx (valid graphs, one construct each) and
test/lit/model/Inputs/*.onnx (hostile files the loader must reject). The output is
deterministic (fixed values, no timestamps): rerunning gives the same bytes.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lit")
PLAN = os.path.join(ROOT, "plan", "Inputs", "models")
BAD = os.path.join(ROOT, "model", "Inputs")
RUN = os.path.join(ROOT, "run", "Inputs")
QUANT = os.path.join(ROOT, "quantize", "Inputs")


def vi(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def const(name, values, dims=None):
    a = np.asarray(values, dtype=np.float32)
    if dims is not None:
        a = a.reshape(dims)
    return numpy_helper.from_array(a, name)


def weights(name, dims, seed):
    n = int(np.prod(dims))
    # A fixed ramp, not a random generator: identical on every machine.
    return const(name, (np.arange(n, dtype=np.float32) % 7 - 3) * 0.1 * seed, dims)


def model(nodes, inputs, outputs, inits=(), opset=13, ir=7, check=True):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="tpcc-tests")
    m.ir_version = ir
    if check:
        onnx.checker.check_model(m)
        onnx.shape_inference.infer_shapes(m, strict_mode=True)
    return m


def save(m, folder, name):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(m.SerializeToString() if not isinstance(m, bytes) else m)


def node(op, name, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, name=name, **attrs)


X = [vi("x", [1, 4, 8, 8])]


def valid_models():
    yield "conv_relu", model(
        [node("Conv", "conv", ["x", "W", "B"], ["c"], pads=[1, 1, 1, 1]),
         node("Relu", "relu", ["c"], ["y"])],
        X, [vi("y", [1, 8, 8, 8])],
        [weights("W", [8, 4, 3, 3], 1), weights("B", [8], 2)])
    yield "conv_two_consumers", model(
        [node("Conv", "conv", ["x", "W"], ["c"]),
         node("Relu", "relu", ["c"], ["r"]),
         node("Add", "add", ["r", "c"], ["y"])],
        X, [vi("y", [1, 4, 8, 8])], [weights("W", [4, 4, 1, 1], 1)])
    yield "conv_output_is_graph_output", model(
        [node("Conv", "conv", ["x", "W"], ["c"]),
         node("Relu", "relu", ["c"], ["y"])],
        X, [vi("y", [1, 4, 8, 8]), vi("c", [1, 4, 8, 8])],
        [weights("W", [4, 4, 1, 1], 1)])
    yield "depthwise_vs_regular", model(
        [node("Conv", "dw", ["x", "Wd"], ["d"], group=4, pads=[1, 1, 1, 1]),
         node("Conv", "pw", ["d", "Wp"], ["y"])],
        X, [vi("y", [1, 4, 8, 8])],
        [weights("Wd", [4, 1, 3, 3], 1), weights("Wp", [4, 4, 1, 1], 2)])
    yield "clip_relu6", model(
        [node("Conv", "conv", ["x", "W"], ["c"]),
         node("Clip", "relu6", ["c", "zero", "six"], ["r"]),
         node("Clip", "hardtanh", ["r", "minus_one", "one"], ["y"])],
        X, [vi("y", [1, 4, 8, 8])],
        [weights("W", [4, 4, 1, 1], 1), const("zero", 0.0), const("six", 6.0),
         const("minus_one", -1.0), const("one", 1.0)])
    yield "clip_opset6", model(
        [node("Conv", "conv", ["x", "W"], ["c"]),
         node("Clip", "relu6", ["c"], ["y"], min=0.0, max=6.0)],
        # IR 3: an initializer is also a graph input.
        X + [vi("W", [4, 4, 1, 1])], [vi("y", [1, 4, 8, 8])],
        [weights("W", [4, 4, 1, 1], 1)], opset=6, ir=3)
    yield "add_relu", model(
        [node("Add", "add", ["a", "b"], ["s"]),
         node("Relu", "relu", ["s"], ["y"])],
        [vi("a", [1, 4, 4, 4]), vi("b", [1, 4, 4, 4])], [vi("y", [1, 4, 4, 4])])
    yield "matmul_const_and_dynamic", model(
        [node("MatMul", "fc", ["v", "W"], ["h"]),
         node("MatMul", "mm", ["h", "z"], ["k"]),
         node("Gemm", "gemm", ["k", "G"], ["y"], transB=1)],
        [vi("v", [1, 16]), vi("z", [8, 4])], [vi("y", [1, 4])],
        [weights("W", [16, 8], 1), weights("G", [4, 4], 2)])
    # Composite activations (language.md 6.1): a SiLU and a HardSwish (opset-13 form,
    # operands in the other order) after Convs, and the look-alikes no composite takes.
    yield "composites", model(
        [node("Conv", "conv1", ["x", "W1"], ["c1"], pads=[1, 1, 1, 1]),
         node("Sigmoid", "sig", ["c1"], ["s"]),
         node("Mul", "silu", ["c1", "s"], ["a"]),
         node("Conv", "conv2", ["a", "W2"], ["c2"]),
         node("HardSigmoid", "hsig", ["c2"], ["h"], alpha=1.0 / 6, beta=0.5),
         node("Mul", "hswish", ["h", "c2"], ["b"]),
         node("Conv", "conv3", ["b", "W3"], ["y"])],
        X, [vi("y", [1, 4, 8, 8])],
        [weights("W1", [4, 4, 3, 3], 1), weights("W2", [4, 4, 1, 1], 2),
         weights("W3", [4, 4, 1, 1], 3)])
    yield "composite_lookalikes", model(
        [node("Conv", "conv", ["x", "W"], ["c"]),
         # Squeeze-and-excitation: the gate reads another tensor than the product.
         node("GlobalAveragePool", "gap", ["c"], ["p"]),
         node("Conv", "fc", ["p", "F"], ["f"]),
         node("Sigmoid", "gate", ["f"], ["g"]),
         node("Mul", "excite", ["c", "g"], ["e"]),
         # A SiLU whose gate is also used outside the chain.
         node("Sigmoid", "sig", ["e"], ["s"]),
         node("Mul", "silu", ["e", "s"], ["a"]),
         node("Add", "add", ["a", "s"], ["b"]),
         # A SiLU whose gate is a graph output.
         node("Sigmoid", "sig2", ["b"], ["s2"]),
         node("Mul", "silu2", ["s2", "b"], ["y"])],
        X, [vi("y", [1, 4, 8, 8]), vi("s2", [1, 4, 8, 8])],
        [weights("W", [4, 4, 1, 1], 1), weights("F", [4, 4, 1, 1], 2)])
    # GELU as PyTorch exports it before opset 20 (x * (1 + erf(x / sqrt 2)) * 0.5), and
    # the tanh approximation as Hugging Face writes it (Pow).
    yield "gelu", model(
        [node("Conv", "conv", ["x", "W"], ["c"]),
         node("Div", "div", ["c", "sqrt2"], ["d"]),
         node("Erf", "erf", ["d"], ["e"]),
         node("Add", "add", ["e", "one"], ["a"]),
         node("Mul", "mul", ["c", "a"], ["m"]),
         node("Mul", "gelu", ["m", "half"], ["g"]),
         node("Pow", "cube", ["g", "three"], ["p"]),
         node("Mul", "kappa", ["p", "k"], ["pk"]),
         node("Add", "inner", ["g", "pk"], ["i"]),
         node("Mul", "beta", ["i", "b"], ["ib"]),
         node("Tanh", "tanh", ["ib"], ["t"]),
         node("Add", "one_plus", ["t", "one"], ["o"]),
         node("Mul", "half_x", ["g", "half"], ["hx"]),
         node("Mul", "gelu_tanh", ["hx", "o"], ["y"])],
        X, [vi("y", [1, 4, 8, 8])],
        [weights("W", [4, 4, 1, 1], 1), const("sqrt2", 1.4142135623730951),
         const("one", 1.0), const("half", 0.5), const("three", 3.0),
         const("k", 0.044715), const("b", 0.7978845608028654)])
    yield "sigmoid_mul", model(
        [node("Sigmoid", "sig", ["x"], ["s"]),
         node("Mul", "mul", ["s", "x"], ["y"])],
        X, [vi("y", [1, 4, 8, 8])])
    yield "mixed_graph", model(
        [node("Conv", "conv", ["x", "W"], ["c"]),
         node("HardSwish", "hswish", ["c"], ["h"]),
         node("MaxPool", "pool", ["h"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
         node("Sigmoid", "gate", ["p"], ["g"]),
         node("Mul", "scale", ["p", "g"], ["m"]),
         node("Constant", "shape_const", [], ["shape"],
              value=numpy_helper.from_array(np.array([1, 64], np.int64))),
         node("Reshape", "reshape", ["m", "shape"], ["r"]),
         node("Gemm", "fc", ["r", "G", "Bg"], ["l"], transB=1),
         node("Softmax", "softmax", ["l"], ["y"])],
        X, [vi("y", [1, 10])],
        [weights("W", [4, 4, 1, 1], 1), weights("G", [10, 64], 2), weights("Bg", [10], 3)],
        opset=14)  # HardSwish since 14
    branch = lambda name: helper.make_graph(  # noqa: E731
        [node("Relu", name + "_relu", ["c"], [name + "_out"])], name, [],
        [vi(name + "_out", [1, 4, 8, 8])])
    yield "if_subgraph", model(
        [node("Conv", "conv", ["x", "W"], ["c"]),
         node("If", "branch", ["cond"], ["y"], then_branch=branch("then"),
              else_branch=branch("else"))],
        X + [vi("cond", [1], TensorProto.BOOL)], [vi("y", [1, 4, 8, 8])],
        [weights("W", [4, 4, 1, 1], 1)])
    yield "unnamed_nodes", model(
        [helper.make_node("Conv", ["x", "W"], ["c"]), helper.make_node("Relu", ["c"], ["y"])],
        X, [vi("y", [1, 4, 8, 8])], [weights("W", [4, 4, 1, 1], 1)])
    yield "newer_opset", model(
        [node("Relu", "relu", ["x"], ["y"])], X, [vi("y", [1, 4, 8, 8])], opset=18,
        check=False)
    # The declared output shape contradicts the inferred one: shape inference fails.
    yield "shape_conflict", model(
        [node("Relu", "relu", ["x"], ["y"])], X, [vi("y", [1, 4])], check=False)
    old = model([node("Relu", "relu", ["x"], ["y"])], X, [vi("y", [1, 4, 8, 8])],
                check=False)
    old.ir_version = 2
    del old.opset_import[:]
    yield "old_ir", old


def bad_models():
    good = dict(valid_models())["conv_relu"]
    data = good.SerializeToString()
    yield "truncated", data[: len(data) // 2]
    yield "random", np.random.default_rng(7).integers(0, 256, 4096, dtype=np.uint8).tobytes()
    # A field whose length runs past the end of the file.
    yield "not_a_model", b"\x0a\xff\xff\xff\xff\x0f" + b"not protobuf"

    def edited(change):
        m = onnx.ModelProto()
        m.CopyFrom(good)
        change(m)
        return m

    def set_node(i, field, k, value):
        return lambda m: getattr(m.graph.node[i], field).__setitem__(k, value)

    def initializer(dims, raw=None, external=None):
        def change(m):
            w = m.graph.initializer[0]
            w.ClearField("dims")
            w.dims.extend(dims)
            w.ClearField("float_data")
            if raw is not None:
                w.raw_data = raw
            if external is not None:
                w.data_location = TensorProto.EXTERNAL
                e = w.external_data.add()
                e.key, e.value = "location", external
        return change

    yield "cycle", edited(set_node(0, "input", 0, "y"))  # conv <- relu <- conv
    yield "undefined_value", edited(set_node(1, "input", 0, "ghost"))
    yield "duplicate_definition", edited(set_node(1, "output", 0, "c"))
    yield "size_exceeds_data", edited(initializer([64, 4, 3, 3], np.zeros(8, np.float32).tobytes()))
    yield "huge_shape", edited(initializer([1 << 20, 1 << 20], bytes(16)))
    yield "external_outside", edited(initializer([8, 4, 3, 3], external="../../secret.bin"))
    yield "checker_fails", edited(lambda m: setattr(m.graph.node[1], "op_type", "NoSuchOp"))
    # relu before the conv that feeds it: out of the topological order ONNX requires.
    yield "unsorted", edited(lambda m: m.graph.node.sort(key=lambda n: n.op_type != "Relu"))
    yield "output_undefined", edited(lambda m: setattr(m.graph.output[0], "name", "nowhere"))
    yield "no_graph", edited(lambda m: m.ClearField("graph"))
    yield "sparse_initializer", edited(
        lambda m: m.graph.sparse_initializer.add().values.CopyFrom(const("sv", [1.0])))


def bn_params(prefix, c, rng):
    return [const(prefix + "_s", rng.uniform(0.5, 1.5, c)), const(prefix + "_b", rng.uniform(-0.5, 0.5, c)),
            const(prefix + "_m", rng.uniform(-0.2, 0.2, c)), const(prefix + "_v", rng.uniform(0.5, 2.0, c))]


def bn(name, x, y, prefix):
    return node("BatchNormalization", name, [x, prefix + "_s", prefix + "_b", prefix + "_m", prefix + "_v"],
                [y], epsilon=1e-3)


def run_models():
    """Models and data of the executor's lit tests (tpcc run / eval) and clean-up tests."""
    rng = np.random.RandomState(7)  # numpy's legacy generator: the same stream everywhere
    w = lambda name, dims: const(name, rng.normal(0, 0.3, int(np.prod(dims))), dims)
    n = "N"
    # Conv -> BN -> Relu -> ConvTranspose(group 2) -> BN -> Identity -> Dropout ->
    # GlobalAveragePool -> Flatten -> Gemm(transB) -> BN -> Add(constant subgraph).
    yield "cleanup", model(
        [node("Conv", "conv", ["x", "W1", "B1"], ["c1"], pads=[1, 1, 1, 1]),
         bn("bn1", "c1", "b1", "bn1"),
         node("Relu", "relu", ["b1"], ["r1"]),
         node("ConvTranspose", "deconv", ["r1", "W2"], ["c2"], group=2, strides=[2, 2]),
         bn("bn2", "c2", "b2", "bn2"),
         node("Identity", "id", ["b2"], ["i2"]),
         node("Dropout", "drop", ["i2"], ["d2"]),
         node("GlobalAveragePool", "gap", ["d2"], ["g"]),
         node("Flatten", "flat", ["g"], ["f"]),
         node("Gemm", "fc", ["f", "W3", "C3"], ["fc"], transB=1, beta=0.5),
         bn("bn3", "fc", "b3", "bn3"),
         node("Constant", "k", [], ["k"], value=const("kv", [0.1, 0.2, 0.3, 0.4, 0.5])),
         node("Mul", "kk", ["k", "k"], ["k2"]),
         node("Add", "add", ["b3", "k2"], ["y"])],
        [vi("x", [n, 4, 6, 6])], [vi("y", [n, 5])],
        [w("W1", [8, 4, 3, 3]), w("B1", [8]), w("W2", [8, 3, 2, 2]), w("W3", [5, 6]), w("C3", [5])]
        + bn_params("bn1", 8, rng) + bn_params("bn2", 6, rng) + bn_params("bn3", 5, rng))
    # An operator the executor lacks, twice, and one from another domain.
    m = model(
        [node("Relu", "relu", ["x"], ["r"]),
         node("Einsum", "e1", ["r", "r"], ["e"], equation="ij,ij->ij"),
         node("Einsum", "e2", ["e", "e"], ["y"], equation="ij,ij->ij"),
         helper.make_node("Gelu", ["y"], ["z"], name="gelu", domain="com.example")],
        [vi("x", [2, 3])], [vi("z", [2, 3])], check=False)
    m.opset_import.append(helper.make_opsetid("com.example", 1))
    yield "unsupported", m
    # An initializer that contradicts its declared type (a graph input with a default).
    m = model([node("Add", "add", ["x", "W"], ["y"])], [vi("x", [2, 3])], [vi("y", [2, 3])],
              [const("W", np.zeros(6), [2, 3])], ir=3, opset=9, check=False)
    m.graph.input.append(vi("W", [3, 2]))
    yield "initializer_contradicts", m.SerializeToString()
    yield "other_head", model(
        [node("GlobalAveragePool", "gap", ["x"], ["g"]), node("Flatten", "flat", ["g"], ["y"])],
        [vi("x", [n, 4, 6, 6])], [vi("y", [n, 4])])
    # Shape inference cannot see that 6 elements do not make 4x4; the kernel can.
    yield "bad_reshape", model(
        [node("Reshape", "reshape", ["x", "s"], ["y"])],
        [vi("x", [2, 3]), vi("s", [2], TensorProto.INT64)], [vi("y", [4, 4])], check=False)
    # Activations the executor folds into the convolution before them: Relu,
    # Clip with constant bounds (inputs), and Clip whose output is a graph output
    # (not folded); a Conv read by two nodes is not folded either.
    yield "fold", model(
        [node("Conv", "c1", ["x", "W1"], ["c1"], pads=[1, 1, 1, 1]),
         node("Relu", "r1", ["c1"], ["r1"]),
         node("ConvTranspose", "c2", ["r1", "W2"], ["c2"], strides=[2, 2]),
         node("Clip", "clip", ["c2", "lo", "hi"], ["k2"]),
         node("Conv", "c3", ["k2", "W3"], ["c3"]),
         node("Relu", "r3", ["c3"], ["r3"]),
         node("Add", "add", ["c3", "r3"], ["a3"]),
         node("Conv", "c4", ["a3", "W4"], ["c4"]),
         node("Clip", "out", ["c4", "lo"], ["y"])],
        [vi("x", [n, 4, 6, 6])], [vi("y", [n, 2, 12, 12])],
        [w("W1", [8, 4, 3, 3]), w("W2", [8, 3, 2, 2]), w("W3", [3, 3, 1, 1]), w("W4", [2, 3, 1, 1]),
         const("lo", [-0.25], []), const("hi", [0.5], [])])
    yield "two_inputs", model([node("Add", "add", ["a", "b"], ["y"])],
                              [vi("a", [2, 3]), vi("b", [2, 3])], [vi("y", [2, 3])])
    # A BatchNormalization spelled out (Paddle's export: Conv -> Mul -> Add of
    # per-channel constants), a depthwise Conv -> Div(scalar) -> Sub, a Gemm ->
    # Add (a bias in another node); and what must stay: a Mul whose constant
    # varies along the width, an Add of a Conv output that a second node reads.
    yield "cleanup_affine", model(
        [node("Conv", "c1", ["x", "W1", "B1"], ["c1"], pads=[1, 1, 1, 1]),
         node("Mul", "m1", ["c1", "S1"], ["m1"]),
         node("Add", "a1", ["T1", "m1"], ["a1"]),
         node("Relu", "r1", ["a1"], ["r1"]),
         node("Conv", "dw", ["r1", "W2"], ["c2"], group=8, pads=[1, 1, 1, 1]),
         node("Div", "d2", ["c2", "S2"], ["d2"]),
         node("Sub", "s2", ["d2", "T2"], ["s2"]),
         node("Mul", "wide", ["s2", "S3"], ["m3"]),
         node("Conv", "c4", ["m3", "W4"], ["c4"]),
         node("Add", "shared", ["c4", "T4"], ["a4"]),
         node("Add", "skip", ["a4", "c4"], ["k4"]),
         node("GlobalAveragePool", "gap", ["k4"], ["g"]),
         node("Flatten", "flat", ["g"], ["f"]),
         node("Gemm", "fc", ["f", "W5"], ["fc"], transB=1),
         node("Add", "bias", ["fc", "T5"], ["y"])],
        [vi("x", [n, 4, 6, 6])], [vi("y", [n, 5])],
        [w("W1", [8, 4, 3, 3]), w("B1", [8]), const("S1", rng.uniform(0.5, 2, 8), [8, 1, 1]),
         const("T1", rng.uniform(-1, 1, 8), [1, 8, 1, 1]), w("W2", [8, 1, 3, 3]),
         const("S2", [4.0], []), const("T2", rng.uniform(-1, 1, 8), [8, 1, 1]),
         const("S3", rng.uniform(0.5, 2, 6), [1, 1, 6]), w("W4", [6, 8, 1, 1]),
         const("T4", rng.uniform(-1, 1, 6), [6, 1, 1]), w("W5", [5, 6]),
         const("T5", rng.uniform(-1, 1, 5), [5])])

    # QLinearSoftmax with int8 codes (ORT moves them to uint8): a row whose top element
    # takes the whole sum writes 256 codes, saturated at 255 there (127 as int8), not
    # wrapped to -128 (the OCR classifier on tflite, logits 8.9 and -9.1).
    i8 = lambda name, v: numpy_helper.from_array(np.array(v, np.int8), name)
    yield "softmax_int8", model(
        [node("QuantizeLinear", "q", ["x", "s1", "z1"], ["a"]),
         node("DequantizeLinear", "dq", ["a", "s1", "z1"], ["b"]),
         node("Softmax", "softmax", ["b"], ["c"], axis=1),
         node("QuantizeLinear", "q2", ["c", "s2", "z2"], ["d"]),
         node("DequantizeLinear", "dq2", ["d", "s2", "z2"], ["y"])],
        [vi("x", [1, 2])], [vi("y", [1, 2])],
        [const("s1", 0.125), i8("z1", 0), const("s2", 1 / 256), i8("z2", -128)])


def quantize_models():
    """Models of the quantizer's lit tests."""
    rng = np.random.RandomState(5)
    w = lambda name, dims: const(name, rng.normal(0, 0.3, int(np.prod(dims))), dims)
    bad = rng.normal(0, 0.3, 8 * 1 * 3 * 3)
    bad[4] = np.nan
    yield "nan_weight", model(
        [node("Conv", "conv", ["x", "W", "B"], ["c"], pads=[1, 1, 1, 1]),
         node("Relu", "relu", ["c"], ["y"])],
        [vi("x", [1, 1, 8, 8])], [vi("y", [1, 8, 8, 8])],
        [const("W", bad, [8, 1, 3, 3]), w("B", [8])])
    # What the clean-up removes before planning: a BatchNormalization after a
    # Conv, an Identity and a Dropout.
    pos = lambda name, n: const(name, rng.uniform(0.5, 1.5, n), [n])
    yield "bn_identity", model(
        [node("Conv", "conv", ["x", "W"], ["c"], pads=[1, 1, 1, 1]),
         node("BatchNormalization", "bn", ["c", "s", "b", "m", "v"], ["n"]),
         node("Identity", "id", ["n"], ["i"]),
         node("Relu", "relu", ["i"], ["r"]),
         node("Dropout", "drop", ["r"], ["y"])],
        [vi("x", [1, 1, 8, 8])], [vi("y", [1, 4, 8, 8])],
        [w("W", [4, 1, 3, 3]), pos("s", 4), w("b", [4]), w("m", [4]), pos("v", 4)])

    # Constant operands (MCT's positional weights): a per-channel scale and shift
    # ([4,1,1] and [1,4,1,1]: one axis longer than 1; after the Clip, so that the
    # clean-up cannot fold them into the Conv), a constant table concatenated
    # on the channel axis ([1,2,8,8]: the axis lined up with the output's axis 1), a
    # scalar (per tensor); the Clip's bounds are parameters, not operands.
    yield "constant_operands", model(
        [node("Conv", "conv", ["x", "W"], ["c"]),
         node("Clip", "clip", ["c", "zero", "six"], ["r"]),
         node("Mul", "scale", ["r", "s"], ["m"]),
         node("Add", "shift", ["m", "t"], ["a"]),
         node("Concat", "cat", ["a", "table"], ["k"], axis=1),
         node("Add", "eps", ["k", "e"], ["y"])],
        [vi("x", [1, 4, 8, 8])], [vi("y", [1, 6, 8, 8])],
        [w("W", [4, 4, 1, 1]), const("s", [0.5, 1.0, 1.5, 2.0], [4, 1, 1]),
         const("t", [-0.25, 0.0, 0.25, 0.5], [1, 4, 1, 1]), const("zero", 0.0),
         const("six", 6.0), const("table", rng.uniform(0, 3, 128), [1, 2, 8, 8]),
         const("e", 0.001)])

    # An embedding (a Gather of a constant table by token ids) read by a linear
    # layer: the table is stored quantized, and the Gather's output keeps its grid.
    yield "embedding", model(
        [node("Gather", "embed", ["table", "ids"], ["e"]),
         node("MatMul", "proj", ["e", "W"], ["m"]),
         node("Add", "bias", ["m", "b"], ["y"])],
        [vi("ids", [1, 6], TensorProto.INT64)], [vi("y", [1, 6, 8])],
        [const("table", rng.normal(0, 1, 50 * 16), [50, 16]), w("W", [16, 8]), w("b", [8])])


def quantize_data():
    rng = np.random.RandomState(13)
    yield "x1.npy", rng.uniform(0, 1, (1, 8, 8)).astype(np.float32)
    yield "zero.npy", np.zeros((0, 1, 8, 8), np.float32)
    yield "f64.npy", rng.uniform(0, 1, (4, 1, 8, 8))
    yield "shape.npy", rng.uniform(0, 1, (4, 1, 9, 9)).astype(np.float32)
    yield "x4.npy", rng.uniform(-1, 1, (8, 4, 8, 8)).astype(np.float32)
    yield "ids.npy", rng.randint(0, 50, (8, 6)).astype(np.int64)


def run_data():
    rng = np.random.RandomState(11)
    x = rng.uniform(-1, 1, (3, 4, 6, 6)).astype(np.float32)
    yield "x.npy", x
    yield "x_f64.npy", x.astype(np.float64)
    yield "x_shape.npy", rng.uniform(-1, 1, (3, 4, 5, 6)).astype(np.float32)
    bad = x.copy()
    bad[1, 2, 3, 4] = np.nan
    bad[2, 0, 0, 0] = np.inf
    yield "x_nan.npy", bad
    yield "a.npy", np.arange(6, dtype=np.float32).reshape(2, 3)
    yield "labels.npy", np.array([0, 1, 2], dtype=np.int64)
    yield "labels_short.npy", np.array([0, 1], dtype=np.int64)
    yield "logits2.npy", np.array([[8.917503, -9.101131]], dtype=np.float32)


def save_npy(folder, name, a):
    import io
    buf = io.BytesIO()
    np.save(buf, a)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(buf.getvalue())


def main():
    for name, m in valid_models():
        save(m, PLAN, name + ".onnx")
    for name, m in bad_models():
        save(m, BAD, name + ".onnx")
    for name, m in run_models():
        save(m, RUN, name + ".onnx")
    for name, a in run_data():
        save_npy(RUN, name, a)
    for name, m in quantize_models():
        save(m, QUANT, name + ".onnx")
    for name, a in quantize_data():
        save_npy(QUANT, name, a)
    with open(os.path.join(RUN, "x.pb"), "wb") as f:
        f.write(numpy_helper.from_array(np.load(os.path.join(RUN, "x.npy")), "x").SerializeToString())
    save_npy(RUN, "shape44.npy", np.array([4, 4], dtype=np.int64))
    # Calibration data for unnamed_nodes.onnx (plan/unnamed.test quantizes it).
    save_npy(PLAN, "unnamed_nodes_calib.npy",
             np.random.RandomState(0).rand(4, 4, 8, 8).astype(np.float32))
    # Calibration data for composites.onnx (quantize/composites.test), around zero.
    save_npy(PLAN, "composites_calib.npy",
             (np.random.RandomState(1).rand(8, 4, 8, 8) * 4 - 2).astype(np.float32))
    with open(os.path.join(RUN, "x.npy"), "rb") as f:
        whole = f.read()
    with open(os.path.join(RUN, "x_truncated.npy"), "wb") as f:
        f.write(whole[:len(whole) // 2])


if __name__ == "__main__":
    main()
