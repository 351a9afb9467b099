//===- MatmulShape.h - The batch layout of a numpy-style matrix product -*- C++ -*-===//
//
// MatMul's semantics (numpy matmul: 1-D operands promoted to a row or a
// column and dropped from the output, leading batch dimensions broadcast),
// read once for MatMul (Gemm.cpp) and MatMulInteger (IntegerGemm.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_RUNTIME_OPS_MATMULSHAPE_H
#define TPCC_RUNTIME_OPS_MATMULSHAPE_H

#include "runtime/Kernel.h"

#include <functional>

namespace tpcc::rt {

/// The batch layout of a matrix product: output batch shape and, per output
/// batch, the batch offsets in A and B (BroadcastIndexer over aBatch / bBatch).
struct MatmulShape {
  Shape aBatch, bBatch, batch, out;
  int64_t m = 0, k = 0, n = 0;
};

/// The layout of `op`(A, B) for operand shapes `a` and `b`; false (with
/// `ctx.fail`) when they are scalars, their inner dimensions differ or their
/// batch dimensions do not broadcast.
bool matmulShape(KernelContext &ctx, llvm::StringRef op, const Shape &a, const Shape &b,
                 MatmulShape &s);

/// y = a x w (+ bias, one float per column) for a float matrix w that the
/// kernel derives from its input 1 and others (MatMulNBits' dequantized
/// weights): `make` fills w, once while input 1 is a constant at `from`
/// (the node keeps it, and oneDNN packs it once), else on every run.
bool matmulDerivedWeights(KernelContext &ctx, const Tensor *a, const void *from,
                          const std::function<bool(Tensor &)> &make, Tensor &y, const Tensor *bias);

} // namespace tpcc::rt

#endif
