//===- Finish.cpp - Completing the spec, writing corrections, measuring -----===//
//
// What follows the grid choices: completeSpec (the grids of value-moving ops
// and int32 biases), applyCorrections (corrected biases, scaled kernels and
// graph edits written into the QDQ copy) and measureLayers (per-tensor SQNR
// of the QDQ model against the float one).
//
//===----------------------------------------------------------------------===//
#include "backends/quantize/Quantizer.h"

#include "backends/quantize/corrections/GraphHelpers.h"
#include "ir/graph/OpTraits.h"
#include "runtime/Metrics.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <set>

using namespace tpcc;
using namespace tpcc::quant;
using graph::Node;
using graph::Value;

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

} // namespace

void quant::completeSpec(const graph::Model &m, QuantizeResult &result) {
  const graph::Graph &g = m.graph;
  std::vector<const QuantGrid *> grids(g.values().size(), nullptr);
  for (const ActivationQDQ &a : result.spec.activations)
    if (const Value *v = g.findValue(a.value))
      grids[v->id] = &a.grid;
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
  // Biases of linear ops whose input and kernel are quantized: int32 on the
  // accumulator's grid (what integer kernels need).
  for (const WeightQDQ &w : result.spec.weights) {
    const Node *n = nullptr;
    for (const auto &x : g.nodes())
      if (x->name == w.node)
        n = x.get();
    if (!n || w.inputIndex != 1 || !graph::opTraits(*n).int32Bias)
      continue;
    const Value *in = n->input(0);
    if (!in || !grids[in->id])
      continue;
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

LogicalResult quant::measureLayers(rt::Executor &floatEx, rt::Executor &quantEx,
                                   CalibrationData &data, int64_t maxSamples,
                                   QuantizeResult &result, DiagnosticEngine &diags,
                                   const std::vector<std::string> &also) {
  auto t0 = Clock::now();
  // Every model output is measured, quantized or not, and so is every
  // tensor of `also`.
  auto measure = [&](const Value *v, const char *opset) {
    for (const TensorReport &r : result.tensors)
      if (!r.weight && r.tensor == v->name)
        return;
    TensorReport r;
    r.tensor = v->name;
    r.node = v->producer ? v->producer->displayName() : "(input)";
    r.opType = v->producer ? v->producer->opType : "";
    r.opset = opset;
    r.quantized = false;
    r.bits = 32;
    result.tensors.push_back(std::move(r));
  };
  for (const Value *v : floatEx.model().graph.outputs())
    measure(v, "(output)");
  for (const std::string &name : also) {
    ReadTensor read = parseReadTensor(name, floatEx.model().graph);
    const Value *v = floatEx.model().graph.findValue(read.tensor);
    if (!v || v->constant || !quantEx.model().graph.findValue(read.tensor))
      continue;
    measure(v, "(measured)");
    for (TensorReport &r : result.tensors)
      if (!r.weight && r.tensor == v->name)
        r.readAsSigmoid |= read.sigmoid;
  }
  std::map<std::string, size_t> wanted;
  std::set<std::string> references;
  for (size_t i = 0; i < result.tensors.size(); ++i)
    if (const TensorReport &r = result.tensors[i]; !r.weight) {
      wanted[r.tensor] = i;
      references.insert(r.reference.empty() ? r.tensor : r.reference);
    }
  std::vector<rt::Sqnr> sqnr(result.tensors.size()), own(result.tensors.size());
  std::vector<double> worst(result.tensors.size(), INFINITY),
      worstOwn(result.tensors.size(), INFINITY);
  std::vector<double> maxAbs(result.tensors.size(), 0), squares(result.tensors.size(), 0);
  std::vector<int64_t> count(result.tensors.size(), 0), outside(result.tensors.size(), 0);
  std::vector<float> alone, readExpected, readGot, readAlone;
  std::map<std::string, rt::Tensor> ref;
  std::vector<float> moved;
  auto keep = [&](const graph::Value &v, const rt::Tensor &t) {
    if (references.count(v.name) && t.elem() == graph::ElemType::Float)
      ref[v.name] = t;
  };
  auto compare = [&](const graph::Value &v, const rt::Tensor &t) {
    auto w = wanted.find(v.name);
    if (w == wanted.end())
      return;
    const TensorReport &row = result.tensors[w->second];
    auto r = ref.find(row.reference.empty() ? row.tensor : row.reference);
    if (r == ref.end() || t.elem() != graph::ElemType::Float || t.numel() != r->second.numel())
      return;
    const float *expected = r->second.data<float>();
    if (row.refScale != 1 || row.refOffset != 0) {
      moved.resize(size_t(t.numel()));
      for (size_t k = 0; k < moved.size(); ++k)
        moved[k] = float(double(expected[k]) * row.refScale + row.refOffset);
      expected = moved.data();
    }
    size_t i = w->second;
    // The float values on their own: their size and what this grid alone
    // does to them.
    alone.resize(size_t(t.numel()));
    for (int64_t k = 0; k < t.numel(); ++k) {
      double x = expected[k];
      maxAbs[i] = std::max(maxAbs[i], std::fabs(x));
      squares[i] += x * x;
      outside[i] += row.quantized && row.scale > 0 && (x < row.lo || x > row.hi);
      alone[size_t(k)] =
          row.quantized && row.scale > 0
              ? float(row.lo +
                      std::nearbyint((std::clamp(x, row.lo, row.hi) - row.lo) / row.scale) *
                          row.scale)
              : float(x);
    }
    count[i] += t.numel();
    const float *got = t.data<float>();
    if (row.readAsSigmoid) { // the three as the application reads them
      auto sigmoid = [](const float *x, int64_t n, std::vector<float> &y) {
        y.resize(size_t(n));
        for (int64_t k = 0; k < n; ++k)
          y[size_t(k)] = float(1 / (1 + std::exp(-double(x[k]))));
      };
      sigmoid(expected, t.numel(), readExpected);
      sigmoid(got, t.numel(), readGot);
      sigmoid(alone.data(), t.numel(), readAlone);
      std::swap(alone, readAlone);
      expected = readExpected.data();
      got = readGot.data();
    }
    // Sample by sample (the slices along axis 0), then pooled.
    int64_t rows = t.rank() ? t.dim(0) : 1, per = rows ? t.numel() / rows : 0;
    for (int64_t r = 0; r < rows && per; ++r) {
      rt::Sqnr mine, alone1;
      mine.add(expected + r * per, got + r * per, per);
      alone1.add(expected + r * per, alone.data() + r * per, per);
      if (mine.hasSignal()) {
        worst[i] = std::min(worst[i], mine.dB());
        worstOwn[i] = std::min(worstOwn[i], alone1.dB());
      }
      sqnr[i].add(mine);
      own[i].add(alone1);
    }
  };
  // Only these values: the others may run fused.
  auto mask = [](const graph::Graph &g, auto &&names) {
    std::vector<bool> m(g.values().size(), false);
    for (const auto &v : g.values())
      m[v->id] = names(v->name);
    return m;
  };
  std::vector<bool> floatWatched = mask(floatEx.model().graph,
                                        [&](const std::string &n) { return references.count(n); }),
                    quantWatched = mask(quantEx.model().graph,
                                        [&](const std::string &n) { return wanted.count(n); });
  rt::RunOptions fo, qo;
  fo.observe = keep;
  fo.watched = &floatWatched;
  qo.observe = compare;
  qo.watched = &quantWatched;
  data.rewind();
  std::map<std::string, rt::Tensor> feed;
  std::vector<rt::Tensor> out;
  while (data.samples() < maxSamples && data.next(feed, diags)) {
    ref.clear();
    if (failed(floatEx.run(feed, out, diags, fo)) || failed(quantEx.run(feed, out, diags, qo)))
      return failure();
  }
  if (data.failed())
    return failure();
  result.sqnrSamples = data.samples();
  data.rewind();
  for (size_t i = 0; i < result.tensors.size(); ++i) {
    TensorReport &r = result.tensors[i];
    if (r.weight || !sqnr[i].hasSignal())
      continue;
    r.measured = true;
    r.sqnr = sqnr[i].dB();
    r.ownSqnr = own[i].dB();
    r.worstSampleSqnr = worst[i];
    r.worstSampleOwnSqnr = worstOwn[i];
    r.maxAbs = maxAbs[i];
    r.rms = count[i] ? std::sqrt(squares[i] / double(count[i])) : 0;
    r.clipped = count[i] ? double(outside[i]) / double(count[i]) : 0;
  }
  result.seconds[3] = since(t0);
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
