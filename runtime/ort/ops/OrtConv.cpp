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
//  - that GEMM summed as MLAS sums it (MlasGemm.h): K in slices of
//    mlasStrideK, chains of fused multiply-adds; a depthwise convolution's
//    single filter per group (M == 1) by the single-row kernel; one output
//    position (N == 1, M > 1: a squeeze-and-excitation block's 1x1
//    convolutions) by the dot-product kernel;
//  - then the bias: C + b (one rounding), as MlasActivation adds it.
//
// Measured against onnxruntime-node 1.30 (ctest ort_float_ops,
// test/tools/ort_float_ops.py): pointwise and im2col convolutions, strides,
// dilations, groups, depthwise, K over 128 with N large and small, agree bit
// for bit.
//
//===----------------------------------------------------------------------===//
#include "runtime/ort/ops/OrtConv.h"

#include "runtime/ort/ops/MlasGemm.h"

#include "runtime/ops/Dnnl.h"
#include "runtime/ort/OrtKernels.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

using namespace tpcc;
using namespace tpcc::rt;

namespace {

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

} // namespace

bool rt::ortFloatConv(const Tensor &x, const Tensor &w, const Tensor *b, const ConvGeometry &g,
                      Tensor &y) {
  const Shape &xs = x.shape();
  Shape inSp(xs.begin() + 2, xs.end());
  int64_t batch = xs[0], c = xs[1], o = g.outShape[1], groups = g.group;
  int64_t cg = c / groups, m = o / groups, taps = numElements(g.kernel), k = cg * taps;
  int64_t inSize = numElements(inSp);
  int64_t outSize = numElements(Shape(g.outShape.begin() + 2, g.outShape.end()));
  int64_t sk = mlasStrideK(outSize, k);
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
        MlasKernel kernel = m > 1 && outSize == 1 ? MlasKernel::DotRows
                            : m == 1              ? MlasKernel::SingleRow
                                                  : MlasKernel::Slices;
        mlasGemm(kernel, wg, col.data(), part.data(), m, nc, k, sk, acc);
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
