//===- OrtConv.cpp - A float Conv summed as ONNX Runtime's MLAS sums it ----===//
//
// `tpcc run|eval --ort-cpu` reproduces what ONNX Runtime computes for a QDQ
// model. Where ORT cannot fuse a QDQ group (a Conv whose output feeds a
// spelled-out activation, a Clip its grid does not end at) it runs the Conv
// in float, with MLAS on one intra-op thread. oneDNN's sums round
// differently in the last bit; in a deep network a quantized tensor whose
// value lies on a rounding tie then flips by a step, and the flips compound.
// So runs that compute as ORT does sum a float Conv in MLAS's order, which
// is the same on every x86-64 CPU with FMA (AVX2 or AVX-512 kernels differ
// in width, not in the order of one output's operations):
//
//  - per batch image and group, the GEMM C[M, N] = W[M, K] x col[K, N] of
//    the image's patches (im2col: K runs over input channel, then kernel
//    positions, row-major; padding reads 0);
//  - K is cut into slices of StrideK: 128, or larger when N is small
//    (MlasSgemmOperation: with N < K, StrideN 128 halves and StrideK
//    doubles while StrideN > 16 and StrideN / 2 >= N);
//  - M > 1: each slice is a chain of fused multiply-adds from 0 in k order,
//    and C is the first slice's sum, then C + each next slice's sum;
//  - M == 1 (a depthwise convolution, one filter per group): MLAS's
//    single-row kernel takes K in groups of 4, then 2, then 1, sums each
//    group's products left to right (multiply, then add: no FMA) and adds
//    the group to C (C is the first group itself);
//  - N == 1, M > 1 (one output position: a squeeze-and-excitation block's
//    1x1 convolutions) takes MLAS's dot-product kernel over all of K: 8 lane
//    sums, reduced in the order of the block of 4, 2 or 1 rows the filter is
//    in (dotRows);
//  - then the bias: C + b (one rounding), as MlasActivation adds it.
//
// Measured against onnxruntime-node 1.30 (ctest ort_float_ops,
// test/tools/ort_float_ops.py): pointwise and im2col convolutions, strides,
// dilations, groups, depthwise, K over 128 with N large and small, agree bit
// for bit.
//
//===----------------------------------------------------------------------===//
#include "runtime/ort/ops/OrtConv.h"

#include "runtime/Simd.h"
#include "runtime/ops/Dnnl.h"
#include "runtime/ort/OrtKernels.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

using namespace tpcc;
using namespace tpcc::rt;

namespace {

/// MLAS's K slice for an M x N x K product on one thread.
int64_t strideK(int64_t n, int64_t k) {
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

/// The patches of output positions [n0, n0 + nc) of one image and group:
/// col[k * nc + j], k over (channel, kernel position...).
void im2col(const float *x, int64_t channels, const Shape &inSp, const ConvGeometry &g, int64_t n0,
            int64_t nc, std::vector<float> &col) {
  size_t d = inSp.size();
  int64_t taps = numElements(g.kernel), inSize = numElements(inSp);
  col.assign(size_t(channels * taps * nc), 0.0f);
  std::vector<int64_t> kpos(d), opos(d);
  for (int64_t j = 0; j < nc; ++j) {
    // Output position n0 + j, row-major over the output's spatial dims.
    int64_t rest = n0 + j;
    for (size_t i = d; i-- > 0;) {
      opos[i] = rest % g.outShape[i + 2];
      rest /= g.outShape[i + 2];
    }
    for (int64_t t = 0; t < taps; ++t) {
      int64_t r = t, offset = 0;
      bool inside = true;
      for (size_t i = d; i-- > 0;) {
        kpos[i] = r % g.kernel[i];
        r /= g.kernel[i];
      }
      for (size_t i = 0; i < d; ++i) {
        int64_t p = opos[i] * g.strides[i] + kpos[i] * g.dilations[i] - g.padBegin[i];
        inside &= p >= 0 && p < inSp[i];
        offset = offset * inSp[i] + p;
      }
      if (!inside)
        continue;
      for (int64_t c = 0; c < channels; ++c)
        col[size_t((c * taps + t) * nc + j)] = x[c * inSize + offset];
    }
  }
}

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

bool rt::ortFloatConv(const Tensor &x, const Tensor &w, const Tensor *b, const ConvGeometry &g,
                      Tensor &y) {
  const Shape &xs = x.shape();
  Shape inSp(xs.begin() + 2, xs.end());
  int64_t batch = xs[0], c = xs[1], o = g.outShape[1], groups = g.group;
  int64_t cg = c / groups, m = o / groups, taps = numElements(g.kernel), k = cg * taps;
  int64_t inSize = numElements(inSp);
  int64_t outSize = numElements(Shape(g.outShape.begin() + 2, g.outShape.end()));
  int64_t sk = strideK(outSize, k);
  y = Tensor(ElemType::Float, g.outShape);
  const float *xd = x.data<float>(), *wd = w.data<float>(), *bd = b ? b->data<float>() : nullptr;
  float *yd = y.data<float>();
  // Output positions in chunks (each position's sums do not depend on them).
  const int64_t chunk = 256;
  std::vector<float> col, acc, part;
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t gi = 0; gi < groups; ++gi) {
      const float *xg = xd + (n * c + gi * cg) * inSize;
      const float *wg = wd + gi * m * k;
      float *yg = yd + (n * o + gi * m) * outSize;
      for (int64_t n0 = 0; n0 < outSize; n0 += chunk) {
        int64_t nc = std::min(chunk, outSize - n0);
        im2col(xg, cg, inSp, g, n0, nc, col);
        part.assign(size_t(m * nc), 0.0f);
        if (m > 1 && outSize == 1)
          dotRows(wg, k, m, col.data(), part.data());
        else
          for (int64_t k0 = 0; k0 < k; k0 += sk) {
            int64_t k1 = std::min(k, k0 + sk);
            if (m == 1)
              sliceSingleRow(wg, k0, k1, col.data(), nc, part.data(), k0 == 0);
            else
              sliceFma(wg, k, m, k0, k1, col.data(), nc, part.data(), nc, k0 == 0, acc);
          }
        for (int64_t r = 0; r < m; ++r)
          for (int64_t j = 0; j < nc; ++j) {
            float v = part[size_t(r * nc + j)];
            yg[r * outSize + n0 + j] = bd ? v + bd[gi * m + r] : v;
          }
      }
    }
  return true;
}

namespace {

/// Conv in ORT's float registry: the default kernel's checks, then MLAS's
/// sums on the plain input. (Runs as ORT fuse nothing into a Conv: with
/// post-ops it would be the default kernel's.)
bool ortConvKernel(KernelContext &ctx) {
  if (!ctx.post.empty())
    return KernelRegistry::get().find("", "Conv")(ctx);
  ConvGeometry g;
  if (!checkConvCall(ctx, /*transpose=*/false, g))
    return false;
  const Tensor *x = ctx.input(0), *w = ctx.input(1), *b = ctx.input(2);
  if (numElements(x->shape()) == 0 || numElements(g.outShape) == 0) {
    ctx.outputs[0] = Tensor(ElemType::Float, g.outShape);
    return true;
  }
  Tensor plainX = x->blocked() ? dnnl_util::toPlain(*x) : *x;
  return ortFloatConv(plainX, *w, b, g, ctx.outputs[0]);
}

} // namespace

void rt::registerOrtConvKernels(KernelRegistry &r) { r.add("Conv", ortConvKernel); }
