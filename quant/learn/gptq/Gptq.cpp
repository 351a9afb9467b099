//===- Gptq.cpp - Gradient-based post-training quantization ---------------===//
#include "quant/learn/gptq/Gptq.h"

#include "quant/core/Timing.h"

#include "quant/core/GraphHelpers.h"
#include "quant/core/stats/HessianTrace.h"
#include "quant/learn/finetune/FakeQuantModel.h"
#include "quant/learn/train/Optimizers.h"
#include "quant/learn/train/TrainingLoop.h"
#include "runtime/KernelUtil.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <map>

using namespace tpcc;
using namespace tpcc::quant;
using graph::ElemType;
using rt::Tensor;

namespace {

/// Teacher outputs kept across epochs up to this size; past it the teacher
/// runs again at every step.
constexpr size_t kTeacherCacheBytes = size_t(1) << 30;

using Feed = std::map<std::string, Tensor>;

/// β of the soft-rounding regularizer at step t of `total` (MCT's linear
/// temperature decay): 20 for the first 20 %, then linearly to 2.
double beta(int64_t t, int64_t total) {
  const double start = 20, end = 2, warm = 0.2 * double(total);
  if (double(t) < warm)
    return start;
  double rel = (double(t) - warm) / std::max(1.0, double(total) - warm);
  return end + (start - end) * std::max(0.0, 1 - rel);
}

/// Runs `ex` on `feed`, leaving the values of `points` (by index) in `out`
/// and after them the model's first output.
LogicalResult runPoints(rt::Executor &ex, const Feed &feed, rt::RunOptions ro,
                        const std::vector<bool> &watched,
                        const std::vector<const graph::Value *> &points, std::vector<Tensor> &out,
                        DiagnosticEngine &diags) {
  std::vector<int> index(watched.size(), -1);
  for (size_t p = 0; p < points.size(); ++p)
    index[points[p]->id] = int(p);
  out.assign(points.size(), Tensor());
  auto observe = [&](const graph::Value &v, const Tensor &t) {
    if (index[v.id] >= 0)
      out[size_t(index[v.id])] = t;
  };
  ro.observe = observe;
  ro.watched = &watched;
  std::vector<Tensor> outs;
  if (failed(ex.run(feed, outs, diags, ro)))
    return failure();
  out.push_back(outs.empty() ? Tensor() : outs.front());
  return success();
}

/// Σ (q - f)² and Σ f² over two float tensors of one shape, added to `num`
/// and `den`.
void addError(const Tensor &q, const Tensor &f, double &num, double &den) {
  for (int64_t i = 0; i < q.numel(); ++i) {
    double a = q.data<float>()[i], b = f.data<float>()[i];
    num += (a - b) * (a - b);
    den += b * b;
  }
}

/// The samples in `feed` (its first input's leading dimension).
int64_t samplesOf(const Feed &feed) {
  const Tensor &t = feed.begin()->second;
  return t.rank() > 0 ? t.dim(0) : 1;
}

/// The loss terms of one point for one batch: adds each sample's weighted
/// error to `loss` and its gradient (scaled by `scale`) to `seed`. Equal /
/// mean weights: ℓ = Σ(y_q - y_f)² / Σ y_f²; per-sample: mean over samples
/// of w_s times the squared error summed over channels, averaged over the
/// rest.
double pointLoss(const Tensor &yq, const Tensor &yf, const double *sampleWeights, double scale,
                 Tensor &seed) {
  const float *q = yq.data<float>(), *f = yf.data<float>();
  int64_t n = yq.numel();
  seed = Tensor(ElemType::Float, yq.shape());
  float *d = seed.data<float>();
  int64_t b = yq.rank() > 0 ? yq.dim(0) : 1, per = n / std::max<int64_t>(1, b);
  // Each sample's squared error, and Σ y_f² over all of them.
  std::vector<double> err(static_cast<size_t>(b), 0.0), energy(static_cast<size_t>(b), 0.0);
  rt::parallelFor(b, per * 4, [&](int64_t s0, int64_t s1) {
    for (int64_t s = s0; s < s1; ++s) {
      // 16 float lanes over blocks of at most 1,024 terms, so the loop
      // vectorizes; the blocks add up in double.
      constexpr int kLanes = 16;
      double num = 0, den = 0;
      for (int64_t i0 = s * per; i0 < (s + 1) * per; i0 += 1024) {
        int64_t i1 = std::min((s + 1) * per, i0 + 1024), i = i0;
        float ln[kLanes] = {}, ld[kLanes] = {};
        for (; i + kLanes <= i1; i += kLanes)
          for (int l = 0; l < kLanes; ++l) {
            float e = q[i + l] - f[i + l];
            ln[l] += e * e;
            ld[l] += f[i + l] * f[i + l];
          }
        for (; i < i1; ++i) {
          float e = q[i] - f[i];
          num += double(e * e);
          den += double(f[i] * f[i]);
        }
        for (int l = 0; l < kLanes; ++l) {
          num += double(ln[l]);
          den += double(ld[l]);
        }
      }
      err[size_t(s)] = num;
      energy[size_t(s)] = den;
    }
  });
  // d = c_s (y_q - y_f), c_s per sample.
  std::vector<float> c(static_cast<size_t>(b));
  double loss = 0;
  if (!sampleWeights) {
    double num = 0, den = 0;
    for (int64_t s = 0; s < b; ++s) {
      num += err[size_t(s)];
      den += energy[size_t(s)];
    }
    std::fill(c.begin(), c.end(), den > 0 ? float(scale * 2 / den) : 0.f);
    loss = den > 0 ? scale * num / den : 0.0;
  } else {
    int64_t rest = yq.rank() >= 2 ? per / std::max<int64_t>(1, yq.dim(1)) : 1;
    for (int64_t s = 0; s < b; ++s) {
      double w = scale * sampleWeights[s] / double(b * rest);
      c[size_t(s)] = float(2 * w);
      loss += w * err[size_t(s)];
    }
  }
  rt::parallelFor(b, per, [&](int64_t s0, int64_t s1) {
    for (int64_t s = s0; s < s1; ++s) {
      const float cs = c[size_t(s)];
      for (int64_t i = s * per; i < (s + 1) * per; ++i)
        d[i] = cs * (q[i] - f[i]);
    }
  });
  return loss;
}

/// Per-image traces normalized to sum 1 over the points.
void normalizeRows(std::vector<std::vector<double>> &rows) {
  for (std::vector<double> &r : rows) {
    double s = 0;
    for (double v : r)
      s += v;
    for (double &v : r)
      v = s > 0 ? v / s : 1.0 / double(r.size());
  }
}

/// One gradient GPTQ run, phase by phase: the kernels and layer outputs
/// (setUp), the calibration batches (loadFeeds), the layer weights
/// (weighLayers), the loss before (measure), training (train), and the hard
/// rounding with its bias candidates and the fall-back to nearest (harden).
class GptqRun {
public:
  GptqRun(graph::Model &model, QuantizeResult &result, rt::Executor &teacher, CalibrationData &data,
          const GptqOptions &options, GradientGptqReport &report, DiagnosticEngine &diags)
      : model(model), result(result), teacher(teacher), data(data), options(options),
        report(report), diags(diags),
        where(model.path.empty() ? std::string("<model>") : model.path) {}

  /// False when there is nothing to train (noted), or after an error.
  bool setUp(const plan::Plan &plan, bool &failedHere);
  LogicalResult loadFeeds();
  LogicalResult weighLayers();
  LogicalResult measure(bool before);
  LogicalResult train(const TrainingProgressFn &progress);
  LogicalResult harden();

private:
  /// The teacher's values at the points for batch `b` (cached when they fit).
  LogicalResult teacherOf(size_t b, std::vector<Tensor> &out);
  LogicalResult noValue(size_t p) {
    return diags.emitAt(where, diag::err_run_node,
                        fmt::format("gradient GPTQ: `{}` has no value to compare with the "
                                    "float model's",
                                    points[p]->name));
  }
  /// Calls f(parameter vector, index) on every trained rounding parameter,
  /// then on every bias (from index firstBias).
  template <typename F> void eachState(F f);
  template <typename F> void eachBias(F f);

  graph::Model &model;
  QuantizeResult &result;
  rt::Executor &teacher;
  CalibrationData &data;
  const GptqOptions &options;
  GradientGptqReport &report;
  DiagnosticEngine &diags;
  std::string where;

  std::unique_ptr<FakeQuantModel> fq;
  std::vector<size_t> trained; ///< indices into fq->weights
  /// The layer outputs the loss compares, in the student and the teacher.
  std::vector<const graph::Value *> points, teacherPoints;
  std::vector<bool> teacherWatched, studentWatched;
  std::vector<Feed> feeds;
  std::vector<std::vector<Tensor>> cache;         ///< the teacher's, per batch
  std::vector<std::vector<double>> sampleWeights; ///< per image, per point
  /// What training starts from (nearest rounding, the corrected biases),
  /// restored when the trained rounding turns out worse: the rounding
  /// parameters, then the biases (from `firstBias`).
  std::vector<std::vector<double>> initial;
  size_t firstBias = 0;
};

template <typename F> void GptqRun::eachBias(F f) {
  size_t i = 0;
  for (TrainingWeight &s : fq->weights)
    if (s.bias)
      f(s.w, i++);
}

template <typename F> void GptqRun::eachState(F f) {
  size_t i = 0;
  for (size_t k : trained)
    for (QuantizerParam &p : fq->weights[k].quantizer->parameters())
      f(*p.value, i++);
  eachBias([&](std::vector<double> &v, size_t j) { f(v, firstBias + j); });
}

bool GptqRun::setUp(const plan::Plan &plan, bool &failedHere) {
  failedHere = false;
  FakeQuantOptions fo;
  fo.weights = options.rounding;
  fo.trainActivations = false;
  fo.trainOperands = false;
  fo.minThreshold = options.minThreshold;
  fq = FakeQuantModel::create(model, result, plan, fo, diags);
  if (!fq) {
    failedHere = true;
    return false;
  }
  const graph::Graph &g = model.graph, &tg = teacher.model().graph;
  // The kernels that train, and the layer outputs the loss compares.
  for (size_t k = 0; k < fq->weights.size(); ++k) {
    TrainingWeight &s = fq->weights[k];
    if (!s.quantizer || result.spec.weights[s.spec].operand)
      continue;
    if (s.quantizer->kind() != options.rounding) {
      report.skipped.emplace_back(s.node, kLutSkipReason);
      continue;
    }
    trained.push_back(k);
    const graph::Node *n = edits::nodeNamed(g, s.node);
    const graph::Value *y = n && !n->outputs.empty() ? n->outputs[0] : nullptr;
    const graph::Value *ty = y ? tg.findValue(y->name) : nullptr;
    if (!y || !ty || y->type.elem != ElemType::Float)
      continue;
    if (std::find(points.begin(), points.end(), y) != points.end())
      continue;
    points.push_back(y);
    teacherPoints.push_back(ty);
    report.points.push_back({n->displayName(), y->name, 1.0, 0, 0});
  }
  report.roundedKernels = trained.size();
  if (trained.empty() || points.empty()) {
    const char *method =
        options.rounding == QuantizerKind::SteRounding ? "GPTQ (ste)" : "GPTQ (soft_rounding)";
    noteNothingToRound(diags, where, method, report.skipped);
    return false;
  }
  teacherWatched.assign(tg.values().size(), false);
  for (const graph::Value *v : teacherPoints)
    teacherWatched[v->id] = true;
  studentWatched.assign(g.values().size(), false);
  rt::RunOptions ro = fq->runOptions();
  for (size_t id = 0; id < studentWatched.size(); ++id)
    studentWatched[id] = (*ro.watched)[id];
  for (const graph::Value *v : points)
    studentWatched[v->id] = true;
  return true;
}

LogicalResult GptqRun::loadFeeds() {
  if (failed(data.firstSamples(std::numeric_limits<int64_t>::max(), feeds, diags)))
    return failure();
  report.samples = data.total();
  if (feeds.empty())
    return diags.emitAt(where, diag::err_run_node, "gradient GPTQ: no calibration samples");
  if (report.samples < data.batchSize())
    diags.emitAt(where, diag::warn_gptq_few_samples, report.samples, data.batchSize());
  return success();
}

/// Layer weights from the float model's activation Hessian traces.
LogicalResult GptqRun::weighLayers() {
  if (!options.hessianWeights && !options.perSampleLoss)
    return success();
  size_t np = points.size();
  HutchinsonOptions ho;
  ho.seed = options.seed;
  std::vector<double> traces;
  std::vector<std::vector<double>> rows;
  std::vector<Feed> some = feeds;
  if (!options.perSampleLoss && failed(data.firstSamples(options.hessianImages, some, diags)))
    return failure();
  if (failed(activationHessianTraces(teacher, some, teacherPoints, ho, traces, report.hessianProbes,
                                     diags, &rows)))
    return failure();
  normalizeRows(rows);
  if (options.perSampleLoss) {
    // Each image's weights, scaled to mean 1 over the points.
    for (std::vector<double> &r : rows)
      for (double &v : r)
        v *= double(np);
    sampleWeights = std::move(rows);
    for (size_t p = 0; p < np; ++p) {
      double s = 0;
      for (const std::vector<double> &r : sampleWeights)
        s += r[p];
      report.points[p].weight = s / double(sampleWeights.size());
    }
    return success();
  }
  // Averaged over the images (the first hessianImages), log10, minus the
  // smallest; zeros take the second smallest.
  std::vector<double> mean(np, 0.0);
  int64_t images = std::min<int64_t>(options.hessianImages, int64_t(rows.size()));
  for (int64_t i = 0; i < images; ++i)
    for (size_t p = 0; p < np; ++p)
      mean[p] += rows[size_t(i)][p] / double(images);
  std::vector<double> sorted = mean;
  std::sort(sorted.begin(), sorted.end());
  double second = sorted.size() > 1 ? sorted[1] : sorted[0];
  for (double &m : mean)
    m = std::log10(m > 0 ? m : std::max(second, 1e-30));
  double lo = *std::min_element(mean.begin(), mean.end()),
         hi = *std::max_element(mean.begin(), mean.end());
  if (!(hi > lo)) { // one layer, or traces that do not tell the layers apart
    for (double &m : mean)
      m = 1;
  } else {
    for (double &m : mean)
      m -= lo;
  }
  for (size_t p = 0; p < np; ++p)
    report.points[p].weight = mean[p];
  return success();
}

LogicalResult GptqRun::teacherOf(size_t b, std::vector<Tensor> &out) {
  if (b < cache.size()) {
    out = cache[b];
    return success();
  }
  return runPoints(teacher, feeds[b], {}, teacherWatched, teacherPoints, out, diags);
}

/// ℓ_i over the whole calibration set, the student as it is now, and the
/// same of the model's first output; `before` also caches the teacher's
/// values (when they all fit) and records the state training starts from.
LogicalResult GptqRun::measure(bool before) {
  size_t np = points.size();
  std::vector<double> num(np + 1, 0.0), den(np + 1, 0.0);
  size_t bytes = 0;
  for (size_t b = 0; b < feeds.size(); ++b) {
    std::vector<Tensor> yf, yq;
    if (failed(teacherOf(b, yf)) || failed(runPoints(fq->executor(), feeds[b], fq->runOptions(),
                                                     studentWatched, points, yq, diags)))
      return failure();
    for (size_t p = 0; p < np; ++p) {
      if (!yq[p].defined() || !yf[p].defined() || yq[p].shape() != yf[p].shape())
        return noValue(p);
      addError(yq[p], yf[p], num[p], den[p]);
      bytes += yf[p].bytes();
    }
    const Tensor &oq = yq[np], &of = yf[np];
    if (oq.defined() && of.defined() && oq.shape() == of.shape() && oq.elem() == ElemType::Float &&
        of.elem() == ElemType::Float)
      addError(oq, of, num[np], den[np]);
    if (before && b == cache.size() && bytes / (b + 1) * feeds.size() <= kTeacherCacheBytes)
      cache.push_back(std::move(yf));
  }
  if (before && cache.size() != feeds.size())
    cache.clear();
  for (size_t p = 0; p <= np; ++p)
    (p == np ? (before ? report.outputLossBefore : report.outputLossAfter)
             : (before ? report.points[p].lossBefore : report.points[p].lossAfter)) =
        den[p] > 0 ? num[p] / den[p] : 0.0;
  if (before) {
    report.teacherCached = !cache.empty();
    for (size_t k : trained)
      firstBias += fq->weights[k].quantizer->parameters().size();
    eachState([&](std::vector<double> &v, size_t) { initial.push_back(v); });
  }
  return success();
}

/// One step per calibration batch, in the calibration order.
LogicalResult GptqRun::train(const TrainingProgressFn &progress) {
  size_t np = points.size();
  std::vector<double> pointWeight(np);
  for (size_t p = 0; p < np; ++p)
    pointWeight[p] = report.points[p].weight;
  TrainingLoop loop("gradient GPTQ", options.epochs, int64_t(feeds.size()), "the recipe's gptq lr");
  int64_t total = loop.totalSteps();
  std::map<const std::vector<double> *, Adam> adam;
  std::vector<Momentum> biasMomentum(fq->weights.size());
  std::vector<Tensor> noOutputGrads(model.graph.outputs().size());
  std::vector<rt::grad::Backprop::ValueGradient> seeds;
  rt::RunOptions ro = fq->runOptions();
  double lambda = options.lambda();
  int64_t image = 0; ///< the first sample of the step, in the epoch
  TrainingLoop::Steps steps;
  steps.epochBegin = [&](int64_t) { image = 0; };
  steps.forward = [&](TrainingStep &st) -> LogicalResult {
    const Feed &feed = feeds[size_t(st.step)];
    st.samples = samplesOf(feed);
    if (options.gradualActivation)
      fq->activationMix = double(st.t) / double(total);
    std::vector<Tensor> outs, yf;
    if (failed(fq->backprop().forward(feed, outs, diags, ro)) ||
        failed(teacherOf(size_t(st.step), yf)))
      return failure();
    seeds.clear();
    for (size_t p = 0; p < np; ++p) {
      const Tensor *yq = fq->backprop().taped(*points[p]);
      if (!yq || yq->shape() != yf[p].shape())
        return noValue(p);
      std::vector<double> sw;
      if (!sampleWeights.empty()) {
        for (int64_t i = 0; i < st.samples; ++i)
          sw.push_back(sampleWeights[size_t(image + i)][p]);
      } else if (pointWeight[p] == 0) {
        continue;
      }
      double scale = sw.empty() ? pointWeight[p] / double(np) : 1.0 / double(np);
      Tensor seed;
      st.loss += pointLoss(*yq, yf[p], sw.empty() ? nullptr : sw.data(), scale, seed);
      seeds.emplace_back(points[p], std::move(seed));
    }
    fq->zeroGrad();
    if (options.rounding == QuantizerKind::SoftRounding)
      for (size_t k : trained)
        st.loss += softRoundingRegularizer(*fq->weights[k].quantizer, beta(st.t, total), lambda);
    return success();
  };
  steps.update = [&](TrainingStep &st) -> LogicalResult {
    std::vector<Tensor> grads;
    auto hook = [&](const graph::Value &v, Tensor gr) { return fq->gradient(v, std::move(gr)); };
    if (failed(fq->backprop().backward(noOutputGrads, grads, diags, hook, seeds)))
      return failure();
    // STE rounding moves in whole steps: a constant rate keeps flipping
    // values to the end, so its rate decays (cosine) to settle them.
    double lr =
        options.rounding == QuantizerKind::SteRounding ? loop.cosine(options.lr, st.t) : options.lr;
    for (size_t k : trained)
      for (QuantizerParam &p : fq->weights[k].quantizer->parameters())
        adam[p.value].step(p.value->data(), p.grad->data(), p.value->size(), lr, 0, st.t + 1);
    if (options.trainBias)
      for (size_t k = 0; k < fq->weights.size(); ++k) {
        TrainingWeight &s = fq->weights[k];
        if (!s.bias)
          continue;
        std::vector<double> gb(grads[k].data<float>(), grads[k].data<float>() + grads[k].numel());
        biasMomentum[k].step(s.w.data(), gb.data(), s.w.size(), options.biasLr, options.momentum);
      }
    fq->refresh();
    image += st.samples;
    return success();
  };
  if (failed(loop.run(steps, where, progress, diags)))
    return failure();
  report.steps = loop.steps;
  report.trainSeconds = loop.trainSeconds;
  report.firstLoss = loop.firstLoss;
  report.lastLoss = loop.lastLoss;
  return success();
}

/// Hard rounding: the loss after, the better bias candidate, nearest
/// rounding back when neither is better than it, the flips, and the kernels
/// written back.
LogicalResult GptqRun::harden() {
  fq->activationMix = 1;
  fq->hard = true;
  struct Outcome {
    std::vector<double> layers; ///< ℓ_i after
    double weighted = 0, output = 0;
  };
  auto evaluate = [&](Outcome &o) -> LogicalResult {
    fq->refresh();
    if (failed(measure(/*before=*/false)))
      return failure();
    for (const GptqPoint &p : report.points) {
      o.layers.push_back(p.lossAfter);
      o.weighted += p.weight * p.lossAfter;
    }
    o.output = report.outputLossAfter;
    return success();
  };
  double before = 0;
  for (const GptqPoint &p : report.points)
    before += p.weight * p.lossBefore;
  // Never worse than nearest rounding: not in the loss it trains, not at
  // the model's output.
  auto passes = [&](const Outcome &o) {
    return o.weighted <= before && o.output <= report.outputLossBefore;
  };
  Outcome joint, corrected;
  if (failed(evaluate(joint)))
    return failure();
  // The trained rounding with the biases it started from (bias correction's)
  // is the other candidate: where nearest rounding was already close (8
  // bits), the trained biases overshoot, and the corrected ones score better
  // in both measures. The better one that passes is kept.
  bool hasBias = initial.size() > firstBias, useCorrected = false;
  if (options.trainBias && hasBias) {
    std::vector<std::vector<double>> trainedBias;
    eachBias([&](std::vector<double> &v, size_t i) {
      trainedBias.push_back(v);
      v = initial[firstBias + i];
    });
    if (failed(evaluate(corrected)))
      return failure();
    useCorrected = passes(corrected) && (!passes(joint) || corrected.weighted < joint.weighted);
    report.biasCandidates =
        BiasCandidates{{joint.weighted, joint.output}, {corrected.weighted, corrected.output}};
    if (!useCorrected)
      eachBias([&](std::vector<double> &v, size_t i) { v = trainedBias[i]; });
  }
  const Outcome &chosen = useCorrected ? corrected : joint;
  for (size_t p = 0; p < report.points.size(); ++p)
    report.points[p].lossAfter = chosen.layers[p];
  report.outputLossAfter = chosen.output;
  report.biasesTrained = options.trainBias && hasBias && !useCorrected;
  fq->refresh();
  if (!passes(chosen)) {
    diags.emitAt(where, diag::warn_gptq_worse, before, joint.weighted, report.outputLossBefore,
                 joint.output, report.steps);
    eachState([&](std::vector<double> &v, size_t i) { v = initial[i]; });
    fq->refresh();
    for (GptqPoint &p : report.points)
      p.lossAfter = p.lossBefore;
    report.outputLossAfter = report.outputLossBefore;
    report.reverted = true;
    report.biasesTrained = false;
  }
  for (size_t k : trained) {
    const TrainingWeight &s = fq->weights[k];
    std::unique_ptr<TrainableQuantizer> nearest = fixedQuantizer(s.quantizer->config());
    Tensor a = nearest->forward(s.current);
    for (int64_t i = 0; i < a.numel(); ++i)
      report.flipped += a.data<float>()[i] != s.read.data<float>()[i];
    report.elements += a.numel();
  }
  fq->finish();
  return success();
}

} // namespace

LogicalResult quant::gradientGptq(graph::Model &model, QuantizeResult &result,
                                  const plan::Plan &plan, rt::Executor &teacher,
                                  CalibrationData &data, const GptqOptions &options,
                                  GradientGptqReport &report, DiagnosticEngine &diags,
                                  const TrainingProgressFn &progress) {
  auto t0 = Clock::now();
  report = GradientGptqReport();
  report.options = options;
  GptqRun run(model, result, teacher, data, options, report, diags);
  bool error = false;
  if (!run.setUp(plan, error))
    return failure(error);
  if (failed(run.loadFeeds()) || failed(run.weighLayers()) || failed(run.measure(true)) ||
      failed(run.train(progress)) || failed(run.harden()))
    return failure();
  report.seconds = since(t0);
  return success();
}

LogicalResult GradientGptqStage::run(StageContext &ctx, std::unique_ptr<StageReport> &report,
                                     DiagnosticEngine &diags) const {
  auto r = std::make_unique<GradientGptqReport>();
  if (failed(gradientGptq(ctx.model, ctx.result, ctx.plan, ctx.floatModel, ctx.data, options, *r,
                          diags, ctx.training)))
    return failure();
  report = std::move(r);
  return success();
}

void GradientGptqReport::print(llvm::raw_ostream &os) const {
  const GradientGptqReport &report = *this;
  if (report.points.empty())
    return;
  double before = 0, after = 0, weights = 0;
  for (const GptqPoint &p : report.points) {
    before += p.weight * p.lossBefore;
    after += p.weight * p.lossAfter;
    weights += p.weight;
  }
  weights = weights > 0 ? weights : 1;
  os << fmt::format("  gptq: {}, {} epoch{} ({} steps) over {} samples, {:.1f} s: layer loss "
                    "{:.4g} -> {:.4g} (weighted mean of {} layers), output error {:.4g} -> "
                    "{:.4g}; {} of {} kernel values rounded away from nearest{}\n",
                    options.rounding == QuantizerKind::SteRounding ? "ste" : "soft_rounding",
                    options.epochs, options.epochs == 1 ? "" : "s", report.steps, report.samples,
                    report.seconds, before / weights, after / weights, report.points.size(),
                    report.outputLossBefore, report.outputLossAfter, report.flipped,
                    report.elements,
                    report.biasCandidates && !report.biasesTrained && !report.reverted
                        ? "; the corrected biases kept (better than the trained ones)"
                        : "");
}

void GradientGptqReport::writeJSON(llvm::json::OStream &j) const {
  const GradientGptqReport &report = *this;
  j.attributeObject("gptq", [&] {
    j.attribute("method", options.rounding == QuantizerKind::SteRounding ? "ste" : "soft_rounding");
    j.attribute("epochs", options.epochs);
    j.attribute("lr", options.lr);
    j.attribute("bias_lr", options.trainBias ? options.biasLr : 0.0);
    j.attribute("regularization", options.lambda());
    j.attribute("hessian_weights", options.hessianWeights);
    j.attribute("hessian_probes", report.hessianProbes);
    j.attribute("per_sample_loss", options.perSampleLoss);
    j.attribute("gradual_activation", options.gradualActivation);
    j.attribute("samples", report.samples);
    j.attribute("steps", report.steps);
    j.attribute("first_loss", report.firstLoss);
    j.attribute("last_loss", report.lastLoss);
    j.attribute("rounded_kernels", int64_t(report.roundedKernels));
    j.attribute("flipped", report.flipped);
    j.attribute("elements", report.elements);
    j.attribute("teacher_cached", report.teacherCached);
    j.attribute("output_loss_before", report.outputLossBefore);
    j.attribute("output_loss_after", report.outputLossAfter);
    j.attribute("reverted", report.reverted);
    j.attribute("biases_trained", report.biasesTrained);
    if (const auto &c = report.biasCandidates)
      j.attributeObject("bias_candidates", [&] {
        for (const auto &[name, losses] :
             {std::pair{"trained", c->trained}, std::pair{"corrected", c->corrected}})
          j.attributeObject(name, [&] {
            j.attribute("layer_loss", losses.layer);
            j.attribute("output_loss", losses.output);
          });
      });
    j.attribute("seconds", report.seconds);
    j.attribute("train_seconds", report.trainSeconds);
    j.attributeArray("layers", [&] {
      for (const GptqPoint &p : report.points)
        j.object([&] {
          j.attribute("node", p.node);
          j.attribute("output", p.value);
          j.attribute("weight", p.weight);
          j.attribute("loss_before", p.lossBefore);
          j.attribute("loss_after", p.lossAfter);
        });
    });
    writeSkippedJSON(report.skipped, j);
  });
}
