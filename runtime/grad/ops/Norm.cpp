//===- Norm.cpp - Backward of Softmax, BatchNormalization, ReduceMean -------===//
//
// Softmax: dx = y (dy - sum(dy y)); LogSoftmax: dx = dy - exp(y) sum(dy),
// over the axis (opset 13) or the coerced 2-D rows before it.
// BatchNormalization at inference (the running statistics are constants):
// dx = dy scale / sqrt(var + eps), dscale = sum dy x̂, dB = sum dy.
// ReduceMean spreads dy / count over the reduced elements.
// LayerNormalization: the per-row normalization's backward (see layerNorm).
//
//===----------------------------------------------------------------------===//
#include "runtime/KernelUtil.h"
#include "runtime/grad/Backward.h"

#include <cmath>

using namespace tpcc;
using namespace tpcc::rt;
using namespace tpcc::rt::grad;

namespace {

template <bool Log> bool softmax(BackwardContext &ctx) {
  if (!ctx.wants(0))
    return true;
  const Tensor *x = ctx.input(0), *y = ctx.outputs.empty() ? nullptr : ctx.outputs[0];
  const Tensor *g = ctx.grad(0);
  if (!isFloat(x) || !y || !y->defined())
    return ctx.fail("backward of " + ctx.node.opType + " needs its float input and output");
  auto axis = normalizeAxis(ctx.attrInt("axis", ctx.opset >= 13 ? -1 : 1), x->rank());
  if (!axis)
    return ctx.fail(ctx.node.opType + "'s axis is out of range");
  // Rows of n elements, `inner` apart.
  int64_t outer = 1, n = 1, inner = 1;
  for (int64_t i = 0; i < x->rank(); ++i) {
    int64_t d = x->dim(i);
    if (i < *axis)
      outer *= d;
    else if (i == *axis || ctx.opset < 13)
      n *= d;
    else
      inner *= d;
  }
  Tensor dx = zeros(x->shape());
  if (g) {
    const float *ys = y->data<float>(), *gs = g->data<float>();
    float *ds = dx.data<float>();
    parallelFor(outer * inner, n * 4, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        int64_t base = (r / inner) * n * inner + r % inner;
        double sum = 0;
        for (int64_t k = 0; k < n; ++k) {
          int64_t i = base + k * inner;
          sum += Log ? gs[i] : double(gs[i]) * ys[i];
        }
        for (int64_t k = 0; k < n; ++k) {
          int64_t i = base + k * inner;
          ds[i] = Log ? float(gs[i] - std::exp(ys[i]) * sum) : float(ys[i] * (gs[i] - sum));
        }
      }
    });
  }
  ctx.inputGrads[0] = std::move(dx);
  return true;
}

bool batchNorm(BackwardContext &ctx) {
  const Tensor *x = ctx.input(0), *scale = ctx.input(1), *bias = ctx.input(2), *mean = ctx.input(3),
               *var = ctx.input(4), *g = ctx.grad(0);
  if (!isFloat(x) || !isFloat(scale) || !isFloat(bias) || !isFloat(mean) || !isFloat(var) ||
      x->rank() < 2)
    return ctx.fail("backward of BatchNormalization needs float tensors");
  if (ctx.attrInt("training_mode", 0))
    return ctx.fail("backward of BatchNormalization in training mode is not supported (fold "
                    "the statistics first)");
  float eps = ctx.attrFloat("epsilon", 1e-5f);
  int64_t C = x->dim(1), N = x->dim(0), size = x->numel() / std::max<int64_t>(N * C, 1);
  Tensor dx = zeros(x->shape()), ds = zeros({C}), db = zeros({C});
  if (g) {
    const float *xs = x->data<float>(), *gs = g->data<float>();
    parallelFor(C, N * size * 4, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        float inv = 1 / std::sqrt(var->data<float>()[c] + eps), m = mean->data<float>()[c];
        float k = scale->data<float>()[c] * inv;
        double sg = 0, sgx = 0;
        for (int64_t n = 0; n < N; ++n) {
          int64_t base = (n * C + c) * size;
          for (int64_t i = 0; i < size; ++i) {
            float d = gs[base + i];
            dx.data<float>()[base + i] = d * k;
            sg += d;
            sgx += double(d) * (xs[base + i] - m) * inv;
          }
        }
        ds.data<float>()[c] = float(sgx);
        db.data<float>()[c] = float(sg);
      }
    });
  }
  if (ctx.wants(0))
    ctx.inputGrads[0] = std::move(dx);
  if (ctx.wants(1))
    ctx.inputGrads[1] = std::move(ds);
  if (ctx.wants(2))
    ctx.inputGrads[2] = std::move(db);
  return true;
}

bool reduceMean(BackwardContext &ctx) {
  if (!ctx.wants(0))
    return true;
  const Tensor *x = ctx.input(0), *g = ctx.grad(0);
  if (!isFloat(x))
    return ctx.fail("backward of ReduceMean needs a float input");
  std::vector<int64_t> axes = ctx.attrInts("axes");
  if (axes.empty() && ctx.input(1))
    for (int64_t i = 0; i < ctx.input(1)->numel(); ++i)
      axes.push_back(int64_t(ctx.input(1)->at(i)));
  std::vector<bool> reduced(size_t(x->rank()), axes.empty());
  for (int64_t a : axes) {
    auto n = normalizeAxis(a, x->rank());
    if (!n)
      return ctx.fail("ReduceMean's axes are out of range");
    reduced[size_t(*n)] = true;
  }
  // The gradient of the kept shape, broadcast back over the reduced axes.
  Shape kept = x->shape();
  int64_t count = 1;
  for (size_t i = 0; i < kept.size(); ++i)
    if (reduced[i]) {
      count *= kept[i];
      kept[i] = 1;
    }
  Tensor dx(ElemType::Float, x->shape());
  if (!g) {
    ctx.inputGrads[0] = zeros(x->shape());
    return true;
  }
  Tensor gk = g->reshaped(kept);
  BroadcastIndexer ix(kept, x->shape());
  for (int64_t i = 0; i < x->numel(); ++i)
    dx.data<float>()[i] = gk.data<float>()[ix.offset(i)] / float(count);
  ctx.inputGrads[0] = std::move(dx);
  return true;
}

/// LayerNormalization over the axes from `axis` on: with x̂ = (x - mean) r
/// (r = 1 / sqrt(var + eps)) and dx̂ = dy * scale, dx = r (dx̂ - mean(dx̂) -
/// x̂ mean(dx̂ x̂)); dscale and dB sum dy x̂ and dy over the other axes (and
/// over what they broadcast along). Only output 0's gradient is taken.
bool layerNorm(BackwardContext &ctx) {
  const Tensor *x = ctx.input(0), *scale = ctx.input(1), *bias = ctx.input(2), *g = ctx.grad(0);
  if (!isFloat(x) || !isFloat(scale))
    return ctx.fail("backward of LayerNormalization needs float X and Scale");
  auto axis = normalizeAxis(ctx.attrInt("axis", -1), x->rank());
  if (!axis)
    return ctx.fail("LayerNormalization's axis is out of range");
  Shape norm(x->shape().begin() + *axis, x->shape().end());
  int64_t inner = numElements(norm), rows = inner ? x->numel() / inner : 0;
  double eps = ctx.attrFloat("epsilon", 1e-5f);
  Tensor dx = zeros(x->shape()), dsFull = zeros(norm), dbFull = zeros(norm);
  if (g && inner > 0) {
    BroadcastIndexer si(scale->shape(), norm);
    const float *xs = x->data<float>(), *gs = g->data<float>(), *ss = scale->data<float>();
    for (int64_t row = 0; row < rows; ++row) {
      const float *xr = xs + row * inner, *gr = gs + row * inner;
      double mean = 0, var = 0;
      for (int64_t i = 0; i < inner; ++i)
        mean += xr[i];
      mean /= double(inner);
      for (int64_t i = 0; i < inner; ++i)
        var += (xr[i] - mean) * (xr[i] - mean);
      double r = 1 / std::sqrt(var / double(inner) + eps), m1 = 0, m2 = 0;
      for (int64_t i = 0; i < inner; ++i) {
        double xh = (xr[i] - mean) * r, d = double(gr[i]) * ss[si.offset(i)];
        m1 += d;
        m2 += d * xh;
        dsFull.data<float>()[i] += float(gr[i] * xh);
        dbFull.data<float>()[i] += gr[i];
      }
      m1 /= double(inner);
      m2 /= double(inner);
      float *dr = dx.data<float>() + row * inner;
      for (int64_t i = 0; i < inner; ++i) {
        double xh = (xr[i] - mean) * r, d = double(gr[i]) * ss[si.offset(i)];
        dr[i] = float(r * (d - m1 - xh * m2));
      }
    }
  }
  if (ctx.wants(0))
    ctx.inputGrads[0] = std::move(dx);
  if (ctx.wants(1))
    ctx.inputGrads[1] = reduceToShape(dsFull, scale->shape());
  if (bias && ctx.wants(2))
    ctx.inputGrads[2] = reduceToShape(dbFull, bias->shape());
  return true;
}

} // namespace

void rt::grad::registerNormBackward(BackwardRegistry &r) {
  r.add("LayerNormalization", layerNorm);
  r.add("Softmax", softmax<false>);
  r.add("LogSoftmax", softmax<true>);
  r.add("BatchNormalization", batchNorm);
  r.add("ReduceMean", reduceMean);
}
