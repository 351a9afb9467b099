//===- SmoothQuant.cpp - Activation outliers moved into the weights --------===//
//
// smooth_quant (docs/quantize.md, "Corrections"; Xiao et al., SmoothQuant,
// 2023): a tensor X that only linear layers read (X W, X's last axis the
// layers' input channels), produced by an op that scales each channel by a
// constant (LayerNormalization's scale and bias, the Mul and Add of a LayerNorm
// or RMSNorm spelled out), is divided channel by channel by s, and each
// layer's input channel j multiplied by s_j: (X / s)(s W) = X W, the model
// computes the same outputs. With s_j = a_j^alpha / w_j^(1 - alpha) (a_j the
// channel's largest magnitude on the calibration data, w_j the largest
// weight of input channel j) the channels' ranges move toward each other, and
// a per-tensor activation grid stops spending its steps on a few outlier
// channels.
//
// alpha (the recipe's, or searched over 0.05, 0.10 .. 1) is the one whose
// predicted error of the layers' outputs is smallest. The prediction treats
// rounding as uniform noise of step D (variance D^2/12): for output k of a
// layer, D_x^2/12 sum_j s_j^2 W_jk^2 from the activation grid and
// D_wk^2/12 sum_j E[X_j^2] / s_j^2 from the kernel's (D_wk its per-channel or
// per-tensor step), each step from the grid the plan gives the tensor (bits,
// method, a power-of-two threshold rounded up). X is smoothed only when the
// prediction beats leaving it alone.
//
//===----------------------------------------------------------------------===//
#include "quant/ptq/corrections/Corrections.h"

#include "ir/graph/OnnxIO.h"
#include "quant/core/GraphHelpers.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

using namespace tpcc;
using namespace tpcc::quant;
using namespace tpcc::quant::edits;
using graph::Node;
using graph::Use;
using graph::Value;

namespace {

/// The number of elements of `v`'s constant when it is a vector along its
/// last axis (shape [C] or [1, ..., 1, C]); 0 otherwise.
int64_t channelVector(const Value *v) {
  if (!isFloatConstant(v) || v->constant->dims.empty())
    return 0;
  const std::vector<int64_t> &d = v->constant->dims;
  for (size_t i = 0; i + 1 < d.size(); ++i)
    if (d[i] != 1)
      return 0;
  return d.back();
}

/// The input-channel axis of a linear layer reading `x` as input 0 with a
/// rank-2 float constant kernel: MatMul [K, N] (0), Gemm with transA = 0
/// ([K, N]: 0, transB = 1 [N, K]: 1). None for anything else.
std::optional<int64_t> kernelInAxis(const graph::Model &m, const Use &u) {
  const Node *n = u.node;
  if (u.index != 0 || !(isOp(n, "MatMul") || isOp(n, "Gemm")))
    return std::nullopt;
  const Value *w = n->input(1);
  if (!isFloatConstant(w) || w->constant->dims.size() != 2)
    return std::nullopt;
  if (isOp(n, "MatMul"))
    return 0;
  graph::NodeAttrs a = graph::attrsOf(m, *n);
  if (a.getInt("transA", 0) != 0)
    return std::nullopt;
  return a.getInt("transB", 0) ? 1 : 0;
}

} // namespace

namespace {

/// The linear layers reading `x` (directly, or through one Transpose that keeps
/// the last axis last, whose shape Shape ops may also read); false when
/// anything else reads it.
bool linearReaders(const graph::Model &m, const Value *x, ScalingCandidate &c) {
  if (x->isGraphOutput || x->uses.empty())
    return false;
  for (const Use &u : x->uses) {
    if (std::optional<int64_t> axis = kernelInAxis(m, u)) {
      c.linears.push_back(u.node);
      c.axes.push_back(*axis);
      continue;
    }
    const Node *t = u.node;
    std::vector<int64_t> perm =
        isOp(t, "Transpose") ? graph::attrsOf(m, *t).getInts("perm") : std::vector<int64_t>{};
    if (perm.empty() || perm.back() != int64_t(perm.size()) - 1 || t->outputs[0]->isGraphOutput ||
        t->outputs[0]->uses.empty())
      return false;
    for (const Use &v : t->outputs[0]->uses) {
      if (isOp(v.node, "Shape")) // reads the shape, which the factors leave alone
        continue;
      std::optional<int64_t> axis = kernelInAxis(m, v);
      if (!axis)
        return false;
      c.linears.push_back(v.node);
      c.axes.push_back(*axis);
    }
  }
  return true;
}

/// The per-channel constants of the op producing `x` that a factor per
/// channel divides exactly: LayerNormalization's scale and bias (over the
/// last axis), Mul(., g), Add(Mul(., g), b).
bool scaledConstants(const graph::Model &m, const Value *x, ScalingCandidate &c) {
  const Node *p = x->producer;
  auto vectorInput = [&](const Node *n) -> int {
    for (unsigned k = 0; k < 2 && k < n->inputs.size(); ++k)
      if (channelVector(n->input(k)) > 0 && n->input(1 - k) && !n->input(1 - k)->constant)
        return int(k);
    return -1;
  };
  if (isOp(p, "LayerNormalization")) {
    int64_t axis = graph::attrsOf(m, *p).getInt("axis", -1);
    const auto &shape = x->type.shape;
    if (!(axis == -1 || (shape && axis == int64_t(shape->size()) - 1)) ||
        channelVector(p->input(1)) <= 0 || (p->input(2) && channelVector(p->input(2)) <= 0))
      return false;
    c.divided.push_back({p->name, 1});
    if (p->input(2))
      c.divided.push_back({p->name, 2});
  } else if (isOp(p, "Add") && p->inputs.size() == 2) {
    int k = vectorInput(p);
    const Node *mul = k >= 0 ? p->input(1 - k)->producer : nullptr;
    int g = isOp(mul, "Mul") && singleConsumer(mul->outputs[0]) == p ? vectorInput(mul) : -1;
    if (g < 0)
      return false;
    c.divided.push_back({mul->name, unsigned(g)});
    c.divided.push_back({p->name, unsigned(k)});
  } else if (isOp(p, "Mul") && p->inputs.size() == 2) {
    int g = vectorInput(p);
    if (g < 0)
      return false;
    c.divided.push_back({p->name, unsigned(g)});
  } else {
    return false;
  }
  return true;
}

} // namespace

std::vector<ScalingCandidate> quant::scalingCandidates(const plan::Plan &plan, bool weightOnly) {
  std::vector<ScalingCandidate> out;
  const graph::Model &m = *plan.model;
  for (const plan::PlanNode &pn : plan.nodes) {
    if (pn.innerOfChain || pn.node->outputs.empty())
      continue;
    ScalingCandidate c;
    c.x = pn.node->outputs[0];
    const plan::PlanTensor *t = plan.tensorOf(c.x);
    // smooth_quant: nothing to gain where X is not quantized, or has 16 bits
    // or more; awq: X stays float.
    bool quantized = t && t->quantize;
    if ((weightOnly ? quantized : !quantized || t->bits >= 16) || !scaledConstants(m, c.x, c) ||
        !linearReaders(m, c.x, c))
      continue;
    c.channels = channelVector(nodeNamed(m.graph, c.divided[0].node)->input(c.divided[0].input));
    bool fits = true;
    for (size_t i = 0; i < c.linears.size(); ++i)
      fits &= c.linears[i]->input(1)->constant->dims[size_t(c.axes[i])] == c.channels;
    for (const Smoothing::Scaled &d : c.divided)
      fits &= channelVector(nodeNamed(m.graph, d.node)->input(d.input)) == c.channels;
    if (fits)
      out.push_back(std::move(c));
  }
  return out;
}

namespace {

/// The step of a grid with `bits` and `method` holding [lo, hi].
double stepOf(ir::QuantMethod method, int bits, bool isSigned, double lo, double hi) {
  if (method == ir::QuantMethod::Uniform)
    return (hi - lo) / (std::ldexp(1.0, bits) - 1);
  double t = std::max(-lo, hi);
  if (method == ir::QuantMethod::PowerOfTwo && t > 0)
    t = std::exp2(std::ceil(std::log2(t)));
  return t / std::ldexp(1.0, isSigned ? bits - 1 : bits);
}

/// One linear layer's kernel as a [K, N] view (input channel j, output k).
struct Kernel {
  std::vector<float> w;
  int64_t k = 0, n = 0, axis = 0;
  ir::AttrConfig config;
  double at(int64_t j, int64_t o) const { return w[size_t(axis == 0 ? j * n + o : o * k + j)]; }
};

/// The predicted error of the layers' outputs with factors `s` (see the file
/// comment).
double predictedError(const std::vector<double> &s, const std::vector<double> &cmin,
                      const std::vector<double> &cmax, const std::vector<double> &square,
                      const plan::PlanTensor &t, const std::vector<Kernel> &kernels) {
  size_t C = s.size();
  double lo = 0, hi = 0;
  for (size_t j = 0; j < C; ++j) {
    lo = std::min(lo, cmin[j] / s[j]);
    hi = std::max(hi, cmax[j] / s[j]);
  }
  bool isSigned =
      t.signedness == ir::Signedness::Signed || (t.signedness == ir::Signedness::Auto && lo < 0);
  double dx = stepOf(t.method, t.bits, isSigned, lo, hi);
  double inputNoise = 0; // sum_j E[X_j^2] / s_j^2
  for (size_t j = 0; j < C; ++j)
    inputNoise += square[j] / (s[j] * s[j]);
  double total = 0;
  for (const Kernel &K : kernels) {
    std::vector<double> lows(size_t(K.n), 0), highs(size_t(K.n), 0), energy(size_t(K.n), 0);
    for (int64_t j = 0; j < K.k; ++j)
      for (int64_t o = 0; o < K.n; ++o) {
        double w = K.at(j, o) * s[size_t(j)];
        lows[size_t(o)] = std::min(lows[size_t(o)], w);
        highs[size_t(o)] = std::max(highs[size_t(o)], w);
        energy[size_t(o)] += w * w;
      }
    double allLo = *std::min_element(lows.begin(), lows.end()),
           allHi = *std::max_element(highs.begin(), highs.end());
    for (int64_t o = 0; o < K.n; ++o) {
      double dw = 0;
      if (K.config.quantize) {
        double l = K.config.perChannel ? lows[size_t(o)] : allLo,
               h = K.config.perChannel ? highs[size_t(o)] : allHi;
        dw = stepOf(K.config.method, K.config.bits, true, l, h);
      }
      total += (dx * dx * energy[size_t(o)] + dw * dw * inputNoise) / 12;
    }
  }
  return total;
}

std::vector<double> factorsFor(double alpha, const std::vector<double> &a,
                               const std::vector<double> &w) {
  std::vector<double> s(a.size(), 1.0);
  for (size_t j = 0; j < a.size(); ++j)
    if (a[j] > 0 && w[j] > 0)
      s[j] = std::clamp(std::pow(a[j], alpha) / std::pow(w[j], 1 - alpha), 1e-5, 1e5);
  return s;
}

} // namespace

std::vector<StatsRequest> quant::scalingRequests(const plan::Plan &plan, bool weightOnly) {
  std::vector<StatsRequest> out;
  for (const ScalingCandidate &c : scalingCandidates(plan, weightOnly))
    out.push_back({c.x, TensorStats::kLastAxis});
  return out;
}

std::optional<Smoothing>
quant::bestScaling(const ScalingCandidate &c, const std::vector<double> &alphas, double none,
                   llvm::function_ref<std::vector<double>(double)> factors,
                   llvm::function_ref<double(const std::vector<double> &)> error) {
  double best = none, bestAlpha = -1;
  for (double alpha : alphas) {
    double e = error(factors(alpha));
    if (e < best) {
      best = e;
      bestAlpha = alpha;
    }
  }
  if (bestAlpha < 0 || !(best > 0))
    return std::nullopt;
  Smoothing s;
  s.tensor = c.x->name;
  s.divided = c.divided;
  for (const Node *l : c.linears)
    s.linears.push_back(l->name);
  s.axes = c.axes;
  s.factors = factors(bestAlpha);
  s.alpha = bestAlpha;
  s.predictedGainDb = 10 * std::log10(none / best);
  return s;
}

void quant::findSmoothings(const plan::Plan &plan, const ir::Recipe &recipe,
                           const std::vector<std::unique_ptr<TensorStats>> &stats,
                           std::vector<Smoothing> &out) {
  for (const ScalingCandidate &c : scalingCandidates(plan, false)) {
    const TensorStats *st = stats[c.x->id].get();
    if (!st || int64_t(st->channelMin().size()) != c.channels)
      continue;
    const std::vector<double> &cmin = st->channelMin(), &cmax = st->channelMax();
    std::vector<double> mean = st->channelMean(), var = st->channelVariance();
    std::vector<double> a(size_t(c.channels)), square(size_t(c.channels)),
        w(size_t(c.channels), 0.0);
    for (size_t j = 0; j < a.size(); ++j) {
      a[j] = std::max(std::fabs(cmin[j]), std::fabs(cmax[j]));
      square[j] = var[j] + mean[j] * mean[j];
    }
    std::vector<Kernel> kernels;
    for (size_t i = 0; i < c.linears.size(); ++i) {
      Kernel K;
      K.w = floatValues(c.linears[i]->input(1));
      const std::vector<int64_t> &d = c.linears[i]->input(1)->constant->dims;
      K.axis = c.axes[i];
      K.k = d[size_t(K.axis)];
      K.n = d[size_t(1 - K.axis)];
      if (const plan::PlanNode *pn = planNodeOf(plan, c.linears[i]))
        for (const plan::PlanWeight &pw : pn->weights)
          if (pw.inputIndex == 1)
            K.config = pw.quantize ? pw.config : ir::AttrConfig{};
      for (int64_t j = 0; j < K.k; ++j)
        for (int64_t o = 0; o < K.n; ++o)
          w[size_t(j)] = std::max(w[size_t(j)], std::fabs(K.at(j, o)));
      kernels.push_back(std::move(K));
    }
    const plan::PlanTensor &t = *plan.tensorOf(c.x);
    std::vector<double> ones(a.size(), 1.0);
    double none = predictedError(ones, cmin, cmax, square, t, kernels);
    std::vector<double> alphas;
    if (recipe.smoothQuant.alpha)
      alphas.push_back(*recipe.smoothQuant.alpha);
    else
      for (int k = 1; k <= 20; ++k)
        alphas.push_back(0.05 * k);
    std::optional<Smoothing> s = bestScaling(
        c, alphas, none, [&](double alpha) { return factorsFor(alpha, a, w); },
        [&](const std::vector<double> &f) {
          return predictedError(f, cmin, cmax, square, t, kernels);
        });
    if (s)
      out.push_back(std::move(*s));
  }
}

LogicalResult quant::applySmoothing(graph::Model &m, const Smoothing &s, DiagnosticEngine &diags) {
  graph::Graph &g = m.graph;
  for (const Smoothing::Scaled &d : s.divided) {
    Node *n = nodeNamed(g, d.node);
    if (!n || channelVector(n->input(d.input)) != int64_t(s.factors.size()))
      return diags.emitAt(m.path, diag::err_quant_unsupported,
                          fmt::format("smooth_quant: the model has no node `{}` with {} "
                                      "per-channel values at input {}",
                                      d.node, s.factors.size(), d.input));
    std::vector<float> v = floatValues(n->input(d.input));
    for (size_t j = 0; j < v.size(); ++j)
      v[j] = float(v[j] / s.factors[j]);
    setConstant(g, *n, d.input, v, n->input(d.input)->constant->dims,
                n->input(d.input)->name + "_smoothed");
  }
  for (size_t i = 0; i < s.linears.size(); ++i) {
    Node *n = nodeNamed(g, s.linears[i]);
    const Value *w = n ? n->input(1) : nullptr;
    int64_t axis = s.axes[i];
    if (!w || !w->constant || w->constant->dims.size() != 2 ||
        w->constant->dims[size_t(axis)] != int64_t(s.factors.size()))
      return diags.emitAt(m.path, diag::err_quant_unsupported,
                          fmt::format("smooth_quant: the model has no linear node `{}` with {} "
                                      "input channels",
                                      s.linears[i], s.factors.size()));
    std::vector<float> v = floatValues(w);
    int64_t cols = w->constant->dims[1];
    for (size_t e = 0; e < v.size(); ++e) {
      int64_t j = axis == 0 ? int64_t(e) / cols : int64_t(e) % cols;
      v[e] = float(v[e] * s.factors[size_t(j)]);
    }
    setConstant(g, *n, 1, v, w->constant->dims, w->name + "_smoothed");
  }
  g.relink();
  return success();
}

std::string Smoothing::describe() const {
  auto [lo, hi] = std::minmax_element(factors.begin(), factors.end());
  std::vector<std::string> names;
  for (const std::string &l : linears)
    names.push_back("`" + l + "`");
  return fmt::format("{}: `{}` -> {} (alpha {:.2f}, factors {:.3g} .. {:.3g}, "
                     "predicted output error {:+.1f} dB)",
                     awq ? "awq" : "smooth_quant", tensor, fmt::join(names, ", "), alpha, *lo, *hi,
                     -predictedGainDb);
}
