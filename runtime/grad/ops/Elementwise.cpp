//===- Elementwise.cpp - Backward of activations and broadcasting arithmetic ===//
//
// Unary activations: dx = dy * f'(x), with the one-sided choices PyTorch's
// autograd makes at the kinks (Relu passes nothing at 0, Clip passes at its
// bounds, HardSigmoid nothing at its corners, HardSwish x/3 + 1/2 on [-3, 3]).
// Binary arithmetic (Add, Sub, Mul, Div, Pow) broadcasts: each operand's
// gradient is summed back over the dimensions it was broadcast along
// (reduceToShape).
//
//===----------------------------------------------------------------------===//
#include "runtime/KernelUtil.h"
#include "runtime/grad/Backward.h"

#include <cmath>
#include <limits>

using namespace tpcc;
using namespace tpcc::rt;
using namespace tpcc::rt::grad;

namespace {

/// dx[i] = dy[i] * d(x[i], y[i]) for input 0; zero when dy is zero.
template <typename D> bool unary(BackwardContext &ctx, D d) {
  const Tensor *x = ctx.input(0);
  if (!ctx.wants(0))
    return true;
  if (!isFloat(x))
    return ctx.fail("backward of " + ctx.node.opType + " needs a float input");
  const Tensor *g = ctx.grad(0);
  if (!g) {
    ctx.inputGrads[0] = zeros(x->shape());
    return true;
  }
  const Tensor *y = ctx.outputs.empty() ? nullptr : ctx.outputs[0];
  Tensor r(ElemType::Float, x->shape());
  const float *xs = x->data<float>(), *gs = g->data<float>();
  const float *ys = y && y->defined() ? y->data<float>() : nullptr;
  float *rs = r.data<float>();
  parallelFor(x->numel(), 4, [&](int64_t b, int64_t e) {
    // Local copies and restrict pointers: no store may change them, so the
    // loops vectorize (two, for the derivatives that read y and those that
    // do not).
    const D f = d;
    const float *__restrict xi = xs, *__restrict gi = gs, *__restrict yi = ys;
    float *__restrict ri = rs;
    if (yi)
      for (int64_t i = b; i < e; ++i)
        ri[i] = gi[i] * f(xi[i], yi[i]);
    else
      for (int64_t i = b; i < e; ++i)
        ri[i] = gi[i] * f(xi[i], 0.f);
  });
  ctx.inputGrads[0] = std::move(r);
  return true;
}

/// A scalar bound of Clip (an input from opset 11, an attribute before).
float clipBound(const BackwardContext &ctx, size_t input, const char *attr, float dflt) {
  if (ctx.opset < 11)
    return ctx.attrFloat(attr, dflt);
  const Tensor *t = ctx.input(input);
  return t && t->numel() == 1 ? float(t->at(0)) : dflt;
}

bool relu(BackwardContext &ctx) {
  return unary(ctx, [](float x, float) { return x > 0 ? 1.f : 0.f; });
}
bool leakyRelu(BackwardContext &ctx) {
  float a = ctx.attrFloat("alpha", 0.01f);
  return unary(ctx, [a](float x, float) { return x > 0 ? 1.f : a; });
}
bool clip(BackwardContext &ctx) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  float lo = clipBound(ctx, 1, "min", -inf), hi = clipBound(ctx, 2, "max", inf);
  return unary(ctx, [lo, hi](float x, float) { return (x >= lo) & (x <= hi) ? 1.f : 0.f; });
}
bool sigmoid(BackwardContext &ctx) {
  return unary(ctx, [](float, float y) { return y * (1 - y); });
}
bool tanhGrad(BackwardContext &ctx) {
  return unary(ctx, [](float, float y) { return 1 - y * y; });
}
bool hardSigmoid(BackwardContext &ctx) {
  float a = ctx.attrFloat("alpha", 0.2f), b = ctx.attrFloat("beta", 0.5f);
  return unary(ctx, [a, b](float x, float) {
    float v = a * x + b;
    return v > 0 && v < 1 ? a : 0.f;
  });
}
bool hardSwish(BackwardContext &ctx) {
  return unary(ctx, [](float x, float) { return x < -3 ? 0.f : x <= 3 ? x / 3 + 0.5f : 1.f; });
}
bool erfGrad(BackwardContext &ctx) {
  const float k = 2 / std::sqrt(float(M_PI));
  return unary(ctx, [k](float x, float) { return k * std::exp(-x * x); });
}
bool expGrad(BackwardContext &ctx) {
  return unary(ctx, [](float, float y) { return y; });
}
bool logGrad(BackwardContext &ctx) {
  return unary(ctx, [](float x, float) { return 1 / x; });
}
bool sqrtGrad(BackwardContext &ctx) {
  return unary(ctx, [](float, float y) { return 0.5f / y; });
}
bool neg(BackwardContext &ctx) {
  return unary(ctx, [](float, float) { return -1.f; });
}
bool softplus(BackwardContext &ctx) {
  return unary(ctx, [](float x, float) { return 1 / (1 + std::exp(-x)); });
}
enum class Op { Add, Sub, Mul, Div, Pow };

/// `t` as float: Pow's exponent may be an integer tensor.
Tensor asFloat(const Tensor &t) {
  if (isFloat(&t))
    return t;
  Tensor f(ElemType::Float, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i)
    f.data<float>()[i] = float(t.at(i));
  return f;
}

/// Gradients of a broadcasting a op b.
template <Op op> bool binary(BackwardContext &ctx) {
  const Tensor *a = ctx.input(0), *b = ctx.input(1), *g = ctx.grad(0);
  if (!a || !b)
    return ctx.fail("backward of " + ctx.node.opType + " needs two inputs");
  Tensor exponent;
  if (op == Op::Pow && !isFloat(b) && !ctx.wants(1)) {
    exponent = asFloat(*b);
    b = &exponent;
  }
  for (size_t k = 0; k < 2; ++k) {
    if (!ctx.wants(k))
      continue;
    const Tensor *self = k ? b : a, *other = k ? a : b;
    if (!isFloat(self))
      return ctx.fail("backward of " + ctx.node.opType + " needs float inputs");
    if (!g) {
      ctx.inputGrads[k] = zeros(self->shape());
      continue;
    }
    bool selfFull = self->shape() == g->shape(), otherFull = other->shape() == g->shape();
    if ((op == Op::Add || (op == Op::Sub && k == 0)) && selfFull) {
      ctx.inputGrads[k] = *g; // the gradient passes as it is (shared, never written)
      continue;
    }
    Tensor full(ElemType::Float, g->shape());
    const float *gs = g->data<float>();
    float *fs = full.data<float>();
    const float *ss = self->data<float>(), *os = other->data<float>();
    if (op == Op::Mul && otherFull) { // the common case, vectorized
      parallelFor(g->numel(), 1, [&](int64_t s, int64_t e) {
        for (int64_t i = s; i < e; ++i)
          fs[i] = gs[i] * os[i];
      });
      ctx.inputGrads[k] = reduceToShape(full, self->shape());
      continue;
    }
    BroadcastIndexer is(self->shape(), g->shape()), io(other->shape(), g->shape());
    parallelFor(g->numel(), 8, [&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) {
        float d = gs[i];
        if constexpr (op == Op::Sub)
          d = k ? -d : d;
        else if constexpr (op == Op::Mul)
          d *= os[io.offset(i)];
        else if constexpr (op == Op::Div) {
          float den = k ? ss[is.offset(i)] : os[io.offset(i)];
          d = k ? -d * os[io.offset(i)] / (den * den) : d / den;
        } else if constexpr (op == Op::Pow) {
          // d(a^b)/da = b a^(b-1); d(a^b)/db = a^b ln a, 0 where a <= 0
          // (PyTorch's choice: the power is not real-differentiable there).
          float base = k ? os[io.offset(i)] : ss[is.offset(i)];
          float e = k ? ss[is.offset(i)] : os[io.offset(i)];
          d *= k ? (base > 0 ? std::pow(base, e) * std::log(base) : 0.f)
                 : (e == 0 ? 0.f : e * std::pow(base, e - 1));
        }
        fs[i] = d;
      }
    });
    ctx.inputGrads[k] = reduceToShape(full, self->shape());
  }
  return true;
}

/// PRelu: y = x < 0 ? slope * x : x, slope broadcast to x.
bool prelu(BackwardContext &ctx) {
  const Tensor *x = ctx.input(0), *s = ctx.input(1), *g = ctx.grad(0);
  if (!isFloat(x) || !isFloat(s))
    return ctx.fail("backward of PRelu needs float inputs");
  BroadcastIndexer is(s->shape(), x->shape());
  Tensor dx(ElemType::Float, x->shape()), ds(ElemType::Float, x->shape(), true);
  const float *xs = x->data<float>(), *ss = s->data<float>();
  for (int64_t i = 0; i < x->numel(); ++i) {
    float d = g ? g->data<float>()[i] : 0.f, v = xs[i];
    dx.data<float>()[i] = v < 0 ? d * ss[is.offset(i)] : d;
    ds.data<float>()[i] = v < 0 ? d * v : 0.f;
  }
  if (ctx.wants(0))
    ctx.inputGrads[0] = std::move(dx);
  if (ctx.wants(1))
    ctx.inputGrads[1] = reduceToShape(ds, s->shape());
  return true;
}

} // namespace

void rt::grad::registerElementwiseBackward(BackwardRegistry &r) {
  r.add("Relu", relu);
  r.add("LeakyRelu", leakyRelu);
  r.add("Clip", clip);
  r.add("Sigmoid", sigmoid);
  r.add("Tanh", tanhGrad);
  r.add("HardSigmoid", hardSigmoid);
  r.add("HardSwish", hardSwish);
  r.add("Erf", erfGrad);
  r.add("Exp", expGrad);
  r.add("Log", logGrad);
  r.add("Sqrt", sqrtGrad);
  r.add("Neg", neg);
  r.add("Softplus", softplus);
  r.add("PRelu", prelu);
  r.add("Add", binary<Op::Add>);
  r.add("Sub", binary<Op::Sub>);
  r.add("Mul", binary<Op::Mul>);
  r.add("Div", binary<Op::Div>);
  r.add("Pow", binary<Op::Pow>);
}
