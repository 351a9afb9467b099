//===- Linear.cpp - Backward of Conv, Gemm and MatMul -----------------------===//
//
// Conv and ConvTranspose: oneDNN's (de)convolution backward-data and
// backward-weights primitives (grouped and depthwise included; weights
// described where ONNX keeps them, convWeightsDesc), on the layouts oneDNN
// picks for its fastest kernels (reorders from and to the plain tensors),
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
#include <optional>
#include <type_traits>

using namespace tpcc;
using namespace tpcc::rt;
using namespace tpcc::rt::grad;
namespace du = tpcc::rt::dnnl_util;

namespace {

/// oneDNN's backward primitives of a Conv or ConvTranspose at one input
/// shape: the tensors' plain descriptors and the layouts each primitive
/// chose for them (format_tag::any: its fastest kernels).
struct ConvBackward {
  dnnl::primitive data, weights;
  dnnl::memory::desc x, w, b, y;                   // plain
  dnnl::memory::desc dataX, dataW, dataY;          // backward-data's diff_src, weights, diff_dst
  dnnl::memory::desc weightsX, weightsW, weightsY; // backward-weights' src, diff_weights, diff_dst
  bool gemmWeights = false; ///< backward-weights fell back to a GEMM (im2col) kernel
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
  ConvBackward p;
  p.x = du::plainDesc(x.shape()), p.y = du::plainDesc(geo.outShape);
  p.w = convWeightsDesc(x.shape(), geo, T), p.b = du::plainDesc({geo.outShape[1]});
  auto any = [](const memory::desc &d) {
    return memory::desc(d.dims(), memory::data_type::f32, memory::format_tag::any);
  };
  memory::desc xa = any(p.x), wa = any(p.w), ya = any(p.y);
  const dnnl::engine &eng = du::engine();
  using Fwd = std::conditional_t<T, dnnl::deconvolution_forward, dnnl::convolution_forward>;
  using Data =
      std::conditional_t<T, dnnl::deconvolution_backward_data, dnnl::convolution_backward_data>;
  using Weights = std::conditional_t<T, dnnl::deconvolution_backward_weights,
                                     dnnl::convolution_backward_weights>;
  auto alg = T ? dnnl::algorithm::deconvolution_direct : dnnl::algorithm::convolution_direct;
  typename Fwd::primitive_desc hint(
      {dnnl::prop_kind::forward_training, alg, xa, wa, p.b, ya, strides, dil, padL, padR}, eng);
  typename Data::primitive_desc pdd({alg, xa, wa, ya, strides, dil, padL, padR}, eng, hint);
  typename Weights::primitive_desc pdw({alg, xa, wa, p.b, ya, strides, dil, padL, padR}, eng, hint);
  p.data = Data(pdd), p.weights = Weights(pdw);
  p.dataX = pdd.diff_src_desc(), p.dataW = pdd.weights_desc(), p.dataY = pdd.diff_dst_desc();
  p.weightsX = pdw.src_desc(), p.weightsW = pdw.diff_weights_desc();
  p.weightsY = pdw.diff_dst_desc();
  p.gemmWeights = std::string(pdw.impl_info_str()).find("gemm") != std::string::npos;
  return p;
}

/// The data at `ptr` (laid out as `plain`) in layout `want`: the buffer
/// itself, or a reordered copy.
dnnl::memory input(const dnnl::memory::desc &plain, const dnnl::memory::desc &want,
                   const void *ptr) {
  dnnl::memory m = du::wrap(plain, ptr);
  if (want == plain)
    return m;
  dnnl::memory r(want, du::engine());
  dnnl::reorder(m, r).execute(du::stream(), m, r);
  return r;
}

/// Where a primitive writes a result laid out as `want` that belongs at
/// `ptr` as `plain`; finish() reorders it there when the two differ.
struct Output {
  dnnl::memory plain, chosen;
  Output(const dnnl::memory::desc &p, const dnnl::memory::desc &want, void *ptr)
      : plain(du::wrap(p, ptr)), chosen(want == p ? plain : dnnl::memory(want, du::engine())) {}
  void finish() {
    if (chosen.get() != plain.get())
      dnnl::reorder(chosen, plain).execute(du::stream(), chosen, plain);
  }
};

/// Whether a Conv on `x` with weights `w` is a 2-D depthwise one (one
/// filter per channel, group = channels) whose weight gradient
/// depthwiseWeightGrad computes.
bool depthwise2D(const Shape &x, const Shape &w, const ConvGeometry &geo) {
  return x.size() == 4 && w.size() == 4 && geo.group == x[1] && w[0] == x[1] && w[1] == 1 &&
         geo.outShape[1] == x[1];
}

/// dW and dB of a 2-D depthwise Conv, on the plain tensors: per channel
/// (one task each, sums in a fixed order), dW[c, i, j] = Σ dY[n, c, oh, ow]
/// · X[n, c, oh·s − p + i·d, ow·s − p + j·d] over the outputs whose tap
/// lands inside X. Used where oneDNN's depthwise backward-weights falls back
/// to its GEMM kernel (strided 5×5 filters), which is slower.
void depthwiseWeightGrad(const Tensor &x, const Tensor &g, const ConvGeometry &geo, Tensor &dw,
                         Tensor *db) {
  constexpr int64_t L = 8; // channels per task, the innermost (vectorized) loop
  int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  int64_t OH = geo.outShape[2], OW = geo.outShape[3], KH = geo.kernel[0], KW = geo.kernel[1];
  int64_t sh = geo.strides[0], sw = geo.strides[1], dh = geo.dilations[0], dwl = geo.dilations[1];
  int64_t ph = geo.padBegin[0], pw = geo.padBegin[1];
  // X zero-padded so that every tap of every output lands inside.
  int64_t HP = std::max(H + ph, (OH - 1) * sh + (KH - 1) * dh + 1),
          WP = std::max(W + pw, (OW - 1) * sw + (KW - 1) * dwl + 1);
  const float *xs = x.data<float>(), *gs = g.data<float>();
  float *out = dw.data<float>();
  int64_t blocks = (C + L - 1) / L;
  parallelFor(blocks, N * OH * OW * KH * KW * L, [&](int64_t b0, int64_t b1) {
    // One image of the block's channels, channels innermost: xb[h][w][l], gb[oh][ow][l].
    std::vector<float> xb(static_cast<size_t>(HP * WP * L)), gb(static_cast<size_t>(OH * OW * L)),
        acc(static_cast<size_t>(KH * KW * L));
    std::vector<double> sum(static_cast<size_t>(KH * KW * L)), bias(static_cast<size_t>(L));
    for (int64_t blk = b0; blk < b1; ++blk) {
      int64_t c0 = blk * L, nc = std::min(L, C - c0);
      std::fill(sum.begin(), sum.end(), 0.0);
      std::fill(bias.begin(), bias.end(), 0.0);
      std::fill(xb.begin(), xb.end(), 0.f);
      std::fill(gb.begin(), gb.end(), 0.f);
      for (int64_t n = 0; n < N; ++n) {
        for (int64_t l = 0; l < nc; ++l) {
          const float *xp = xs + (n * C + c0 + l) * H * W, *gp = gs + (n * C + c0 + l) * OH * OW;
          for (int64_t h = 0; h < H; ++h)
            for (int64_t w = 0; w < W; ++w)
              xb[size_t(((h + ph) * WP + w + pw) * L + l)] = xp[h * W + w];
          float bs = 0;
          for (int64_t o = 0; o < OH * OW; ++o) {
            gb[size_t(o * L + l)] = gp[o];
            bs += gp[o];
          }
          bias[size_t(l)] += bs;
        }
        std::fill(acc.begin(), acc.end(), 0.f);
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) {
            const float *gv = &gb[size_t((oh * OW + ow) * L)];
            for (int64_t i = 0; i < KH; ++i) {
              const float *xr = &xb[size_t(((oh * sh + i * dh) * WP + ow * sw) * L)];
              float *ar = &acc[size_t(i * KW * L)];
              for (int64_t j = 0; j < KW; ++j)
                for (int64_t l = 0; l < L; ++l)
                  ar[j * L + l] += gv[l] * xr[j * dwl * L + l];
            }
          }
        for (size_t k = 0; k < acc.size(); ++k)
          sum[k] += acc[k];
      }
      for (int64_t l = 0; l < nc; ++l) {
        for (int64_t k = 0; k < KH * KW; ++k)
          out[(c0 + l) * KH * KW + k] = float(sum[size_t(k * L + l)]);
        if (db)
          db->data<float>()[c0 + l] = float(bias[size_t(l)]);
      }
    }
  });
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
  try {
    if (it == cache.end())
      it = cache.emplace(key, buildConvBackward<T>(*x, *w, geo)).first;
    const ConvBackward &p = it->second;
    // dY in backward-data's layout, reused by backward-weights when it
    // wants the same one (one reorder instead of two).
    std::optional<dnnl::memory> dyData;
    if (ctx.wants(0)) {
      Tensor dx(ElemType::Float, x->shape());
      Output out(p.x, p.dataX, dx.raw());
      dyData = input(p.y, p.dataY, g->raw());
      p.data.execute(du::stream(), {{DNNL_ARG_DIFF_DST, *dyData},
                                    {DNNL_ARG_WEIGHTS, input(p.w, p.dataW, w->raw())},
                                    {DNNL_ARG_DIFF_SRC, out.chosen}});
      out.finish();
      ctx.inputGrads[0] = std::move(dx);
    }
    if ((ctx.wants(1) || (bias && ctx.wants(2))) && !T && p.gemmWeights &&
        depthwise2D(x->shape(), w->shape(), geo)) {
      Tensor dw(ElemType::Float, w->shape()), db(ElemType::Float, {geo.outShape[1]});
      depthwiseWeightGrad(*x, *g, geo, dw, bias && ctx.wants(2) ? &db : nullptr);
      if (ctx.wants(1))
        ctx.inputGrads[1] = std::move(dw);
      if (bias && ctx.wants(2))
        ctx.inputGrads[2] = std::move(db);
    } else if (ctx.wants(1) || (bias && ctx.wants(2))) {
      Tensor dw(ElemType::Float, w->shape()), db(ElemType::Float, {geo.outShape[1]});
      Output out(p.w, p.weightsW, dw.raw());
      dnnl::memory dy =
          dyData && p.weightsY == p.dataY ? *dyData : input(p.y, p.weightsY, g->raw());
      p.weights.execute(du::stream(), {{DNNL_ARG_DIFF_DST, dy},
                                       {DNNL_ARG_SRC, input(p.x, p.weightsX, x->raw())},
                                       {DNNL_ARG_DIFF_WEIGHTS, out.chosen},
                                       {DNNL_ARG_DIFF_BIAS, du::wrap(p.b, db.raw())}});
      out.finish();
      if (ctx.wants(1))
        ctx.inputGrads[1] = std::move(dw);
      if (bias && ctx.wants(2))
        ctx.inputGrads[2] = std::move(db);
    }
    du::stream().wait();
  } catch (const dnnl::error &e) {
    return ctx.fail("oneDNN cannot run " + ctx.node.opType + "'s backward: " + e.what());
  }
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
