//===- OrtMatMulInteger.cpp - MatMulInteger as MLAS adds u8 x s8 without VNNI -===//
//
// ONNX Runtime's MatMulInteger multiplies uint8 activations by int8 weights
// (what its dynamic quantization writes) with MLAS's U8S8 GEMM. On x86-64
// CPUs without VNNI that kernel multiplies with VPMADDUBSW: the raw u8 and s8
// values, two adjacent products of the reduction (k = 2j, 2j + 1) added in
// int16 with saturation, then summed in int32; the zero points come in after
// as exact corrections (- b_zero * sum(a) - a_zero * sum(b) + K * a_zero *
// b_zero). The runs of `--ort-cpu no-vnni` compute it that way
// (ortKernels(..., saturatingPairs)). uint8 x uint8 (widened to int16) and int8 x int8 are
// exact there, as they are with VNNI: the default kernel computes them, and
// zero points ORT does not take (per row of A).
//
//===----------------------------------------------------------------------===//
#include "runtime/ort/OrtKernels.h"

#include "runtime/KernelUtil.h"
#include "runtime/ops/MatmulShape.h"

#include <algorithm>

using namespace tpcc;
using namespace tpcc::rt;

namespace {

bool defaultKernel(KernelContext &ctx) {
  return KernelRegistry::get().find("", "MatMulInteger")(ctx);
}

bool saturatingMatMulIntegerKernel(KernelContext &ctx) {
  const Tensor *a = ctx.input(0), *b = ctx.input(1), *az = ctx.input(2), *bz = ctx.input(3);
  if (!a || !b || a->elem() != ElemType::UInt8 || b->elem() != ElemType::Int8 ||
      (az && (az->numel() != 1 || az->elem() != ElemType::UInt8)) ||
      (bz && bz->elem() != ElemType::Int8))
    return defaultKernel(ctx);
  MatmulShape s;
  if (!matmulShape(ctx, "MatMulInteger", a->shape(), b->shape(), s))
    return false;
  // ORT's b_zero_point: one, or one per column of each B matrix.
  bool perColumn = bz && bz->numel() > 1;
  if (perColumn && (bz->numel() != numElements(s.bBatch) * s.n || bz->shape().back() != s.n))
    return defaultKernel(ctx);
  ctx.outputs[0] = Tensor(ElemType::Int32, s.out);
  Tensor &y = ctx.outputs[0];
  int64_t m = s.m, k = s.k, n = s.n, nb = numElements(s.batch);
  if (y.numel() == 0)
    return true;
  const uint8_t *pa = a->data<uint8_t>();
  const int8_t *pb = b->data<int8_t>();
  int64_t za = az ? az->data<uint8_t>()[0] : 0;
  BroadcastIndexer ai(s.aBatch, s.batch), bi(s.bBatch, s.batch);
  int32_t *py = y.data<int32_t>();
  parallelFor(nb * m, k * n, [&](int64_t r0, int64_t r1) {
    std::vector<int64_t> acc(static_cast<size_t>(n));
    std::vector<int64_t> colSum(static_cast<size_t>(n));
    for (int64_t r = r0; r < r1; ++r) {
      int64_t bt = r / m, i = r % m, bOff = bi.offset(bt);
      const uint8_t *row = pa + (ai.offset(bt) * m + i) * k;
      const int8_t *mat = pb + bOff * k * n;
      std::fill(acc.begin(), acc.end(), 0);
      std::fill(colSum.begin(), colSum.end(), 0);
      int64_t l = 0;
      for (; l + 1 < k; l += 2) {
        int64_t a0 = row[l], a1 = row[l + 1];
        const int8_t *b0 = mat + l * n, *b1 = b0 + n;
        for (int64_t j = 0; j < n; ++j) {
          acc[size_t(j)] += std::clamp<int64_t>(a0 * b0[j] + a1 * b1[j], -32768, 32767);
          colSum[size_t(j)] += b0[j] + b1[j];
        }
      }
      if (l < k) // K odd: the last product pairs with the zero padding
        for (int64_t j = 0; j < n; ++j) {
          acc[size_t(j)] += int64_t(row[l]) * mat[l * n + j];
          colSum[size_t(j)] += mat[l * n + j];
        }
      int64_t rowSum = 0;
      for (int64_t q = 0; q < k; ++q)
        rowSum += row[q];
      for (int64_t j = 0; j < n; ++j) {
        int64_t zb = !bz ? 0 : perColumn ? bz->data<int8_t>()[bOff * n + j] : bz->data<int8_t>()[0];
        py[r * n + j] =
            int32_t(acc[size_t(j)] - zb * rowSum - za * colSum[size_t(j)] + k * za * zb);
      }
    }
  });
  return true;
}

} // namespace

void rt::registerOrtNoVnniKernels(KernelRegistry &r) {
  r.add("MatMulInteger", saturatingMatMulIntegerKernel);
}
