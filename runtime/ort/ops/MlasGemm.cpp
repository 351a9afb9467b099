//===- MlasGemm.cpp - A float GEMM summed as ONNX Runtime's MLAS sums it ---===//
//
// The order of one output's operations in MLAS's single-threaded SGEMM, which
// the float Conv (OrtConv.cpp) and MatMul (OrtMatMul.cpp) of `--ort-cpu` runs
// share; MlasGemm.h says which kernel does what. The file is built with
// -ffp-contract=off: each product and sum rounds on its own unless the code
// asks for a fused multiply-add.
//
//===----------------------------------------------------------------------===//
#include "runtime/ort/ops/MlasGemm.h"

#include "runtime/Simd.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

using namespace tpcc;
using namespace tpcc::rt;

/// MLAS's K slice for an M x N x K product on one thread.
int64_t rt::mlasStrideK(int64_t n, int64_t k) {
  int64_t sn = 128, sk = 128;
  if (n >= k) {
    while (sk / 2 >= k) {
      sn *= 2;
      sk /= 2;
    }
  } else {
    while (sn > 16 && sn / 2 >= n)
      sk *= 2, sn /= 2;
  }
  return sk;
}

namespace {

/// acc[j] = fma(a, b[j], acc[j]) for j < n.
void fmaRow(float a, const float *b, float *acc, int64_t n) {
  for (int64_t j = 0; j < n; ++j)
    acc[j] = std::fma(a, b[j], acc[j]);
}
__attribute__((target("avx2,fma"))) void fmaRowAvx2(float a, const float *b, float *acc,
                                                    int64_t n) {
  __m256 va = _mm256_set1_ps(a);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    _mm256_storeu_ps(acc + j,
                     _mm256_fmadd_ps(va, _mm256_loadu_ps(b + j), _mm256_loadu_ps(acc + j)));
  for (; j < n; ++j)
    acc[j] = std::fma(a, b[j], acc[j]);
}

bool useAvx2() {
  static const bool fma = __builtin_cpu_supports("fma");
  return fma && simdLevel() != SimdLevel::Sse2;
}

/// C[m][j] for one K slice of rows m > 1 filters (chains of FMAs from 0),
/// added to C unless `first`.
void sliceFma(const float *w, int64_t k, int64_t m, int64_t k0, int64_t k1, const float *col,
              int64_t nc, float *c, int64_t ldc, bool first, std::vector<float> &acc) {
  bool avx2 = useAvx2();
  acc.resize(size_t(nc));
  for (int64_t r = 0; r < m; ++r) {
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int64_t kk = k0; kk < k1; ++kk) {
      float a = w[r * k + kk];
      if (avx2)
        fmaRowAvx2(a, col + kk * nc, acc.data(), nc);
      else
        fmaRow(a, col + kk * nc, acc.data(), nc);
    }
    float *row = c + r * ldc;
    for (int64_t j = 0; j < nc; ++j)
      row[j] = first ? acc[j] : row[j] + acc[j];
  }
}

/// MLAS's single-row kernel over k in [k0, k1): groups of 4, 2, 1 of
/// products summed left to right, each group added to C (C is the first
/// group when `first`). The file is built with -ffp-contract=off: each
/// product and sum rounds on its own.
void sliceSingleRow(const float *w, int64_t k0, int64_t k1, const float *col, int64_t nc, float *c,
                    bool first) {
  int64_t kk = k0;
  auto group = [&](int64_t size) {
    for (int64_t j = 0; j < nc; ++j) {
      float t = w[kk] * col[kk * nc + j];
      for (int64_t i = 1; i < size; ++i) {
        float p = w[kk + i] * col[(kk + i) * nc + j];
        t = t + p;
      }
      c[j] = first ? t : t + c[j];
    }
    first = false;
    kk += size;
  };
  while (kk + 4 <= k1)
    group(4);
  if (k1 - kk >= 2)
    group(2);
  if (k1 - kk == 1)
    group(1);
}

/// MLAS's kernel for one output position (N = 1, M > 1:
/// MlasSgemmKernelM1TransposeBAvx, which MlasSgemmOperation calls before it
/// slices K): each filter row dotted with the column over all of K in 8
/// lane sums (multiply, then add), the K % 8 tail in the first lanes; then
/// the lanes reduced as the row's block does it: rows in blocks of 4, then a
/// block of 2, then of 1.
void dotRows(const float *w, int64_t k, int64_t m, const float *col, float *c) {
  float l[8];
  auto lanes = [&](int64_t r) {
    std::fill(l, l + 8, 0.0f);
    for (int64_t k0 = 0; k0 < k; k0 += 8)
      for (int64_t i = 0; i < 8 && k0 + i < k; ++i) {
        float p = col[k0 + i] * w[r * k + k0 + i];
        l[i] = l[i] + p;
      }
  };
  int64_t r = 0;
  for (; r + 4 <= m;) // blocks of 4: transpose, then add the pairs' halves
    for (int64_t e = r + 4; r < e; ++r) {
      lanes(r);
      c[r] = ((((l[0] + l[1]) + l[2]) + l[3]) + (((l[4] + l[5]) + l[6]) + l[7])) + 0.0f;
    }
  if ((m - r) & 2)
    for (int64_t e = r + 2; r < e; ++r) { // unpack, add the halves, then the pairs
      lanes(r);
      c[r] = (((l[0] + l[2]) + (l[4] + l[6])) + ((l[1] + l[3]) + (l[5] + l[7]))) + 0.0f;
    }
  if (r < m) { // two horizontal adds, then the halves
    lanes(r);
    c[r] = (((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]))) + 0.0f;
  }
}

} // namespace

void rt::mlasGemm(MlasKernel kernel, const float *a, const float *b, float *c, int64_t m, int64_t n,
                  int64_t k, int64_t sliceK, std::vector<float> &acc) {
  if (kernel == MlasKernel::DotRows) {
    dotRows(a, k, m, b, c);
    return;
  }
  for (int64_t k0 = 0; k0 < k; k0 += sliceK) {
    int64_t k1 = std::min(k, k0 + sliceK);
    if (kernel == MlasKernel::SingleRow)
      sliceSingleRow(a, k0, k1, b, n, c, k0 == 0);
    else
      sliceFma(a, k, m, k0, k1, b, n, c, n, k0 == 0, acc);
  }
}
