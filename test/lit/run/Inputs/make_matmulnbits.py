"""Writes a model of ONNX Runtime's com.microsoft MatMulNBits, its input and the output
computed here in float64 from the codes (an independent reference):
make_matmulnbits.py MODEL X.npy Y.npy BITS ZERO_POINTS(0|1) BIAS(0|1) ACCURACY_LEVEL [SAMPLES]

A [SAMPLES (default 3; a symbolic batch in the model), 5, K=80] times weights [K, N=24] quantized per block of 32 along K (the last block
holds 16): codes packed low bits first per block, scales one per (n, block), zero points
packed per row of N (absent: 2^(bits-1)), an optional bias [N]."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper
from onnx import numpy_helper as nh

path, xpath, ypath = sys.argv[1:4]
bits, with_zp, with_bias, level = (int(v) for v in sys.argv[4:8])
samples = int(sys.argv[8]) if len(sys.argv) > 8 else 3
K, N, BLOCK = 80, 24, 32
blocks = (K + BLOCK - 1) // BLOCK
rng = np.random.RandomState(bits * 10 + with_zp)
top = (1 << bits) - 1
codes = rng.randint(0, top + 1, (N, blocks * BLOCK))
codes[:, K:] = 0  # the padding of the last block
scales = rng.uniform(0.01, 0.1, (N, blocks)).astype(np.float32)
zps = rng.randint(0, top + 1, (N, blocks)) if with_zp else np.full((N, blocks), 1 << (bits - 1))


def pack(rows, per_row):
    """Packs each row of codes low bits first into per_row bytes."""
    out = np.zeros((rows.shape[0], per_row), np.uint8)
    per_byte = 8 // bits
    for r in range(rows.shape[0]):
        for i, c in enumerate(rows[r]):
            out[r, i // per_byte] |= np.uint8(c << (bits * (i % per_byte)))
    return out


blob = BLOCK * bits // 8
b = pack(codes.reshape(N * blocks, BLOCK), blob).reshape(N, blocks, blob)
inputs = ["a", "b", "scales"]
inits = [nh.from_array(b, "b"), nh.from_array(scales.reshape(-1), "scales")]
if with_zp:
    inits.append(nh.from_array(pack(zps, (blocks * bits + 7) // 8).reshape(-1), "zero_points"))
    inputs.append("zero_points")
bias = rng.normal(0, 1, N).astype(np.float32)
if with_bias:
    inputs += [""] * (5 - len(inputs)) + ["bias"]
    inits.append(nh.from_array(bias, "bias"))
node = helper.make_node("MatMulNBits", inputs, ["y"], domain="com.microsoft", name="mm", K=K, N=N,
                        bits=bits, block_size=BLOCK, accuracy_level=level)
graph = helper.make_graph([node], "nbits",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, ["batch", 5, K])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 5, N])],
                          inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                helper.make_opsetid("com.microsoft", 1)])
model.ir_version = 8
onnx.save(model, path)
a = rng.normal(0, 1, (samples, 5, K)).astype(np.float32)
w = (codes[:, :K] - np.repeat(zps, BLOCK, axis=1)[:, :K]) * np.repeat(scales, BLOCK, axis=1)[:, :K]
y = a.astype(np.float64) @ w.T.astype(np.float64) + (bias if with_bias else 0)
np.save(xpath, a)
np.save(ypath, y.astype(np.float32))
