//===- Corrections.cpp - Pre-statistics corrections -------------------------===//
//
// relu_unbound_correction and activation_channel_equalization (see
// Corrections.h).
//
//===----------------------------------------------------------------------===//
#include "quant/ptq/corrections/Corrections.h"

#include "ir/graph/LinearKernel.h"
#include "ir/graph/OnnxIO.h"
#include "quant/core/GraphHelpers.h"
#include "quant/core/grids/Grid.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

using namespace tpcc;
using namespace tpcc::quant;
using namespace tpcc::quant::edits;
using graph::Node;
using graph::Value;

//===----------------------------------------------------------------------===//
// Finding
//===----------------------------------------------------------------------===//

namespace {

void findReluBounds(const plan::Plan &plan, const ir::Recipe &recipe, PreCorrections &out) {
  for (const plan::PlanNode &pn : plan.nodes) {
    const Node *clip = pn.node;
    double lo, hi;
    // A Clip inside a composite chain (HardSwish's ReLU6) is not an activation.
    if (pn.chain >= 0 || !isOp(clip, "Clip") ||
        !clipBounds(graph::attrsOf(*plan.model, *clip), *clip, lo, hi) || lo != 0 || !(hi > 0) ||
        std::exp2(std::round(std::log2(hi))) == hi)
      continue;
    const Value *in = clip->input(0), *outV = clip->outputs[0];
    Node *first = in ? in->producer : nullptr;
    unsigned index = 0;
    Node *second = singleConsumer(outV, &index);
    const graph::Model &m = *plan.model;
    if (!isLinearWithConstants(m, first) || singleConsumer(in) != clip ||
        !isLinearWithConstants(m, second) || index != 0)
      continue;
    const plan::PlanNode *firstPlan = planNodeOf(plan, first);
    std::optional<int64_t> firstOut = firstPlan ? kernelOutAxis(*firstPlan) : std::nullopt;
    if (!firstOut)
      continue;
    const plan::PlanTensor *t = plan.tensorOf(outV);
    ir::QuantMethod method = t ? t->method : ir::QuantMethod::Symmetric;
    if (recipe.activationMethod && !ir::isLut(*recipe.activationMethod))
      method = *recipe.activationMethod;
    if (!t || !t->quantize || method != ir::QuantMethod::PowerOfTwo)
      continue;
    // The bound lands on the largest value of the threshold-8 grid, 8 - step,
    // not on 8 itself: the outputs the Clip saturates (many, in a ReLU6
    // network) are then exact, where a bound of 8 rounds every one of them
    // down by a step, an error of one sign that the next layer sums.
    double top = powerOfTwoGrid(8, recipe.activationBits.value_or(t->bits),
                                t->signedness == ir::Signedness::Signed)
                     .hi;
    out.reluBounds.push_back({clip->name, first->name, second->name, hi, hi / top, *firstOut});
  }
}

struct EqCandidate {
  const Node *relu, *first, *second; // relu is null for Conv -> Conv
  /// The tensor whose channels are equalized: the Relu's output, or first's.
  const Value *scaled() const { return (relu ? relu : first)->outputs[0]; }
};

std::vector<EqCandidate> equalizationCandidates(const plan::Plan &plan) {
  std::vector<EqCandidate> out;
  const graph::Model &m = *plan.model;
  for (const plan::PlanNode &pn : plan.nodes) {
    const Node *n = pn.node;
    // Conv -> Relu -> Conv, or Conv -> Conv (a depthwise convolution and the 1x1
    // convolution after it): a positive per-channel factor commutes with both.
    if (pn.chain >= 0 || !(isOp(n, "Relu") || isOp(n, "Conv")))
      continue;
    const Node *relu = isOp(n, "Relu") ? n : nullptr;
    const Value *in = relu ? relu->input(0) : nullptr;
    const Node *first = relu ? (in ? in->producer : nullptr) : n;
    unsigned index = 0;
    Node *second = singleConsumer(n->outputs[0], &index);
    if (!isOp(first, "Conv") || !isOp(second, "Conv") || (relu && singleConsumer(in) != relu) ||
        index != 0 || !isLinearWithConstants(m, first) || !isLinearWithConstants(m, second))
      continue;
    // scaleLinear's Conv layout: output channels along axis 0.
    const plan::PlanNode *p1 = planNodeOf(plan, first), *p2 = planNodeOf(plan, second);
    if (p1 && p2 && kernelOutAxis(*p1) == 0 && kernelOutAxis(*p2) == 0)
      out.push_back({relu, first, second});
  }
  return out;
}

} // namespace

LogicalResult quant::findPreStatisticsCorrections(const plan::Plan &plan, const ir::Recipe &recipe,
                                                  rt::Executor &ex, CalibrationData &data,
                                                  PreCorrections &out, DiagnosticEngine &diags) {
  if (recipe.reluUnboundCorrection)
    findReluBounds(plan, recipe, out);
  std::vector<EqCandidate> cands;
  if (recipe.activationChannelEqualization)
    cands = equalizationCandidates(plan);
  std::vector<StatsRequest> requests;
  for (const EqCandidate &c : cands)
    requests.push_back({c.scaled(), 1});
  // One statistics pass for all (a Relu output is never a tensor to smooth;
  // smooth_quant's tensors are quantized, awq's float).
  std::vector<StatsRequest> scaled;
  if (recipe.smoothQuant.enabled)
    scaled = scalingRequests(plan, false);
  if (recipe.awq.enabled)
    for (StatsRequest &r : scalingRequests(plan, true))
      scaled.push_back(r);
  for (const StatsRequest &r : scaled)
    if (std::none_of(requests.begin(), requests.end(),
                     [&](const StatsRequest &q) { return q.value == r.value; }))
      requests.push_back(r);
  if (requests.empty())
    return success();
  std::vector<std::unique_ptr<TensorStats>> stats;
  if (failed(collectStatistics(
          ex, data, requests, stats, [](int64_t) {}, diags)))
    return failure();
  for (const EqCandidate &c : cands) {
    const TensorStats *s = stats[c.scaled()->id].get();
    int64_t channels = c.first->input(1)->constant->dims[0];
    if (!s || int64_t(s->channelVariance().size()) != channels)
      continue;
    ChannelEqualization e{c.relu ? c.relu->name : "", c.first->name, c.second->name, {}};
    bool any = false;
    for (double var : s->channelVariance()) {
      double sigma = std::sqrt(var);
      e.factors.push_back(sigma > 1 ? 1 / sigma : 1.0); // e = min(1, 1/sigma')
      any |= sigma > 1;
    }
    if (any)
      out.equalizations.push_back(std::move(e));
  }
  if (recipe.smoothQuant.enabled)
    findSmoothings(plan, recipe, stats, out.smoothings);
  if (recipe.awq.enabled)
    findAwqScalings(plan, recipe, stats, out.smoothings);
  return success();
}

//===----------------------------------------------------------------------===//
// Applying
//===----------------------------------------------------------------------===//

namespace {

/// Multiplies the kernel (and bias) of linear node `n` of `m`, whose kernel's
/// output channels run along `outAxis` (Conv: 0): output channel o by
/// out[o], input channel i by in[i]; an empty vector is all ones.
void scaleLinear(graph::Model &m, Node &n, int64_t outAxis, const std::vector<double> &out,
                 const std::vector<double> &in, const std::string &suffix) {
  graph::Graph &g = m.graph;
  const graph::Tensor &k = *n.input(1)->constant;
  std::vector<float> w = floatValues(n.input(1));
  std::vector<int64_t> dims = k.dims;
  auto factor = [](const std::vector<double> &f, int64_t i) {
    return f.empty() ? 1.0 : f[size_t(i)];
  };
  if (n.opType == "Conv") {
    std::optional<graph::LinearKernel> K =
        graph::LinearKernel::convolution(dims, graph::attrsOf(m, n).getInt("group", 1), false);
    for (int64_t o = 0; K && o < K->rows; ++o)
      for (int64_t col = 0; col < K->cols; col += K->taps) {
        double f = factor(out, o) * factor(in, K->inputChannel(o, col));
        for (int64_t t = 0; t < K->taps; ++t)
          w[size_t(K->at(o, col + t))] = float(w[size_t(K->at(o, col + t))] * f);
      }
  } else if (std::optional<graph::LinearKernel> K = graph::LinearKernel::matrix(dims, outAxis)) {
    // Gemm, transA = 0: B is [K, N] or [N, K]
    for (int64_t kk = 0; kk < K->cols; ++kk)
      for (int64_t j = 0; j < K->rows; ++j) {
        size_t at = size_t(K->at(j, kk));
        w[at] = float(w[at] * factor(out, j) * factor(in, kk));
      }
  }
  setConstant(g, n, 1, w, dims, n.input(1)->name + suffix);
  if (n.input(2) && !out.empty()) {
    std::vector<float> b = floatValues(n.input(2));
    for (size_t o = 0; o < b.size(); ++o)
      b[o] = float(b[o] * factor(out, int64_t(o)));
    setConstant(g, n, 2, b, n.input(2)->constant->dims, n.input(2)->name + suffix);
  }
}

} // namespace

LogicalResult quant::applyPreStatisticsCorrections(graph::Model &m, const PreCorrections &pre,
                                                   DiagnosticEngine &diags) {
  graph::Graph &g = m.graph;
  auto missing = [&](const std::string &what) {
    diags.emitAt(m.path, diag::err_quant_unsupported,
                 fmt::format("correction: the model has no node `{}`", what));
    return failure();
  };
  for (const ReluBound &r : pre.reluBounds) {
    Node *clip = nodeNamed(g, r.clip), *first = nodeNamed(g, r.first),
         *second = nodeNamed(g, r.second);
    if (!clip || !first || !second)
      return missing(!clip ? r.clip : !first ? r.first : r.second);
    const std::vector<int64_t> &d1 = first->input(1)->constant->dims;
    int64_t outs = d1[size_t(r.firstOutAxis)];
    scaleLinear(m, *first, r.firstOutAxis, std::vector<double>(size_t(outs), 1 / r.ratio), {},
                "_relu_bound");
    std::vector<float> w = floatValues(second->input(1)); // W2 <- W2 * r
    for (float &x : w)
      x = float(x * r.ratio);
    setConstant(g, *second, 1, w, second->input(1)->constant->dims,
                second->input(1)->name + "_relu_bound");
    double bound = r.bound / r.ratio; // 8
    if (clip->input(2))
      setConstant(g, *clip, 2, {float(bound)}, clip->input(2)->constant->dims,
                  clip->input(2)->name + "_relu_bound");
    else
      for (graph::Attribute &a : clip->attributes)
        if (a.name == "max")
          a.f = bound;
    g.relink();
  }
  for (const ChannelEqualization &e : pre.equalizations) {
    Node *first = nodeNamed(g, e.first), *second = nodeNamed(g, e.second);
    if (!first || !second)
      return missing(!first ? e.first : e.second);
    std::vector<double> inverse;
    for (double f : e.factors)
      inverse.push_back(1 / f);
    scaleLinear(m, *first, 0, e.factors, {}, "_equalized");
    scaleLinear(m, *second, 0, {}, inverse, "_equalized");
    g.relink();
  }
  for (const Smoothing &s : pre.smoothings)
    if (failed(applySmoothing(m, s, diags)))
      return failure();
  g.relink();
  m.eraseUnusedInitializers();
  g.relink();
  return graph::verifyGraph(g, m.path, diags);
}

std::string ReluBound::describe() const {
  return fmt::format("relu_unbound_correction: `{}` bound {} -> {} (`{}` / {:.6g}, `{}` * {:.6g})",
                     clip, bound, bound / ratio, first, ratio, second, ratio);
}

std::string ChannelEqualization::describe() const {
  double lo = 1;
  for (double f : factors)
    lo = std::min(lo, f);
  std::string via = relu.empty() ? "" : fmt::format("`{}` -> ", relu);
  return fmt::format("activation_channel_equalization: `{}` -> {}`{}` (smallest factor {:.4g})",
                     first, via, second, lo);
}

std::vector<std::string> PreCorrections::describe() const {
  std::vector<std::string> out;
  for (const ReluBound &r : reluBounds)
    out.push_back(r.describe());
  for (const ChannelEqualization &e : equalizations)
    out.push_back(e.describe());
  for (const Smoothing &s : smoothings)
    out.push_back(s.describe());
  return out;
}
