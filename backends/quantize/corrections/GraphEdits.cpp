//===- GraphEdits.cpp - shift_negative and input_scaling --------------------===//
//
// Post-threshold corrections (algorithms.md 4): decided from the float
// model's statistics and grids, written into the QDQ copy by
// applyGraphEdits. As MCT, the activation whose output is shifted is
// requantized to 16 bits with its own threshold (com.microsoft int16 Q/DQ)
// and the Add output gets the unsigned 8-bit grid; the bypass tensors on the
// path get unsigned grids of their own thresholds (or recomputed from
// shifted histograms with recompute_threshold). The parameter search option
// does not exist.
//
//===----------------------------------------------------------------------===//
#include "backends/quantize/corrections/GraphEdits.h"

#include "backends/quantize/grids/Threshold.h"
#include "ir/graph/OnnxIO.h"

#include "llvm/ADT/StringSet.h"

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

bool isOp(const Node *n, llvm::StringRef op) { return n && n->domain.empty() && n->opType == op; }

/// A Conv/Gemm (transA = 0) with float constant kernel and 1-D bias (or none).
bool linearWithConstants(const Node *n) {
  if (!(isOp(n, "Conv") || isOp(n, "Gemm")) || floatValues(n->input(1)).empty())
    return false;
  const std::vector<int64_t> &d = n->input(1)->constant->dims;
  if (isOp(n, "Gemm") && (intAttr(*n, "transA", 0) != 0 || d.size() != 2))
    return false;
  if (isOp(n, "Conv") && d.size() < 3)
    return false;
  const Value *b = n->input(2);
  return !b || (!floatValues(b).empty() && b->constant->dims.size() == 1);
}

/// A constant-mode Pad padding with zero.
bool zeroPad(const Node *n) {
  if (!isOp(n, "Pad") || stringAttr(*n, "mode", "constant") != "constant")
    return false;
  if (const graph::Attribute *a = n->attr("value"); a && a->f != 0)
    return false;
  if (const Value *c = n->input(2)) {
    std::vector<float> v = floatValues(c);
    return v.size() == 1 && v[0] == 0;
  }
  return true;
}

/// The grid of `g` made unsigned: the same threshold, or (recompute) chosen
/// again from `stats` shifted by `delta`.
QuantGrid unsignedGrid(const PostThreshold &s, const QuantGrid &g, TensorStats *stats,
                       double delta, std::string &how) {
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
  return g.method == ir::QuantMethod::PowerOfTwo ? powerOfTwoGrid(g.threshold, g.bits, false)
                                                 : symmetricGrid(g.threshold, g.bits, false);
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

/// Follows single consumers from `v` through `bypass` ops and at most one
/// zero Pad to a linear op reading it as input 0.
Node *linearAfter(const Value *v, const llvm::StringSet<> &bypass,
                  std::vector<const Value *> &path, const Node *&pad) {
  const Value *cur = v;
  for (;;) {
    unsigned index = 0;
    Node *next = singleConsumer(cur, &index);
    if (!next || index != 0 || next->outputs.empty() || !next->outputs[0])
      return nullptr;
    if (isOp(next, "Conv") || isOp(next, "Gemm"))
      return linearWithConstants(next) ? next : nullptr;
    if (isOp(next, "Pad") && !pad && zeroPad(next))
      pad = next;
    else if (!next->domain.empty() || !bypass.contains(next->opType))
      return nullptr;
    else if (next->opType == "AveragePool") {
      std::vector<int64_t> pads = intsAttr(*next, "pads");
      std::string autoPad = stringAttr(*next, "auto_pad", "NOTSET");
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
    Node *lin = linearAfter(x, llvm::StringSet<>{}, path, pad);
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
    QuantGrid q = *grid;
    grid.reset();
    s.added.push_back({e.output, q});
    for (const Value *p : path)
      if (s.grids[p->id])
        s.grids[p->id] = q;
    updateReport(s, x->name, e.output, e.node, "Mul", q, "scaled");
    s.result.edits.push_back(std::move(e));
  }
}

void edits::decideShiftNegative(PostThreshold &s) {
  static const llvm::StringSet<> activations = {"PRelu", "Elu", "HardSwish", "LeakyRelu", "Gelu"};
  static const llvm::StringSet<> bypass = {"Reshape", "Flatten", "AveragePool", "Dropout",
                                           "Identity"};
  const graph::Graph &g = s.plan.model->graph;
  for (const plan::PlanTensor &t : s.plan.tensors) {
    if (!t.quantize || t.preserving || !t.producer)
      continue;
    const Node *act = t.producer->node;
    const Value *v = t.value;
    std::optional<QuantGrid> &grid = s.grids[v->id];
    TensorStats *st = s.stats[v->id].get();
    if (!act->domain.empty() || !activations.contains(act->opType) || !grid || !st ||
        !st->batches() || grid->method == ir::QuantMethod::Uniform || ir::isLut(grid->method) ||
        !grid->isSigned)
      continue;
    double m = st->min(), th = grid->threshold;
    if (!(m < 0) || -m / th > s.recipe.shiftNegative.ratio)
      continue;
    std::vector<const Value *> path;
    const Node *pad = nullptr;
    Node *lin = linearAfter(v, bypass, path, pad);
    if (!lin || s.linear.count(lin->name))
      continue;
    bool convPads = false;
    if (lin->opType == "Conv") {
      std::string autoPad = stringAttr(*lin, "auto_pad", "NOTSET");
      std::vector<int64_t> pads = intsAttr(*lin, "pads");
      if (autoPad != "NOTSET" && autoPad != "VALID")
        continue;
      convPads = autoPad == "NOTSET" &&
                 std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p != 0; });
      if (convPads && pad)
        continue; // two paddings: not handled
    }
    double beta = isOp(lin, "Gemm") && lin->attr("beta") ? lin->attr("beta")->f : 1.0;
    double alpha = isOp(lin, "Gemm") && lin->attr("alpha") ? lin->attr("alpha")->f : 1.0;
    if (beta == 0)
      continue;
    // delta: the smallest point k * t / 2^n >= |m| of the unsigned grid.
    double step = th / std::ldexp(1.0, grid->bits);
    double delta = std::ceil(-m / step) * step;
    // b <- b - delta * sum of W over the non-output axes.
    std::vector<float> w = floatValues(lin->input(1));
    const std::vector<int64_t> &d = lin->input(1)->constant->dims;
    bool transB = isOp(lin, "Gemm") && intAttr(*lin, "transB", 0) != 0;
    int64_t outs = isOp(lin, "Conv") || transB ? d[0] : d[1];
    std::vector<double> sum(size_t(outs), 0);
    for (size_t i = 0; i < w.size(); ++i) {
      int64_t o = isOp(lin, "Conv") || transB ? int64_t(i) / (int64_t(w.size()) / outs)
                                               : int64_t(i) % outs;
      sum[size_t(o)] += w[i];
    }
    std::vector<float> bias = floatValues(lin->input(2));
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
    auto row = std::find_if(s.result.tensors.begin(), s.result.tensors.end(),
                            [&](const TensorReport &r) { return !r.weight && r.tensor == v->name; });
    std::optional<TensorReport> wideRow;
    if (row != s.result.tensors.end())
      wideRow = *row;
    *grid = grid->method == ir::QuantMethod::PowerOfTwo ? powerOfTwoGrid(th, 16, true)
                                                        : symmetricGrid(th, 16, true);
    s.added.push_back({e.output, shifted});
    updateReport(s, v->name, e.output, e.node, "Add", shifted, how);
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
        updateReport(s, p->name, p->name, pt && pt->producer ? pt->producer->node->displayName()
                                                             : "", p->producer->opType.c_str(),
                     *s.grids[p->id], h);
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

//===----------------------------------------------------------------------===//
// Applying
//===----------------------------------------------------------------------===//

namespace {

Value *scalarConstant(graph::Graph &g, const std::string &base, float x,
                      std::vector<int64_t> dims = {}) {
  auto t = std::make_unique<graph::Tensor>();
  std::set<std::string> none;
  t->name = freshName(g, base, none);
  t->elem = graph::ElemType::Float;
  t->dims = std::move(dims);
  t->raw.assign(reinterpret_cast<const char *>(&x), sizeof x);
  return g.addConstant(std::move(t));
}

graph::Attribute attr(const char *name, ir::OnnxAttrType type) {
  graph::Attribute a;
  a.name = name;
  a.type = type;
  return a;
}

Node *addNode(graph::Graph &g, const std::string &name, const char *op, std::vector<Value *> ins,
              Value *out) {
  auto n = std::make_unique<Node>();
  n->name = name;
  n->opType = op;
  n->inputs = std::move(ins);
  n->outputs = {out};
  return g.addNode(std::move(n));
}

/// Conv `c` reads Pad(input, c's pads, value delta) and pads no more.
void explicitPad(graph::Model &m, Node &c, const GraphEdit &e) {
  graph::Graph &g = m.graph;
  std::vector<int64_t> pads = intsAttr(c, "pads");
  size_t rank = pads.size() / 2;
  std::vector<int64_t> all(2 * (rank + 2), 0);
  for (size_t i = 0; i < rank; ++i) {
    all[2 + i] = pads[i];
    all[rank + 4 + i] = pads[rank + i];
  }
  Value *out = g.getOrCreateValue(e.padOutput);
  out->type.elem = graph::ElemType::Float;
  out->hasTypeInfo = true;
  Node *p;
  if (m.opsetVersion("").value_or(1) >= 11) {
    auto t = std::make_unique<graph::Tensor>();
    std::set<std::string> none;
    t->name = freshName(g, e.padNode + "_pads", none);
    t->elem = graph::ElemType::Int64;
    t->dims = {int64_t(all.size())};
    t->raw.assign(reinterpret_cast<const char *>(all.data()), all.size() * sizeof(int64_t));
    Value *padsV = g.addConstant(std::move(t));
    p = addNode(g, e.padNode, "Pad",
                {c.inputs[0], padsV, scalarConstant(g, e.padNode + "_value", float(e.constant))},
                out);
  } else {
    p = addNode(g, e.padNode, "Pad", {c.inputs[0]}, out);
    p->attributes.push_back(attr("mode", ir::OnnxAttrType::String));
    p->attributes.back().s = "constant";
    p->attributes.push_back(attr("pads", ir::OnnxAttrType::Ints));
    p->attributes.back().ints = all;
    p->attributes.push_back(attr("value", ir::OnnxAttrType::Float));
    p->attributes.back().f = e.constant;
  }
  for (graph::Attribute &a : c.attributes)
    if (a.name == "pads")
      std::fill(a.ints.begin(), a.ints.end(), 0);
  c.inputs[0] = out;
}

} // namespace

bool quant::applyGraphEdits(graph::Model &m, const std::vector<GraphEdit> &edits,
                            const std::vector<ConstantEdit> &kernels, DiagnosticEngine &diags) {
  graph::Graph &g = m.graph;
  auto missing = [&](const std::string &what) {
    diags.emitAt(m.path, diag::err_quant_unsupported,
                 fmt::format("correction: the model has no `{}`", what));
    return false;
  };
  for (const ConstantEdit &k : kernels) {
    Node *n = nodeNamed(g, k.node);
    if (!n || !n->input(k.input) || !n->input(k.input)->constant)
      return missing(k.node);
    setConstant(g, *n, k.input, k.values, n->input(k.input)->constant->dims,
                n->input(k.input)->name + "_scaled");
  }
  g.relink();
  for (const GraphEdit &e : edits) {
    Value *v = g.findValue(e.value);
    if (!v)
      return missing(e.value);
    std::vector<graph::Use> uses = v->uses;
    Value *out = g.getOrCreateValue(e.output);
    out->type = v->type;
    out->type.elem = graph::ElemType::Float;
    out->hasTypeInfo = true;
    for (const graph::Use &u : uses)
      u.node->inputs[u.index] = out;
    bool shift = e.kind == GraphEdit::ShiftNegative;
    Value *c = scalarConstant(g, e.value + (shift ? "_shift" : "_scale"), float(e.constant));
    addNode(g, e.node, shift ? "Add" : "Mul", {v, c}, out);
    if (shift && !e.convNode.empty()) {
      Node *conv = nodeNamed(g, e.convNode);
      if (!conv)
        return missing(e.convNode);
      explicitPad(m, *conv, e);
    } else if (shift && !e.padNode.empty()) {
      Node *p = nodeNamed(g, e.padNode);
      if (!p)
        return missing(e.padNode);
      if (p->inputs.size() >= 2) { // Pad-11 and later: the value is input 2
        if (p->inputs.size() < 3)
          p->inputs.resize(3, nullptr);
        p->inputs[2] = scalarConstant(g, e.padNode + "_value", float(e.constant));
      } else {
        bool found = false;
        for (graph::Attribute &a : p->attributes)
          if (a.name == "value")
            a.f = e.constant, found = true;
        if (!found) {
          p->attributes.push_back(attr("value", ir::OnnxAttrType::Float));
          p->attributes.back().f = e.constant;
        }
      }
    }
    g.relink();
  }
  m.eraseUnusedInitializers();
  g.relink();
  return succeeded(graph::verifyGraph(g, m.path, diags));
}

std::string GraphEdit::describe() const {
  if (kind == InputScaling)
    return fmt::format("input_scaling: `{}` * {:.6g} (`{}`)", value, constant, node);
  return fmt::format("shift_negative: `{}` + {:.6g} (`{}`){}", value, constant, node,
                     convNode.empty() ? padNode.empty() ? "" : ", `" + padNode + "` pads with it"
                                      : ", `" + convNode + "` padding made explicit");
}
