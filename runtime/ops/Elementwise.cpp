//===- Elementwise.cpp - Element-wise arithmetic, math and logic kernels ----===//
//
// Binary arithmetic with ONNX multidirectional broadcasting (Add, Sub, Mul,
// Div, Pow with mixed base/exponent types, Mod, BitShift), unary math (Sqrt,
// Exp, Log, Erf, Neg, Abs, Reciprocal, Floor, Ceil, Round, Sign, the
// trigonometric and hyperbolic functions, IsNaN, IsInf), variadic Min/Max/Sum/Mean, comparisons
// (Equal, Less, Greater, LessOrEqual, GreaterOrEqual), logic (Not, And, Or, Xor) and Where.
//
// Integer arithmetic wraps (it is done in uint64_t), integer division
// truncates like C with x / 0 defined as 0, float->int conversions saturate
// (NaN gives 0). float16/bfloat16 inputs are computed in float.
//
//===----------------------------------------------------------------------===//
#include "runtime/KernelUtil.h"
#include "runtime/VecMath.h"

#include <array>
#include <cmath>
#include <limits>
#include <type_traits>

using namespace tpcc;
using namespace tpcc::rt;

namespace {

//===----------------------------------------------------------------------===//
// Broadcast walking
//===----------------------------------------------------------------------===//

/// N inputs broadcast to an output shape, with adjacent dimensions merged
/// where every input stays contiguous (or broadcast) across them. The last
/// dimension is the row walked by the inner loops.
template <size_t N> struct Broadcast {
  Shape dims;
  std::array<std::vector<int64_t>, N> strides;

  Broadcast(const Shape &out, const std::array<const Shape *, N> &ins) {
    size_t r = out.size();
    std::array<std::vector<int64_t>, N> full;
    for (size_t k = 0; k < N; ++k) {
      const Shape &s = *ins[k];
      full[k].assign(r, 0);
      int64_t st = 1;
      for (size_t i = s.size(); i-- > 0;) {
        full[k][i + r - s.size()] = s[i] == 1 ? 0 : st;
        st *= s[i];
      }
    }
    for (size_t i = 0; i < r; ++i) {
      if (out[i] == 1)
        continue;
      bool merge = !dims.empty();
      for (size_t k = 0; k < N && merge; ++k)
        merge = strides[k].back() == full[k][i] * out[i];
      if (merge) {
        dims.back() *= out[i];
        for (size_t k = 0; k < N; ++k)
          strides[k].back() = full[k][i];
        continue;
      }
      dims.push_back(out[i]);
      for (size_t k = 0; k < N; ++k)
        strides[k].push_back(full[k][i]);
    }
    if (dims.empty()) {
      dims.push_back(1);
      for (size_t k = 0; k < N; ++k)
        strides[k].push_back(0);
    }
  }
};

using Offsets2 = std::array<int64_t, 2>;

/// Calls `f(outOffset, inOffsets, len, innerStrides)` for every row of the
/// broadcast output, in parallel.
template <size_t N, typename F> void forEachRow(const Broadcast<N> &b, int64_t cost, F f) {
  size_t outer = b.dims.size() - 1;
  int64_t len = b.dims.back(), rows = 1;
  for (size_t d = 0; d < outer; ++d)
    rows *= b.dims[d];
  if (len == 0 || rows == 0)
    return;
  std::array<int64_t, N> inner;
  for (size_t k = 0; k < N; ++k)
    inner[k] = b.strides[k].back();
  parallelFor(rows, len * cost, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> idx(outer);
    std::array<int64_t, N> off{};
    int64_t q = begin;
    for (size_t d = outer; d-- > 0;) {
      idx[d] = q % b.dims[d];
      q /= b.dims[d];
      for (size_t k = 0; k < N; ++k)
        off[k] += idx[d] * b.strides[k][d];
    }
    for (int64_t row = begin; row < end; ++row) {
      f(row * len, off, len, inner);
      for (size_t d = outer; d-- > 0;) {
        for (size_t k = 0; k < N; ++k)
          off[k] += b.strides[k][d];
        if (++idx[d] < b.dims[d])
          break;
        for (size_t k = 0; k < N; ++k)
          off[k] -= b.strides[k][d] * b.dims[d];
        idx[d] = 0;
      }
    }
  });
}

/// out = f(a, b) elementwise with broadcasting; `out` has the broadcast shape.
template <typename A, typename B, typename O, typename F>
void binaryApply(const Tensor &a, const Tensor &b, Tensor &out, int64_t cost, F f) {
  const A *pa = a.data<A>();
  const B *pb = b.data<B>();
  O *po = out.data<O>();
  int64_t n = out.numel();
  if (a.numel() == n && b.numel() == n) {
    parallelFor(n, cost, [&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i)
        po[i] = f(pa[i], pb[i]);
    });
    return;
  }
  if (a.numel() == n && b.numel() == 1) {
    B y = pb[0];
    parallelFor(n, cost, [&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i)
        po[i] = f(pa[i], y);
    });
    return;
  }
  if (a.numel() == 1 && b.numel() == n) {
    A x = pa[0];
    parallelFor(n, cost, [&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i)
        po[i] = f(x, pb[i]);
    });
    return;
  }
  Broadcast<2> bc(out.shape(), {&a.shape(), &b.shape()});
  forEachRow(bc, cost, [&](int64_t o, const Offsets2 &off, int64_t len, const Offsets2 &st) {
    const A *x = pa + off[0];
    const B *y = pb + off[1];
    O *z = po + o;
    if (st[0] == 1 && st[1] == 1) {
      for (int64_t i = 0; i < len; ++i)
        z[i] = f(x[i], y[i]);
    } else if (st[0] == 1 && st[1] == 0) {
      B yv = *y;
      for (int64_t i = 0; i < len; ++i)
        z[i] = f(x[i], yv);
    } else if (st[0] == 0 && st[1] == 1) {
      A xv = *x;
      for (int64_t i = 0; i < len; ++i)
        z[i] = f(xv, y[i]);
    } else {
      for (int64_t i = 0; i < len; ++i)
        z[i] = f(x[i * st[0]], y[i * st[1]]);
    }
  });
}

bool anyHalf(const KernelContext &ctx) {
  for (size_t i = 0; i < ctx.inputs.size(); ++i)
    if (ctx.input(i) && isHalf(ctx.input(i)->elem()))
      return true;
  return false;
}

//===----------------------------------------------------------------------===//
// Scalar operations
//===----------------------------------------------------------------------===//

template <typename T> constexpr bool isInt = std::is_integral_v<T>;

struct AddOp {
  template <typename T> T operator()(T a, T b) const {
    if constexpr (isInt<T>)
      return T(uint64_t(a) + uint64_t(b));
    else
      return a + b;
  }
};
struct SubOp {
  template <typename T> T operator()(T a, T b) const {
    if constexpr (isInt<T>)
      return T(uint64_t(a) - uint64_t(b));
    else
      return a - b;
  }
};
struct MulOp {
  template <typename T> T operator()(T a, T b) const {
    if constexpr (isInt<T>)
      return T(uint64_t(a) * uint64_t(b));
    else
      return a * b;
  }
};
struct DivOp {
  template <typename T> T operator()(T a, T b) const {
    if constexpr (isInt<T>) {
      if (b == 0)
        return 0;
      if constexpr (std::is_signed_v<T>)
        if (b == T(-1))
          return T(uint64_t(0) - uint64_t(a));
      return T(a / b);
    } else {
      return a / b;
    }
  }
};
struct MaxOp {
  template <typename T> T operator()(T a, T b) const {
    if constexpr (!isInt<T>)
      if (std::isnan(a) || std::isnan(b))
        return a + b;
    return a < b ? b : a;
  }
};
struct MinOp {
  template <typename T> T operator()(T a, T b) const {
    if constexpr (!isInt<T>)
      if (std::isnan(a) || std::isnan(b))
        return a + b;
    return b < a ? b : a;
  }
};

/// Integer power by squaring, wrapping; negative exponents truncate.
template <typename B, typename E> B intPow(B x, E y) {
  if constexpr (std::is_signed_v<E>) {
    if (y < 0) {
      if (x == 1)
        return 1;
      if constexpr (std::is_signed_v<B>)
        if (x == B(-1))
          return (uint64_t(y) & 1) ? B(-1) : B(1);
      return 0;
    }
  }
  uint64_t r = 1, b = uint64_t(x), e = uint64_t(y);
  for (; e; e >>= 1, b *= b)
    if (e & 1)
      r *= b;
  return B(r);
}

/// x^y. A float power by the exponent 2 or 3 is the product x * x (* x), as
/// ONNX Runtime computes it (RMSNorm's square; measured against ORT 1.30).
template <typename B, typename E> B powOne(B x, E y) {
  if constexpr (!isInt<B>) {
    if constexpr (std::is_same_v<B, E>)
      return y == B(2) ? x * x : y == B(3) ? x * x * x : std::pow(x, y);
    else
      return B(std::pow(double(x), double(y)));
  } else if constexpr (isInt<E>) {
    return intPow(x, y);
  } else {
    return saturate<B>(std::pow(double(x), double(y)));
  }
}

/// Python-style modulus (sign of the divisor); x % 0 is 0.
struct ModOp {
  template <typename T> T operator()(T a, T b) const {
    if constexpr (isInt<T>) {
      if (b == 0)
        return 0;
      if constexpr (std::is_signed_v<T>) {
        if (b == T(-1))
          return 0;
        T r = T(a % b);
        return (r != 0 && ((r < 0) != (b < 0))) ? T(r + b) : r;
      } else {
        return T(a % b);
      }
    } else {
      T r = std::fmod(a, b);
      return (r != 0 && ((r < 0) != (b < 0))) ? T(r + b) : r;
    }
  }
};
struct FmodOp {
  template <typename T> T operator()(T a, T b) const {
    if constexpr (isInt<T>) {
      if (b == 0)
        return 0;
      if constexpr (std::is_signed_v<T>)
        if (b == T(-1))
          return 0;
      return T(a % b);
    } else {
      return std::fmod(a, b);
    }
  }
};

/// BitShift on unsigned types; shifts by the bit width or more give 0.
template <bool Left> struct ShiftOp {
  template <typename T> T operator()(T a, T b) const {
    if constexpr (std::is_unsigned_v<T>) {
      if (uint64_t(b) >= sizeof(T) * 8)
        return 0;
      return Left ? T(uint64_t(a) << b) : T(a >> b);
    } else {
      return 0; // rejected by bitShiftKernel
    }
  }
};

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

/// The broadcast output shape of inputs 0 and 1 of the same type, or a failure.
bool binaryPrologue(KernelContext &ctx, bool sameType, Shape &shape) {
  const Tensor *a = ctx.input(0), *b = ctx.input(1);
  if (!a || !b)
    return ctx.fail("expects two inputs");
  if (sameType && a->elem() != b->elem())
    return ctx.fail("input types differ: " + typeName(a->elem()) + " and " + typeName(b->elem()));
  auto s = broadcastShapes(a->shape(), b->shape());
  if (!s)
    return ctx.fail("shapes " + shapeStr(a->shape()) + " and " + shapeStr(b->shape()) +
                    " do not broadcast");
  shape = *s;
  return true;
}

bool unsupported(KernelContext &ctx, ElemType t) {
  return ctx.fail("unsupported element type " + typeName(t));
}

template <typename Op, int Cost = 1> bool arithKernel(KernelContext &ctx) {
  if (anyHalf(ctx))
    return viaFloat(ctx, arithKernel<Op, Cost>);
  Shape shape;
  if (!binaryPrologue(ctx, true, shape))
    return false;
  const Tensor &a = *ctx.input(0), &b = *ctx.input(1);
  ElemType et = a.elem();
  ctx.outputs[0] = Tensor(et, shape);
  bool ok = TPCC_DISPATCH_NUMERIC(et, false,
                                  (binaryApply<T, T, T>(a, b, ctx.outputs[0], Cost, Op()), true));
  return ok || unsupported(ctx, et);
}

bool modKernel(KernelContext &ctx) {
  if (ctx.attrInt("fmod", 0))
    return arithKernel<FmodOp, 4>(ctx);
  return arithKernel<ModOp, 4>(ctx);
}

bool bitShiftKernel(KernelContext &ctx) {
  const Tensor *a = ctx.input(0);
  if (a && a->elem() != ElemType::UInt8 && a->elem() != ElemType::UInt16 &&
      a->elem() != ElemType::UInt32 && a->elem() != ElemType::UInt64)
    return unsupported(ctx, a->elem());
  std::string dir = ctx.attrString("direction", "");
  if (dir == "LEFT")
    return arithKernel<ShiftOp<true>>(ctx);
  if (dir == "RIGHT")
    return arithKernel<ShiftOp<false>>(ctx);
  return ctx.fail("direction must be LEFT or RIGHT, not \"" + dir + "\"");
}

template <typename B> bool powWithBase(const Tensor &a, const Tensor &b, Tensor &out) {
  return TPCC_DISPATCH_NUMERIC(
      b.elem(), false,
      (binaryApply<B, T, B>(a, b, out, 8, [](B x, T y) { return powOne(x, y); }), true));
}

bool powKernel(KernelContext &ctx) {
  if (anyHalf(ctx))
    return viaFloat(ctx, powKernel);
  Shape shape;
  if (!binaryPrologue(ctx, false, shape))
    return false;
  const Tensor &a = *ctx.input(0), &b = *ctx.input(1);
  ctx.outputs[0] = Tensor(a.elem(), shape);
  bool ok = TPCC_DISPATCH_NUMERIC(a.elem(), false, powWithBase<T>(a, b, ctx.outputs[0]));
  return ok || ctx.fail("unsupported types " + typeName(a.elem()) + " ^ " + typeName(b.elem()));
}

/// Comparisons: bool output.
template <typename Cmp> bool compareKernel(KernelContext &ctx) {
  if (anyHalf(ctx))
    return viaFloat(ctx, compareKernel<Cmp>);
  Shape shape;
  if (!binaryPrologue(ctx, true, shape))
    return false;
  const Tensor &a = *ctx.input(0), &b = *ctx.input(1);
  ElemType et = a.elem() == ElemType::Bool ? ElemType::UInt8 : a.elem();
  ctx.outputs[0] = Tensor(ElemType::Bool, shape);
  bool ok = TPCC_DISPATCH_NUMERIC(
      et, false,
      (binaryApply<T, T, uint8_t>(a, b, ctx.outputs[0], 1,
                                  [](T x, T y) { return uint8_t(Cmp()(x, y) ? 1 : 0); }),
       true));
  return ok || unsupported(ctx, a.elem());
}

template <typename Op> bool logicKernel(KernelContext &ctx) {
  Shape shape;
  if (!binaryPrologue(ctx, true, shape))
    return false;
  const Tensor &a = *ctx.input(0), &b = *ctx.input(1);
  if (a.elem() != ElemType::Bool)
    return ctx.fail("expects bool inputs, not " + typeName(a.elem()));
  ctx.outputs[0] = Tensor(ElemType::Bool, shape);
  binaryApply<uint8_t, uint8_t, uint8_t>(a, b, ctx.outputs[0], 1, [](uint8_t x, uint8_t y) {
    return uint8_t(Op()(x != 0, y != 0) ? 1 : 0);
  });
  return true;
}

bool notKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0);
  if (!x || x->elem() != ElemType::Bool)
    return ctx.fail("expects one bool input");
  ctx.outputs[0] = Tensor(ElemType::Bool, x->shape());
  const uint8_t *s = x->data<uint8_t>();
  uint8_t *d = ctx.outputs[0].data<uint8_t>();
  for (int64_t i = 0; i < x->numel(); ++i)
    d[i] = s[i] ? 0 : 1;
  return true;
}

/// Whether Op has `array(const float *, float *, int64_t)`, the whole
/// float loop in one call (runtime/VecMath.h).
template <typename Op, typename = void> struct HasArrayForm : std::false_type {};
template <typename Op>
struct HasArrayForm<Op, std::void_t<decltype(Op::array)>> : std::true_type {};

/// Unary math; `Ints` says whether integer types are accepted.
template <typename Op, bool Ints, int Cost = 1> bool unaryKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0);
  if (!x)
    return ctx.fail("expects one input");
  if (isHalf(x->elem()))
    return viaFloat(ctx, unaryKernel<Op, Ints, Cost>);
  ctx.outputs[0] = Tensor(x->elem(), x->shape());
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const T *s = x->data<T>();
    T *d = ctx.outputs[0].data<T>();
    parallelFor(x->numel(), Cost, [&](int64_t b, int64_t e) {
      if constexpr (std::is_same_v<T, float> && HasArrayForm<Op>::value)
        Op::array(s + b, d + b, e - b);
      else
        for (int64_t i = b; i < e; ++i)
          d[i] = Op()(s[i]);
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

#define TPCC_FLOAT_OP(NAME, EXPR)                                                                  \
  struct NAME {                                                                                    \
    template <typename T> T operator()(T v) const { return EXPR; }                                 \
  };
TPCC_FLOAT_OP(SqrtOp, std::sqrt(v))
struct ExpOp {
  template <typename T> T operator()(T v) const { return std::exp(v); }
  static constexpr auto array = vecmath::exp;
};
TPCC_FLOAT_OP(LogOp, std::log(v))
TPCC_FLOAT_OP(ReciprocalOp, T(1) / v)
TPCC_FLOAT_OP(FloorOp, std::floor(v))
TPCC_FLOAT_OP(CeilOp, std::ceil(v))
TPCC_FLOAT_OP(RoundOp, std::nearbyint(v))
TPCC_FLOAT_OP(SinOp, std::sin(v))
TPCC_FLOAT_OP(CosOp, std::cos(v))
TPCC_FLOAT_OP(TanOp, std::tan(v))
TPCC_FLOAT_OP(AsinOp, std::asin(v))
TPCC_FLOAT_OP(AcosOp, std::acos(v))
TPCC_FLOAT_OP(AtanOp, std::atan(v))
TPCC_FLOAT_OP(SinhOp, std::sinh(v))
TPCC_FLOAT_OP(CoshOp, std::cosh(v))
TPCC_FLOAT_OP(AsinhOp, std::asinh(v))
TPCC_FLOAT_OP(AcoshOp, std::acosh(v))
TPCC_FLOAT_OP(AtanhOp, std::atanh(v))
#undef TPCC_FLOAT_OP

struct ErfOp {
  static constexpr auto array = vecmath::erf;
  template <typename T> T operator()(T v) const {
    if constexpr (isInt<T>)
      return T(std::erf(double(v)));
    else
      return std::erf(v);
  }
};
struct NegOp {
  template <typename T> T operator()(T v) const {
    if constexpr (isInt<T>)
      return T(uint64_t(0) - uint64_t(v));
    else
      return -v;
  }
};
struct AbsOp {
  template <typename T> T operator()(T v) const {
    if constexpr (std::is_unsigned_v<T>)
      return v;
    else if constexpr (isInt<T>)
      return v < 0 ? T(uint64_t(0) - uint64_t(v)) : v;
    else
      return std::fabs(v);
  }
};
struct SignOp {
  template <typename T> T operator()(T v) const {
    if constexpr (!isInt<T>)
      if (std::isnan(v))
        return v;
    return v > T(0) ? T(1) : v < T(0) ? T(-1) : T(0);
  }
};

/// IsNaN / IsInf: bool output.
bool isNaNKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0);
  if (!x)
    return ctx.fail("expects one input");
  if (isHalf(x->elem()))
    return viaFloat(ctx, isNaNKernel);
  ctx.outputs[0] = Tensor(ElemType::Bool, x->shape());
  uint8_t *d = ctx.outputs[0].data<uint8_t>();
  return TPCC_DISPATCH_FLOAT(x->elem(), unsupported(ctx, x->elem()), [&] {
    for (int64_t i = 0; i < x->numel(); ++i)
      d[i] = std::isnan(x->data<T>()[i]);
    return true;
  }());
}

bool isInfKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0);
  if (!x)
    return ctx.fail("expects one input");
  if (isHalf(x->elem()))
    return viaFloat(ctx, isInfKernel);
  bool pos = ctx.attrInt("detect_positive", 1), neg = ctx.attrInt("detect_negative", 1);
  ctx.outputs[0] = Tensor(ElemType::Bool, x->shape());
  uint8_t *d = ctx.outputs[0].data<uint8_t>();
  return TPCC_DISPATCH_FLOAT(x->elem(), unsupported(ctx, x->elem()), [&] {
    for (int64_t i = 0; i < x->numel(); ++i) {
      T v = x->data<T>()[i];
      d[i] = std::isinf(v) && (v > 0 ? pos : neg);
    }
    return true;
  }());
}

/// Min, Max, Sum, Mean over any number of broadcast inputs.
template <typename Op, bool IsMean = false> bool variadicKernel(KernelContext &ctx) {
  if (anyHalf(ctx))
    return viaFloat(ctx, variadicKernel<Op, IsMean>);
  std::vector<const Tensor *> in;
  for (size_t i = 0; i < ctx.inputs.size(); ++i)
    if (ctx.input(i))
      in.push_back(ctx.input(i));
  if (in.empty())
    return ctx.fail("expects at least one input");
  ElemType et = in[0]->elem();
  Shape shape = in[0]->shape();
  for (const Tensor *t : in) {
    if (t->elem() != et)
      return ctx.fail("input types differ: " + typeName(et) + " and " + typeName(t->elem()));
    auto s = broadcastShapes(shape, t->shape());
    if (!s)
      return ctx.fail("shapes " + shapeStr(shape) + " and " + shapeStr(t->shape()) +
                      " do not broadcast");
    shape = *s;
  }
  return TPCC_DISPATCH_NUMERIC(et, unsupported(ctx, et), ([&] {
                                 Tensor acc = *in[0];
                                 for (size_t i = 1; i < in.size(); ++i) {
                                   Tensor next(et, *broadcastShapes(acc.shape(), in[i]->shape()));
                                   binaryApply<T, T, T>(acc, *in[i], next, 1, Op());
                                   acc = std::move(next);
                                 }
                                 if (IsMean && in.size() > 1) {
                                   T *p = acc.data<T>();
                                   T n = T(in.size());
                                   for (int64_t i = 0; i < acc.numel(); ++i)
                                     p[i] = DivOp()(p[i], n);
                                 }
                                 ctx.outputs[0] = std::move(acc);
                                 return true;
                               }()));
}

/// Where(condition, X, Y).
template <typename T>
void whereApply(const Tensor &c, const Tensor &x, const Tensor &y, Tensor &out) {
  const uint8_t *pc = c.data<uint8_t>();
  const T *px = x.data<T>(), *py = y.data<T>();
  T *po = out.data<T>();
  Broadcast<3> bc(out.shape(), {&c.shape(), &x.shape(), &y.shape()});
  using Off = std::array<int64_t, 3>;
  forEachRow(bc, 1, [&](int64_t o, const Off &off, int64_t len, const Off &st) {
    for (int64_t i = 0; i < len; ++i)
      po[o + i] = pc[off[0] + i * st[0]] ? px[off[1] + i * st[1]] : py[off[2] + i * st[2]];
  });
}

bool whereKernel(KernelContext &ctx) {
  const Tensor *c = ctx.input(0), *x = ctx.input(1), *y = ctx.input(2);
  if (!c || !x || !y)
    return ctx.fail("expects three inputs");
  if (c->elem() != ElemType::Bool)
    return ctx.fail("condition must be bool, not " + typeName(c->elem()));
  if (x->elem() != y->elem())
    return ctx.fail("X and Y types differ: " + typeName(x->elem()) + " and " + typeName(y->elem()));
  auto s1 = broadcastShapes(c->shape(), x->shape());
  auto s = s1 ? broadcastShapes(*s1, y->shape()) : std::nullopt;
  if (!s)
    return ctx.fail("shapes " + shapeStr(c->shape()) + ", " + shapeStr(x->shape()) + " and " +
                    shapeStr(y->shape()) + " do not broadcast");
  Tensor &out = ctx.outputs[0] = Tensor(x->elem(), *s);
  if (x->elem() == ElemType::String) {
    BroadcastIndexer ic(c->shape(), *s), ix(x->shape(), *s), iy(y->shape(), *s);
    for (int64_t i = 0; i < out.numel(); ++i) {
      out.strings()[size_t(i)] = c->data<uint8_t>()[ic.offset(i)]
                                     ? x->strings()[size_t(ix.offset(i))]
                                     : y->strings()[size_t(iy.offset(i))];
    }
    return true;
  }
  switch (graph::elemSize(x->elem())) {
  case 1:
    whereApply<uint8_t>(*c, *x, *y, out);
    return true;
  case 2:
    whereApply<uint16_t>(*c, *x, *y, out);
    return true;
  case 4:
    whereApply<uint32_t>(*c, *x, *y, out);
    return true;
  case 8:
    whereApply<uint64_t>(*c, *x, *y, out);
    return true;
  default:
    return unsupported(ctx, x->elem());
  }
}

} // namespace

void rt::registerElementwiseKernels(KernelRegistry &r) {
  r.add("Add", arithKernel<AddOp>);
  r.add("Sub", arithKernel<SubOp>);
  r.add("Mul", arithKernel<MulOp>);
  r.add("Div", arithKernel<DivOp>);
  r.add("Mod", modKernel);
  r.add("Pow", powKernel);
  r.add("BitShift", bitShiftKernel);

  r.add("Sqrt", unaryKernel<SqrtOp, false>);
  r.add("Exp", unaryKernel<ExpOp, false, 4>);
  r.add("Log", unaryKernel<LogOp, false, 4>);
  r.add("Erf", unaryKernel<ErfOp, true, 4>);
  r.add("Reciprocal", unaryKernel<ReciprocalOp, false>);
  r.add("Floor", unaryKernel<FloorOp, false>);
  r.add("Ceil", unaryKernel<CeilOp, false>);
  r.add("Round", unaryKernel<RoundOp, false>);
  r.add("Sin", unaryKernel<SinOp, false, 4>);
  r.add("Cos", unaryKernel<CosOp, false, 4>);
  r.add("Tan", unaryKernel<TanOp, false, 4>);
  r.add("Asin", unaryKernel<AsinOp, false, 4>);
  r.add("Acos", unaryKernel<AcosOp, false, 4>);
  r.add("Atan", unaryKernel<AtanOp, false, 4>);
  r.add("Sinh", unaryKernel<SinhOp, false, 4>);
  r.add("Cosh", unaryKernel<CoshOp, false, 4>);
  r.add("Asinh", unaryKernel<AsinhOp, false, 4>);
  r.add("Acosh", unaryKernel<AcoshOp, false, 4>);
  r.add("Atanh", unaryKernel<AtanhOp, false, 4>);
  r.add("Neg", unaryKernel<NegOp, true>);
  r.add("Abs", unaryKernel<AbsOp, true>);
  r.add("Sign", unaryKernel<SignOp, true>);
  r.add("IsNaN", isNaNKernel);
  r.add("IsInf", isInfKernel);

  r.add("Max", variadicKernel<MaxOp>);
  r.add("Min", variadicKernel<MinOp>);
  r.add("Sum", variadicKernel<AddOp>);
  r.add("Mean", variadicKernel<AddOp, true>);

  r.add("Equal", compareKernel<std::equal_to<>>);
  r.add("Less", compareKernel<std::less<>>);
  r.add("Greater", compareKernel<std::greater<>>);
  r.add("LessOrEqual", compareKernel<std::less_equal<>>);
  r.add("GreaterOrEqual", compareKernel<std::greater_equal<>>);
  r.add("And", logicKernel<std::logical_and<>>);
  r.add("Or", logicKernel<std::logical_or<>>);
  r.add("Xor", logicKernel<std::not_equal_to<>>);
  r.add("Not", notKernel);
  r.add("Where", whereKernel);
}
