//===- Sensitivity.cpp - How much each layer's candidates cost in accuracy ---===//
#include "quant/search/mixed/Sensitivity.h"

#include "ir/graph/OpTraits.h"
#include "quant/core/stats/HessianTrace.h"
#include "quant/ptq/Quantizer.h"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>

using namespace tpcc;
using namespace tpcc::quant;
using namespace tpcc::quant::mixed;
using graph::PointDistance;

namespace {

using Clock = std::chrono::steady_clock;
using Feed = std::map<std::string, rt::Tensor>;

struct Point {
  const graph::Value *value = nullptr;
  PointDistance kind = PointDistance::Mse;
  bool output = false;
};

/// The distance of one image's quantized values `q` from the float `x`.
double distance(PointDistance kind, const float *x, const float *q, int64_t n) {
  if (kind == PointDistance::KL) {
    double d = 0;
    for (int64_t i = 0; i < n; ++i)
      if (x[i] > 0)
        d += double(x[i]) * std::log(double(x[i]) / std::max(double(q[i]), 1e-8));
    return d;
  }
  if (kind == PointDistance::Cosine) {
    double xy = 0, xx = 0, yy = 0;
    for (int64_t i = 0; i < n; ++i) {
      xy += double(x[i]) * q[i];
      xx += double(x[i]) * x[i];
      yy += double(q[i]) * q[i];
    }
    if (xx == 0 && yy == 0)
      return 0;
    if (xx == 0 || yy == 0)
      return 0.5;
    return (1 - xy / std::sqrt(xx * yy)) / 2;
  }
  double se = 0, xx = 0;
  for (int64_t i = 0; i < n; ++i) {
    double e = double(x[i]) - q[i];
    se += e * e;
    xx += double(x[i]) * x[i];
  }
  return (se / double(n)) / (xx / double(n) + 1e-8);
}

/// Sum over the images of a batch of the distance at one point.
double batchDistance(PointDistance kind, const rt::Tensor &x, const rt::Tensor &q) {
  if (x.elem() != graph::ElemType::Float || q.elem() != graph::ElemType::Float ||
      x.numel() != q.numel() || x.numel() == 0)
    return 0;
  int64_t images = x.rank() > 0 ? std::max<int64_t>(1, x.dim(0)) : 1;
  int64_t per = x.numel() / images;
  double sum = 0;
  for (int64_t i = 0; i < images; ++i)
    sum += distance(kind, x.data<float>() + i * per, q.data<float>() + i * per, per);
  return sum;
}

} // namespace

namespace tpcc::quant::mixed {
class Measurer {
public:
  Measurer(const plan::Plan &plan, const std::vector<unsigned> &layers,
           const std::vector<unsigned> &max, const ir::Recipe &recipe, const SensitivityOptions &o,
           DiagnosticEngine &diags)
      : plan(plan), layers(layers), recipe(recipe), o(o), diags(diags) {
    base = plan::chosenAssignment(plan);
    layerOf.assign(plan.nodes.size(), -1);
    for (size_t l = 0; l < layers.size(); ++l) {
      layerOf[layers[l]] = int(l);
      base[layers[l]] = max[l];
    }
  }

  LogicalResult run(rt::Executor &floatEx, CalibrationData &data, Sensitivity &out);
  /// The model's outputs with layer l at `choices[k][l]` against the float
  /// model's, on every calibration image (at most 1024), in parallel.
  LogicalResult measureOutputs(rt::Executor &floatEx,
                               const std::vector<std::vector<unsigned>> &choices,
                               std::vector<OutputAgreement> &values);

private:
  LogicalResult readImages(CalibrationData &data);
  void findPoints();
  bool measureActivations() const { return o.activations && recipe.quantizeActivations != false; }
  LogicalResult collect(rt::Executor &floatEx, CalibrationData &data);
  LogicalResult prepareWeights();
  LogicalResult prepareActivations();
  /// Runs batch `b` of the model configured as `config` (null: the max
  /// config, run whole and kept in `kept[b]`; else re-run from step
  /// `first`, the first that `config` changes) and adds each point's
  /// distance to `sums`.
  LogicalResult measure(rt::Executor &ex, size_t b, const plan::Assignment *config, size_t first,
                        std::vector<double> &sums, DiagnosticEngine &d);
  double metric(const std::vector<double> &sums) const;
  /// The hooks that run the model configured as `cfg`: a fake-quantized
  /// weight in place of `v` (or null), `t` fake-quantized in place.
  const rt::Tensor *substituted(const plan::Assignment &cfg, const graph::Value &v) const;
  void quantized(const plan::Assignment &cfg, const graph::Value &v, rt::Tensor &t) const;

  const plan::Plan &plan;
  const std::vector<unsigned> &layers;
  const ir::Recipe &recipe;
  const SensitivityOptions &o;
  DiagnosticEngine &diags;
  plan::Assignment base; ///< the max config: layers at max, the rest as chosen
  std::vector<int> layerOf;
  std::vector<Feed> feeds;
  int64_t images = 0;
  std::vector<Point> points;
  /// `hessian`: the interest points' weights in the metric, in their order.
  std::vector<double> interestWeight;
  std::vector<int> pointOf;                       ///< by value id: the index in `points`, -1
  std::vector<std::vector<rt::Tensor>> reference; ///< per batch, per point (float)
  std::vector<std::vector<rt::Tensor>> kept;      ///< per batch: the max config's values
  std::vector<std::vector<double>> keptDistance;  ///< per batch, per point
  /// Fake-quantized weights: the owning node of a weight value (by value
  /// id) and the tensor per (node, candidate).
  std::vector<int> weightOwner;
  std::map<std::pair<unsigned, unsigned>, std::map<unsigned, rt::Tensor>> weights;
  /// Activation grids: the node whose candidate decides them (-1: fixed)
  /// and the grid per candidate (absent: not quantized there).
  struct ActGrids {
    int node = -1;
    std::map<unsigned, QuantGrid> byCandidate;
  };
  std::vector<std::optional<ActGrids>> acts; ///< by value id
  /// By value id: the points and the quantized activations, what the hooks
  /// need (the other values may run fused).
  std::vector<bool> watched;
  std::vector<std::unique_ptr<TensorStats>> stats; ///< by value id
  CalibrationData *data = nullptr;
  LogicalResult prepareVerification(rt::Executor &floatEx);
  LogicalResult measureOutputs(const plan::Assignment &cfg, rt::Executor &ex,
                               OutputAgreement &value, DiagnosticEngine &d);
  LogicalResult reportFirst(std::vector<std::optional<Diagnostic>> &errors, bool ok);
  std::vector<Feed> verifyFeeds;                     ///< the whole-model runs' images
  std::vector<std::vector<rt::Tensor>> floatOutputs; ///< per verification batch
  int64_t verifyImages = 0;
  /// One executor per thread for the parallel runs, created once.
  std::vector<std::unique_ptr<rt::Executor>> pool;
  friend class SensitivityPass; ///< per calibration batch
};

LogicalResult Measurer::readImages(CalibrationData &data) {
  if (failed(data.firstSamples(o.images, feeds, diags)))
    return failure();
  images = 0;
  for (const Feed &f : feeds)
    images += f.empty() || f.begin()->second.rank() == 0 ? 1 : f.begin()->second.dim(0);
  return success();
}

void Measurer::findPoints() {
  const graph::Graph &g = plan.model->graph;
  for (const graph::Node *n : g.topologicalOrder())
    for (const graph::Value *v : n->outputs) {
      if (!v || v->constant)
        continue;
      PointDistance kind = graph::opTraits(*n).point;
      if (v->isGraphOutput)
        points.push_back({v, kind == PointDistance::None ? PointDistance::Mse : kind, true});
      else if (kind != PointDistance::None && v == n->outputs[0])
        points.push_back({v, kind, false});
    }
  pointOf.assign(g.values().size(), -1);
  for (size_t p = 0; p < points.size(); ++p)
    pointOf[points[p].value->id] = int(p);
}

LogicalResult Measurer::prepareWeights() {
  weightOwner.assign(plan.model->graph.values().size(), -1);
  for (unsigned i = 0; i < plan.nodes.size(); ++i) {
    const plan::PlanNode &pn = plan.nodes[i];
    if (pn.innerOfChain || !pn.options.options)
      continue;
    std::vector<unsigned> cands{base[i]};
    if (layerOf[i] >= 0) {
      cands.clear();
      for (unsigned c = 0; c < pn.options.options->configs.size(); ++c)
        cands.push_back(c);
    }
    for (const plan::PlanWeight &pw : pn.weights) {
      if (pw.slot == "bias" || !pw.input || !pw.input->constant ||
          recipe.quantizeWeights == false || pw.input->constant->elem != graph::ElemType::Float)
        continue;
      rt::Tensor t = rt::Tensor::fromGraph(*pw.input->constant);
      std::optional<int64_t> axis = pw.channelAxis;
      bool any = false;
      for (unsigned c : cands) {
        ir::AttrConfig ac =
            withRecipeOverrides(pn.options.options->configs[c].weightConfig(pw.slot), recipe);
        if (!ac.quantize)
          continue;
        int width = ir::isLut(ac.method) ? ac.lutBits.value_or(8) : ac.bits;
        if (width > 16)
          continue; // quantizePlan reports it if this candidate is chosen
        WeightQDQ w = selectWeightGrids(t, ac, ac.perChannel ? axis : std::nullopt, recipe, nullptr,
                                        plan::blockDim(pw, ac.format));
        std::vector<float> q = w.fakeQuantized(t);
        rt::Tensor fq(graph::ElemType::Float, t.shape());
        std::copy(q.begin(), q.end(), fq.data<float>());
        weights[{i, c}][pw.input->id] = std::move(fq);
        any = true;
        // Bias correction, as quantizePlan makes it (a bias input is needed
        // to hold it here).
        const graph::Value *in = pn.node->input(0), *bias = pn.node->input(2);
        TensorStats *st = in && in->id < stats.size() ? stats[in->id].get() : nullptr;
        if (!recipe.biasCorrection || !graph::opTraits(*pn.node).linear || pw.inputIndex != 1 ||
            !st || !bias || !bias->constant)
          continue;
        if (std::optional<std::vector<float>> b =
                correctedBias(*plan.model, pn, w, t, st->channelMean(), nullptr)) {
          rt::Tensor bt(graph::ElemType::Float, {int64_t(b->size())});
          std::copy(b->begin(), b->end(), bt.data<float>());
          weights[{i, c}][bias->id] = std::move(bt);
          weightOwner[bias->id] = int(i);
        }
      }
      if (any)
        weightOwner[pw.input->id] = int(i);
    }
  }
  return success();
}

/// One pass over the calibration data, the one quantizePlan makes (it takes
/// these): histograms of the quantized activations, channel means of the
/// inputs of linear layers (bias correction).
LogicalResult Measurer::collect(rt::Executor &floatEx, CalibrationData &data) {
  std::vector<StatsRequest> requests = statisticsRequests(plan, recipe);
  if (requests.empty())
    return success();
  if (failed(collectStatistics(floatEx, data, requests, stats, {}, diags)))
    return failure();
  data.rewind();
  return success();
}

LogicalResult Measurer::prepareActivations() {
  acts.resize(plan.model->graph.values().size());
  if (!measureActivations())
    return success();
  for (const plan::PlanTensor &t : plan.tensors) {
    if (!t.quantize || t.preserving)
      continue;
    ActGrids a;
    std::vector<std::pair<unsigned, ir::ActivationConfig>> cands;
    if (t.producer) {
      unsigned node = unsigned(t.producer - plan.nodes.data());
      const std::vector<ir::OpConfig> &configs = t.producer->options.options->configs;
      if (layerOf[node] >= 0) {
        a.node = int(node);
        for (unsigned c = 0; c < configs.size(); ++c)
          cands.emplace_back(c, configs[c].activation);
      } else {
        cands.emplace_back(0, configs[base[node]].activation);
      }
    } else {
      cands.emplace_back(0, ir::ActivationConfig{t.method, t.bits, true, t.signedness});
    }
    for (const auto &[c, ac] : cands) {
      if (!ac.quantize)
        continue;
      ir::QuantMethod method = ac.method;
      int bits = ac.bits;
      if (recipe.activationBits)
        bits = *recipe.activationBits;
      if (recipe.activationMethod && !ir::isLut(*recipe.activationMethod))
        method = *recipe.activationMethod;
      QuantGrid g;
      std::string how;
      TensorStats *st = t.value->id < stats.size() ? stats[t.value->id].get() : nullptr;
      if (failed(selectTensorGrid(t, method, bits, ac.signedness, st, recipe, plan.modelName, g,
                                  how, diags)))
        return failure();
      a.byCandidate[c] = g;
    }
    acts[t.value->id] = std::move(a);
  }
  return success();
}

LogicalResult Measurer::measure(rt::Executor &ex, size_t b, const plan::Assignment *config,
                                size_t first, std::vector<double> &sums, DiagnosticEngine &d) {
  const plan::Assignment &cfg = config ? *config : base;
  auto substitute = [&](const graph::Value &v) { return substituted(cfg, v); };
  auto transform = [&](const graph::Value &v, rt::Tensor &t) { quantized(cfg, v, t); };
  std::vector<rt::Tensor> seen(points.size());
  auto observe = [&](const graph::Value &v, const rt::Tensor &t) {
    if (pointOf[v.id] >= 0)
      seen[size_t(pointOf[v.id])] = t;
  };
  rt::RunOptions ro;
  ro.substitute = substitute;
  ro.transform = transform;
  ro.observe = observe;
  ro.watched = &watched;
  std::vector<rt::Tensor> outputs;
  if (!config) {
    ro.keep = &kept[b];
    if (failed(ex.run(feeds[b], outputs, d, ro)))
      return failure();
  } else {
    if (failed(ex.runFrom(first, kept[b], outputs, d, ro)))
      return failure();
  }
  for (size_t p = 0; p < points.size(); ++p)
    sums[p] += seen[p].defined() ? batchDistance(points[p].kind, reference[b][p], seen[p])
                                 : keptDistance[b][p];
  return success();
}

const rt::Tensor *Measurer::substituted(const plan::Assignment &cfg, const graph::Value &v) const {
  int owner = weightOwner[v.id];
  if (owner < 0)
    return nullptr;
  auto it = weights.find({unsigned(owner), cfg[unsigned(owner)]});
  if (it == weights.end())
    return nullptr; // not quantized by that candidate
  auto w = it->second.find(v.id);
  return w == it->second.end() ? nullptr : &w->second;
}

void Measurer::quantized(const plan::Assignment &cfg, const graph::Value &v, rt::Tensor &t) const {
  const std::optional<ActGrids> &a = acts[v.id];
  if (!a || t.elem() != graph::ElemType::Float)
    return;
  auto g = a->byCandidate.find(a->node < 0 ? 0 : cfg[unsigned(a->node)]);
  if (g == a->byCandidate.end())
    return;
  rt::Tensor q(graph::ElemType::Float, t.shape());
  const float *x = t.data<float>();
  float *y = q.data<float>();
  fakeQuantize(g->second, x, y, t.numel());
  t = std::move(q);
}

double Measurer::metric(const std::vector<double> &sums) const {
  std::vector<double> interest, output;
  for (size_t p = 0; p < points.size(); ++p)
    (points[p].output ? output : interest)
        .push_back(sums[p] / double(std::max<int64_t>(1, images)));
  double m = 0;
  if (!interest.empty()) {
    if (o.distance == ir::MixedDistance::LastLayer) {
      m += interest.back();
    } else if (o.distance == ir::MixedDistance::Hessian) {
      for (size_t k = 0; k < interest.size(); ++k)
        m += interestWeight[k] * interest[k];
    } else {
      double s = 0;
      for (double d : interest)
        s += d;
      m += s / double(interest.size());
    }
  }
  if (!output.empty()) {
    double s = 0;
    for (double d : output)
      s += d;
    m += s / double(output.size());
  }
  return m;
}

LogicalResult Measurer::run(rt::Executor &floatEx, CalibrationData &data, Sensitivity &out) {
  auto t0 = Clock::now();
  this->data = &data;
  if (failed(readImages(data)) || failed(collect(floatEx, data)) || failed(prepareWeights()) ||
      failed(prepareActivations()))
    return failure();
  findPoints();
  watched.assign(pointOf.size(), false);
  for (size_t v = 0; v < watched.size(); ++v)
    watched[v] = pointOf[v] >= 0 || (v < acts.size() && acts[v]);
  for (const Point &p : points)
    (p.output ? out.outputPoints : out.interestPoints).push_back(p.value->name);
  if (o.distance == ir::MixedDistance::Hessian) {
    // The interest points weighed by their activation Hessian traces on
    // the float model, normalized to sum 1.
    std::vector<const graph::Value *> values;
    for (const Point &p : points)
      if (!p.output)
        values.push_back(p.value);
    std::vector<double> traces;
    if (failed(activationHessianTraces(floatEx, feeds, values, HutchinsonOptions(), traces,
                                       out.hessianProbes, diags)))
      return failure();
    double total = 0;
    for (double t : traces)
      total += t;
    for (double t : traces)
      interestWeight.push_back(total > 0 ? t / total : 1.0 / double(traces.size()));
    out.interestWeights = interestWeight;
  }

  // The float reference at every point.
  reference.resize(feeds.size());
  for (size_t b = 0; b < feeds.size(); ++b) {
    reference[b].resize(points.size());
    auto observe = [&](const graph::Value &v, const rt::Tensor &t) {
      if (pointOf[v.id] >= 0)
        reference[b][size_t(pointOf[v.id])] = t;
    };
    rt::RunOptions ro;
    ro.observe = observe;
    ro.watched = &watched;
    std::vector<rt::Tensor> outputs;
    if (failed(floatEx.run(feeds[b], outputs, diags, ro)))
      return failure();
  }
  // The max config, kept for the partial runs.
  kept.resize(feeds.size());
  keptDistance.assign(feeds.size(), std::vector<double>(points.size(), 0));
  std::vector<double> maxSums(points.size(), 0);
  for (size_t b = 0; b < feeds.size(); ++b) {
    std::vector<double> sums(points.size(), 0);
    if (failed(measure(floatEx, b, nullptr, 0, sums, diags)))
      return failure();
    keptDistance[b] = sums;
    for (size_t p = 0; p < points.size(); ++p)
      maxSums[p] += sums[p];
  }
  out.maxConfigMetric = metric(maxSums);

  // Every (layer, candidate) but the max one, in parallel.
  struct Job {
    unsigned layer, candidate;
  };
  std::vector<Job> jobs;
  out.layers = layers;
  out.metric.resize(layers.size());
  out.maxCandidate.resize(layers.size());
  for (size_t l = 0; l < layers.size(); ++l) {
    unsigned n = plan.nodes[layers[l]].options.options->configs.size();
    out.maxCandidate[l] = base[layers[l]];
    out.metric[l].assign(n, out.maxConfigMetric);
    for (unsigned c = 0; c < n; ++c)
      if (c != base[layers[l]])
        jobs.push_back({unsigned(l), c});
  }
  int threads = std::max(1, std::min<int>(omp_get_max_threads(), int(jobs.size())));
  // Fresh executors for every thread, so a job's arithmetic does not depend
  // on the thread that runs it (kernels set up inside the parallel region).
  pool.resize(size_t(std::max(1, omp_get_max_threads())));
  for (std::unique_ptr<rt::Executor> &ex : pool)
    if (!(ex = rt::Executor::create(*plan.model, diags)))
      return failure();
  std::atomic<int64_t> done{0};
  std::atomic<bool> ok{true};
  std::vector<std::optional<Diagnostic>> failedAt(jobs.size()); ///< the error of a failed job
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (size_t j = 0; j < jobs.size(); ++j) {
    if (!ok)
      continue;
    int t = omp_get_thread_num();
    rt::Executor &ex = *pool[size_t(t)];
    DiagnosticEngine local(diags.getSourceManager());
    std::vector<double> sums(points.size(), 0);
    plan::Assignment config = base;
    const graph::Node &changed = *plan.nodes[layers[jobs[j].layer]].node;
    config[layers[jobs[j].layer]] = jobs[j].candidate;
    size_t first = ex.stepOf(changed);
    bool good = true;
    for (size_t b = 0; b < feeds.size() && good; ++b)
      good = succeeded(measure(ex, b, &config, first, sums, local));
    if (!good) {
      if (!local.getDiagnostics().empty())
        failedAt[j] = local.getDiagnostics().back();
      ok = false;
      continue;
    }
    out.metric[jobs[j].layer][jobs[j].candidate] = metric(sums);
    int64_t d = ++done;
    if (o.progress && t == 0)
      o.progress(d, int64_t(jobs.size()));
  }
  if (failed(reportFirst(failedAt, ok)))
    return failure();
  if (o.progress)
    o.progress(int64_t(jobs.size()), int64_t(jobs.size()));

  // The floor and the rescale of docs/quantize.md, "Mixed precision".
  out.cost = out.metric;
  double largest = 0;
  for (size_t l = 0; l < layers.size(); ++l)
    for (unsigned c = 0; c < out.cost[l].size(); ++c) {
      double &s = out.cost[l][c];
      s = c == out.maxCandidate[l] ? out.maxConfigMetric : std::max(s, out.maxConfigMetric + 1e-8);
      largest = std::max(largest, s);
    }
  if (largest >= 1e10) {
    out.rescaled = true;
    for (auto &row : out.cost)
      for (double &s : row)
        s /= largest;
  }
  out.images = images;
  out.runs = int64_t(jobs.size() + 1) * int64_t(feeds.size());
  out.threads = unsigned(threads);
  out.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return success();
}

/// The calibration images the whole-model runs use (at most 1024, and at
/// most 256 MiB of input), with the float model's outputs on them.
LogicalResult Measurer::prepareVerification(rt::Executor &floatEx) {
  constexpr int64_t kMaxImages = 1024;
  constexpr size_t kMaxBytes = size_t(256) << 20;
  data->rewind();
  Feed feed;
  int64_t images = 0;
  size_t bytes = 0;
  while (images < kMaxImages && bytes < kMaxBytes && data->next(feed, diags)) {
    for (auto &[name, t] : feed)
      bytes += t.bytes();
    images += feed.empty() || feed.begin()->second.rank() == 0 ? 1 : feed.begin()->second.dim(0);
    floatOutputs.emplace_back();
    if (failed(floatEx.run(feed, floatOutputs.back(), diags)))
      return failure();
    verifyFeeds.push_back(feed);
  }
  if (data->failed())
    return failure();
  data->rewind();
  verifyImages = images;
  return success();
}

LogicalResult Measurer::measureOutputs(const plan::Assignment &cfg, rt::Executor &ex,
                                       OutputAgreement &value, DiagnosticEngine &d) {
  auto substitute = [&](const graph::Value &v) { return substituted(cfg, v); };
  auto transform = [&](const graph::Value &v, rt::Tensor &t) { quantized(cfg, v, t); };
  rt::RunOptions ro;
  ro.substitute = substitute;
  ro.transform = transform;
  ro.watched = &watched;
  int64_t agree = 0, rows = 0;
  double distance = 0;
  size_t outputs = 0;
  for (size_t b = 0; b < verifyFeeds.size(); ++b) {
    std::vector<rt::Tensor> q;
    if (failed(ex.run(verifyFeeds[b], q, d, ro)))
      return failure();
    const std::vector<rt::Tensor> &f = floatOutputs[b];
    outputs = f.size();
    for (size_t o = 0; o < f.size(); ++o) {
      if (f[o].elem() != graph::ElemType::Float || f[o].numel() == 0)
        continue;
      distance += batchDistance(PointDistance::Mse, f[o], q[o]);
      if (f[o].rank() != 2 || f[o].dim(1) < 2)
        continue;
      int64_t n = f[o].dim(0), c = f[o].dim(1);
      for (int64_t i = 0; i < n; ++i) {
        const float *x = f[o].data<float>() + i * c, *y = q[o].data<float>() + i * c;
        agree += std::max_element(x, x + c) - x == std::max_element(y, y + c) - y;
      }
      rows += n;
    }
  }
  value.images = verifyImages;
  value.agreement = rows ? double(agree) / double(rows) : 1;
  value.distance = distance / double(std::max<int64_t>(1, verifyImages * int64_t(outputs)));
  return success();
}

LogicalResult Measurer::measureOutputs(rt::Executor &floatEx,
                                       const std::vector<std::vector<unsigned>> &choices,
                                       std::vector<OutputAgreement> &values) {
  if (verifyFeeds.empty() && failed(prepareVerification(floatEx)))
    return failure();
  values.assign(choices.size(), {});
  std::vector<std::optional<Diagnostic>> errors(choices.size());
  std::atomic<bool> ok{true};
  int threads = int(std::min(pool.size(), choices.size()));
#pragma omp parallel for schedule(dynamic, 1) num_threads(std::max(1, threads))
  for (size_t i = 0; i < choices.size(); ++i) {
    if (!ok)
      continue;
    plan::Assignment cfg = base;
    for (size_t l = 0; l < layers.size(); ++l)
      cfg[layers[l]] = choices[i][l];
    DiagnosticEngine local(diags.getSourceManager());
    if (failed(measureOutputs(cfg, *pool[size_t(omp_get_thread_num())], values[i], local))) {
      if (!local.getDiagnostics().empty())
        errors[i] = local.getDiagnostics().back();
      ok = false;
    }
  }
  return reportFirst(errors, ok);
}

/// After a parallel loop: the first error a job reported, as a sequential
/// run would have.
LogicalResult Measurer::reportFirst(std::vector<std::optional<Diagnostic>> &errors, bool ok) {
  if (ok)
    return success();
  for (std::optional<Diagnostic> &d : errors)
    if (d) {
      diags.report(std::move(*d));
      break;
    }
  return failure();
}

SensitivityPass::SensitivityPass() = default;
SensitivityPass::~SensitivityPass() = default;

LogicalResult SensitivityPass::measureOutputs(rt::Executor &floatEx,
                                              const std::vector<std::vector<unsigned>> &choices,
                                              std::vector<OutputAgreement> &values) {
  return impl->measureOutputs(floatEx, choices, values);
}

std::vector<std::unique_ptr<TensorStats>> SensitivityPass::takeStatistics() {
  return std::move(impl->stats);
}
} // namespace tpcc::quant::mixed

LogicalResult mixed::measureSensitivity(const plan::Plan &plan, const std::vector<unsigned> &layers,
                                        const std::vector<unsigned> &max, const ir::Recipe &recipe,
                                        rt::Executor &floatEx, CalibrationData &data,
                                        const SensitivityOptions &options, Sensitivity &out,
                                        DiagnosticEngine &diags, SensitivityPass *pass) {
  auto m = std::make_unique<Measurer>(plan, layers, max, recipe, options, diags);
  if (failed(m->run(floatEx, data, out)))
    return failure();
  if (pass)
    pass->impl = std::move(m);
  return success();
}
