//===- MlasGemm.h - A float GEMM summed as ONNX Runtime's MLAS sums it -*- C++ -*-===//
//
// C[m x n] = A[m x k] B[k x n] (row-major) with the operations of one output
// in the order of MLAS's single-threaded SGEMM, the same on every x86-64 CPU
// with FMA (AVX2 and AVX-512 kernels differ in width, not in the order):
//
//  - Slices: K cut into slices of `sliceK` (mlasStrideK for an unpacked B,
//    256 for a B that ONNX Runtime packed ahead: a constant MatMul weight);
//    each slice a chain of fused multiply-adds from 0 in k order; C the first
//    slice's sum, then C + each next slice's sum;
//  - SingleRow (m == 1 with an unpacked B): k in groups of 4, then 2, then 1,
//    each group's products summed left to right (no FMA) and added to C (C is
//    the first group itself);
//  - DotRows (n == 1, m > 1, unpacked B: MlasSgemmKernelM1TransposeBAvx):
//    each row of A dotted with the column over all of K in 8 lane sums, the
//    lanes reduced in the order of the block of 4, 2 or 1 rows the row is in.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_RUNTIME_ORT_OPS_MLASGEMM_H
#define TPCC_RUNTIME_ORT_OPS_MLASGEMM_H

#include <cstdint>
#include <vector>

namespace tpcc::rt {

enum class MlasKernel { Slices, SingleRow, DotRows };

/// MLAS's K slice for an M x N x K product with an unpacked B on one thread:
/// 128, or larger when N is small (MlasSgemmOperation: with N < K, StrideN
/// 128 halves and StrideK doubles while StrideN > 16 and StrideN / 2 >= N).
int64_t mlasStrideK(int64_t n, int64_t k);

/// C = A B as `kernel` sums it (`acc`: scratch). B's rows are `n` apart.
void mlasGemm(MlasKernel kernel, const float *a, const float *b, float *c, int64_t m, int64_t n,
              int64_t k, int64_t sliceK, std::vector<float> &acc);

} // namespace tpcc::rt

#endif
