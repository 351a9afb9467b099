//===- Measure.cpp - The quantized model against the float one -------------===//
//
// measureLayers: both models run over the data; every quantized activation,
// model output and named tensor is compared (SQNR pooled and per sample, its
// own grid's error, clipping).
//
//===----------------------------------------------------------------------===//
#include "quant/ptq/Measure.h"
#include "quant/ptq/qdq/Mx.h"

#include "quant/core/Timing.h"

#include "quant/core/format/NumberFormat.h"
#include "runtime/Metrics.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <set>

using namespace tpcc;
using namespace tpcc::quant;
using graph::Node;
using graph::Value;

ReadTensor quant::parseReadTensor(const std::string &text, const graph::Graph &g) {
  llvm::StringRef t(text);
  if (!g.findValue(text) && t.startswith("sigmoid(") && t.endswith(")"))
    return ReadTensor{t.drop_front(8).drop_back().str(), true};
  return ReadTensor{text, false};
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
  std::map<std::string, const MxActivation *> mxFormat;
  for (const MxActivationQDQ &a : result.spec.mxActivations)
    mxFormat[a.value] = &a.format;
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
    // The row's grid (its integer range from its range and zero point), on
    // which the float values alone are put.
    QuantGrid grid;
    grid.scale = row.scale;
    grid.zeroPoint = row.zeroPoint;
    if (row.element != ir::ElementFormat::Int)
      grid = floatGridOfScale(row.element, row.scale);
    else if (row.scale > 0) {
      grid.qmin = int64_t(std::nearbyint(row.lo / row.scale)) + row.zeroPoint;
      grid.qmax = int64_t(std::nearbyint(row.hi / row.scale)) + row.zeroPoint;
    }
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
      alone[size_t(k)] = row.quantized && row.scale > 0 ? float(fakeQuantize(grid, x)) : float(x);
    }
    if (auto f = mxFormat.find(v.name); f != mxFormat.end()) {
      // An MX activation: its blocks' own scales, on the float values.
      rt::Tensor a(graph::ElemType::Float, t.shape());
      std::copy(expected, expected + t.numel(), a.data<float>());
      applyMx(a, *f->second);
      std::copy(a.data<float>(), a.data<float>() + t.numel(), alone.begin());
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
