//===- Pool.cpp - Backward of the poolings ----------------------------------===//
//
// MaxPool routes each output's gradient to the first maximum of its window
// (the element the forward's Indices names); AveragePool spreads it evenly
// over the window's taps with the forward's divisor (count_include_pad,
// ceil_mode); the global poolings over the whole plane. The windows come
// from the forward's geometry (PoolGeometry.h). Planes run in parallel; within
// a plane the sums keep the forward's order.
//
//===----------------------------------------------------------------------===//
#include "runtime/KernelUtil.h"
#include "runtime/grad/Backward.h"
#include "runtime/ops/PoolGeometry.h"

using namespace tpcc;
using namespace tpcc::rt;
using namespace tpcc::rt::grad;

namespace {

template <bool Max> bool pool(BackwardContext &ctx) {
  if (!ctx.wants(0))
    return true;
  const Tensor *x = ctx.input(0), *g = ctx.grad(0);
  if (!isFloat(x) || x->blocked())
    return ctx.fail("backward of " + ctx.node.opType + " needs a plain float input");
  KernelContext kc(ctx.node, ctx.opset, ctx.state);
  PoolGeometry geo;
  if (!poolGeometry(kc, x->shape(), geo, /*dilations=*/Max || ctx.opset >= 19))
    return ctx.fail(kc.error);
  Tensor dx = zeros(x->shape());
  if (!g) {
    ctx.inputGrads[0] = std::move(dx);
    return true;
  }
  bool includePad = ctx.attrInt("count_include_pad", 0) != 0;
  const Taps t[3] = {poolTaps(geo, 0), poolTaps(geo, 1), poolTaps(geo, 2)};
  const int64_t inSize = geo.inSize(), outSize = geo.outSize(), H = geo.in[1], W = geo.in[2];
  const float *px = x->data<float>(), *pg = g->data<float>();
  float *pd = dx.data<float>();
  parallelFor(geo.planes, outSize * geo.k[0] * geo.k[1] * geo.k[2], [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const float *xp = px + p * inSize, *gp = pg + p * outSize;
      float *dp = pd + p * inSize;
      forEachCell(geo, t, [&](int64_t o, int64_t oz, int64_t oy, int64_t ox) {
        int64_t best = -1;
        float bestValue = 0;
        int64_t count = 0;
        for (int pass = 0; pass < (Max ? 1 : 2); ++pass)
          for (int64_t kz = t[0].lo[oz]; kz < t[0].hi[oz]; ++kz)
            for (int64_t ky = t[1].lo[oy]; ky < t[1].hi[oy]; ++ky)
              for (int64_t kx = t[2].lo[ox]; kx < t[2].hi[ox]; ++kx) {
                int64_t at =
                    ((t[0].start[oz] + kz * geo.d[0]) * H + t[1].start[oy] + ky * geo.d[1]) * W +
                    t[2].start[ox] + kx * geo.d[2];
                if constexpr (Max) {
                  if (best < 0 || xp[at] > bestValue) {
                    best = at;
                    bestValue = xp[at];
                  }
                } else if (pass == 0) {
                  ++count;
                } else {
                  int64_t n =
                      includePad ? t[0].padded[oz] * t[1].padded[oy] * t[2].padded[ox] : count;
                  if (n > 0)
                    dp[at] += gp[o] / float(n);
                }
              }
        if constexpr (Max)
          if (best >= 0)
            dp[best] += gp[o];
      });
    }
  });
  ctx.inputGrads[0] = std::move(dx);
  return true;
}

template <bool Max> bool globalPool(BackwardContext &ctx) {
  if (!ctx.wants(0))
    return true;
  const Tensor *x = ctx.input(0), *g = ctx.grad(0);
  if (!isFloat(x) || x->blocked() || x->rank() < 2)
    return ctx.fail("backward of " + ctx.node.opType + " needs a plain float input");
  Tensor dx = zeros(x->shape());
  int64_t planes = x->dim(0) * x->dim(1), size = x->numel() / std::max<int64_t>(planes, 1);
  if (g && size > 0) {
    const float *px = x->data<float>(), *pg = g->data<float>();
    float *pd = dx.data<float>();
    parallelFor(planes, size, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const float *xp = px + p * size;
        float *dp = pd + p * size;
        if constexpr (Max) {
          int64_t best = 0;
          for (int64_t i = 1; i < size; ++i)
            best = xp[i] > xp[best] ? i : best;
          dp[best] = pg[p];
        } else {
          for (int64_t i = 0; i < size; ++i)
            dp[i] = pg[p] / float(size);
        }
      }
    });
  }
  ctx.inputGrads[0] = std::move(dx);
  return true;
}

} // namespace

void rt::grad::registerPoolBackward(BackwardRegistry &r) {
  r.add("MaxPool", pool<true>);
  r.add("AveragePool", pool<false>);
  r.add("GlobalMaxPool", globalPool<true>);
  r.add("GlobalAveragePool", globalPool<false>);
}
