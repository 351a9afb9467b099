//===- Norm.cpp - BatchNormalization, InstanceNormalization, LayerNorm ------===//
//
// BatchNormalization (inference, and opset 14+ training_mode with batch
// statistics and updated running mean/variance), InstanceNormalization and
// LayerNormalization (opset 17, with the optional Mean and InvStdDev
// outputs).
//
// Our own loops rather than oneDNN: these are memory-bound, usually folded
// into the preceding Conv by the exporter, and a per-channel affine transform
// over plain NCX planes is as fast as a reorder into oneDNN's layout would
// be. Statistics accumulate in double so large planes stay accurate.
//
//===----------------------------------------------------------------------===//
#include "runtime/KernelUtil.h"

#include <cmath>

using namespace tpcc;
using namespace tpcc::rt;

namespace {

/// Whether `t` is a 1-D tensor of `n` elements of type `et`.
bool isVector(const Tensor *t, int64_t n, ElemType et) {
  return t && t->elem() == et && t->rank() == 1 && t->dim(0) == n;
}

/// y = x * a[c] + b[c] over planes of `size` elements (channel c = plane % C).
template <typename T>
void affinePlanes(const T *x, T *y, const std::vector<double> &a, const std::vector<double> &b,
                  int64_t planes, int64_t channels, int64_t size) {
  parallelFor(planes, size, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      T sa = T(a[p % channels]), sb = T(b[p % channels]);
      const T *xp = x + p * size;
      T *yp = y + p * size;
      for (int64_t i = 0; i < size; ++i)
        yp[i] = xp[i] * sa + sb;
    }
  });
}

//===----------------------------------------------------------------------===//
// BatchNormalization
//===----------------------------------------------------------------------===//

template <typename T> bool batchNorm(KernelContext &ctx, bool training) {
  const Tensor &x = *ctx.input(0);
  const Tensor &scale = *ctx.input(1), &bias = *ctx.input(2);
  const Tensor &mean = *ctx.input(3), &var = *ctx.input(4);
  double eps = ctx.attrFloat("epsilon", 1e-5f);
  double momentum = ctx.attrFloat("momentum", 0.9f);
  int64_t n = x.dim(0), c = x.rank() > 1 ? x.dim(1) : 1;
  int64_t size = n * c != 0 ? x.numel() / (n * c) : 0;
  const T *px = x.data<T>();
  std::vector<double> a(c), b(c), bm(c), bv(c);
  if (training) {
    // Batch statistics per channel (population variance).
    parallelFor(c, n * size, [&](int64_t c0, int64_t c1) {
      for (int64_t ch = c0; ch < c1; ++ch) {
        double sum = 0, sq = 0;
        for (int64_t i = 0; i < n; ++i) {
          const T *xp = px + (i * c + ch) * size;
          for (int64_t j = 0; j < size; ++j) {
            sum += double(xp[j]);
            sq += double(xp[j]) * double(xp[j]);
          }
        }
        double cnt = double(std::max<int64_t>(n * size, 1));
        bm[ch] = sum / cnt;
        bv[ch] = std::max(0.0, sq / cnt - bm[ch] * bm[ch]);
      }
    });
  }
  for (int64_t ch = 0; ch < c; ++ch) {
    double mu = training ? bm[ch] : double(mean.data<T>()[ch]);
    double v = training ? bv[ch] : double(var.data<T>()[ch]);
    a[ch] = double(scale.data<T>()[ch]) / std::sqrt(v + eps);
    b[ch] = double(bias.data<T>()[ch]) - mu * a[ch];
  }
  ctx.outputs[0] = Tensor(x.elem(), x.shape());
  affinePlanes<T>(px, ctx.outputs[0].data<T>(), a, b, n * c, c, size);
  if (training) {
    for (int k = 1; k <= 2; ++k) {
      if (!ctx.wantsOutput(k))
        continue;
      const Tensor &running = k == 1 ? mean : var;
      const std::vector<double> &batch = k == 1 ? bm : bv;
      ctx.outputs[k] = Tensor(x.elem(), {c});
      for (int64_t ch = 0; ch < c; ++ch)
        ctx.outputs[k].data<T>()[ch] =
            T(double(running.data<T>()[ch]) * momentum + batch[ch] * (1 - momentum));
    }
  }
  return true;
}

bool batchNormKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0);
  if (!x || ctx.numInputs() < 5)
    return ctx.fail("BatchNormalization needs X, scale, B, mean and var");
  if (x->rank() < 2)
    return ctx.fail("BatchNormalization needs an N x C x ... input, not " + shapeStr(x->shape()));
  if (ctx.hasAttr("spatial") && ctx.attrInt("spatial", 1) == 0)
    return ctx.fail("BatchNormalization with spatial=0 is not supported");
  int64_t c = x->dim(1);
  for (size_t i = 1; i < 5; ++i)
    if (!isVector(ctx.input(i), c, x->elem()))
      return ctx.fail("BatchNormalization input " + std::to_string(i) + " must be a " +
                      typeName(x->elem()) + " vector of " + std::to_string(c) + " channels");
  bool training = ctx.opset >= 14 && ctx.attrInt("training_mode", 0) != 0;
  if (!training && ctx.opset < 14 && (ctx.wantsOutput(1) || ctx.wantsOutput(2)))
    return ctx.fail("BatchNormalization in training mode (outputs beyond Y) is supported from "
                    "opset 14 only");
  bool ok = TPCC_DISPATCH_FLOAT(x->elem(), false, batchNorm<T>(ctx, training));
  return ok ? true : ctx.fail("BatchNormalization does not support " + typeName(x->elem()));
}

//===----------------------------------------------------------------------===//
// InstanceNormalization
//===----------------------------------------------------------------------===//

template <typename T> bool instanceNorm(KernelContext &ctx) {
  const Tensor &x = *ctx.input(0), &scale = *ctx.input(1), &bias = *ctx.input(2);
  double eps = ctx.attrFloat("epsilon", 1e-5f);
  int64_t c = x.dim(1), planes = x.dim(0) * c;
  int64_t size = planes ? x.numel() / planes : 0;
  ctx.outputs[0] = Tensor(x.elem(), x.shape());
  const T *px = x.data<T>();
  T *py = ctx.outputs[0].data<T>();
  parallelFor(planes, 3 * size, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const T *xp = px + p * size;
      double sum = 0;
      for (int64_t i = 0; i < size; ++i)
        sum += double(xp[i]);
      double mu = size ? sum / double(size) : 0, sq = 0;
      for (int64_t i = 0; i < size; ++i)
        sq += (double(xp[i]) - mu) * (double(xp[i]) - mu);
      double v = size ? sq / double(size) : 0;
      double a = double(scale.data<T>()[p % c]) / std::sqrt(v + eps);
      T sa = T(a), sb = T(double(bias.data<T>()[p % c]) - mu * a);
      T *yp = py + p * size;
      for (int64_t i = 0; i < size; ++i)
        yp[i] = xp[i] * sa + sb;
    }
  });
  return true;
}

bool instanceNormKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0);
  if (!x || !ctx.input(1) || !ctx.input(2))
    return ctx.fail("InstanceNormalization needs input, scale and B");
  if (x->rank() < 3)
    return ctx.fail("InstanceNormalization needs an N x C x D1 ... input, not " +
                    shapeStr(x->shape()));
  for (size_t i = 1; i < 3; ++i)
    if (!isVector(ctx.input(i), x->dim(1), x->elem()))
      return ctx.fail("InstanceNormalization scale and B must be " + typeName(x->elem()) +
                      " vectors of " + std::to_string(x->dim(1)) + " channels");
  bool ok = TPCC_DISPATCH_FLOAT(x->elem(), false, instanceNorm<T>(ctx));
  return ok ? true : ctx.fail("InstanceNormalization does not support " + typeName(x->elem()));
}

//===----------------------------------------------------------------------===//
// LayerNormalization
//===----------------------------------------------------------------------===//

/// The sum of f(x[i]) for i < n in doubles: element i into lane i mod 8,
/// then the lanes pairwise; eight independent sums run at vector speed.
template <typename T, typename F> double lanedSum(const T *x, int64_t n, F f) {
  double lanes[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k)
      lanes[k] += f(x[i + k]);
  for (; i < n; ++i)
    lanes[i % 8] += f(x[i]);
  return ((lanes[0] + lanes[4]) + (lanes[2] + lanes[6])) +
         ((lanes[1] + lanes[5]) + (lanes[3] + lanes[7]));
}

template <typename T, typename U>
void layerNorm(KernelContext &ctx, int64_t axis, double eps, ElemType statType) {
  const Tensor &x = *ctx.input(0), &scale = *ctx.input(1);
  const Tensor *bias = ctx.input(2);
  Shape norm(x.shape().begin() + axis, x.shape().end());
  int64_t inner = numElements(norm), outer = inner ? x.numel() / inner : 0;
  Shape statShape = x.shape();
  for (size_t i = size_t(axis); i < statShape.size(); ++i)
    statShape[i] = 1;
  ctx.outputs[0] = Tensor(x.elem(), x.shape());
  U *pm = nullptr, *pi = nullptr;
  if (ctx.wantsOutput(1)) {
    ctx.outputs[1] = Tensor(statType, statShape);
    pm = ctx.outputs[1].data<U>();
  }
  if (ctx.wantsOutput(2)) {
    ctx.outputs[2] = Tensor(statType, statShape);
    pi = ctx.outputs[2].data<U>();
  }
  // Scale and B broadcast to the normalized shape; expanded once.
  std::vector<T> s(inner), b(inner, T(0));
  BroadcastIndexer si(scale.shape(), norm);
  for (int64_t i = 0; i < inner; ++i)
    s[i] = scale.data<T>()[si.offset(i)];
  if (bias) {
    BroadcastIndexer bi(bias->shape(), norm);
    for (int64_t i = 0; i < inner; ++i)
      b[i] = bias->data<T>()[bi.offset(i)];
  }
  const T *px = x.data<T>();
  T *py = ctx.outputs[0].data<T>();
  parallelFor(outer, 3 * inner, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T *xp = px + r * inner;
      double mu = lanedSum(xp, inner, [](T v) { return double(v); }) / double(inner);
      double sq = lanedSum(xp, inner, [mu](T v) { return (double(v) - mu) * (double(v) - mu); });
      double inv = 1.0 / std::sqrt(sq / double(inner) + eps);
      T tm = T(mu), ti = T(inv);
      T *yp = py + r * inner;
      for (int64_t i = 0; i < inner; ++i)
        yp[i] = (xp[i] - tm) * ti * s[i] + b[i];
      if (pm)
        pm[r] = U(mu);
      if (pi)
        pi[r] = U(inv);
    }
  });
}

bool layerNormKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0), *scale = ctx.input(1), *bias = ctx.input(2);
  if (!x || !scale)
    return ctx.fail("LayerNormalization needs X and Scale");
  std::optional<int64_t> axis = normalizeAxis(ctx.attrInt("axis", -1), x->rank());
  if (!axis)
    return ctx.fail("axis out of range for input " + shapeStr(x->shape()));
  Shape norm(x->shape().begin() + *axis, x->shape().end());
  for (const Tensor *t : {scale, bias})
    if (t && (t->elem() != x->elem() || t->rank() > int64_t(norm.size()) ||
              broadcastShapes(t->shape(), norm) != norm))
      return ctx.fail("Scale and B must be " + typeName(x->elem()) + " and broadcast to " +
                      shapeStr(norm));
  if (numElements(norm) == 0) {
    ctx.outputs[0] = Tensor(x->elem(), x->shape());
    return true;
  }
  double eps = ctx.attrFloat("epsilon", 1e-5f);
  // Mean and InvStdDev: the declared type, else float for stash_type 1.
  ElemType statType = ctx.attrInt("stash_type", 1) == 1 ? ElemType::Float : x->elem();
  for (size_t i = 1; i < 3; ++i)
    if (ctx.wantsOutput(i) && (ctx.node.outputs[i]->type.elem == ElemType::Float ||
                               ctx.node.outputs[i]->type.elem == ElemType::Double))
      statType = ctx.node.outputs[i]->type.elem;
  bool stat64 = statType == ElemType::Double;
  switch (x->elem()) {
  case ElemType::Float:
    stat64 ? layerNorm<float, double>(ctx, *axis, eps, statType)
           : layerNorm<float, float>(ctx, *axis, eps, statType);
    return true;
  case ElemType::Double:
    stat64 ? layerNorm<double, double>(ctx, *axis, eps, statType)
           : layerNorm<double, float>(ctx, *axis, eps, statType);
    return true;
  default:
    return ctx.fail("LayerNormalization does not support " + typeName(x->elem()));
  }
}

} // namespace

void rt::registerNormKernels(KernelRegistry &r) {
  r.add("BatchNormalization", batchNormKernel);
  r.add("InstanceNormalization", instanceNormKernel);
  r.add("LayerNormalization", layerNormKernel);
}
