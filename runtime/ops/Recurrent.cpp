//===- Recurrent.cpp - LSTM, GRU and RNN ------------------------------------===//
//
// ONNX's recurrent layers, forward, reverse or bidirectional, in float:
// X (seq, batch, input; layout 1: batch first), W and R (directions, gates ·
// hidden, input / hidden), optional B (W's and R's biases), sequence_lens,
// initial states and LSTM's peepholes. Gates in ONNX's order (LSTM i o f c,
// GRU z r h); the activations the node names (Sigmoid, Tanh, Relu,
// HardSigmoid, LeakyRelu, ThresholdedRelu, ScaledTanh, Affine, Elu,
// Softsign, Softplus) with their alpha/beta taken in order; `clip` bounds
// the gates' inputs. Steps past a batch entry's sequence length are not
// computed: Y is 0 there and Y_h / Y_c hold its last computed state. The
// projection X·Wᵀ is done for all steps at once, then one step at a time
// H·Rᵀ. Checked by ONNX's node tests (conformance).
//
//===----------------------------------------------------------------------===//
#include "runtime/Kernel.h"
#include "runtime/KernelUtil.h"

#include <cmath>
#include <functional>

using namespace tpcc;
using namespace tpcc::rt;
using graph::ElemType;

namespace {

using Activation = std::function<float(float)>;

/// ONNX's activation `name` with its alpha/beta taken from `alphas` /
/// `betas` at `k` (advanced past what it used), or null when unknown.
Activation activation(const std::string &name, const std::vector<float> &alphas,
                      const std::vector<float> &betas, size_t &ka, size_t &kb) {
  auto alpha = [&](float d) { return ka < alphas.size() ? alphas[ka++] : d; };
  auto beta = [&](float d) { return kb < betas.size() ? betas[kb++] : d; };
  if (name == "Sigmoid")
    return [](float x) { return 1.f / (1.f + std::exp(-x)); };
  if (name == "Tanh")
    return [](float x) { return std::tanh(x); };
  if (name == "Relu")
    return [](float x) { return std::max(0.f, x); };
  if (name == "Softsign")
    return [](float x) { return x / (1.f + std::fabs(x)); };
  if (name == "Softplus")
    return [](float x) { return std::log1p(std::exp(x)); };
  if (name == "HardSigmoid") {
    float a = alpha(0.2f), b = beta(0.5f);
    return [a, b](float x) { return std::clamp(a * x + b, 0.f, 1.f); };
  }
  if (name == "LeakyRelu") {
    float a = alpha(0.01f);
    return [a](float x) { return x >= 0 ? x : a * x; };
  }
  if (name == "ThresholdedRelu") {
    float a = alpha(1.f);
    return [a](float x) { return x > a ? x : 0.f; };
  }
  if (name == "ScaledTanh") {
    float a = alpha(1.f), b = beta(1.f);
    return [a, b](float x) { return a * std::tanh(b * x); };
  }
  if (name == "Affine") {
    float a = alpha(1.f), b = beta(0.f);
    return [a, b](float x) { return a * x + b; };
  }
  if (name == "Elu") {
    float a = alpha(1.f);
    return [a](float x) { return x >= 0 ? x : a * (std::exp(x) - 1.f); };
  }
  return nullptr;
}

enum class Cell { LSTM, GRU, RNN };

/// What the three layers share: shapes, layouts, inputs and activations.
struct Layer {
  Cell cell;
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1, gates = 1;
  bool batchFirst = false, bothWays = false, reverse = false;
  float clip = 0;               ///< 0: no clip
  std::vector<Activation> acts; ///< per direction: LSTM f g h, GRU f g, RNN f
  std::vector<int64_t> lens;    ///< per batch entry
  const Tensor *x = nullptr, *w = nullptr, *r = nullptr, *b = nullptr, *h0 = nullptr, *c0 = nullptr,
               *p = nullptr;

  /// Element (t, b, k) of X.
  float xAt(int64_t t, int64_t bi, int64_t k) const {
    return x->data<float>()[(batchFirst ? bi * seq + t : t * batch + bi) * input + k];
  }
  /// Element (direction d, batch b, k) of an initial state (layout-aware).
  float stateAt(const Tensor *s, int64_t d, int64_t bi, int64_t k) const {
    if (!s)
      return 0.f;
    return s->data<float>()[(batchFirst ? bi * dirs + d : d * batch + bi) * hidden + k];
  }
};

bool readLayer(KernelContext &ctx, Cell cell, Layer &l) {
  l.cell = cell;
  l.gates = cell == Cell::LSTM ? 4 : cell == Cell::GRU ? 3 : 1;
  l.x = ctx.input(0), l.w = ctx.input(1), l.r = ctx.input(2), l.b = ctx.input(3);
  const Tensor *lens = ctx.input(4);
  l.h0 = ctx.input(5);
  l.c0 = cell == Cell::LSTM ? ctx.input(6) : nullptr;
  l.p = cell == Cell::LSTM ? ctx.input(7) : nullptr;
  for (const Tensor *t : {l.x, l.w, l.r, l.b, l.h0, l.c0, l.p})
    if (t && t->elem() != ElemType::Float)
      return ctx.fail("recurrent layers take float tensors, not " + typeName(t->elem()));
  if (!l.x || !l.w || !l.r || l.x->rank() != 3 || l.w->rank() != 3 || l.r->rank() != 3)
    return ctx.fail("needs X, W and R of rank 3");
  l.batchFirst = ctx.attrInt("layout", 0) == 1;
  l.seq = l.x->dim(l.batchFirst ? 1 : 0);
  l.batch = l.x->dim(l.batchFirst ? 0 : 1);
  l.input = l.x->dim(2);
  std::string direction = ctx.attrString("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    return ctx.fail("unknown direction `" + direction + "`");
  l.bothWays = direction == "bidirectional";
  l.reverse = direction == "reverse";
  l.dirs = l.bothWays ? 2 : 1;
  l.hidden = ctx.attrInt("hidden_size", l.r->dim(2));
  int64_t gh = l.gates * l.hidden;
  if (l.w->shape() != Shape{l.dirs, gh, l.input} || l.r->shape() != Shape{l.dirs, gh, l.hidden})
    return ctx.fail("W or R does not match the directions, hidden_size and input size");
  if (l.b && l.b->shape() != Shape{l.dirs, 2 * gh})
    return ctx.fail("B must be [directions, " + std::to_string(2 * gh) + "]");
  Shape state = l.batchFirst ? Shape{l.batch, l.dirs, l.hidden} : Shape{l.dirs, l.batch, l.hidden};
  for (const Tensor *s : {l.h0, l.c0})
    if (s && s->shape() != state)
      return ctx.fail("an initial state must be " + shapeStr(state));
  if (l.p && l.p->shape() != Shape{l.dirs, 3 * l.hidden})
    return ctx.fail("P must be [directions, " + std::to_string(3 * l.hidden) + "]");
  l.lens.assign(size_t(l.batch), l.seq);
  if (lens) {
    std::vector<int64_t> v(size_t(lens->numel()));
    if (lens->elem() == ElemType::Int32)
      std::copy(lens->data<int32_t>(), lens->data<int32_t>() + lens->numel(), v.begin());
    else if (lens->elem() == ElemType::Int64)
      std::copy(lens->data<int64_t>(), lens->data<int64_t>() + lens->numel(), v.begin());
    else
      return ctx.fail("sequence_lens must be integers");
    if (int64_t(v.size()) != l.batch)
      return ctx.fail("sequence_lens must have one entry per batch entry");
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i] < 0 || v[i] > l.seq)
        return ctx.fail("a sequence length is out of [0, " + std::to_string(l.seq) + "]");
      l.lens[i] = v[i];
    }
  }
  l.clip = ctx.attrFloat("clip", 0.f);
  std::vector<std::string> names;
  if (const graph::Attribute *a = ctx.node.attr("activations"))
    names = a->strings;
  std::vector<std::string> dflt = cell == Cell::LSTM
                                      ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                  : cell == Cell::GRU ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                      : std::vector<std::string>{"Tanh"};
  size_t per = dflt.size();
  if (names.empty())
    for (int64_t d = 0; d < l.dirs; ++d)
      names.insert(names.end(), dflt.begin(), dflt.end());
  if (names.size() != per * size_t(l.dirs))
    return ctx.fail("expects " + std::to_string(per * size_t(l.dirs)) + " activations");
  std::vector<float> alphas = ctx.attrFloats("activation_alpha"),
                     betas = ctx.attrFloats("activation_beta");
  size_t ka = 0, kb = 0;
  for (const std::string &n : names) {
    Activation f = activation(n, alphas, betas, ka, kb);
    if (!f)
      return ctx.fail("unknown activation `" + n + "`");
    l.acts.push_back(std::move(f));
  }
  return true;
}

/// Runs direction `d` of `l`: writes Y (if wanted), the last H and C.
void runDirection(const Layer &l, int64_t d, bool backwards, bool inputForget,
                  bool linearBeforeReset, float *y, float *yh, float *yc) {
  int64_t H = l.hidden, G = l.gates * H, B = l.batch, T = l.seq;
  const float *w = l.w->data<float>() + d * G * l.input, *r = l.r->data<float>() + d * G * H;
  const float *wb = l.b ? l.b->data<float>() + d * 2 * G : nullptr, *rb = wb ? wb + G : nullptr;
  const float *p = l.p ? l.p->data<float>() + d * 3 * H : nullptr;
  const Activation *f = &l.acts[size_t(d) * (l.cell == Cell::LSTM  ? 3
                                             : l.cell == Cell::GRU ? 2
                                                                   : 1)];
  // X·Wᵀ (+ Wb) for every step and batch entry.
  std::vector<float> xw(size_t(T * B * G));
  parallelFor(T * B, G * l.input, [&](int64_t s0, int64_t s1) {
    for (int64_t s = s0; s < s1; ++s) {
      int64_t t = s / B, bi = s % B;
      for (int64_t g = 0; g < G; ++g) {
        float acc = wb ? wb[g] : 0.f;
        for (int64_t k = 0; k < l.input; ++k)
          acc += l.xAt(t, bi, k) * w[g * l.input + k];
        xw[size_t(s * G + g)] = acc;
      }
    }
  });
  auto clip = [&](float v) { return l.clip > 0 ? std::clamp(v, -l.clip, l.clip) : v; };
  std::vector<float> h(size_t(B * H)), c(size_t(B * H)), gate(static_cast<size_t>(G)),
      hr(static_cast<size_t>(G));
  for (int64_t bi = 0; bi < B; ++bi)
    for (int64_t k = 0; k < H; ++k) {
      h[size_t(bi * H + k)] = l.stateAt(l.h0, d, bi, k);
      c[size_t(bi * H + k)] = l.stateAt(l.c0, d, bi, k);
    }
  for (int64_t bi = 0; bi < B; ++bi) {
    int64_t len = l.lens[size_t(bi)];
    float *hb = &h[size_t(bi * H)], *cb = &c[size_t(bi * H)];
    for (int64_t j = 0; j < len; ++j) {
      int64_t t = backwards ? len - 1 - j : j;
      const float *xg = &xw[size_t((t * B + bi) * G)];
      // H·Rᵀ (+ Rb).
      for (int64_t g = 0; g < G; ++g) {
        float acc = rb ? rb[g] : 0.f;
        for (int64_t k = 0; k < H; ++k)
          acc += hb[k] * r[g * H + k];
        hr[size_t(g)] = acc;
      }
      if (l.cell == Cell::LSTM) {
        for (int64_t k = 0; k < H; ++k) {
          float i = xg[k] + hr[size_t(k)], o = xg[H + k] + hr[size_t(H + k)],
                fg = xg[2 * H + k] + hr[size_t(2 * H + k)],
                cc = xg[3 * H + k] + hr[size_t(3 * H + k)];
          if (p) {
            i += p[k] * cb[k];
            fg += p[2 * H + k] * cb[k];
          }
          i = f[0](clip(i));
          fg = inputForget ? 1.f - i : f[0](clip(fg));
          cc = f[1](clip(cc));
          float cn = fg * cb[k] + i * cc;
          if (p)
            o += p[H + k] * cn;
          o = f[0](clip(o));
          cb[k] = cn;
          gate[size_t(k)] = o * f[2](cn);
        }
      } else if (l.cell == Cell::GRU) {
        // z and r; h̃ with r applied to H before R's product (default) or
        // to the product.
        for (int64_t k = 0; k < H; ++k) {
          float z = f[0](clip(xg[k] + hr[size_t(k)]));
          float rr = f[0](clip(xg[H + k] + hr[size_t(H + k)]));
          gate[size_t(k)] = z;
          gate[size_t(H + k)] = rr;
          if (linearBeforeReset) // r ⊙ (H·Rhᵀ + Rbh)
            gate[size_t(2 * H + k)] = xg[2 * H + k] + rr * hr[size_t(2 * H + k)];
        }
        if (!linearBeforeReset) {
          // (r ⊙ H)·Rhᵀ + Rbh
          for (int64_t k = 0; k < H; ++k) {
            float acc = rb ? rb[2 * H + k] : 0.f;
            for (int64_t m = 0; m < H; ++m)
              acc += gate[size_t(H + m)] * hb[m] * r[(2 * H + k) * H + m];
            gate[size_t(2 * H + k)] = xg[2 * H + k] + acc;
          }
        }
        for (int64_t k = 0; k < H; ++k) {
          float z = gate[size_t(k)], hh = f[1](clip(gate[size_t(2 * H + k)]));
          gate[size_t(k)] = (1.f - z) * hh + z * hb[k];
        }
      } else {
        for (int64_t k = 0; k < H; ++k)
          gate[size_t(k)] = f[0](clip(xg[k] + hr[size_t(k)]));
      }
      std::copy(gate.begin(), gate.begin() + H, hb);
      if (y) {
        int64_t at = l.batchFirst ? (bi * T + t) * l.dirs + d : (t * l.dirs + d) * B + bi;
        std::copy(hb, hb + H, y + at * H);
      }
    }
  }
  for (int64_t bi = 0; bi < B; ++bi) {
    int64_t at = l.batchFirst ? bi * l.dirs + d : d * B + bi;
    if (yh)
      std::copy(&h[size_t(bi * H)], &h[size_t(bi * H)] + H, yh + at * H);
    if (yc)
      std::copy(&c[size_t(bi * H)], &c[size_t(bi * H)] + H, yc + at * H);
  }
}

template <Cell C> bool recurrentKernel(KernelContext &ctx) {
  Layer l;
  if (!readLayer(ctx, C, l))
    return false;
  bool inputForget = C == Cell::LSTM && ctx.attrInt("input_forget", 0) != 0;
  bool linearBeforeReset = C == Cell::GRU && ctx.attrInt("linear_before_reset", 0) != 0;
  Shape ys = l.batchFirst ? Shape{l.batch, l.seq, l.dirs, l.hidden}
                          : Shape{l.seq, l.dirs, l.batch, l.hidden};
  Shape ss = l.batchFirst ? Shape{l.batch, l.dirs, l.hidden} : Shape{l.dirs, l.batch, l.hidden};
  Tensor y(ElemType::Float, ys, true), yh(ElemType::Float, ss, true), yc(ElemType::Float, ss, true);
  for (int64_t d = 0; d < l.dirs; ++d)
    runDirection(l, d, l.reverse || d == 1, inputForget, linearBeforeReset, y.data<float>(),
                 yh.data<float>(), C == Cell::LSTM ? yc.data<float>() : nullptr);
  ctx.outputs[0] = std::move(y);
  if (ctx.outputs.size() > 1)
    ctx.outputs[1] = std::move(yh);
  if (ctx.outputs.size() > 2 && C == Cell::LSTM)
    ctx.outputs[2] = std::move(yc);
  return true;
}

} // namespace

void rt::registerRecurrentKernels(KernelRegistry &r) {
  r.add("LSTM", recurrentKernel<Cell::LSTM>);
  r.add("GRU", recurrentKernel<Cell::GRU>);
  r.add("RNN", recurrentKernel<Cell::RNN>);
}
