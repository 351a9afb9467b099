//===- Resize.cpp - Resize and Upsample -------------------------------------===//
//
// Resize (opsets 10, 11, 13) and the deprecated Upsample (opsets 7 and 9)
// over any number of dimensions: modes nearest (four rounding rules), linear
// and cubic (cubic_coeff_a, exclude_outside), every
// coordinate_transformation_mode, tf_crop_and_resize with its roi and
// extrapolation_value.
//
// The arithmetic follows the ONNX reference implementation (which produced
// the backend suite's expected outputs): each output coordinate is mapped to
// an input coordinate per axis, and interpolation takes the n nearest input
// samples of an edge-padded axis. As interpolation is separable, each axis
// is computed once as a table of taps (input indices and weights), and:
//   - nearest is one gather over the whole tensor that copies bytes, so it
//     works for every element type; output rows that read the same input
//     row as the one before (2x upsampling) are copied from it;
//   - linear and cubic run one pass per resized axis (downsampling axes
//     first, so intermediates stay small), each output row the weighted sum
//     of a few input rows, in float (double for 64-bit types). Float passes
//     use AVX2 where the CPU has it (gathers along the last axis, rows
//     combined eight lanes at a time) with the scalar loop's operations in
//     its order, so the same bits; intermediates come from the executor's
//     pool.
// Axes that the mapping leaves unchanged cost nothing. Work is split across
// threads over the rows of each pass.
//
//===----------------------------------------------------------------------===//
#include "runtime/ops/ResizeTaps.h"

#include "runtime/KernelUtil.h"
#include "runtime/Simd.h"
#include "runtime/ops/Dnnl.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <immintrin.h>
#include <type_traits>

using namespace tpcc;
using namespace tpcc::rt;

namespace {

enum class Mode { Nearest, Linear, Cubic };

struct Options {
  Mode mode = Mode::Nearest;
  std::string coord = "half_pixel", nearest = "round_prefer_floor";
  double cubicA = -0.75;
  bool excludeOutside = false;
  double extrapolation = 0;
  /// Resize-10 and Upsample: asymmetric, floor (ceil when downsampling).
  bool legacy = false;
};

/// The input coordinate of output coordinate `x` (reference semantics).
double originalCoord(const Options &o, double x, double scale, int64_t inDim, int64_t outDim,
                     double roiStart, double roiEnd) {
  double outWidth = scale * double(inDim), in = double(inDim);
  const std::string &m = o.coord;
  if (o.legacy || m == "asymmetric")
    return x / scale;
  if (m == "align_corners")
    return outWidth == 1 ? 0 : x * (in - 1) / (outWidth - 1);
  if (m == "tf_crop_and_resize") {
    double r = outDim == 1 ? (roiEnd - roiStart) * (in - 1) / 2
                           : x * (roiEnd - roiStart) * (in - 1) / (outWidth - 1);
    return r + roiStart * (in - 1);
  }
  if (m == "tf_half_pixel_for_nn")
    return (x + 0.5) / scale;
  if (m == "pytorch_half_pixel")
    return outDim == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
  return (x + 0.5) / scale - 0.5; // half_pixel
}

void cubicCoeffs(double r, double a, double *c) {
  double s = 1 - r;
  c[0] = ((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a;
  c[1] = ((a + 2) * r - (a + 3)) * r * r + 1;
  c[2] = ((a + 2) * s - (a + 3)) * s * s + 1;
  c[3] = ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a;
}

AxisTaps axisTaps(const Options &o, int64_t inDim, int64_t outDim, double scale, double roiStart,
                  double roiEnd) {
  AxisTaps t;
  t.inDim = inDim;
  t.outDim = outDim;
  t.n = o.mode == Mode::Cubic ? 4 : o.mode == Mode::Linear ? 2 : 1;
  t.idx.resize(size_t(outDim * t.n));
  t.w.resize(size_t(outDim * t.n));
  t.outside.assign(size_t(outDim), 0);
  bool crop = !o.legacy && o.coord == "tf_crop_and_resize";
  t.identity = inDim == outDim && !crop;
  for (int64_t x = 0; x < outDim; ++x) {
    double xo = originalCoord(o, double(x), scale, inDim, outDim, roiStart, roiEnd);
    if (crop && !(xo >= 0 && xo <= double(inDim - 1))) {
      t.outside[size_t(x)] = 1;
      t.anyOutside = true;
    }
    if (!std::isfinite(xo))
      xo = 0;
    xo = std::clamp(xo, -double(inDim) - 8, 2.0 * double(inDim) + 8);
    double fl = std::floor(xo);
    // The sample left of xo, so that the ratio is in (0, 1].
    int64_t i0 = xo == fl ? int64_t(fl) - 1 : int64_t(fl);
    double ratio = xo - double(i0);
    int64_t *idx = &t.idx[size_t(x * t.n)];
    double *w = &t.w[size_t(x * t.n)];
    if (o.mode == Mode::Nearest) {
      bool up;
      if (ratio == 1) // xo is an integer
        up = true;
      else if (o.legacy) // floor, ceil when downsampling (as onnxruntime)
        up = scale < 1;
      else if (o.nearest == "round_prefer_ceil")
        up = ratio >= 0.5;
      else if (o.nearest == "floor")
        up = false;
      else if (o.nearest == "ceil")
        up = true;
      else
        up = ratio > 0.5;
      idx[0] = std::clamp<int64_t>(up ? i0 + 1 : i0, 0, inDim - 1);
      w[0] = 1;
    } else {
      double c[4];
      if (t.n == 2) {
        c[0] = 1 - ratio;
        c[1] = ratio;
      } else {
        cubicCoeffs(ratio, o.cubicA, c);
      }
      // The n samples nearest xo of the axis edge-padded by ceil(n / 2).
      int64_t pad = (t.n + 1) / 2, start = i0 - (t.n / 2 - 1);
      start = std::clamp<int64_t>(start, -pad, inDim + pad - t.n);
      double sum = 0;
      for (int j = 0; j < t.n; ++j) {
        int64_t i = start + j;
        if (o.excludeOutside && (i < 0 || i >= inDim))
          c[j] = 0;
        sum += c[j];
        idx[j] = std::clamp<int64_t>(i, 0, inDim - 1);
      }
      for (int j = 0; j < t.n; ++j)
        w[j] = o.excludeOutside && sum != 0 ? c[j] / sum : c[j];
    }
    for (int j = 0; j < t.n; ++j)
      if (w[j] != 0 && idx[j] != x)
        t.identity = false;
      else if (w[j] != 0 && w[j] != 1)
        t.identity = false;
  }
  return t;
}

/// Nearest: one gather of element-sized byte chunks.
template <size_t S>
void nearestGather(const uint8_t *src, uint8_t *dst, const std::vector<AxisTaps> &axes,
                   const Shape &inShape, const Shape &outShape) {
  size_t r = outShape.size();
  std::vector<int64_t> st(r, 1);
  for (size_t k = r; k-- > 1;)
    st[k - 1] = st[k] * inShape[k];
  int64_t inner = outShape[r - 1], rows = numElements(outShape) / inner;
  const AxisTaps &last = axes[r - 1];
  parallelFor(rows, inner * int64_t(S) + 32, [&](int64_t b, int64_t e) {
    std::vector<int64_t> pos(r, 0);
    int64_t rem = b;
    for (size_t k = r - 1; k-- > 0;) {
      pos[k] = rem % outShape[k];
      rem /= outShape[k];
    }
    int64_t prevOff = -1;
    for (int64_t row = b; row < e; ++row) {
      int64_t off = 0;
      for (size_t k = 0; k + 1 < r; ++k)
        off += axes[k].idx[size_t(pos[k])] * st[k];
      uint8_t *d = dst + size_t(row * inner) * S;
      if (off == prevOff) {
        std::memcpy(d, d - size_t(inner) * S, size_t(inner) * S);
      } else if (last.identity) {
        std::memcpy(d, src + size_t(off) * S, size_t(inner) * S);
      } else {
        const uint8_t *s = src + size_t(off) * S;
        for (int64_t i = 0; i < inner; ++i)
          std::memcpy(d + size_t(i) * S, s + size_t(last.idx[size_t(i)]) * S, S);
      }
      prevOff = off;
      for (size_t k = r - 1; k-- > 0;) {
        if (++pos[k] < outShape[k])
          break;
        pos[k] = 0;
      }
    }
  });
}

/// A pass along the last axis of floats: each row of `outer` rows of
/// a.inDim becomes a.outDim sums of n products, eight outputs at a time
/// with AVX2 gathers; the same products added in the same order (from 0) as
/// interpolateAxis's loop, so the same bits. `idx` and `w` hold tap j of
/// output x at j * a.outDim + x.
__attribute__((target("avx2"))) void lastAxisRowsAvx2(const float *src, float *dst, int64_t b,
                                                      int64_t e, const AxisTaps &a,
                                                      const int32_t *idx, const float *w) {
  int64_t out = a.outDim, n = a.n;
  for (int64_t o = b; o < e; ++o) {
    const float *base = src + o * a.inDim;
    float *d = dst + o * out;
    int64_t x = 0;
    for (; x + 8 <= out; x += 8) {
      __m256 acc = _mm256_setzero_ps();
      for (int64_t j = 0; j < n; ++j) {
        __m256i at = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(idx + j * out + x));
        __m256 v = _mm256_i32gather_ps(base, at, 4);
        acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_loadu_ps(w + j * out + x), v));
      }
      _mm256_storeu_ps(d + x, acc);
    }
    for (; x < out; ++x) {
      float acc = 0;
      for (int64_t j = 0; j < n; ++j)
        acc += w[j * out + x] * base[idx[j * out + x]];
      d[x] = acc;
    }
  }
}

/// The most taps an output coordinate has (cubic: 4).
constexpr int kMaxTaps = 4;

/// d[i] = 0 + w[0] * rows[0][i] + ... + w[taps-1] * rows[taps-1][i].
template <typename W>
[[gnu::always_inline]] inline void combineRows(W *d, const W *const *rows, const W *w, int taps,
                                               int64_t inner) {
  for (int64_t i = 0; i < inner; ++i) {
    W acc = 0;
    for (int t = 0; t < taps; ++t)
      acc += w[t] * rows[t][i];
    d[i] = acc;
  }
}

/// combineRows compiled for AVX2 (without FMA: the same roundings).
__attribute__((target("avx2"))) void combineRowsAvx2(float *d, const float *const *rows,
                                                     const float *w, int taps, int64_t inner) {
  combineRows(d, rows, w, taps, inner);
}

/// One linear/cubic pass along an axis: [outer, in, inner] -> [outer, out, inner].
template <typename W>
void interpolateAxis(const W *src, W *dst, int64_t outer, int64_t inner, const AxisTaps &a) {
  int64_t n = a.n;
  if constexpr (std::is_same_v<W, float>) {
    if (inner == 1 && a.inDim <= INT32_MAX && simdLevel() >= SimdLevel::Avx2) {
      std::vector<int32_t> idx(size_t(n * a.outDim));
      std::vector<float> w(idx.size());
      for (int64_t x = 0; x < a.outDim; ++x)
        for (int64_t j = 0; j < n; ++j) {
          idx[size_t(j * a.outDim + x)] = int32_t(a.idx[size_t(x * n + j)]);
          w[size_t(j * a.outDim + x)] = float(a.w[size_t(x * n + j)]);
        }
      parallelFor(outer, a.outDim * n * 2 + 8, [&](int64_t b, int64_t e) {
        lastAxisRowsAvx2(src, dst, b, e, a, idx.data(), w.data());
      });
      return;
    }
  }
  bool avx2 = simdLevel() >= SimdLevel::Avx2;
  parallelFor(outer * a.outDim, inner * n + 8, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      int64_t o = k / a.outDim, x = k - o * a.outDim;
      const W *base = src + o * a.inDim * inner;
      W *d = dst + k * inner;
      const int64_t *idx = &a.idx[size_t(x * n)];
      const double *wd = &a.w[size_t(x * n)];
      if (inner == 1) {
        W s = 0;
        for (int64_t j = 0; j < n; ++j)
          s += W(wd[j]) * base[idx[j]];
        d[0] = s;
        continue;
      }
      // Each output row: 0 plus the products of the taps of nonzero weight,
      // in tap order, in one pass.
      const W *rows[kMaxTaps];
      W ws[kMaxTaps];
      int taps = 0;
      for (int64_t j = 0; j < n; ++j)
        if (W w = W(wd[j]); w != 0) {
          rows[taps] = base + idx[j] * inner;
          ws[taps++] = w;
        }
      if constexpr (std::is_same_v<W, float>) {
        if (avx2) {
          combineRowsAvx2(d, rows, ws, taps, inner);
          continue;
        }
      }
      combineRows(d, rows, ws, taps, inner);
    }
  });
}

/// Stores `v` as element `i` of `t` (ints rounded and saturated).
void storeAt(Tensor &t, int64_t i, double v) {
  uint8_t *p = static_cast<uint8_t *>(t.raw()) + size_t(i) * graph::elemSize(t.elem());
  auto put = [&](auto x) { std::memcpy(p, &x, sizeof(x)); };
  auto sat = [&](double lo, double hi) {
    return std::isnan(v) ? 0 : std::clamp(std::nearbyint(v), lo, hi);
  };
  switch (t.elem()) {
  case ElemType::Float:
    return put(float(v));
  case ElemType::Double:
    return put(v);
  case ElemType::Float16:
    return put(floatToHalf(float(v)));
  case ElemType::BFloat16:
    return put(floatToBfloat16(float(v)));
  case ElemType::Bool:
    return put(uint8_t(v != 0));
  case ElemType::Int8:
    return put(int8_t(sat(-128, 127)));
  case ElemType::UInt8:
    return put(uint8_t(sat(0, 255)));
  case ElemType::Int16:
    return put(int16_t(sat(-32768, 32767)));
  case ElemType::UInt16:
    return put(uint16_t(sat(0, 65535)));
  case ElemType::Int32:
    return put(int32_t(sat(-2147483648.0, 2147483647.0)));
  case ElemType::UInt32:
    return put(uint32_t(sat(0, 4294967295.0)));
  case ElemType::Int64:
    return put(int64_t(sat(-9.2233720368547748e18, 9.2233720368547748e18 - 2048)));
  case ElemType::UInt64:
    return put(uint64_t(sat(0, 1.8446744073709552e19 - 4096)));
  default:
    return;
  }
}

/// Linear and cubic: one pass per resized axis in working type W.
template <typename W>
void interpolate(const Tensor &x, Tensor &y, const std::vector<AxisTaps> &axes) {
  constexpr ElemType kW = std::is_same_v<W, float> ? ElemType::Float : ElemType::Double;
  std::vector<W> in;
  const W *cur;
  if (x.elem() == kW) {
    cur = x.data<W>();
  } else {
    in.resize(size_t(x.numel()));
    for (int64_t i = 0; i < x.numel(); ++i)
      in[size_t(i)] = W(x.at(i));
    cur = in.data();
  }
  // Downsampling axes first keeps the intermediates small.
  std::vector<size_t> order;
  for (size_t k = 0; k < axes.size(); ++k)
    if (!axes[k].identity)
      order.push_back(k);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return double(axes[a].outDim) / double(axes[a].inDim) <
           double(axes[b].outDim) / double(axes[b].inDim);
  });
  Shape shape = x.shape();
  Tensor bufs[2]; // from the executor's pool: no fresh pages every run
  int which = 0;
  for (size_t p = 0; p < order.size(); ++p) {
    const AxisTaps &a = axes[order[p]];
    int64_t outer = 1, inner = 1;
    for (size_t k = 0; k < order[p]; ++k)
      outer *= shape[k];
    for (size_t k = order[p] + 1; k < shape.size(); ++k)
      inner *= shape[k];
    shape[order[p]] = a.outDim;
    W *dst;
    if (p + 1 == order.size() && y.elem() == kW) {
      dst = y.data<W>();
    } else {
      bufs[which] = Tensor(kW, shape);
      dst = bufs[which].data<W>();
      which ^= 1;
    }
    interpolateAxis(cur, dst, outer, inner, a);
    cur = dst;
  }
  if (order.empty() && y.elem() == kW)
    std::memcpy(y.raw(), cur, y.bytes());
  else if (y.elem() != kW)
    for (int64_t i = 0; i < y.numel(); ++i)
      storeAt(y, i, double(cur[i]));
}

/// Overwrites the elements outside the crop box with the extrapolation value.
void extrapolate(Tensor &y, const std::vector<AxisTaps> &axes, double value) {
  bool any = false;
  for (const AxisTaps &a : axes)
    any = any || a.anyOutside;
  if (!any || y.numel() == 0)
    return;
  Tensor v(y.elem(), {});
  storeAt(v, 0, value);
  size_t r = axes.size(), es = graph::elemSize(y.elem());
  std::vector<int64_t> pos(r, 0);
  for (int64_t i = 0; i < y.numel(); ++i) {
    bool out = false;
    for (size_t k = 0; k < r; ++k)
      out = out || axes[k].outside[size_t(pos[k])];
    if (out)
      std::memcpy(static_cast<uint8_t *>(y.raw()) + size_t(i) * es, v.raw(), es);
    for (size_t k = r; k-- > 0;) {
      if (++pos[k] < y.dim(int64_t(k)))
        break;
      pos[k] = 0;
    }
  }
}

/// The output shape and taps of `x` resized as `o`, scales / sizes and roi
/// say.
bool planTaps(KernelContext &ctx, const Tensor &x, const Options &o,
              const std::vector<double> &scales, const std::vector<int64_t> &sizes,
              const std::vector<double> &roi, ResizeTaps &t) {
  int64_t r = x.rank();
  if (x.elem() == ElemType::String || graph::elemSize(x.elem()) == 0)
    return ctx.fail(ctx.node.opType + " does not support " + typeName(x.elem()) + " tensors");
  if (r == 0)
    return ctx.fail(ctx.node.opType + " needs an input of rank 1 or more");
  Shape out(static_cast<size_t>(r));
  std::vector<double> sc(static_cast<size_t>(r));
  if (!sizes.empty()) {
    if (int64_t(sizes.size()) != r)
      return ctx.fail("sizes has " + std::to_string(sizes.size()) + " entries for rank " +
                      std::to_string(r));
    for (int64_t k = 0; k < r; ++k) {
      if (sizes[size_t(k)] < 0)
        return ctx.fail("sizes must not be negative");
      out[size_t(k)] = sizes[size_t(k)];
      sc[size_t(k)] = x.dim(k) ? double(sizes[size_t(k)]) / double(x.dim(k)) : 1.0;
    }
  } else {
    if (int64_t(scales.size()) != r)
      return ctx.fail("scales has " + std::to_string(scales.size()) + " entries for rank " +
                      std::to_string(r));
    for (int64_t k = 0; k < r; ++k) {
      double s = scales[size_t(k)], d = std::floor(s * double(x.dim(k)));
      if (!(s > 0) || !(d < 9.0e15))
        return ctx.fail("scales must be positive and finite");
      out[size_t(k)] = int64_t(d);
      sc[size_t(k)] = s;
    }
  }
  int64_t n;
  bool fits = checkedNumel(out, x.elem(), n);
  for (int64_t d : out) // the tap tables take up to 48 bytes per coordinate
    fits = fits && d <= (int64_t(1) << 28);
  if (!fits)
    return ctx.fail("output shape " + shapeStr(out) + " is too large");
  if (o.coord == "tf_crop_and_resize" && !o.legacy && int64_t(roi.size()) != 2 * r)
    return ctx.fail("tf_crop_and_resize needs a roi of " + std::to_string(2 * r) + " values");
  t.nearest = o.mode == Mode::Nearest;
  t.outShape = out;
  t.extrapolation = o.extrapolation;
  t.axes.clear();
  if (n == 0)
    return true;
  for (int64_t k = 0; k < r; ++k)
    if (x.dim(k) == 0)
      return ctx.fail("cannot resize the empty input " + shapeStr(x.shape()));
  for (int64_t k = 0; k < r; ++k) {
    double rs = roi.size() == size_t(2 * r) ? roi[size_t(k)] : 0;
    double re = roi.size() == size_t(2 * r) ? roi[size_t(k + r)] : 1;
    t.axes.push_back(axisTaps(o, x.dim(k), out[size_t(k)], sc[size_t(k)], rs, re));
  }
  return true;
}

/// Resizes `x` along the taps `t` into output 0.
/// Resizes `x` by `t` into output 0 of `ctx`, or into `*into` (a tensor of
/// t.outShape) when given.
bool run(KernelContext &ctx, const Tensor &x, const ResizeTaps &t, Tensor *into = nullptr) {
  if (!into)
    ctx.outputs[0] = Tensor(x.elem(), t.outShape);
  Tensor &y = into ? *into : ctx.outputs[0];
  if (t.axes.empty())
    return true;
  const std::vector<AxisTaps> &axes = t.axes;
  const Shape &out = t.outShape;
  if (t.nearest) {
    const uint8_t *src = static_cast<const uint8_t *>(x.raw());
    uint8_t *dst = static_cast<uint8_t *>(y.raw());
    switch (graph::elemSize(x.elem())) {
    case 1:
      nearestGather<1>(src, dst, axes, x.shape(), out);
      break;
    case 2:
      nearestGather<2>(src, dst, axes, x.shape(), out);
      break;
    case 4:
      nearestGather<4>(src, dst, axes, x.shape(), out);
      break;
    case 8:
      nearestGather<8>(src, dst, axes, x.shape(), out);
      break;
    case 16:
      nearestGather<16>(src, dst, axes, x.shape(), out);
      break;
    default:
      return ctx.fail("unsupported element type " + typeName(x.elem()));
    }
  } else {
    switch (x.elem()) {
    case ElemType::Double:
    case ElemType::Int32:
    case ElemType::UInt32:
    case ElemType::Int64:
    case ElemType::UInt64:
      interpolate<double>(x, y, axes);
      break;
    case ElemType::Complex64:
    case ElemType::Complex128:
      return ctx.fail(ctx.node.opType + " does not support complex tensors");
    default:
      interpolate<float>(x, y, axes);
      break;
    }
  }
  extrapolate(y, axes, t.extrapolation);
  return true;
}

bool readMode(KernelContext &ctx, Options &o) {
  std::string mode = ctx.attrString("mode", "nearest");
  if (mode == "nearest")
    o.mode = Mode::Nearest;
  else if (mode == "linear" || mode == "bilinear")
    o.mode = Mode::Linear;
  else if (mode == "cubic" && ctx.node.opType == "Resize" && ctx.opset >= 11)
    o.mode = Mode::Cubic;
  else
    return ctx.fail("unsupported " + ctx.node.opType + " mode `" + mode + "`");
  return true;
}

bool floatList(KernelContext &ctx, const Tensor *t, const char *what, std::vector<double> &out) {
  if (!graph::isFloatingPoint(t->elem()))
    return ctx.fail(std::string(what) + " must be floating-point, not " + typeName(t->elem()));
  for (int64_t i = 0; i < t->numel(); ++i)
    out.push_back(t->at(i));
  return true;
}

/// Resize's options, scales or sizes, and roi.
bool readResize(KernelContext &ctx, Options &o, std::vector<double> &scales,
                std::vector<int64_t> &sizes, std::vector<double> &roi) {
  if (!readMode(ctx, o))
    return false;
  if (ctx.opset < 11) {
    o.legacy = true;
    const Tensor *s = ctx.input(1);
    if (!s)
      return ctx.fail("Resize needs scales");
    return floatList(ctx, s, "scales", scales);
  }
  o.coord = ctx.attrString("coordinate_transformation_mode", "half_pixel");
  o.nearest = ctx.attrString("nearest_mode", "round_prefer_floor");
  o.cubicA = ctx.attrFloat("cubic_coeff_a", -0.75f);
  o.excludeOutside = ctx.attrInt("exclude_outside", 0) != 0;
  o.extrapolation = ctx.attrFloat("extrapolation_value", 0);
  static const char *coords[] = {"half_pixel", "pytorch_half_pixel",   "align_corners",
                                 "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
  if (std::find(std::begin(coords), std::end(coords), o.coord) == std::end(coords))
    return ctx.fail("unknown coordinate_transformation_mode `" + o.coord + "`");
  if (o.nearest != "round_prefer_floor" && o.nearest != "round_prefer_ceil" &&
      o.nearest != "floor" && o.nearest != "ceil")
    return ctx.fail("unknown nearest_mode `" + o.nearest + "`");
  if (const Tensor *t = ctx.input(1); t && o.coord == "tf_crop_and_resize")
    if (!floatList(ctx, t, "roi", roi))
      return false;
  if (const Tensor *t = ctx.input(2))
    if (!floatList(ctx, t, "scales", scales))
      return false;
  if (const Tensor *t = ctx.input(3)) {
    if (t->elem() != ElemType::Int64)
      return ctx.fail("sizes must be int64, not " + typeName(t->elem()));
    for (int64_t i = 0; i < t->numel(); ++i)
      sizes.push_back(t->intAt(i));
  }
  if (scales.empty() == sizes.empty())
    return ctx.fail("Resize needs exactly one of scales and sizes");
  return true;
}

/// Upsample's options and scales (an input from opset 9, an attribute before).
bool readUpsample(KernelContext &ctx, Options &o, std::vector<double> &scales) {
  o.legacy = true;
  if (!readMode(ctx, o))
    return false;
  if (ctx.opset >= 9) {
    const Tensor *s = ctx.input(1);
    if (!s)
      return ctx.fail("Upsample needs scales");
    return floatList(ctx, s, "scales", scales);
  }
  for (float f : ctx.attrFloats("scales"))
    scales.push_back(f);
  return true;
}

/// Options, scales or sizes, and roi of the node of `ctx`.
bool readNode(KernelContext &ctx, Options &o, std::vector<double> &scales,
              std::vector<int64_t> &sizes, std::vector<double> &roi) {
  return ctx.node.opType == "Upsample" ? readUpsample(ctx, o, scales)
                                       : readResize(ctx, o, scales, sizes, roi);
}

bool resizeKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0);
  if (!x)
    return ctx.fail(ctx.node.opType + " needs an input");
  Options o;
  std::vector<double> scales, roi;
  std::vector<int64_t> sizes;
  ResizeTaps t;
  if (!readNode(ctx, o, scales, sizes, roi) || !planTaps(ctx, *x, o, scales, sizes, roi, t))
    return false;
  if (!x->blocked())
    return run(ctx, *x, t);
  // A convolution's output, passed as it is: NHWC resized over H and W as a
  // plain [N, H, W, C] tensor (the same passes in the same order, so the
  // same values), into NHWC for the next convolution or made plain; other
  // layouts are made plain first.
  Shape nhwc = x->shape();
  bool permutable = x->rank() == 4 && x->elem() == ElemType::Float && !t.axes.empty() &&
                    t.axes[0].identity && t.axes[1].identity &&
                    x->blocked()->md == dnnl_util::channelsLastDesc(nhwc);
  if (!permutable)
    return run(ctx, dnnl_util::toPlain(*x), t);
  std::swap(nhwc[1], nhwc[3]), std::swap(nhwc[1], nhwc[2]); // N, H, W, C
  ResizeTaps p = t;
  p.axes = {t.axes[0], t.axes[2], t.axes[3], t.axes[1]};
  p.outShape = {t.outShape[0], t.outShape[2], t.outShape[3], t.outShape[1]};
  Tensor y = dnnl_util::allocate(t.outShape, dnnl_util::channelsLastDesc(t.outShape));
  Tensor view = y.viewAs(p.outShape);
  if (!run(ctx, x->viewAs(nhwc), p, &view))
    return false;
  ctx.outputs[0] = ctx.blockedOutput ? std::move(y) : dnnl_util::toPlain(y);
  return true;
}

} // namespace

bool rt::resizeCall(KernelContext &ctx, const Tensor &x, ResizeCall &c) {
  Options o;
  std::vector<double> roi;
  if (!readNode(ctx, o, c.scales, c.sizes, roi) ||
      !planTaps(ctx, x, o, c.scales, c.sizes, roi, c.taps))
    return false;
  c.linear = o.mode == Mode::Linear;
  c.legacy = o.legacy;
  c.coord = o.coord;
  return true;
}

bool rt::resizeWithTaps(KernelContext &ctx, const Tensor &x, const ResizeTaps &t) {
  return run(ctx, x, t);
}

bool rt::resizeTaps(KernelContext &ctx, const Tensor &x, ResizeTaps &t) {
  Options o;
  std::vector<double> scales, roi;
  std::vector<int64_t> sizes;
  return readNode(ctx, o, scales, sizes, roi) && planTaps(ctx, x, o, scales, sizes, roi, t);
}

void rt::registerResizeKernels(KernelRegistry &r) {
  r.add("Resize", resizeKernel);
  r.add("Upsample", resizeKernel);
}
