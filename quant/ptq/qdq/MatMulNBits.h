//===- MatMulNBits.h - Weight-only 4-bit products as ORT's MatMulNBits -*- C++ -*-===//
//
// `--matmul-nbits` (docs/quantize.md, "Blocked weights"): after the QDQ
// rewrite, each MatMul, and each Gemm with transA 0 and alpha = beta = 1,
// whose B is a blocked DequantizeLinear of 4-bit codes along K (blocks a power
// of two of at least 16, one scale and zero point per block, read by that node
// only) becomes ONNX Runtime's com.microsoft MatMulNBits: B transposed to [N,
// k_blocks, block / 2] bytes, the codes offset to unsigned (q = c + 8 for
// int4), the scales [N x k_blocks], the zero points packed per row of N when
// some is not 8, a Gemm's C as its bias; accuracy level 0, so ORT computes
// in float what the blocked DequantizeLinear -> MatMul defines. A file ORT
// runs without forming the fusion itself (any optimization level, minimal
// builds), and which onnxruntime-genai's loaders expect.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_PTQ_QDQ_MATMULNBITS_H
#define TPCC_QUANT_PTQ_QDQ_MATMULNBITS_H

#include "ir/graph/Graph.h"

namespace tpcc::quant {

/// Rewrites the products of `m` as the file comment says; returns how many.
int writeMatMulNBits(graph::Model &m);

} // namespace tpcc::quant

#endif
