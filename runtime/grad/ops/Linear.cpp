//===- Linear.cpp - Backward of Conv, Gemm and MatMul -----------------------===//
//
// Conv and ConvTranspose: oneDNN's (de)convolution backward-data and
// backward-weights primitives (grouped and depthwise included; weights
// described where ONNX keeps them, convWeightsDesc), on the plain layouts,
// with the forward training primitive as their hint; cached per input shape
// in the node's state. The bias gradient comes from backward-weights.
// Gemm and MatMul: dA = dY Bᵀ and dB = Aᵀ dY (transposes, alpha and beta as
// the forward applies them; MatMul's batch dimensions broadcast and are summed
// back), with loops whose sums have a fixed order.
//
//===----------------------------------------------------------------------===//
#include "runtime/KernelUtil.h"
#include "runtime/grad/Backward.h"
#include "runtime/ops/ConvGeometry.h"
#include "runtime/ops/Dnnl.h"

#include <map>

using namespace tpcc;
using namespace tpcc::rt;
using namespace tpcc::rt::grad;
namespace du = tpcc::rt::dnnl_util;

namespace {

struct ConvBackward {
  dnnl::primitive data, weights;
  dnnl::memory::desc x, w, b, y;
};

struct ConvBackwardState : NodeState {
  std::map<std::pair<Shape, Shape>, ConvBackward> byShape;
};

/// oneDNN's backward primitives of a Conv (or, `T`, ConvTranspose) at `x`.
template <bool T>
ConvBackward buildConvBackward(const Tensor &x, const Tensor &w, const ConvGeometry &geo) {
  using dnnl::memory;
  memory::dims strides(geo.strides.begin(), geo.strides.end()),
      padL(geo.padBegin.begin(), geo.padBegin.end()), padR(geo.padEnd.begin(), geo.padEnd.end()),
      dil;
  for (int64_t d : geo.dilations)
    dil.push_back(d - 1);
  memory::desc xd = du::plainDesc(x.shape()), yd = du::plainDesc(geo.outShape);
  memory::desc wd = convWeightsDesc(x.shape(), geo, T), bd = du::plainDesc({geo.outShape[1]});
  const dnnl::engine &eng = du::engine();
  if constexpr (!T) {
    auto alg = dnnl::algorithm::convolution_direct;
    dnnl::convolution_forward::primitive_desc hint(
        {dnnl::prop_kind::forward_training, alg, xd, wd, bd, yd, strides, dil, padL, padR}, eng);
    dnnl::convolution_backward_data::primitive_desc pdd({alg, xd, wd, yd, strides, dil, padL, padR},
                                                        eng, hint);
    dnnl::convolution_backward_weights::primitive_desc pdw(
        {alg, xd, wd, bd, yd, strides, dil, padL, padR}, eng, hint);
    return {dnnl::convolution_backward_data(pdd),
            dnnl::convolution_backward_weights(pdw),
            xd,
            wd,
            bd,
            yd};
  } else {
    auto alg = dnnl::algorithm::deconvolution_direct;
    dnnl::deconvolution_forward::primitive_desc hint(
        {dnnl::prop_kind::forward_training, alg, xd, wd, bd, yd, strides, dil, padL, padR}, eng);
    dnnl::deconvolution_backward_data::primitive_desc pdd(
        {alg, xd, wd, yd, strides, dil, padL, padR}, eng, hint);
    dnnl::deconvolution_backward_weights::primitive_desc pdw(
        {alg, xd, wd, bd, yd, strides, dil, padL, padR}, eng, hint);
    return {dnnl::deconvolution_backward_data(pdd),
            dnnl::deconvolution_backward_weights(pdw),
            xd,
            wd,
            bd,
            yd};
  }
}

template <bool T> bool conv(BackwardContext &ctx) {
  const Tensor *x = ctx.input(0), *w = ctx.input(1), *g = ctx.grad(0);
  if (!isFloat(x) || !isFloat(w) || x->blocked() || w->blocked())
    return ctx.fail("backward of " + ctx.node.opType + " needs plain float input and weights");
  KernelContext kc(ctx.node, ctx.opset, ctx.state);
  ConvGeometry geo;
  if (!(T ? deconvGeometry(kc, x->shape(), w->shape(), geo)
          : convGeometry(kc, x->shape(), w->shape(), geo)))
    return ctx.fail(kc.error);
  bool bias = ctx.input(2) != nullptr;
  if (!g) {
    for (size_t i = 0; i < 3; ++i)
      if (ctx.wants(i) && ctx.input(i))
        ctx.inputGrads[i] = zeros(ctx.input(i)->shape());
    return true;
  }
  if (g->shape() != geo.outShape)
    return ctx.fail(ctx.node.opType + "'s output gradient has shape " + shapeStr(g->shape()) +
                    ", not " + shapeStr(geo.outShape));
  if (!ctx.state)
    ctx.state = std::make_unique<ConvBackwardState>();
  auto &cache = static_cast<ConvBackwardState &>(*ctx.state).byShape;
  auto key = std::make_pair(x->shape(), w->shape());
  auto it = cache.find(key);
  if (it == cache.end()) {
    try {
      it = cache.emplace(key, buildConvBackward<T>(*x, *w, geo)).first;
    } catch (const dnnl::error &e) {
      return ctx.fail("oneDNN cannot build " + ctx.node.opType + "'s backward: " + e.what());
    }
  }
  const ConvBackward &p = it->second;
  dnnl::memory gm = du::wrap(p.y, g->raw());
  if (ctx.wants(0)) {
    Tensor dx(ElemType::Float, x->shape());
    p.data.execute(du::stream(), {{DNNL_ARG_DIFF_DST, gm},
                                  {DNNL_ARG_WEIGHTS, du::wrap(p.w, w->raw())},
                                  {DNNL_ARG_DIFF_SRC, du::wrap(p.x, dx.raw())}});
    ctx.inputGrads[0] = std::move(dx);
  }
  if (ctx.wants(1) || (bias && ctx.wants(2))) {
    Tensor dw(ElemType::Float, w->shape()), db(ElemType::Float, {geo.outShape[1]});
    p.weights.execute(du::stream(), {{DNNL_ARG_DIFF_DST, gm},
                                     {DNNL_ARG_SRC, du::wrap(p.x, x->raw())},
                                     {DNNL_ARG_DIFF_WEIGHTS, du::wrap(p.w, dw.raw())},
                                     {DNNL_ARG_DIFF_BIAS, du::wrap(p.b, db.raw())}});
    if (ctx.wants(1))
      ctx.inputGrads[1] = std::move(dw);
    if (bias && ctx.wants(2))
      ctx.inputGrads[2] = std::move(db);
  }
  du::stream().wait();
  return true;
}

/// C[m, n] (+)= sum_k A[m, k] B[k, n] over row-major matrices addressed by
/// strides (so transposes are views): one output row per task.
void matmul(const float *a, int64_t am, int64_t ak, const float *b, int64_t bk, int64_t bn,
            float *c, int64_t M, int64_t K, int64_t N, float alpha, bool accumulate) {
  parallelFor(M, K * N, [&](int64_t s, int64_t e) {
    std::vector<float> row(static_cast<size_t>(N));
    for (int64_t m = s; m < e; ++m) {
      std::fill(row.begin(), row.end(), 0.f);
      for (int64_t k = 0; k < K; ++k) {
        float v = a[m * am + k * ak];
        const float *br = b + k * bk;
        for (int64_t n = 0; n < N; ++n)
          row[size_t(n)] += v * br[n * bn];
      }
      float *cr = c + m * N;
      for (int64_t n = 0; n < N; ++n)
        cr[n] = (accumulate ? cr[n] : 0.f) + alpha * row[size_t(n)];
    }
  });
}

bool gemm(BackwardContext &ctx) {
  const Tensor *a = ctx.input(0), *b = ctx.input(1), *c = ctx.input(2), *g = ctx.grad(0);
  if (!isFloat(a) || !isFloat(b) || a->rank() != 2 || b->rank() != 2)
    return ctx.fail("backward of Gemm needs float matrices");
  bool ta = ctx.attrInt("transA", 0), tb = ctx.attrInt("transB", 0);
  float alpha = ctx.attrFloat("alpha", 1.f), beta = ctx.attrFloat("beta", 1.f);
  int64_t M = ta ? a->dim(1) : a->dim(0), K = ta ? a->dim(0) : a->dim(1);
  int64_t N = tb ? b->dim(0) : b->dim(1);
  Tensor zero;
  if (!g) {
    zero = zeros({M, N});
    g = &zero;
  }
  const float *gs = g->data<float>(), *as = a->data<float>(), *bs = b->data<float>();
  if (ctx.wants(0)) {
    // dA' = alpha dY B'ᵀ (M x K); stored transposed when transA.
    Tensor da(ElemType::Float, a->shape());
    // B'ᵀ[n][k] = B'[k][n]: B' is B (K x N) or Bᵀ.
    int64_t bk = tb ? 1 : N, bn = tb ? K : 1; // B'[k][n] at k * bk + n * bn
    if (!ta) {
      matmul(gs, N, 1, bs, bn, bk, da.data<float>(), M, N, K, alpha, false);
    } else {
      // dA = dA'ᵀ (K x M): dA[k][m] = sum_n B'[k][n] dY[m][n].
      matmul(bs, bk, bn, gs, 1, N, da.data<float>(), K, N, M, alpha, false);
    }
    ctx.inputGrads[0] = std::move(da);
  }
  if (ctx.wants(1)) {
    Tensor db(ElemType::Float, b->shape());
    int64_t am = ta ? 1 : K, ak = ta ? M : 1; // A'[m][k] at m * am + k * ak
    if (!tb) {
      // dB' = alpha A'ᵀ dY (K x N): row k of A'ᵀ is column k of A'.
      matmul(as, ak, am, gs, N, 1, db.data<float>(), K, M, N, alpha, false);
    } else {
      // dB = dB'ᵀ (N x K): dB[n][k] = sum_m dY[m][n] A'[m][k].
      matmul(gs, 1, N, as, am, ak, db.data<float>(), N, M, K, alpha, false);
    }
    ctx.inputGrads[1] = std::move(db);
  }
  if (c && ctx.wants(2)) {
    Tensor dc = reduceToShape(*g, c->shape());
    if (beta != 1.f) { // a new tensor: reduceToShape may hand back g itself
      Tensor scaled(ElemType::Float, c->shape());
      for (int64_t i = 0; i < dc.numel(); ++i)
        scaled.data<float>()[i] = beta * dc.data<float>()[i];
      dc = std::move(scaled);
    }
    ctx.inputGrads[2] = std::move(dc);
  }
  return true;
}

bool matMul(BackwardContext &ctx) {
  const Tensor *a0 = ctx.input(0), *b0 = ctx.input(1), *g0 = ctx.grad(0);
  if (!isFloat(a0) || !isFloat(b0))
    return ctx.fail("backward of MatMul needs float inputs");
  // 1-D operands as matrices, as the forward treats them.
  Shape as = a0->shape(), bs = b0->shape();
  if (as.size() == 1)
    as.insert(as.begin(), 1);
  if (bs.size() == 1)
    bs.push_back(1);
  if (as.size() < 2 || bs.size() < 2)
    return ctx.fail("backward of MatMul: empty operand");
  int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  Shape aBatch(as.begin(), as.end() - 2), bBatch(bs.begin(), bs.end() - 2);
  std::optional<Shape> batch = broadcastShapes(aBatch, bBatch);
  if (!batch || bs[bs.size() - 2] != K)
    return ctx.fail("backward of MatMul: shapes do not multiply");
  int64_t count = numElements(*batch);
  Tensor a = a0->reshaped(as), b = b0->reshaped(bs);
  Shape gs = *batch;
  gs.push_back(M);
  gs.push_back(N);
  Tensor g = g0 ? g0->reshaped(gs) : zeros(gs);
  BroadcastIndexer ia(aBatch, *batch), ib(bBatch, *batch);
  auto full = [&](Shape s, int64_t r, int64_t c) {
    s.push_back(r);
    s.push_back(c);
    return Tensor(ElemType::Float, s);
  };
  if (ctx.wants(0)) {
    Tensor da = full(*batch, M, K);
    for (int64_t i = 0; i < count; ++i)
      matmul(g.data<float>() + i * M * N, N, 1, b.data<float>() + ib.offset(i) * K * N, 1, N,
             da.data<float>() + i * M * K, M, N, K, 1.f, false);
    Shape sa = aBatch;
    sa.push_back(M);
    sa.push_back(K);
    ctx.inputGrads[0] = reduceToShape(da, sa).reshaped(a0->shape());
  }
  if (ctx.wants(1)) {
    Tensor db = full(*batch, K, N);
    for (int64_t i = 0; i < count; ++i)
      matmul(a.data<float>() + ia.offset(i) * M * K, 1, K, g.data<float>() + i * M * N, N, 1,
             db.data<float>() + i * K * N, K, M, N, 1.f, false);
    Shape sb = bBatch;
    sb.push_back(K);
    sb.push_back(N);
    ctx.inputGrads[1] = reduceToShape(db, sb).reshaped(b0->shape());
  }
  return true;
}

} // namespace

void rt::grad::registerLinearBackward(BackwardRegistry &r) {
  r.add("Conv", conv<false>);
  r.add("ConvTranspose", conv<true>);
  r.add("Gemm", gemm);
  r.add("MatMul", matMul);
}
