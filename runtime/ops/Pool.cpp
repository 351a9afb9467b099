//===- Pool.cpp - MaxPool, AveragePool and the global pools -----------------===//
//
// MaxPool (with the optional Indices output, storage_order, dilations,
// ceil_mode), AveragePool (count_include_pad, ceil_mode) and
// GlobalAveragePool / GlobalMaxPool over 1 to 3 spatial dimensions.
//
// These are our own loops, not oneDNN: pooling is memory-bound and cheap, the
// plain NCX layout the executor uses is what a loop over planes wants, and
// ONNX details oneDNN lacks (Indices, storage_order, integer MaxPool, ceil
// mode windows) would need these loops anyway. An input the executor kept in
// oneDNN's blocked layout (between convolutions) is pooled by oneDNN in that
// layout (PoolBlocked.cpp) when the window allows. Planes (n, c) are split across
// the OpenMP threads; the windows are clipped to the input once per output
// coordinate and dimension, so the inner loops carry no bounds checks.
//
//===----------------------------------------------------------------------===//
#include "runtime/KernelUtil.h"
#include "runtime/ops/Dnnl.h"
#include "runtime/ops/PoolGeometry.h"

#include <cmath>
#include <limits>

using namespace tpcc;
using namespace tpcc::rt;

bool rt::poolGeometry(KernelContext &ctx, const Shape &x, PoolGeometry &g, bool dilations) {
  if (x.size() < 3 || x.size() > 5)
    return ctx.fail(ctx.node.opType + " supports inputs with 1 to 3 spatial dimensions, not " +
                    shapeStr(x));
  size_t nsp = x.size() - 2;
  std::vector<int64_t> k = ctx.attrInts("kernel_shape");
  if (k.size() != nsp)
    return ctx.fail("kernel_shape must have one entry per spatial dimension of " + shapeStr(x));
  std::vector<int64_t> s = ctx.attrInts("strides", std::vector<int64_t>(nsp, 1));
  std::vector<int64_t> d = dilations ? ctx.attrInts("dilations", std::vector<int64_t>(nsp, 1))
                                     : std::vector<int64_t>(nsp, 1);
  std::vector<int64_t> pads = ctx.attrInts("pads", std::vector<int64_t>(2 * nsp, 0));
  if (s.size() != nsp || d.size() != nsp || pads.size() != 2 * nsp)
    return ctx.fail("strides, dilations and pads must have one (pads: two) entries per "
                    "spatial dimension of " +
                    shapeStr(x));
  std::string autoPad = ctx.attrString("auto_pad", "NOTSET");
  bool ceilMode = ctx.attrInt("ceil_mode", 0) != 0;
  g.planes = x[0] * x[1];
  g.outShape = {x[0], x[1]};
  for (size_t i = 0; i < nsp; ++i) {
    size_t j = 3 - nsp + i;
    int64_t in = x[i + 2];
    if (k[i] < 1 || s[i] < 1 || d[i] < 1 || pads[i] < 0 || pads[i + nsp] < 0)
      return ctx.fail("kernel_shape, strides and dilations must be positive, pads not negative");
    int64_t ke = (k[i] - 1) * d[i] + 1, pb = pads[i], pe = pads[i + nsp], out;
    if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      out = (in + s[i] - 1) / s[i];
      int64_t total = std::max<int64_t>(0, (out - 1) * s[i] + ke - in);
      pb = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pe = total - pb;
    } else if (autoPad == "VALID" || autoPad == "NOTSET") {
      if (autoPad == "VALID")
        pb = pe = 0;
      int64_t span = in + pb + pe - ke;
      if (span < 0)
        return ctx.fail("kernel " + shapeStr(k) + " (dilated) is larger than the padded input " +
                        shapeStr(x));
      out = (ceilMode ? (span + s[i] - 1) / s[i] : span / s[i]) + 1;
      // A window must start inside the input or its left padding.
      if (ceilMode && (out - 1) * s[i] >= in + pb)
        --out;
    } else {
      return ctx.fail("unknown auto_pad `" + autoPad + "`");
    }
    g.in[j] = in;
    g.out[j] = out;
    g.k[j] = k[i];
    g.s[j] = s[i];
    g.d[j] = d[i];
    g.pb[j] = pb;
    g.pe[j] = pe;
    g.outShape.push_back(out);
  }
  return true;
}

Taps rt::poolTaps(const PoolGeometry &g, int j) {
  Taps t;
  int64_t d = g.d[j];
  auto clip = [&](int64_t start, int64_t lower, int64_t upper, int64_t &lo, int64_t &hi) {
    lo = start >= lower ? 0 : (lower - start + d - 1) / d;
    hi = start >= upper ? 0 : std::min<int64_t>(g.k[j], (upper - 1 - start) / d + 1);
    hi = std::max(hi, lo);
  };
  for (int64_t o = 0; o < g.out[j]; ++o) {
    int64_t start = o * g.s[j] - g.pb[j], lo, hi, plo, phi;
    clip(start, 0, g.in[j], lo, hi);
    clip(start, -g.pb[j], g.in[j] + g.pe[j], plo, phi);
    t.start.push_back(start);
    t.lo.push_back(lo);
    t.hi.push_back(hi);
    t.padded.push_back(phi - plo);
  }
  return t;
}

namespace {

/// The window of `g` for oneDNN (the input's `nsp` spatial dimensions).
dnnl_util::PoolWindow windowOf(const PoolGeometry &g, size_t nsp, dnnl::algorithm alg) {
  dnnl_util::PoolWindow w{alg, {}, {}, {}, {}, {}, g.outShape};
  for (size_t j = 3 - nsp; j < 3; ++j) {
    w.kernel.push_back(g.k[j]);
    w.strides.push_back(g.s[j]);
    w.dilations.push_back(g.d[j]);
    w.padBegin.push_back(g.pb[j]);
    w.padEnd.push_back(g.pe[j]);
  }
  return w;
}

template <typename T, bool WithIndex>
void maxPool(const Tensor &x, Tensor &y, Tensor *indices, const PoolGeometry &g, bool colMajor) {
  const Taps t[3] = {poolTaps(g, 0), poolTaps(g, 1), poolTaps(g, 2)};
  const T *px = x.data<T>();
  T *py = y.data<T>();
  int64_t *pi = WithIndex ? indices->data<int64_t>() : nullptr;
  const int64_t inSize = g.inSize(), outSize = g.outSize(), H = g.in[1], W = g.in[2];
  const int64_t dz = g.d[0], dy = g.d[1], dx = g.d[2], D = g.in[0];
  parallelFor(g.planes, outSize * g.k[0] * g.k[1] * g.k[2], [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const T *xp = px + p * inSize;
      T *yp = py + p * outSize;
      forEachCell(g, t, [&](int64_t o, int64_t oz, int64_t oy, int64_t ox) {
        T best = std::numeric_limits<T>::lowest();
        int64_t at = -1;
        const int64_t xs = t[2].start[ox], xlo = t[2].lo[ox], xhi = t[2].hi[ox];
        for (int64_t kz = t[0].lo[oz]; kz < t[0].hi[oz]; ++kz) {
          int64_t iz = t[0].start[oz] + kz * dz;
          for (int64_t ky = t[1].lo[oy]; ky < t[1].hi[oy]; ++ky) {
            int64_t iy = t[1].start[oy] + ky * dy;
            const T *row = xp + (iz * H + iy) * W + xs;
            for (int64_t kx = xlo; kx < xhi; ++kx) {
              T v = row[kx * dx];
              if constexpr (WithIndex) {
                if (v > best || at < 0) {
                  best = v;
                  int64_t ix = xs + kx * dx;
                  at = colMajor ? (ix * H + iy) * D + iz : (iz * H + iy) * W + ix;
                }
              } else {
                best = v > best ? v : best;
              }
            }
          }
        }
        yp[o] = best;
        if constexpr (WithIndex)
          pi[p * outSize + o] = at < 0 ? -1 : p * inSize + at;
      });
    }
  });
}

/// The common CNN case, 2x2 windows with stride 2 over a 2-D plane with no
/// padding: a tight loop over pairs of rows (a quarter of the general
/// kernel's time).
template <typename T> bool maxPool2x2(const Tensor &x, Tensor &y, const PoolGeometry &g) {
  if (g.in[0] != 1 || g.k[0] != 1 || g.k[1] != 2 || g.k[2] != 2 || g.s[1] != 2 || g.s[2] != 2 ||
      g.d[1] != 1 || g.d[2] != 1 || g.pb[1] || g.pb[2] || g.pe[1] || g.pe[2] ||
      2 * g.out[1] > g.in[1] || 2 * g.out[2] > g.in[2])
    return false;
  const T *px = x.data<T>();
  T *py = y.data<T>();
  const int64_t H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2];
  auto max = [](T a, T b) { return b > a ? b : a; };
  parallelFor(g.planes, OH * OW * 4, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p)
      for (int64_t oy = 0; oy < OH; ++oy) {
        const T *__restrict r0 = px + (p * H + 2 * oy) * W;
        const T *__restrict r1 = r0 + W;
        T *__restrict out = py + (p * OH + oy) * OW;
        for (int64_t ox = 0; ox < OW; ++ox)
          out[ox] = max(max(max(std::numeric_limits<T>::lowest(), r0[2 * ox]), r0[2 * ox + 1]),
                        max(r1[2 * ox], r1[2 * ox + 1]));
      }
  });
  return true;
}

template <typename T>
void maxPool(const Tensor &x, Tensor &y, Tensor *indices, const PoolGeometry &g, bool colMajor) {
  if (!indices && maxPool2x2<T>(x, y, g))
    return;
  if (indices)
    maxPool<T, true>(x, y, indices, g, colMajor);
  else
    maxPool<T, false>(x, y, nullptr, g, colMajor);
}

template <typename T>
void avgPool(const Tensor &x, Tensor &y, const PoolGeometry &g, bool includePad) {
  const Taps t[3] = {poolTaps(g, 0), poolTaps(g, 1), poolTaps(g, 2)};
  const T *px = x.data<T>();
  T *py = y.data<T>();
  const int64_t inSize = g.inSize(), outSize = g.outSize(), H = g.in[1], W = g.in[2];
  const int64_t dz = g.d[0], dy = g.d[1], dx = g.d[2];
  parallelFor(g.planes, outSize * g.k[0] * g.k[1] * g.k[2], [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const T *xp = px + p * inSize;
      T *yp = py + p * outSize;
      forEachCell(g, t, [&](int64_t o, int64_t oz, int64_t oy, int64_t ox) {
        T sum = 0;
        const int64_t xs = t[2].start[ox], xlo = t[2].lo[ox], xhi = t[2].hi[ox];
        for (int64_t kz = t[0].lo[oz]; kz < t[0].hi[oz]; ++kz) {
          int64_t iz = t[0].start[oz] + kz * dz;
          for (int64_t ky = t[1].lo[oy]; ky < t[1].hi[oy]; ++ky) {
            const T *row = xp + (iz * H + t[1].start[oy] + ky * dy) * W + xs;
            for (int64_t kx = xlo; kx < xhi; ++kx)
              sum += row[kx * dx];
          }
        }
        int64_t count =
            includePad ? t[0].padded[oz] * t[1].padded[oy] * t[2].padded[ox]
                       : (t[0].hi[oz] - t[0].lo[oz]) * (t[1].hi[oy] - t[1].lo[oy]) * (xhi - xlo);
        yp[o] = count > 0 ? sum / T(count) : T(0);
      });
    }
  });
}

} // namespace

bool rt::averagePool(const Tensor &x, Tensor &y, const PoolGeometry &g, bool includePad) {
  return TPCC_DISPATCH_FLOAT(x.elem(), false, (avgPool<T>(x, y, g, includePad), true));
}

bool rt::averagePoolCall(KernelContext &ctx, AveragePoolCall &call) {
  call.x = ctx.input(0);
  if (!call.x)
    return ctx.fail("AveragePool needs an input");
  call.includePad = ctx.attrInt("count_include_pad", 0) != 0;
  return poolGeometry(ctx, call.x->shape(), call.g, /*dilations=*/ctx.opset >= 19);
}

bool rt::averagePoolInto(KernelContext &ctx, const Tensor &x, const PoolGeometry &g,
                         bool includePad) {
  ctx.outputs[0] = Tensor(x.elem(), g.outShape);
  return averagePool(x, ctx.outputs[0], g, includePad)
             ? true
             : ctx.fail("AveragePool does not support " + typeName(x.elem()));
}

namespace {

bool maxPoolKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0);
  if (!x)
    return ctx.fail("MaxPool needs an input");
  PoolGeometry g;
  if (!poolGeometry(ctx, x->shape(), g, /*dilations=*/true))
    return false;
  int64_t order = ctx.attrInt("storage_order", 0);
  if (order != 0 && order != 1)
    return ctx.fail("storage_order must be 0 or 1");
  Tensor plain;
  if (x->blocked()) {
    if (!ctx.wantsOutput(1))
      return dnnl_util::poolBlocked(
          ctx, *x, windowOf(g, size_t(x->rank() - 2), dnnl::algorithm::pooling_max));
    plain = dnnl_util::toPlain(*x);
    x = &plain;
  }
  ctx.outputs[0] = Tensor(x->elem(), g.outShape);
  Tensor *indices = nullptr;
  if (ctx.wantsOutput(1)) {
    ctx.outputs[1] = Tensor(ElemType::Int64, g.outShape);
    indices = &ctx.outputs[1];
  }
  bool colMajor = order == 1;
  switch (x->elem()) {
  case ElemType::Float:
    maxPool<float>(*x, ctx.outputs[0], indices, g, colMajor);
    return true;
  case ElemType::Double:
    maxPool<double>(*x, ctx.outputs[0], indices, g, colMajor);
    return true;
  case ElemType::Int8:
    maxPool<int8_t>(*x, ctx.outputs[0], indices, g, colMajor);
    return true;
  case ElemType::UInt8:
    maxPool<uint8_t>(*x, ctx.outputs[0], indices, g, colMajor);
    return true;
  default:
    return ctx.fail("MaxPool does not support " + typeName(x->elem()));
  }
}

bool avgPoolKernel(KernelContext &ctx) {
  AveragePoolCall call;
  if (!averagePoolCall(ctx, call))
    return false;
  const Tensor *x = call.x;
  const PoolGeometry &g = call.g;
  bool includePad = call.includePad;
  Tensor plain;
  if (x->blocked()) {
    // oneDNN would count ceil_mode's extra cells as padding.
    if (!includePad || ctx.attrInt("ceil_mode", 0) == 0)
      return dnnl_util::poolBlocked(ctx, *x,
                                    windowOf(g, size_t(x->rank() - 2),
                                             includePad
                                                 ? dnnl::algorithm::pooling_avg_include_padding
                                                 : dnnl::algorithm::pooling_avg_exclude_padding));
    plain = dnnl_util::toPlain(*x);
    x = &plain;
  }
  return averagePoolInto(ctx, *x, g, includePad);
}

template <typename T> void globalPool(const Tensor &x, Tensor &y, bool max) {
  int64_t planes = x.dim(0) * x.dim(1), size = x.numel() / std::max<int64_t>(planes, 1);
  const T *px = x.data<T>();
  T *py = y.data<T>();
  parallelFor(planes, size, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const T *xp = px + p * size;
      if (max) {
        T best = size ? xp[0] : std::numeric_limits<T>::lowest();
        for (int64_t i = 1; i < size; ++i)
          best = xp[i] > best ? xp[i] : best;
        py[p] = best;
      } else {
        T sum = 0;
        for (int64_t i = 0; i < size; ++i)
          sum += xp[i];
        py[p] = size ? sum / T(size) : T(0);
      }
    }
  });
}

bool globalPoolKernel(KernelContext &ctx, bool max) {
  const Tensor *x = ctx.input(0);
  if (!x)
    return ctx.fail(ctx.node.opType + " needs an input");
  if (x->rank() < 2)
    return ctx.fail(ctx.node.opType + " needs an N x C x ... input, not " + shapeStr(x->shape()));
  Shape out = x->shape();
  for (size_t i = 2; i < out.size(); ++i)
    out[i] = 1;
  if (x->blocked()) {
    dnnl_util::PoolWindow w{max ? dnnl::algorithm::pooling_max
                                : dnnl::algorithm::pooling_avg_exclude_padding,
                            {},
                            {},
                            {},
                            {},
                            {},
                            out};
    for (int64_t i = 2; i < x->rank(); ++i) {
      w.kernel.push_back(x->dim(i));
      w.strides.push_back(1);
      w.dilations.push_back(1);
      w.padBegin.push_back(0);
      w.padEnd.push_back(0);
    }
    return dnnl_util::poolBlocked(ctx, *x, w);
  }
  ctx.outputs[0] = Tensor(x->elem(), out);
  bool ok =
      max ? TPCC_DISPATCH_NUMERIC(x->elem(), false, (globalPool<T>(*x, ctx.outputs[0], true), true))
          : TPCC_DISPATCH_FLOAT(x->elem(), false, (globalPool<T>(*x, ctx.outputs[0], false), true));
  return ok ? true : ctx.fail(ctx.node.opType + " does not support " + typeName(x->elem()));
}

bool globalAvgPoolKernel(KernelContext &ctx) { return globalPoolKernel(ctx, false); }
bool globalMaxPoolKernel(KernelContext &ctx) { return globalPoolKernel(ctx, true); }

} // namespace

void rt::registerPoolKernels(KernelRegistry &r) {
  r.add("MaxPool", maxPoolKernel);
  r.add("AveragePool", avgPoolKernel);
  r.add("GlobalAveragePool", globalAvgPoolKernel);
  r.add("GlobalMaxPool", globalMaxPoolKernel);
}
