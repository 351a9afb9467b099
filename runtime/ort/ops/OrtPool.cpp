//===- OrtPool.cpp - AveragePool and GlobalAveragePool as MLAS sums them ---===//
//
// Between 16-bit Q/DQ pairs ONNX Runtime runs an average pooling in float
// with MLAS's kernels (MlasPool), whose sums go in another order than the
// default kernels' (Pool.cpp): one rounding apart moves a code. These are
// the kernels of ORT's float registry (OrtKernels.h) for AveragePool and
// GlobalAveragePool; what MLAS does not sum its own way goes to the default
// loops.
//
//===----------------------------------------------------------------------===//
#include "runtime/ort/OrtKernels.h"

#include "runtime/KernelUtil.h"
#include "runtime/ops/Dnnl.h"
#include "runtime/ops/PoolGeometry.h"

#include <algorithm>
#include <vector>

using namespace tpcc;
using namespace tpcc::rt;

namespace {

/// A global average as ONNX Runtime's MLAS computes a float one
/// (MlasPoolGlobalKernel): four running sums over the elements i mod 4 of
/// each whole group of four, added as (s0 + s2) + (s1 + s3), then the rest
/// one by one, then divided by the count. Between 16-bit Q/DQ pairs ORT runs
/// it so, and one rounding apart moves a code.
template <typename T> T mlasAverage(const T *x, int64_t size) {
  T s[4] = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 4 <= size; i += 4)
    for (int k = 0; k < 4; ++k)
      s[k] += x[i + k];
  T sum = (s[0] + s[2]) + (s[1] + s[3]);
  for (; i < size; ++i)
    sum += x[i];
  return sum / T(size);
}

/// Every plane's average (mlasAverage; 0 for an empty plane).
template <typename T> void mlasGlobalAverage(const Tensor &x, Tensor &y) {
  int64_t planes = x.dim(0) * x.dim(1), size = x.numel() / std::max<int64_t>(planes, 1);
  const T *px = x.data<T>();
  T *py = y.data<T>();
  parallelFor(planes, size, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p)
      py[p] = size ? mlasAverage(px + p * size, size) : T(0);
  });
}

/// AveragePool (no dilation) as MLAS computes a float one (MlasPool), when
/// it does not sum as avgPool does; false then. A window the size of the
/// input, without strides or padding, is a global average (mlasAverage).
/// With 2 or 3 spatial dimensions, a last stride of 1 or 2, kernels of at
/// most 32 and a row that fits MLAS's 2048-entry buffer, the vector kernel:
/// each input column is summed over the window's planes and rows in order,
/// then the window's columns (padding as 0) left to right, and the sum is
/// divided by the kernel's size or by the cells inside the input (columns
/// times rows, in float). Otherwise MLAS's generic kernel sums the window
/// in row-major order, as avgPool does.
template <typename T>
bool mlasAvgPool(const Tensor &x, Tensor &y, const PoolGeometry &g, bool includePad) {
  int64_t nsp = x.rank() - 2, last = 2;
  bool small = true, global = true;
  for (int j = int(3 - nsp); j < 3; ++j) {
    small &= g.k[j] <= 32;
    global &= g.k[j] == g.in[j] && g.s[j] == 1 && g.pb[j] == 0 && g.pe[j] == 0;
  }
  if (global) {
    mlasGlobalAverage<T>(x, y);
    return true;
  }
  const T *px = x.data<T>();
  T *py = y.data<T>();
  const int64_t inSize = g.inSize(), outSize = g.outSize();
  const int64_t W = g.in[last], pl = g.pb[last], kw = g.k[last], sw = g.s[last];
  if (nsp < 2 || sw > 2 || !small || 2048 - 3 - pl - g.pe[last] < W)
    return false;
  const Taps t[2] = {poolTaps(g, 0), poolTaps(g, 1)};
  const T kernelSize = T(g.k[0] * g.k[1] * g.k[2]);
  parallelFor(g.planes, outSize * g.k[0] * g.k[1] * kw, [&](int64_t p0, int64_t p1) {
    // The row of column sums, with the padding's zeros either side.
    std::vector<T> sums(size_t(pl + W + g.out[last] * sw + kw + 4), T(0));
    for (int64_t p = p0; p < p1; ++p) {
      const T *xp = px + p * inSize;
      T *yp = py + p * outSize;
      for (int64_t oz = 0; oz < g.out[0]; ++oz)
        for (int64_t oy = 0; oy < g.out[1]; ++oy) {
          int64_t z0 = t[0].start[oz] + t[0].lo[oz], z1 = t[0].start[oz] + t[0].hi[oz];
          int64_t y0 = t[1].start[oy] + t[1].lo[oy], y1 = t[1].start[oy] + t[1].hi[oy];
          for (int64_t c = 0; c < W; ++c) {
            T s = 0;
            for (int64_t z = z0; z < z1; ++z)
              for (int64_t r = y0; r < y1; ++r)
                s += xp[(z * g.in[1] + r) * W + c];
            sums[size_t(pl + c)] = s;
          }
          const T rows = T((z1 - z0) * (y1 - y0));
          T *row = yp + (oz * g.out[1] + oy) * g.out[last];
          for (int64_t ox = 0; ox < g.out[last]; ++ox) {
            int64_t b = ox * sw;
            T s = sums[size_t(b)];
            for (int64_t k = 1; k < kw; ++k)
              s += sums[size_t(b + k)];
            T inside = T(std::min(b + kw, pl + W) - std::max(b, pl));
            row[ox] = s / (includePad ? kernelSize : std::max(inside * rows, T(1)));
          }
        }
    }
  });
  return true;
}

/// The default registry's kernel of `op`.
bool defaultKernel(KernelContext &ctx, const char *op) {
  return KernelRegistry::get().find("", op)(ctx);
}

bool ortAvgPoolKernel(KernelContext &ctx) {
  AveragePoolCall call;
  if (!averagePoolCall(ctx, call))
    return false;
  const Tensor *x = call.x;
  const PoolGeometry &g = call.g;
  Tensor plain; // MLAS reads plain NCHW: no oneDNN pooling of blocked inputs
  if (x->blocked()) {
    plain = dnnl_util::toPlain(*x);
    x = &plain;
  }
  bool dilated = g.d[0] > 1 || g.d[1] > 1 || g.d[2] > 1;
  if (!dilated && x->elem() == ElemType::Float) {
    ctx.outputs[0] = Tensor(x->elem(), g.outShape);
    if (mlasAvgPool<float>(*x, ctx.outputs[0], g, call.includePad))
      return true;
  }
  return averagePoolInto(ctx, *x, g, call.includePad);
}

bool ortGlobalAvgPoolKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0);
  if (!x || x->rank() < 2 || x->blocked() ||
      (x->elem() != ElemType::Float && x->elem() != ElemType::Double))
    return defaultKernel(ctx, "GlobalAveragePool"); // its errors, or oneDNN's pooling
  Shape out = x->shape();
  for (size_t i = 2; i < out.size(); ++i)
    out[i] = 1;
  ctx.outputs[0] = Tensor(x->elem(), out);
  TPCC_DISPATCH_FLOAT(x->elem(), false, (mlasGlobalAverage<T>(*x, ctx.outputs[0]), true));
  return true;
}

} // namespace

void rt::registerOrtPoolKernels(KernelRegistry &r) {
  r.add("AveragePool", ortAvgPoolKernel);
  r.add("GlobalAveragePool", ortGlobalAvgPoolKernel);
}
