//===- Finish.cpp - Completing the spec, writing the corrections ------------===//
//
// What follows the grid choices: completeSpec (the grids of value-moving ops
// and int32 biases), applyCorrections (corrected biases, scaled kernels and
// graph edits written into the QDQ copy), trained kernels written back, and
// biases kept inside int32.
//
//===----------------------------------------------------------------------===//
#include "quant/ptq/qdq/Finish.h"

#include "ir/graph/OpTraits.h"
#include "quant/core/GraphHelpers.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

using namespace tpcc;
using namespace tpcc::quant;
using graph::Node;
using graph::Value;

void quant::completeSpec(const graph::Model &m, QuantizeResult &result) {
  const graph::Graph &g = m.graph;
  std::vector<const QuantGrid *> grids(g.values().size(), nullptr);
  auto pointIntoSpec = [&] {
    for (const ActivationQDQ &a : result.spec.activations)
      if (const Value *v = g.findValue(a.value))
        grids[v->id] = &a.grid;
  };
  pointIntoSpec();
  std::vector<ActivationQDQ> added;
  for (const Node *n : g.topologicalOrder()) {
    if (!graph::opTraits(*n).movesValues || !n->input(0) || !grids[n->input(0)->id])
      continue;
    for (const Value *out : n->outputs)
      if (out && !grids[out->id] && out->type.elem == graph::ElemType::Float &&
          !result.withoutQuantizer.count(out->name)) {
        added.push_back({out->name, *grids[n->input(0)->id]});
        grids[out->id] = grids[n->input(0)->id];
      }
  }
  for (ActivationQDQ &a : added) // grids point into spec.activations: append last
    result.spec.activations.push_back(std::move(a));
  pointIntoSpec(); // the vector may have moved
  // Biases of linear ops whose input and kernel are quantized: int32 on the
  // accumulator's grid (what integer kernels need).
  for (const WeightQDQ &w : result.spec.weights) {
    const Node *n = nullptr;
    for (const auto &x : g.nodes())
      if (x->name == w.node)
        n = x.get();
    // A blocked kernel has no per-channel scale to put the bias on.
    if (!n || w.inputIndex != 1 || !graph::opTraits(*n).int32Bias || w.blocked())
      continue;
    const Value *in = n->input(0);
    if (!in || !grids[in->id] || grids[in->id]->floating() || w.grids.front().floating())
      continue; // floating-point elements have no integer accumulator
    if (n->opType == "Gemm") {
      graph::NodeAttrs attrs = graph::attrsOf(m, *n);
      if (attrs.getFloat("alpha", 1.0) != 1.0 || attrs.getFloat("beta", 1.0) != 1.0)
        continue;
    }
    const Value *b = n->input(2);
    bool corrected = false;
    for (const auto &[name, values] : result.biases)
      corrected |= name == w.node;
    if ((b && b->constant && b->constant->elem == graph::ElemType::Float &&
         b->constant->dims.size() == 1) ||
        corrected)
      result.spec.biases.push_back({w.node, 2, in->name, w.node, 1});
  }
}

void quant::applyBiases(graph::Model &m, const QuantizeResult &result) {
  graph::Graph &g = m.graph;
  for (const auto &[node, values] : result.biases) {
    Node *n = nullptr;
    for (const auto &x : g.nodes())
      if (x->name == node)
        n = x.get();
    if (!n)
      continue;
    if (edits::isOp(n, "MatMul")) { // the bias is the Add's constant after it
      edits::BiasInput b = edits::linearBias(*n);
      const Value *old = b.value();
      if (old && old->constant->numElements() == int64_t(values.size()))
        edits::setConstant(g, *b.node, b.index, values, old->constant->dims,
                           old->name + "_corrected");
      continue;
    }
    // A new name: the original bias may feed other nodes too.
    std::string base = n->input(2) ? n->input(2)->name + "_corrected" : node + "_bias";
    auto t = std::make_unique<graph::Tensor>();
    t->name = base;
    for (int k = 1; g.findValue(t->name); ++k)
      t->name = base + std::to_string(k);
    t->elem = graph::ElemType::Float;
    t->dims = {int64_t(values.size())};
    t->raw.assign(reinterpret_cast<const char *>(values.data()), values.size() * sizeof(float));
    Value *v = g.addConstant(std::move(t));
    if (n->inputs.size() < 3)
      n->inputs.resize(3, nullptr);
    n->inputs[2] = v;
  }
  g.relink();
  m.eraseUnusedInitializers();
}

LogicalResult quant::applyCorrections(graph::Model &m, QuantizeResult &result,
                                      DiagnosticEngine &diags) {
  applyBiases(m, result);
  if (result.edits.empty() && result.kernels.empty())
    return success();
  if (failed(applyGraphEdits(m, result.edits, result.kernels, diags)))
    return failure();
  completeSpec(m, result); // deferred by quantizePlan: the new tensors are only here
  return success();
}

LogicalResult quant::applyTrainedWeights(graph::Model &m, const QuantizeResult &result,
                                         DiagnosticEngine &diags) {
  for (const QuantizeResult::TrainedWeight &t : result.trainedWeights) {
    Node *n = edits::nodeNamed(m.graph, t.node);
    Value *v = n ? n->input(t.inputIndex) : nullptr;
    if (!v || !v->constant || v->constant->elem != graph::ElemType::Float ||
        v->constant->numElements() != int64_t(t.values.size()))
      return diags.emitAt(m.path, diag::err_qdq_spec,
                          fmt::format("the plan's trained values of input {} of node `{}` do not "
                                      "fit the model",
                                      t.inputIndex, t.node));
    edits::overwriteInitializer(m.graph, *v, t.values);
  }
  return success();
}

size_t quant::fitBiasesInInt32(const graph::Model &m, QDQSpec &spec) {
  // As ONNX Runtime's quantizer does: a bias must fit int32 on the
  // accumulator grid (input scale x kernel scale). A filter whose weights
  // are all (nearly) 0 has a tiny scale, and its bias would saturate: its
  // channel then computes about 0 instead of the bias. Such a channel's
  // kernel grid widens until the bias fits, with 0.01 % to spare.
  constexpr double kRange =
      double(std::numeric_limits<int32_t>::max()) - double(std::numeric_limits<int32_t>::min() + 1);
  std::map<std::string, const QuantGrid *> inputs;
  for (const ActivationQDQ &a : spec.activations)
    inputs[a.value] = &a.grid;
  size_t raised = 0;
  for (const BiasQDQ &b : spec.biases) {
    const Node *n = edits::nodeNamed(m.graph, b.node);
    auto in = inputs.find(b.inputActivation);
    auto w = std::find_if(spec.weights.begin(), spec.weights.end(), [&](const WeightQDQ &x) {
      return x.node == b.weightNode && x.inputIndex == b.weightInput;
    });
    if (!n || b.inputIndex >= n->inputs.size() || !n->inputs[b.inputIndex] ||
        !n->inputs[b.inputIndex]->constant || in == inputs.end() || w == spec.weights.end())
      continue; // the rewrite reports it
    const graph::Tensor &t = *n->inputs[b.inputIndex]->constant;
    std::vector<double> largest(w->grids.size(), 0.0);
    for (int64_t i = 0; i < t.numElements(); ++i) {
      double &l = largest[size_t(i) % largest.size()];
      l = std::max(l, std::fabs(double(t.at(i))));
    }
    for (size_t c = 0; c < w->grids.size(); ++c) {
      QuantGrid &g = w->grids[c];
      double needed = 1.0001 * 2 * largest[c] / kRange / in->second->scale;
      if (!(needed > g.scale) || !g.lut.empty())
        continue;
      g.scale = g.method == ir::QuantMethod::PowerOfTwo ? std::exp2(std::ceil(std::log2(needed)))
                                                        : needed;
      g.lo = g.scale * double(g.qmin - g.zeroPoint);
      g.hi = g.scale * double(g.qmax - g.zeroPoint);
      g.threshold = g.scale * double(g.qmax + 1);
      ++raised;
    }
  }
  return raised;
}
