//===- PostThreshold.cpp - shift_negative and input_scaling decisions -------===//
//
// Post-threshold corrections (docs/quantize.md, "Corrections"): decided from
// the float model's statistics and grids, written into the QDQ copy by
// applyGraphEdits. As MCT, the activation whose output is shifted is
// requantized to 16 bits with its own threshold (com.microsoft int16 Q/DQ) and
// the Add output gets the unsigned 8-bit grid; the bypass tensors on the path
// get unsigned grids of their own thresholds (or recomputed from shifted
// histograms with recompute_threshold). The parameter search option does not
// exist.
//
//===----------------------------------------------------------------------===//
#include "quant/ptq/corrections/PostThreshold.h"

#include "quant/core/GraphHelpers.h"

#include "ir/graph/OpTraits.h"
#include "quant/core/grids/Threshold.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

using namespace tpcc;
using namespace tpcc::quant;
using namespace tpcc::quant::edits;
using graph::Node;
using graph::Value;

namespace {

/// A constant-mode Pad of `m` padding with zero.
bool zeroPad(const graph::Model &m, const Node *n) {
  if (!isOp(n, "Pad"))
    return false;
  graph::NodeAttrs attrs = graph::attrsOf(m, *n);
  if (attrs.getString("mode", "constant") != "constant")
    return false;
  if (attrs.has("value") && attrs.getFloat("value") != 0)
    return false;
  if (const Value *c = n->input(2)) {
    std::vector<float> v = floatValues(c);
    return v.size() == 1 && v[0] == 0;
  }
  return true;
}

/// The grid of `g` made unsigned: the same threshold, or (recompute) chosen
/// again from `stats` shifted by `delta`.
QuantGrid unsignedGrid(const PostThreshold &s, const QuantGrid &g, TensorStats *stats, double delta,
                       std::string &how) {
  if (s.recipe.shiftNegative.recomputeThreshold && stats && stats->batches()) {
    Histogram h = stats->histogram();
    for (double &e : h.edges)
      e += delta;
    h.removeOutliers(s.recipe.zThreshold);
    SelectionOptions so;
    so.error = s.recipe.activationThreshold;
    so.p = s.recipe.lp;
    so.minThreshold = s.recipe.minThreshold;
    how = std::string("snc ") + ir::toString(s.recipe.activationThreshold);
    return selectActivationGrid(h, g.method, g.bits, false, so);
  }
  how = "snc same t";
  return thresholdGrid(g.method, g.threshold, g.bits, false, s.recipe.minThreshold);
}

/// The report row of activation `name` now describes `grid` of `newName`.
void updateReport(PostThreshold &s, const std::string &name, const std::string &newName,
                  const std::string &node, const char *op, const QuantGrid &grid,
                  const std::string &how) {
  for (TensorReport &r : s.result.tensors)
    if (!r.weight && r.tensor == name) {
      r.tensor = newName;
      r.node = node;
      r.opType = op;
      r.isSigned = grid.qmin < 0;
      r.scale = grid.scale;
      r.zeroPoint = grid.zeroPoint;
      r.lo = grid.lo;
      r.hi = grid.hi;
      r.threshold = how;
    }
}

/// Activation `tensor` of the QDQ copy holds the float model's `reference`
/// times `scale` plus `offset`: measure it so.
void measureMoved(PostThreshold &s, const std::string &tensor, const std::string &reference,
                  double scale, double offset) {
  for (TensorReport &r : s.result.tensors)
    if (!r.weight && r.tensor == tensor) {
      r.reference = reference;
      r.refScale = scale;
      r.refOffset = offset;
    }
}

/// Follows single consumers from `v` of `m` (through shift-transparent ops
/// when `transparent`) and at most one zero Pad to a linear op reading it as
/// input 0.
Node *linearAfter(const graph::Model &m, const Value *v, bool transparent,
                  std::vector<const Value *> &path, const Node *&pad) {
  const Value *cur = v;
  for (;;) {
    unsigned index = 0;
    Node *next = singleConsumer(cur, &index);
    if (!next || index != 0 || next->outputs.empty() || !next->outputs[0])
      return nullptr;
    if (graph::opTraits(*next).linear || isOp(next, "MatMul"))
      return isLinearLayer(m, next) ? next : nullptr;
    if (isOp(next, "Pad") && !pad && zeroPad(m, next))
      pad = next;
    else if (!transparent || !graph::opTraits(*next).shiftTransparent)
      return nullptr;
    else if (next->opType == "AveragePool") {
      graph::NodeAttrs attrs = graph::attrsOf(m, *next);
      std::vector<int64_t> pads = attrs.getInts("pads");
      std::string autoPad = attrs.getString("auto_pad", "NOTSET");
      if (std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p != 0; }) ||
          (autoPad != "NOTSET" && autoPad != "VALID"))
        return nullptr; // padded zeros in the average would not be shifted
    }
    cur = next->outputs[0];
    path.push_back(cur);
  }
}

} // namespace

void edits::decideInputScaling(PostThreshold &s) {
  const graph::Graph &g = s.plan.model->graph;
  for (const Value *x : g.inputs()) {
    const plan::PlanTensor *t = s.plan.tensorOf(x);
    std::optional<QuantGrid> &grid = s.grids[x->id];
    TensorStats *st = s.stats[x->id].get();
    if (x->constant || !t || !t->quantize || !grid || !st || !st->batches() ||
        grid->method == ir::QuantMethod::Uniform || ir::isLut(grid->method))
      continue;
    double m = std::max(-st->min(), st->max()), th = grid->threshold;
    std::vector<const Value *> path;
    const Node *pad = nullptr;
    Node *lin = linearAfter(*s.plan.model, x, false, path, pad);
    if (!(m > 0) || !(th > m) || !lin || s.linear.count(lin->name))
      continue;
    std::vector<float> kernel = floatValues(lin->input(1));
    for (float &w : kernel)
      w = float(double(w) * m / th);
    LinearAdjust &adj = s.linear[lin->name];
    adj.kernel = std::move(kernel);
    adj.inputScale = th / m;
    GraphEdit e;
    e.kind = GraphEdit::InputScaling;
    e.value = x->name;
    e.node = freshName(g, x->name + "_input_scaling", s.taken, true);
    e.output = freshName(g, x->name + "_scaled", s.taken);
    e.constant = th / m;
    e.linear = lin->name;
    QuantGrid q = *grid;
    grid.reset();
    s.added.push_back({e.output, q});
    for (const Value *p : path)
      if (s.grids[p->id])
        s.grids[p->id] = q;
    updateReport(s, x->name, e.output, e.node, "Mul", q, "scaled");
    measureMoved(s, e.output, x->name, th / m, 0);
    for (const Value *p : path)
      measureMoved(s, p->name, p->name, th / m, 0);
    s.result.edits.push_back(std::move(e));
  }
}

void edits::decideShiftNegative(PostThreshold &s) {
  const graph::Model &model = *s.plan.model;
  const graph::Graph &g = model.graph;
  for (const plan::PlanTensor &t : s.plan.tensors) {
    if (!t.quantize || t.preserving || !t.producer)
      continue;
    const Node *act = t.producer->node;
    const Value *v = t.value;
    std::optional<QuantGrid> &grid = s.grids[v->id];
    TensorStats *st = s.stats[v->id].get();
    // A composite chain's output is an activation of its own (SiLU, HardSwish,
    // GELU: MCT shifts nn.SiLU's output).
    bool activation = graph::opTraits(*act).shiftNegative || t.producer->chain >= 0;
    if (!activation || !grid || !st || !st->batches() || grid->method == ir::QuantMethod::Uniform ||
        ir::isLut(grid->method) || !grid->isSigned)
      continue;
    double m = st->min(), th = grid->threshold;
    if (!(m < 0) || -m / th > s.recipe.shiftNegative.ratio)
      continue;
    std::vector<const Value *> path;
    const Node *pad = nullptr;
    Node *lin = linearAfter(model, v, true, path, pad);
    if (!lin || s.linear.count(lin->name) || biasQuantized(s.plan, *lin) ||
        (isOp(lin, "MatMul") && !linearBias(*lin).value()))
      continue; // a MatMul's shift is compensated in its bias Add
    const plan::PlanNode *linPlan = planNodeOf(s.plan, lin);
    std::optional<int64_t> outAxis = linPlan ? kernelOutAxis(*linPlan) : std::nullopt;
    if (!outAxis)
      continue; // the framework declares no output axis for its kernel
    graph::NodeAttrs attrs = graph::attrsOf(model, *lin);
    bool convPads = false;
    if (lin->opType == "Conv") {
      std::string autoPad = attrs.getString("auto_pad", "NOTSET");
      std::vector<int64_t> pads = attrs.getInts("pads");
      if (autoPad != "NOTSET" && autoPad != "VALID")
        continue;
      convPads = autoPad == "NOTSET" &&
                 std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p != 0; });
      if (convPads && pad)
        continue; // two paddings: not handled
    }
    double beta = isOp(lin, "Gemm") ? attrs.getFloat("beta", 1.0) : 1.0;
    double alpha = isOp(lin, "Gemm") ? attrs.getFloat("alpha", 1.0) : 1.0;
    if (beta == 0)
      continue;
    // delta: the smallest point k * t / 2^n >= |m| of the unsigned grid.
    double step = th / std::ldexp(1.0, grid->bits);
    double delta = std::ceil(-m / step) * step;
    // b <- b - delta * sum of W over the non-output axes.
    std::vector<float> w = floatValues(lin->input(1));
    const std::vector<int64_t> &d = lin->input(1)->constant->dims;
    int64_t outs = d[size_t(*outAxis)], inner = 1;
    for (size_t k = size_t(*outAxis) + 1; k < d.size(); ++k)
      inner *= d[k];
    std::vector<double> sum(size_t(outs), 0);
    for (size_t i = 0; i < w.size(); ++i)
      sum[size_t((int64_t(i) / inner) % outs)] += w[i];
    std::vector<float> bias = floatValues(linearBias(*lin).value());
    if (bias.empty())
      bias.assign(size_t(outs), 0.f);
    if (int64_t(bias.size()) != outs)
      continue;
    for (int64_t o = 0; o < outs; ++o)
      bias[size_t(o)] = float(double(bias[size_t(o)]) - alpha / beta * delta * sum[size_t(o)]);
    LinearAdjust &adj = s.linear[lin->name];
    adj.bias = std::move(bias);
    adj.inputShift = delta;

    GraphEdit e;
    e.kind = GraphEdit::ShiftNegative;
    e.value = v->name;
    e.node = freshName(g, act->name + "_shift_negative", s.taken, true);
    e.output = freshName(g, v->name + "_shifted", s.taken);
    e.constant = delta;
    if (pad)
      e.padNode = pad->name;
    std::string how;
    QuantGrid shifted = unsignedGrid(s, *grid, st, delta, how);
    // The activation keeps its threshold on a 16-bit grid (MCT): its report
    // row stays, the 8-bit one moves to the Add's output.
    auto row =
        std::find_if(s.result.tensors.begin(), s.result.tensors.end(),
                     [&](const TensorReport &r) { return !r.weight && r.tensor == v->name; });
    std::optional<TensorReport> wideRow;
    if (row != s.result.tensors.end())
      wideRow = *row;
    *grid = thresholdGrid(grid->method, th, 16, true, s.recipe.minThreshold);
    s.added.push_back({e.output, shifted});
    updateReport(s, v->name, e.output, e.node, "Add", shifted, how);
    measureMoved(s, e.output, v->name, 1, delta);
    for (const Value *p : path)
      measureMoved(s, p->name, p->name, 1, delta);
    if (wideRow) {
      wideRow->bits = 16;
      wideRow->scale = grid->scale;
      wideRow->lo = grid->lo;
      wideRow->hi = grid->hi;
      s.result.tensors.insert(row, *wideRow);
    }
    QuantGrid lastGrid = shifted;
    bool lastQuantized = true;
    for (const Value *p : path) {
      const plan::PlanTensor *pt = s.plan.tensorOf(p);
      if (!s.grids[p->id]) {
        lastQuantized = false;
        continue;
      }
      if (pt && pt->preserving) {
        s.grids[p->id] = lastGrid;
      } else {
        std::string h;
        s.grids[p->id] = unsignedGrid(s, *s.grids[p->id], s.stats[p->id].get(), delta, h);
        updateReport(s, p->name, p->name,
                     pt && pt->producer ? pt->producer->node->displayName() : "",
                     p->producer->opType.c_str(), *s.grids[p->id], h);
      }
      lastGrid = *s.grids[p->id];
      lastQuantized = true;
    }
    if (convPads) {
      e.convNode = lin->name;
      e.padNode = freshName(g, lin->name + "_pad", s.taken, true);
      e.padOutput = freshName(g, lin->input(0)->name + "_padded", s.taken);
      if (lastQuantized)
        s.added.push_back({e.padOutput, lastGrid});
    }
    s.result.edits.push_back(std::move(e));
  }
}
