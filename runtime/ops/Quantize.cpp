//===- Quantize.cpp - Quantization and type conversion kernels --------------===//
//
// QuantizeLinear and DequantizeLinear (per tensor, and per axis from opset
// 13), ONNX Runtime's com.microsoft QuantizeLinear / DequantizeLinear (int8,
// uint8, int16, uint16; per axis; what 16-bit QDQ models use before ONNX
// opset 21), DynamicQuantizeLinear, and Cast / CastLike between every pair of
// float, double, float16, bfloat16, the integer types, bool and string.
//
// Conventions where ONNX leaves results undefined: float->integer casts
// truncate toward zero and saturate, NaN gives 0; float->bfloat16 keeps the
// upper 16 bits (ONNX 1.12); integer->integer casts wrap
// (two's complement); quantization rounds half to even and saturates, NaN
// quantizes to the zero point. Numbers print like numpy's str() (shortest
// round-trip digits: "0.1", "1e-05", "nan", "inf"); strings parse with
// strtod/strtoll ("NaN", "INF", "+INF", "-inf", "1e3"), unparsable ones give
// NaN or 0.
//
//===----------------------------------------------------------------------===//
#include "runtime/KernelUtil.h"
#include "runtime/Simd.h"
#include "support/MiniFloat.h"

#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <type_traits>

using namespace tpcc;
using namespace tpcc::rt;

namespace {

/// Float (or float16/bfloat16 as float) element `i` of `t`.
float floatAt(const Tensor &t, int64_t i) {
  switch (t.elem()) {
  case ElemType::Float:
    return t.data<float>()[i];
  case ElemType::Float16:
    return halfToFloat(t.data<uint16_t>()[i]);
  case ElemType::BFloat16:
    return bfloat16ToFloat(t.data<uint16_t>()[i]);
  default:
    return float(t.at(i));
  }
}

//===----------------------------------------------------------------------===//
// QuantizeLinear / DequantizeLinear
//===----------------------------------------------------------------------===//

/// The per-tensor or per-axis layout of a scale: element i of the data uses
/// channel (i / inner) % channels. Blocked (opset 21's block_size): element
/// (o, j, r) of the data seen as [outer, channels, inner] uses scale
/// (o, j / block, r) of the scale seen as [outer, blocks, inner].
struct QuantAxis {
  int64_t outer = 1, channels = 1, inner = 1;
  int64_t block = 0, blocks = 1;
};

/// The blocked layout of `scale` for `x` (opset 21): the same rank, the same
/// dimensions except along the axis, which has ceil(length / block_size).
bool blockedAxis(KernelContext &ctx, const Tensor &x, const Tensor &scale, int64_t axis,
                 int64_t block, QuantAxis &qa) {
  if (scale.rank() != x.rank())
    return ctx.fail("blocked scale " + shapeStr(scale.shape()) + " must have the input's rank " +
                    std::to_string(x.rank()));
  qa.outer = qa.inner = 1;
  qa.channels = x.dim(axis);
  qa.block = block;
  qa.blocks = (qa.channels + block - 1) / block;
  for (int64_t i = 0; i < x.rank(); ++i) {
    int64_t want = i == axis ? qa.blocks : x.dim(i);
    if (scale.dim(i) != want)
      return ctx.fail("blocked scale " + shapeStr(scale.shape()) + " does not fit input " +
                      shapeStr(x.shape()) + " with block_size " + std::to_string(block) +
                      " on axis " + std::to_string(axis));
    if (i < axis)
      qa.outer *= x.dim(i);
    else if (i > axis)
      qa.inner *= x.dim(i);
  }
  return true;
}

/// `contrib`: the com.microsoft operator, per axis at any opset version.
bool quantAxis(KernelContext &ctx, const Tensor &x, const Tensor &scale, const Tensor *zp,
               QuantAxis &qa, bool contrib) {
  if (zp && zp->numel() != scale.numel())
    return ctx.fail("zero point shape " + shapeStr(zp->shape()) + " differs from scale shape " +
                    shapeStr(scale.shape()));
  qa.inner = x.numel();
  int64_t block = contrib || ctx.opset < 21 ? 0 : ctx.attrInt("block_size", 0);
  if (block < 0)
    return ctx.fail("block_size " + std::to_string(block) + " is negative");
  if (scale.numel() == 1 && scale.rank() <= 1 && !block)
    return true;
  if (block) {
    auto axis = normalizeAxis(ctx.attrInt("axis", 1), x.rank());
    if (!axis)
      return ctx.fail("axis " + std::to_string(ctx.attrInt("axis", 1)) +
                      " is out of range for rank " + std::to_string(x.rank()));
    return blockedAxis(ctx, x, scale, *axis, block, qa);
  }
  bool perAxis = contrib || ctx.opset >= 13;
  if (!perAxis || scale.rank() != 1)
    return ctx.fail("scale must be a scalar" + std::string(perAxis ? " or a 1-D tensor" : "") +
                    ", not " + shapeStr(scale.shape()));
  auto axis = normalizeAxis(ctx.attrInt("axis", 1), x.rank());
  if (!axis)
    return ctx.fail("axis " + std::to_string(ctx.attrInt("axis", 1)) +
                    " is out of range for rank " + std::to_string(x.rank()));
  if (x.dim(*axis) != scale.numel())
    return ctx.fail("scale has " + std::to_string(scale.numel()) + " elements but axis " +
                    std::to_string(*axis) + " of the input has " + std::to_string(x.dim(*axis)));
  qa.outer = qa.inner = 1;
  qa.channels = x.dim(*axis);
  for (int64_t i = 0; i < x.rank(); ++i) {
    if (i < *axis)
      qa.outer *= x.dim(i);
    else if (i > *axis)
      qa.inner *= x.dim(i);
  }
  return true;
}

/// The scale element of data element `i`.
int64_t scaleIndex(const QuantAxis &qa, int64_t i) {
  int64_t r = i % qa.inner, row = i / qa.inner;
  if (qa.block)
    return (row / qa.channels * qa.blocks + row % qa.channels / qa.block) * qa.inner + r;
  return row % qa.channels;
}

/// Calls `f(begin, end, channel)` for every run of elements sharing a
/// channel. Long runs (a per-tensor grid has one) are cut in pieces of at
/// least kPiece elements so that every thread gets some; each element's
/// result is its own, so the cut changes no byte.
template <typename F> void forEachChannelRun(const QuantAxis &qa, F f) {
  constexpr int64_t kPiece = 16384;
  int64_t pieces = std::max<int64_t>(1, qa.inner / kPiece);
  int64_t per = (qa.inner + pieces - 1) / pieces;
  parallelFor(qa.outer * qa.channels * pieces, per * 2, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      int64_t run = r / pieces, first = run * qa.inner + r % pieces * per;
      int64_t last = std::min((run + 1) * qa.inner, first + per);
      if (first < last)
        f(first, last, run % qa.channels);
    }
  });
}

bool isFloat8(ElemType t) { return t == ElemType::Float8E4M3FN || t == ElemType::Float8E5M2; }
MiniFloat miniFloatOf(ElemType t) {
  return t == ElemType::Float8E5M2 ? MiniFloat::E5M2 : MiniFloat::E4M3FN;
}

/// QuantizeLinear to FP8 (opset 19): the code of x / s in float32, rounded
/// to nearest even, saturated at the format's largest finite value unless
/// `saturate` is 0 (then out of range gives infinity or NaN as the format
/// has them). The zero point, +0, is ignored as ONNX says.
void quantizeFloat8(const Tensor &x, const Tensor &scale, Tensor &y, const QuantAxis &qa,
                    bool saturate) {
  MiniFloat f = miniFloatOf(y.elem());
  uint8_t *dst = y.data<uint8_t>();
  if (saturate && !qa.block && x.elem() == ElemType::Float) {
    const float *src = x.data<float>();
    forEachChannelRun(qa, [&](int64_t b, int64_t e, int64_t c) {
      quantizeToMiniFloat(f, src + b, floatAt(scale, c), dst + b, e - b);
    });
    return;
  }
  parallelFor(x.numel(), 8, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      dst[i] = floatToMiniFloat(f, floatAt(x, i) / floatAt(scale, scaleIndex(qa, i)), saturate);
  });
}

/// The value of every code of FP8 type `t`.
std::array<float, 256> float8Values(ElemType t) {
  std::array<float, 256> value;
  for (int c = 0; c < 256; ++c)
    value[size_t(c)] = miniFloatToFloat(miniFloatOf(t), uint8_t(c));
  return value;
}

/// DequantizeLinear from FP8: the code's value times s, in float32.
void dequantizeFloat8(const Tensor &x, const Tensor &scale, Tensor &y, const QuantAxis &qa) {
  MiniFloat f = miniFloatOf(x.elem());
  const uint8_t *src = x.data<uint8_t>();
  float *dst = y.data<float>();
  if (!qa.block) {
    const std::array<float, 256> value = float8Values(x.elem());
    forEachChannelRun(qa, [&](int64_t b, int64_t e, int64_t c) {
      float s = floatAt(scale, c);
      for (int64_t i = b; i < e; ++i)
        dst[i] = value[src[i]] * s;
    });
    return;
  }
  parallelFor(x.numel(), 4, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      dst[i] = miniFloatToFloat(f, src[i]) * floatAt(scale, scaleIndex(qa, i));
  });
}

/// y = saturate(round_half_even(x / s) + z) over n floats, vectorized:
/// adding and subtracting 1.5 * 2^23 rounds half to even below 2^22, and
/// past it every value saturates anyway (the sign survives). True when some
/// x / s is NaN (the caller gives those the zero point).
template <typename Q>
[[gnu::always_inline]] inline bool quantizeRun(const float *__restrict in, Q *__restrict out,
                                               int64_t n, float s, float z) {
  constexpr float lo = float(std::numeric_limits<Q>::lowest()),
                  hi = float(std::numeric_limits<Q>::max()), magic = 12582912.f;
  int nan = 0;
  for (int64_t i = 0; i < n; ++i) {
    float v = in[i] / s;
    float q = ((v + magic) - magic) + z;
    q = q < lo ? lo : q;
    q = q > hi ? hi : q;
    out[i] = Q(int32_t(q));
    nan |= v != v;
  }
  return nan;
}

/// quantizeRun compiled for AVX2 (Simd.h): the same IEEE operations eight
/// lanes at a time, so the same bytes.
template <typename Q>
__attribute__((target("avx2"))) bool quantizeRunAvx2(const float *in, Q *out, int64_t n, float s,
                                                     float z) {
  return quantizeRun(in, out, n, s, z);
}

template <typename Q>
void quantizeTyped(const Tensor &x, const Tensor &scale, const Tensor *zp, Tensor &y,
                   const QuantAxis &qa) {
  Q *dst = y.data<Q>();
  constexpr double lo = std::numeric_limits<Q>::lowest(), hi = std::numeric_limits<Q>::max();
  if (qa.block) { // blocked (opset 21): each element's own scale and zero point
    parallelFor(x.numel(), 8, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        int64_t k = scaleIndex(qa, i);
        double z = zp ? double(zp->data<Q>()[k]) : 0.0;
        float s = floatAt(scale, k);
        double q = (x.elem() == ElemType::Int32 ? std::nearbyint(double(x.data<int32_t>()[i]) / s)
                                                : double(std::nearbyint(floatAt(x, i) / s))) +
                   z;
        dst[i] = std::isnan(q) ? Q(z) : Q(q < lo ? lo : q > hi ? hi : q);
      }
    });
    return;
  }
  if (x.elem() == ElemType::Float) {
    // The same numbers in float, vectorized (quantizeRun). NaN gives the
    // zero point, in a second pass only when there is one.
    const float *src = x.data<float>();
    bool avx2 = simdLevel() >= SimdLevel::Avx2;
    forEachChannelRun(qa, [&](int64_t b, int64_t e, int64_t c) {
      float s = floatAt(scale, c);
      float z = zp ? float(zp->data<Q>()[c]) : 0.f;
      bool nan = avx2 ? quantizeRunAvx2(src + b, dst + b, e - b, s, z)
                      : quantizeRun(src + b, dst + b, e - b, s, z);
      for (int64_t i = 0, n = e - b; nan && i < n; ++i)
        if (float v = src[b + i] / s; v != v)
          dst[b + i] = Q(z);
    });
    return;
  }
  forEachChannelRun(qa, [&](int64_t b, int64_t e, int64_t c) {
    float s = floatAt(scale, c);
    double z = zp ? double(zp->data<Q>()[c]) : 0.0;
    for (int64_t i = b; i < e; ++i) {
      double q = x.elem() == ElemType::Int32 ? std::nearbyint(double(x.data<int32_t>()[i]) / s)
                                             : double(std::nearbyint(floatAt(x, i) / s));
      q += z;
      dst[i] = std::isnan(q) ? Q(z) : Q(q < lo ? lo : q > hi ? hi : q);
    }
  });
}

bool quantize(KernelContext &ctx, bool contrib) {
  const Tensor *x = ctx.input(0), *scale = ctx.input(1), *zp = ctx.input(2);
  if (!x || !scale)
    return ctx.fail("expects x and y_scale");
  ElemType xt = x->elem();
  if (xt != ElemType::Float && xt != ElemType::Int32 && !isHalf(xt))
    return ctx.fail("unsupported input type " + typeName(xt));
  ElemType qt = zp ? zp->elem() : ElemType::UInt8;
  bool wide = contrib && (qt == ElemType::UInt16 || qt == ElemType::Int16);
  bool fp8 = isFloat8(qt) && !contrib && ctx.opset >= 19;
  if (qt != ElemType::UInt8 && qt != ElemType::Int8 && !wide && !fp8)
    return ctx.fail("unsupported zero point type " + typeName(qt));
  QuantAxis qa;
  if (!quantAxis(ctx, *x, *scale, zp, qa, contrib))
    return false;
  Tensor &y = ctx.outputs[0] = Tensor(qt, x->shape());
  if (fp8) {
    if (xt == ElemType::Int32)
      return ctx.fail("unsupported input type int32 for an FP8 output");
    quantizeFloat8(*x, *scale, y, qa, ctx.attrInt("saturate", 1) != 0);
    return true;
  }
  switch (qt) {
  case ElemType::UInt8:
    quantizeTyped<uint8_t>(*x, *scale, zp, y, qa);
    break;
  case ElemType::Int8:
    quantizeTyped<int8_t>(*x, *scale, zp, y, qa);
    break;
  case ElemType::UInt16:
    quantizeTyped<uint16_t>(*x, *scale, zp, y, qa);
    break;
  default:
    quantizeTyped<int16_t>(*x, *scale, zp, y, qa);
    break;
  }
  return true;
}

bool quantizeKernel(KernelContext &ctx) { return quantize(ctx, false); }
bool contribQuantizeKernel(KernelContext &ctx) { return quantize(ctx, true); }

/// y = (x - z) * s over n codes.
template <typename Q>
[[gnu::always_inline]] inline void dequantizeRun(const Q *__restrict in, float *__restrict out,
                                                 int64_t n, float s, float z) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = (float(in[i]) - z) * s;
}

/// dequantizeRun compiled for AVX2: the same operations eight lanes at a time.
template <typename Q>
__attribute__((target("avx2"))) void dequantizeRunAvx2(const Q *in, float *out, int64_t n, float s,
                                                       float z) {
  dequantizeRun(in, out, n, s, z);
}

/// Blocked dequantization: row (o, j) of the data reads scale row
/// (o, j / block).
template <typename Q>
void dequantizeBlocked(const Q *src, const Tensor &scale, const Tensor *zp, float *dst,
                       const QuantAxis &qa) {
  parallelFor(qa.outer * qa.channels, std::max<int64_t>(1, 16384 / qa.inner),
              [&](int64_t b, int64_t e) {
                for (int64_t row = b; row < e; ++row) {
                  int64_t from = row * qa.inner, sfrom = scaleIndex(qa, from);
                  for (int64_t r = 0; r < qa.inner; ++r) {
                    float s = floatAt(scale, sfrom + r);
                    float z = zp ? float(zp->data<Q>()[sfrom + r]) : 0.0f;
                    dst[from + r] = (float(src[from + r]) - z) * s;
                  }
                }
              });
}

template <typename Q>
void dequantizeTyped(const Tensor &x, const Tensor &scale, const Tensor *zp, Tensor &y,
                     const QuantAxis &qa) {
  const Q *src = x.data<Q>();
  float *dst = y.data<float>();
  if (qa.block) {
    dequantizeBlocked(src, scale, zp, dst, qa);
    return;
  }
  bool avx2 = simdLevel() >= SimdLevel::Avx2;
  forEachChannelRun(qa, [&](int64_t b, int64_t e, int64_t c) {
    float s = floatAt(scale, c);
    float z = zp ? float(zp->data<Q>()[c]) : 0.0f;
    if (avx2)
      dequantizeRunAvx2(src + b, dst + b, e - b, s, z);
    else
      dequantizeRun(src + b, dst + b, e - b, s, z);
  });
}

bool dequantize(KernelContext &ctx, bool contrib) {
  const Tensor *x = ctx.input(0), *scale = ctx.input(1), *zp = ctx.input(2);
  if (!x || !scale)
    return ctx.fail("expects x and x_scale");
  if (zp && zp->elem() != x->elem())
    return ctx.fail("zero point type " + typeName(zp->elem()) + " differs from input type " +
                    typeName(x->elem()));
  QuantAxis qa;
  if (!quantAxis(ctx, *x, *scale, zp, qa, contrib))
    return false;
  ElemType xt = x->elem();
  if (isFloat8(xt)) {
    if (contrib || ctx.opset < 19)
      return ctx.fail("input type " + typeName(xt) + " needs opset 19");
    Tensor &y = ctx.outputs[0] = Tensor(ElemType::Float, x->shape());
    dequantizeFloat8(*x, *scale, y, qa);
    return true;
  }
  if ((xt == ElemType::UInt16 || xt == ElemType::Int16) && !contrib && ctx.opset < 21)
    return ctx.fail("unsupported input type " + typeName(xt));
  if ((xt == ElemType::UInt4 || xt == ElemType::Int4) && (contrib || ctx.opset < 21))
    return ctx.fail("input type " + typeName(xt) + " needs opset 21");
  Tensor &y = ctx.outputs[0] = Tensor(ElemType::Float, x->shape());
  switch (xt) {
  case ElemType::UInt8:
  case ElemType::UInt4: // a byte each in memory
    dequantizeTyped<uint8_t>(*x, *scale, zp, y, qa);
    break;
  case ElemType::Int8:
  case ElemType::Int4:
    dequantizeTyped<int8_t>(*x, *scale, zp, y, qa);
    break;
  case ElemType::UInt16:
    dequantizeTyped<uint16_t>(*x, *scale, zp, y, qa);
    break;
  case ElemType::Int16:
    dequantizeTyped<int16_t>(*x, *scale, zp, y, qa);
    break;
  case ElemType::Int32:
    dequantizeTyped<int32_t>(*x, *scale, zp, y, qa);
    break;
  default:
    return ctx.fail("unsupported input type " + typeName(xt));
  }
  return true;
}

bool dequantizeKernel(KernelContext &ctx) { return dequantize(ctx, false); }
bool contribDequantizeKernel(KernelContext &ctx) { return dequantize(ctx, true); }

bool dynamicQuantizeKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0);
  if (!x || x->elem() != ElemType::Float)
    return ctx.fail("expects a float input");
  if (ctx.outputs.size() < 3)
    return ctx.fail("expects three outputs");
  const float *s = x->data<float>();
  float mn = 0, mx = 0;
  for (int64_t i = 0; i < x->numel(); ++i)
    if (!std::isnan(s[i])) {
      mn = std::min(mn, s[i]);
      mx = std::max(mx, s[i]);
    }
  float scale = (mx - mn) / 255.0f;
  float zpf = scale == 0 ? 0 : std::nearbyint(-mn / scale);
  uint8_t zp = saturate<uint8_t>(zpf);
  Tensor &y = ctx.outputs[0] = Tensor(ElemType::UInt8, x->shape());
  for (int64_t i = 0; i < x->numel(); ++i) {
    float q = scale == 0 ? 0 : std::nearbyint(s[i] / scale) + float(zp);
    y.data<uint8_t>()[i] = std::isnan(q) ? zp : saturate<uint8_t>(q);
  }
  ctx.outputs[1] = Tensor(ElemType::Float, {});
  ctx.outputs[1].data<float>()[0] = scale;
  ctx.outputs[2] = Tensor(ElemType::UInt8, {});
  ctx.outputs[2].data<uint8_t>()[0] = zp;
  return true;
}

//===----------------------------------------------------------------------===//
// Cast
//===----------------------------------------------------------------------===//

struct F16 {
  uint16_t bits;
};
struct BF16 {
  uint16_t bits;
};
struct Bool {
  uint8_t v;
};

/// ONNX 1.12 defines Cast to bfloat16 as keeping the upper 16 bits of the
/// float (truncation, not rounding: its reference and test data do so); NaN
/// stays a quiet NaN.
uint16_t truncateToBfloat16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (std::isnan(f))
    return uint16_t((u >> 16) | 0x0040);
  return uint16_t(u >> 16);
}

/// An element as a C++ arithmetic value.
template <typename S> auto load(S s) {
  if constexpr (std::is_same_v<S, F16>)
    return halfToFloat(s.bits);
  else if constexpr (std::is_same_v<S, BF16>)
    return bfloat16ToFloat(s.bits);
  else if constexpr (std::is_same_v<S, Bool>)
    return uint8_t(s.v != 0);
  else
    return s;
}

/// An arithmetic value stored as element type D.
template <typename D, typename V> D store(V v) {
  if constexpr (std::is_same_v<D, F16>)
    return F16{floatToHalf(float(v))};
  else if constexpr (std::is_same_v<D, BF16>)
    return BF16{truncateToBfloat16(float(v))};
  else if constexpr (std::is_same_v<D, Bool>)
    return Bool{uint8_t(v != V(0))};
  else if constexpr (std::is_integral_v<D> && std::is_floating_point_v<V>)
    return saturate<D>(double(v));
  else
    return D(v);
}

#define TPCC_CAST_DISPATCH(ET, NAME, CALL)                                                         \
  switch (ET) {                                                                                    \
  case ElemType::Float: {                                                                          \
    using NAME = float;                                                                            \
    CALL;                                                                                          \
  }                                                                                                \
  case ElemType::Double: {                                                                         \
    using NAME = double;                                                                           \
    CALL;                                                                                          \
  }                                                                                                \
  case ElemType::Float16: {                                                                        \
    using NAME = F16;                                                                              \
    CALL;                                                                                          \
  }                                                                                                \
  case ElemType::BFloat16: {                                                                       \
    using NAME = BF16;                                                                             \
    CALL;                                                                                          \
  }                                                                                                \
  case ElemType::Bool: {                                                                           \
    using NAME = Bool;                                                                             \
    CALL;                                                                                          \
  }                                                                                                \
  case ElemType::Int8: {                                                                           \
    using NAME = int8_t;                                                                           \
    CALL;                                                                                          \
  }                                                                                                \
  case ElemType::UInt8: {                                                                          \
    using NAME = uint8_t;                                                                          \
    CALL;                                                                                          \
  }                                                                                                \
  case ElemType::Int16: {                                                                          \
    using NAME = int16_t;                                                                          \
    CALL;                                                                                          \
  }                                                                                                \
  case ElemType::UInt16: {                                                                         \
    using NAME = uint16_t;                                                                         \
    CALL;                                                                                          \
  }                                                                                                \
  case ElemType::Int32: {                                                                          \
    using NAME = int32_t;                                                                          \
    CALL;                                                                                          \
  }                                                                                                \
  case ElemType::UInt32: {                                                                         \
    using NAME = uint32_t;                                                                         \
    CALL;                                                                                          \
  }                                                                                                \
  case ElemType::Int64: {                                                                          \
    using NAME = int64_t;                                                                          \
    CALL;                                                                                          \
  }                                                                                                \
  case ElemType::UInt64: {                                                                         \
    using NAME = uint64_t;                                                                         \
    CALL;                                                                                          \
  }                                                                                                \
  default:                                                                                         \
    return false;                                                                                  \
  }

template <typename S, typename D> void castTyped(const Tensor &x, Tensor &y) {
  const S *s = x.data<S>();
  D *d = y.data<D>();
  parallelFor(x.numel(), 2, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      d[i] = store<D>(load(s[i]));
  });
}

template <typename S> bool castFrom(const Tensor &x, Tensor &y) {
  TPCC_CAST_DISPATCH(y.elem(), D, (castTyped<S, D>(x, y)); return true)
}

/// The shortest decimal digits that round-trip `v` through `same`, printed
/// like numpy's str(): positional for 1e-4 <= |v| < 1e16, else scientific.
template <typename Same> std::string formatFloat(double v, Same same) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v < 0 ? "-inf" : "inf";
  if (v == 0)
    return std::signbit(v) ? "-0.0" : "0.0";
  char buf[64];
  for (int prec = 0; prec <= 17; ++prec) {
    auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific, prec);
    if (same(std::strtod(std::string(buf, r.ptr).c_str(), nullptr)) || prec == 17) {
      *r.ptr = 0;
      break;
    }
  }
  // buf: [-]d[.ddd]e(+|-)xx
  std::string s(buf), sign, digits;
  if (s[0] == '-') {
    sign = "-";
    s.erase(0, 1);
  }
  size_t epos = s.find('e');
  int exp = std::atoi(s.c_str() + epos + 1);
  for (size_t i = 0; i < epos; ++i)
    if (s[i] != '.')
      digits += s[i];
  while (digits.size() > 1 && digits.back() == '0')
    digits.pop_back();
  double a = std::fabs(v);
  if (a >= 1e-4 && a < 1e16) {
    if (exp < 0)
      return sign + "0." + std::string(size_t(-exp - 1), '0') + digits;
    if (digits.size() <= size_t(exp) + 1)
      return sign + digits + std::string(size_t(exp) + 1 - digits.size(), '0') + ".0";
    return sign + digits.substr(0, size_t(exp) + 1) + "." + digits.substr(size_t(exp) + 1);
  }
  std::string mant = digits.substr(0, 1) + (digits.size() > 1 ? "." + digits.substr(1) : "");
  std::string e = std::to_string(std::abs(exp));
  return sign + mant + (exp < 0 ? "e-" : "e+") + (e.size() < 2 ? "0" : "") + e;
}

std::string elementString(const Tensor &x, int64_t i) {
  switch (x.elem()) {
  case ElemType::Float: {
    float f = x.data<float>()[i];
    return formatFloat(f, [&](double p) { return float(p) == f; });
  }
  case ElemType::Double: {
    double d = x.data<double>()[i];
    return formatFloat(d, [&](double p) { return p == d; });
  }
  case ElemType::Float16: {
    uint16_t h = x.data<uint16_t>()[i];
    return formatFloat(halfToFloat(h), [&](double p) { return floatToHalf(float(p)) == h; });
  }
  case ElemType::BFloat16: {
    uint16_t h = x.data<uint16_t>()[i];
    return formatFloat(bfloat16ToFloat(h),
                       [&](double p) { return floatToBfloat16(float(p)) == h; });
  }
  case ElemType::Bool:
    return x.data<uint8_t>()[i] ? "True" : "False";
  case ElemType::UInt64:
    return std::to_string(x.data<uint64_t>()[i]);
  default:
    return std::to_string(x.intAt(i));
  }
}

template <typename D> D parseString(const std::string &s) {
  if constexpr (std::is_integral_v<D>) {
    char *end = nullptr;
    errno = 0;
    if constexpr (std::is_unsigned_v<D>) {
      if (s.find('-') == std::string::npos) {
        unsigned long long u = std::strtoull(s.c_str(), &end, 10);
        if (end != s.c_str() && *end == 0 && errno == 0)
          return D(u);
      }
    } else {
      long long l = std::strtoll(s.c_str(), &end, 10);
      if (end != s.c_str() && *end == 0 && errno == 0)
        return D(l);
    }
  }
  double v = std::strtod(s.c_str(), nullptr);
  if (s.empty() || (v == 0 && s.find_first_of("0123456789") == std::string::npos))
    v = std::is_integral_v<D> ? 0.0 : std::numeric_limits<double>::quiet_NaN();
  return store<D>(v);
}

template <typename D> void castFromString(const Tensor &x, Tensor &y) {
  D *d = y.data<D>();
  for (int64_t i = 0; i < x.numel(); ++i)
    d[i] = parseString<D>(x.strings()[size_t(i)]);
}

bool castStrings(const Tensor &x, Tensor &y) {
  if (x.elem() == ElemType::String && y.elem() == ElemType::String) {
    y.strings() = x.strings();
    return true;
  }
  if (y.elem() == ElemType::String) {
    for (int64_t i = 0; i < x.numel(); ++i)
      y.strings()[size_t(i)] = elementString(x, i);
    return true;
  }
  TPCC_CAST_DISPATCH(y.elem(), D, castFromString<D>(x, y); return true)
}

/// Cast to or from FP8 (opset 19): an FP8 value becomes its float exactly,
/// and from there the target type; a float (or float16) rounds to the
/// nearest FP8 value, ties to even, saturating unless `saturate` is 0 (as
/// QuantizeLinear with scale 1). Other sources (double, integers) would round
/// twice through float: refused.
bool castFloat8(KernelContext &ctx, const Tensor &x, ElemType to, bool saturate) {
  Tensor &y = ctx.outputs[0] = Tensor(to, x.shape());
  Tensor f = x;
  if (isFloat8(x.elem())) {
    f = Tensor(ElemType::Float, x.shape());
    const std::array<float, 256> value = float8Values(x.elem());
    for (int64_t i = 0; i < x.numel(); ++i)
      f.data<float>()[i] = value[x.data<uint8_t>()[i]];
  } else if (x.elem() == ElemType::Float16) {
    f = Tensor(ElemType::Float, x.shape());
    castTyped<F16, float>(x, f);
  }
  if (!isFloat8(to)) {
    if (to == ElemType::Float) {
      y = std::move(f);
      return true;
    }
    bool ok = [&]() -> bool {
      TPCC_CAST_DISPATCH(to, D, (castTyped<float, D>(f, y)); return true)
    }();
    return ok || ctx.fail("unsupported cast from " + typeName(x.elem()) + " to " + typeName(to));
  }
  if (f.elem() != ElemType::Float)
    return ctx.fail("unsupported cast from " + typeName(x.elem()) + " to " + typeName(to) +
                    " (FP8 targets take float, float16 or FP8 inputs)");
  MiniFloat m = miniFloatOf(to);
  const float *src = f.data<float>();
  uint8_t *dst = y.data<uint8_t>();
  parallelFor(x.numel(), 8, [&](int64_t b, int64_t e) {
    if (saturate) {
      quantizeToMiniFloat(m, src + b, 1.0f, dst + b, e - b);
      return;
    }
    for (int64_t i = b; i < e; ++i)
      dst[i] = floatToMiniFloat(m, src[i], false);
  });
  return true;
}

/// Casts input 0 to `to`.
bool castTo(KernelContext &ctx, ElemType to, bool saturate = true) {
  const Tensor *x = ctx.input(0);
  if (!x)
    return ctx.fail("expects an input");
  if (x->elem() == to) {
    ctx.outputs[0] = *x;
    return true;
  }
  if (isFloat8(to) || isFloat8(x->elem()))
    return castFloat8(ctx, *x, to, saturate);
  Tensor &y = ctx.outputs[0] = Tensor(to, x->shape());
  bool ok = [&]() -> bool {
    if (x->elem() == ElemType::String || to == ElemType::String)
      return castStrings(*x, y);
    TPCC_CAST_DISPATCH(x->elem(), S, return castFrom<S>(*x, y))
  }();
  return ok || ctx.fail("unsupported cast from " + typeName(x->elem()) + " to " + typeName(to));
}

bool castKernel(KernelContext &ctx) {
  int64_t to = ctx.attrInt("to", 0);
  if (to > std::numeric_limits<int32_t>::max() || to < 0 || !graph::isKnownElemType(int32_t(to)))
    return ctx.fail("unknown target type " + std::to_string(to));
  return castTo(ctx, ElemType(to), ctx.attrInt("saturate", 1) != 0);
}

bool castLikeKernel(KernelContext &ctx) {
  const Tensor *like = ctx.input(1);
  if (!like)
    return ctx.fail("expects target_type");
  return castTo(ctx, like->elem(), ctx.attrInt("saturate", 1) != 0);
}

} // namespace

void rt::registerQuantizeKernels(KernelRegistry &r) {
  r.add("QuantizeLinear", quantizeKernel);
  r.add("DequantizeLinear", dequantizeKernel);
  r.add("com.microsoft", "QuantizeLinear", contribQuantizeKernel);
  r.add("com.microsoft", "DequantizeLinear", contribDequantizeKernel);
  r.add("DynamicQuantizeLinear", dynamicQuantizeKernel);
  r.add("Cast", castKernel);
  r.add("CastLike", castLikeKernel);
}
