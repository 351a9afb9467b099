//===- Activation.cpp - Activation function kernels -------------------------===//
//
// Element-wise activations (Relu, LeakyRelu, PRelu, Sigmoid, HardSigmoid,
// HardSwish, Tanh, Elu, Selu, Celu, Softplus, Softsign, ThresholdedRelu,
// Shrink), Clip (attributes before opset 11, optional inputs after) and the
// normalizations along an axis: Softmax, LogSoftmax and Hardmax (opset < 13:
// the input is coerced to 2-D at `axis`; opset >= 13: one axis).
//
// float16/bfloat16 inputs are computed in float.
//
//===----------------------------------------------------------------------===//
#include "runtime/Fusion.h"
#include "runtime/KernelUtil.h"
#include "runtime/VecMath.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

using namespace tpcc;
using namespace tpcc::rt;

namespace {

bool unsupported(KernelContext &ctx, ElemType t) {
  return ctx.fail("unsupported element type " + typeName(t));
}

//===----------------------------------------------------------------------===//
// Element-wise activations
//===----------------------------------------------------------------------===//

/// An activation `Op` (constructed from the context, applied per element);
/// `Ints` says whether integer types are accepted.
template <typename Op, bool Ints, int Cost = 1> bool actKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0);
  if (!x)
    return ctx.fail("expects an input");
  if (isHalf(x->elem()))
    return viaFloat(ctx, actKernel<Op, Ints, Cost>);
  Op op(ctx);
  ctx.outputs[0] = Tensor(x->elem(), x->shape());
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const T *s = x->data<T>();
    T *d = ctx.outputs[0].data<T>();
    parallelFor(x->numel(), Cost, [&, s, d](int64_t b, int64_t e) {
      const T *__restrict in = s;
      T *__restrict out = d;
      for (int64_t i = b; i < e; ++i)
        out[i] = op(in[i]);
    });
    return true;
  };
  bool ok;
  if constexpr (Ints)
    ok = TPCC_DISPATCH_NUMERIC(x->elem(), false, run(T()));
  else
    ok = TPCC_DISPATCH_FLOAT(x->elem(), false, run(T()));
  return ok || unsupported(ctx, x->elem());
}

struct ReluOp {
  explicit ReluOp(const KernelContext &) {}
  template <typename T> T operator()(T v) const { return v > T(0) ? v : T(0); }
};
struct LeakyReluOp {
  float alpha;
  explicit LeakyReluOp(const KernelContext &c) : alpha(c.attrFloat("alpha", 0.01f)) {}
  template <typename T> T operator()(T v) const { return v >= 0 ? v : T(alpha) * v; }
};
struct SigmoidOp {
  explicit SigmoidOp(const KernelContext &) {}
  template <typename T> T operator()(T v) const {
    if (v >= 0)
      return T(1) / (T(1) + std::exp(-v));
    T e = std::exp(v);
    return e / (T(1) + e);
  }
};
struct HardSigmoidOp {
  float alpha, beta;
  explicit HardSigmoidOp(const KernelContext &c)
      : alpha(c.attrFloat("alpha", 0.2f)), beta(c.attrFloat("beta", 0.5f)) {}
  template <typename T> T operator()(T v) const {
    return std::max(T(0), std::min(T(1), T(alpha) * v + T(beta)));
  }
};
struct HardSwishOp {
  explicit HardSwishOp(const KernelContext &) {}
  template <typename T> T operator()(T v) const {
    return v * std::max(T(0), std::min(T(1), v / T(6) + T(0.5)));
  }
};
struct TanhOp {
  explicit TanhOp(const KernelContext &) {}
  template <typename T> T operator()(T v) const { return std::tanh(v); }
};
struct EluOp {
  float alpha;
  explicit EluOp(const KernelContext &c) : alpha(c.attrFloat("alpha", 1.0f)) {}
  template <typename T> T operator()(T v) const {
    return v >= 0 ? v : T(alpha) * (std::exp(v) - T(1));
  }
};
struct CeluOp {
  float alpha;
  explicit CeluOp(const KernelContext &c) : alpha(c.attrFloat("alpha", 1.0f)) {}
  template <typename T> T operator()(T v) const {
    return std::max(T(0), v) + std::min(T(0), T(alpha) * (std::exp(v / T(alpha)) - T(1)));
  }
};
struct SeluOp {
  float alpha, gamma;
  explicit SeluOp(const KernelContext &c)
      : alpha(c.attrFloat("alpha", 1.67326319217681884765625f)),
        gamma(c.attrFloat("gamma", 1.05070102214813232421875f)) {}
  template <typename T> T operator()(T v) const {
    return v > 0 ? T(gamma) * v : T(gamma) * (T(alpha) * std::exp(v) - T(alpha));
  }
};
struct SoftplusOp {
  explicit SoftplusOp(const KernelContext &) {}
  template <typename T> T operator()(T v) const {
    return v > 0 ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v));
  }
};
struct SoftsignOp {
  explicit SoftsignOp(const KernelContext &) {}
  template <typename T> T operator()(T v) const { return v / (T(1) + std::fabs(v)); }
};
struct ThresholdedReluOp {
  float alpha;
  explicit ThresholdedReluOp(const KernelContext &c) : alpha(c.attrFloat("alpha", 1.0f)) {}
  template <typename T> T operator()(T v) const { return v > T(alpha) ? v : T(0); }
};
struct ShrinkOp {
  float bias, lambd;
  explicit ShrinkOp(const KernelContext &c)
      : bias(c.attrFloat("bias", 0.0f)), lambd(c.attrFloat("lambd", 0.5f)) {}
  template <typename T> T operator()(T v) const {
    // Computed in double: the bias may not be representable in T.
    double d = double(v);
    if (d < -lambd)
      return fromDouble<T>(d + bias);
    if (d > lambd)
      return fromDouble<T>(d - bias);
    return T(0);
  }
  template <typename T> static T fromDouble(double d) {
    if constexpr (std::is_integral_v<T>) {
      if (std::isnan(d))
        return 0;
      if (d <= double(std::numeric_limits<T>::lowest()))
        return std::numeric_limits<T>::lowest();
      if (d >= double(std::numeric_limits<T>::max()))
        return std::numeric_limits<T>::max();
    }
    return T(d);
  }
};

//===----------------------------------------------------------------------===//
// Clip and PRelu
//===----------------------------------------------------------------------===//

template <typename T> bool clipTyped(KernelContext &ctx, const Tensor &x) {
  T lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
  if (ctx.opset < 11) {
    if constexpr (!std::is_integral_v<T>) {
      lo = T(ctx.attrFloat("min", -std::numeric_limits<float>::max()));
      hi = T(ctx.attrFloat("max", std::numeric_limits<float>::max()));
    }
  } else {
    for (size_t i = 1; i <= 2; ++i) {
      const Tensor *b = ctx.input(i);
      if (!b)
        continue;
      if (b->elem() != x.elem() || b->numel() != 1)
        return ctx.fail((i == 1 ? "min" : "max") + std::string(" must be a scalar of type ") +
                        typeName(x.elem()));
      (i == 1 ? lo : hi) = b->data<T>()[0];
    }
  }
  const T *s = x.data<T>();
  T *d = ctx.outputs[0].data<T>();
  parallelFor(x.numel(), 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      T v = s[i] < lo ? lo : s[i];
      d[i] = v > hi ? hi : v;
    }
  });
  return true;
}

bool clipKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0);
  if (!x)
    return ctx.fail("expects an input");
  if (isHalf(x->elem()))
    return viaFloat(ctx, clipKernel);
  ctx.outputs[0] = Tensor(x->elem(), x->shape());
  return TPCC_DISPATCH_NUMERIC(x->elem(), unsupported(ctx, x->elem()), clipTyped<T>(ctx, *x));
}

/// x * y, wrapping for integers.
template <typename T> T mulWrap(T x, T y) {
  if constexpr (std::is_integral_v<T>)
    return T(uint64_t(x) * uint64_t(y));
  else
    return x * y;
}

template <typename T> void preluTyped(const Tensor &x, const Tensor &slope, Tensor &out) {
  const T *s = x.data<T>(), *a = slope.data<T>();
  T *d = out.data<T>();
  int64_t n = x.numel();
  // When the slope's non-broadcast dimensions are one contiguous block
  // [first, last] of X's dimensions, its offset is (i / inner) % mid.
  const Shape &xs = x.shape(), &ss = slope.shape();
  size_t off = xs.size() - ss.size();
  int64_t first = -1, last = -1;
  for (size_t i = 0; i < ss.size(); ++i)
    if (ss[i] != 1) {
      if (first < 0)
        first = int64_t(i + off);
      last = int64_t(i + off);
    }
  bool block = true;
  int64_t mid = 1, inner = 1;
  for (int64_t i = std::max<int64_t>(first, 0); i <= last; ++i) {
    block = block && ss[size_t(i) - off] == xs[size_t(i)];
    mid *= xs[size_t(i)];
  }
  for (size_t i = size_t(last + 1); i < xs.size(); ++i)
    inner *= xs[i];
  if (block) {
    parallelFor(n, 2, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        d[i] = s[i] < 0 ? mulWrap(s[i], a[(i / inner) % mid]) : s[i];
    });
    return;
  }
  BroadcastIndexer bi(ss, xs);
  parallelFor(n, 8, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      d[i] = s[i] < 0 ? mulWrap(s[i], a[bi.offset(i)]) : s[i];
  });
}

bool preluKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0), *slope = ctx.input(1);
  if (!x || !slope)
    return ctx.fail("expects X and slope");
  if (isHalf(x->elem()))
    return viaFloat(ctx, preluKernel);
  if (x->elem() != slope->elem())
    return ctx.fail("slope type " + typeName(slope->elem()) + " differs from X type " +
                    typeName(x->elem()));
  auto s = broadcastShapes(x->shape(), slope->shape());
  if (!s || *s != x->shape())
    return ctx.fail("slope shape " + shapeStr(slope->shape()) + " does not broadcast to " +
                    shapeStr(x->shape()));
  ctx.outputs[0] = Tensor(x->elem(), x->shape());
  return TPCC_DISPATCH_NUMERIC(x->elem(), unsupported(ctx, x->elem()),
                               (preluTyped<T>(*x, *slope, ctx.outputs[0]), true));
}

//===----------------------------------------------------------------------===//
// Softmax, LogSoftmax, Hardmax
//===----------------------------------------------------------------------===//

enum class SoftmaxKind { Softmax, LogSoftmax, Hardmax };

/// Normalizes each of the outer*inner lines of `len` elements (stride `inner`).
template <typename T>
void normalizeLines(const T *s, T *d, int64_t outer, int64_t len, int64_t inner, SoftmaxKind kind) {
  if (inner == 1 && kind == SoftmaxKind::Softmax) {
    // Along the last axis (attention's scores): contiguous lines; float
    // lines take exp and their sum from runtime/VecMath.h.
    parallelFor(outer, len * 8, [&](int64_t ob, int64_t oe) {
      if constexpr (std::is_same_v<T, float>) {
        vecmath::softmaxRows(s + ob * len, d + ob * len, oe - ob, len);
      } else {
        for (int64_t o = ob; o < oe; ++o) {
          const T *__restrict x = s + o * len;
          T *__restrict y = d + o * len;
          T mx = -std::numeric_limits<T>::infinity(), sum = 0;
          for (int64_t k = 0; k < len; ++k)
            mx = std::max(mx, x[k]);
          for (int64_t k = 0; k < len; ++k)
            y[k] = std::exp(x[k] - mx);
          for (int64_t k = 0; k < len; ++k)
            sum += y[k];
          T r = T(1) / sum;
          for (int64_t k = 0; k < len; ++k)
            y[k] *= r;
        }
      }
    });
    return;
  }
  parallelFor(outer, len * inner * 8, [&](int64_t ob, int64_t oe) {
    std::vector<T> mx((size_t(inner))), sum((size_t(inner)));
    for (int64_t o = ob; o < oe; ++o) {
      const T *x = s + o * len * inner;
      T *y = d + o * len * inner;
      std::fill(mx.begin(), mx.end(), -std::numeric_limits<T>::infinity());
      std::fill(sum.begin(), sum.end(), T(0));
      for (int64_t k = 0; k < len; ++k)
        for (int64_t j = 0; j < inner; ++j)
          mx[size_t(j)] = std::max(mx[size_t(j)], x[k * inner + j]);
      if (kind == SoftmaxKind::Hardmax) {
        std::fill(y, y + len * inner, T(0));
        for (int64_t j = 0; j < inner; ++j)
          for (int64_t k = 0; k < len; ++k)
            if (x[k * inner + j] == mx[size_t(j)]) {
              y[k * inner + j] = T(1);
              break;
            }
        continue;
      }
      for (int64_t k = 0; k < len; ++k)
        for (int64_t j = 0; j < inner; ++j) {
          T e = std::exp(x[k * inner + j] - mx[size_t(j)]);
          sum[size_t(j)] += e;
          if (kind == SoftmaxKind::Softmax)
            y[k * inner + j] = e;
        }
      if (kind == SoftmaxKind::Softmax) {
        for (int64_t j = 0; j < inner; ++j)
          sum[size_t(j)] = T(1) / sum[size_t(j)];
        for (int64_t k = 0; k < len; ++k)
          for (int64_t j = 0; j < inner; ++j)
            y[k * inner + j] *= sum[size_t(j)];
      } else {
        for (int64_t j = 0; j < inner; ++j)
          sum[size_t(j)] = mx[size_t(j)] + std::log(sum[size_t(j)]);
        for (int64_t k = 0; k < len; ++k)
          for (int64_t j = 0; j < inner; ++j)
            y[k * inner + j] = x[k * inner + j] - sum[size_t(j)];
      }
    }
  });
}

template <SoftmaxKind Kind> bool normKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0);
  if (!x)
    return ctx.fail("expects an input");
  if (isHalf(x->elem()))
    return viaFloat(ctx, normKernel<Kind>);
  bool legacy = ctx.opset < 13;
  int64_t rank = x->rank();
  auto axis = normalizeAxis(ctx.attrInt("axis", legacy ? 1 : -1), rank);
  if (!axis && !(legacy && ctx.attrInt("axis", 1) == rank))
    return ctx.fail("axis " + std::to_string(ctx.attrInt("axis", legacy ? 1 : -1)) +
                    " is out of range for rank " + std::to_string(rank));
  int64_t a = axis ? *axis : rank;
  int64_t outer = 1, len = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i)
    (i < a ? outer : i == a || legacy ? len : inner) *= x->dim(i);
  ctx.outputs[0] = Tensor(x->elem(), x->shape());
  return TPCC_DISPATCH_FLOAT(
      x->elem(), unsupported(ctx, x->elem()),
      (normalizeLines<T>(x->data<T>(), ctx.outputs[0].data<T>(), outer, len, inner, Kind), true));
}

} // namespace

bool rt::fusedGeluKernel(KernelContext &ctx) {
  const Tensor *x = nullptr;
  for (size_t i = 0; i < ctx.numInputs(); ++i)
    if (!(ctx.constantInputs >> i & 1))
      x = ctx.input(i);
  if (!x || x->elem() != ElemType::Float || ctx.fusedParams.size() != 4)
    return ctx.fail("the fused GELU expects a float input and four constants");
  const float a = ctx.fusedParams[0], b = ctx.fusedParams[2];
  const bool divides = ctx.fusedParams[1] != 0.f, scalesFirst = ctx.fusedParams[3] != 0.f;
  ctx.outputs[0] = Tensor(ElemType::Float, x->shape());
  const float *px = x->data<float>();
  float *py = ctx.outputs[0].data<float>();
  // The unfused nodes' operations in their order, a block at a time; Erf is
  // the Erf kernel's (runtime/VecMath.h).
  constexpr int64_t kBlock = 256;
  parallelFor((x->numel() + kBlock - 1) / kBlock, kBlock * 8, [&](int64_t b0, int64_t b1) {
    float t[kBlock];
    for (int64_t blk = b0; blk < b1; ++blk) {
      int64_t i0 = blk * kBlock, len = std::min(kBlock, x->numel() - i0);
      const float *xs = px + i0;
      float *ys = py + i0;
      for (int64_t k = 0; k < len; ++k)
        t[k] = divides ? xs[k] / a : xs[k] * a;
      vecmath::erf(t, t, len);
      if (scalesFirst)
        for (int64_t k = 0; k < len; ++k)
          ys[k] = (xs[k] * b) * (t[k] + 1.f);
      else
        for (int64_t k = 0; k < len; ++k)
          ys[k] = (xs[k] * (t[k] + 1.f)) * b;
    }
  });
  return true;
}

void rt::registerActivationKernels(KernelRegistry &r) {
  r.add("Relu", actKernel<ReluOp, true>);
  r.add("LeakyRelu", actKernel<LeakyReluOp, false>);
  r.add("Sigmoid", actKernel<SigmoidOp, false, 8>);
  r.add("HardSigmoid", actKernel<HardSigmoidOp, false>);
  r.add("HardSwish", actKernel<HardSwishOp, false>);
  r.add("Tanh", actKernel<TanhOp, false, 8>);
  r.add("Elu", actKernel<EluOp, false, 8>);
  r.add("Celu", actKernel<CeluOp, false, 8>);
  r.add("Selu", actKernel<SeluOp, false, 8>);
  r.add("Softplus", actKernel<SoftplusOp, false, 8>);
  r.add("Softsign", actKernel<SoftsignOp, false>);
  r.add("ThresholdedRelu", actKernel<ThresholdedReluOp, false>);
  r.add("Shrink", actKernel<ShrinkOp, true>);
  r.add("Clip", clipKernel);
  r.add("PRelu", preluKernel);
  r.add("Softmax", normKernel<SoftmaxKind::Softmax>);
  r.add("LogSoftmax", normKernel<SoftmaxKind::LogSoftmax>);
  r.add("Hardmax", normKernel<SoftmaxKind::Hardmax>);
}
