//===- Finetune.cpp - Quantization-aware fine-tuning -----------------------===//
#include "quant/learn/finetune/Finetune.h"

#include "quant/core/Timing.h"

#include "quant/learn/train/Optimizers.h"
#include "quant/learn/train/TrainingLoop.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>

using namespace tpcc;
using namespace tpcc::quant;
using graph::ElemType;
using rt::Tensor;

namespace {

/// log softmax of each row of `logits` [B, C].
std::vector<double> logSoftmax(const Tensor &logits, int64_t row) {
  int64_t c = logits.dim(1);
  const float *r = logits.data<float>() + row * c;
  double mx = *std::max_element(r, r + c), sum = 0;
  for (int64_t k = 0; k < c; ++k)
    sum += std::exp(double(r[k]) - mx);
  std::vector<double> out(static_cast<size_t>(c));
  for (int64_t k = 0; k < c; ++k)
    out[size_t(k)] = double(r[k]) - mx - std::log(sum);
  return out;
}

} // namespace

LogicalResult quant::finetune(graph::Model &model, QuantizeResult &result, const plan::Plan &plan,
                              rt::Executor &teacher, const FinetuneData &data,
                              const FinetuneOptions &options, FinetuneReport &report,
                              DiagnosticEngine &diags, const TrainingProgressFn &progress) {
  auto t0 = Clock::now();
  std::string where = model.path.empty() ? std::string("<model>") : model.path;
  FakeQuantOptions fo;
  fo.weights = fo.activations = options.quantizer;
  fo.minThreshold = options.minThreshold;
  std::unique_ptr<FakeQuantModel> fq = FakeQuantModel::create(model, result, plan, fo, diags);
  if (!fq)
    return failure();
  rt::Executor *ex = &fq->executor();
  if (ex->requiredInputs().size() != 1)
    return diags.emitAt(where, diag::err_run_node,
                        "fine-tuning feeds --data to a model with one input");
  const graph::Value *input = ex->requiredInputs().front();
  std::vector<TrainingWeight> &weights = fq->weights;
  std::vector<Adam> weightAdam(weights.size());
  std::vector<double> grad;

  // Data.
  const Tensor &x = data.x;
  int64_t n = x.rank() >= 1 ? x.dim(0) : 0;
  if (n == 0)
    return diags.emitAt(where, diag::err_run_node, "the training data holds no samples");
  bool labeled = data.labels.defined();
  std::mt19937 rng(options.seed);
  std::vector<int64_t> order(static_cast<size_t>(n));
  int64_t batch = std::max<int64_t>(1, std::min(options.batch, n));
  TrainingLoop loop("fine-tuning", options.epochs, (n + batch - 1) / batch, "--lr");
  report = FinetuneReport();
  report.settings = options;
  report.dataSamples = n;
  report.labeled = labeled;
  report.trainedWeights = weights.size();
  report.trainedActivations = fq->activations.size();
  std::map<const std::vector<double> *, Adam> paramAdam; ///< the quantizers'
  size_t rowBytes = x.bytes() / size_t(n);
  rt::RunOptions ro = fq->runOptions();
  // The samples of the validation set the fake-quantized model classifies
  // right.
  auto validate = [&](int64_t &correct) -> LogicalResult {
    correct = 0;
    const Tensor &vx = options.validateX;
    int64_t vn = vx.dim(0);
    for (int64_t b0 = 0; b0 < vn; b0 += batch) {
      std::vector<Tensor> outs;
      std::map<std::string, Tensor> feed{{input->name, vx.rows(b0, std::min(vn, b0 + batch))}};
      if (failed(ex->run(feed, outs, diags, ro)))
        return failure();
      const Tensor &y = outs.front();
      if (options.validationOutputs)
        options.validationOutputs(b0, y);
      for (int64_t r = 0; r < y.dim(0); ++r) {
        const float *row = y.data<float>() + r * y.dim(1);
        int64_t best = std::max_element(row, row + y.dim(1)) - row;
        correct += best == int64_t(options.validateLabels.at(b0 + r));
      }
    }
    return success();
  };
  TrainingLoop::Steps steps;
  steps.epochBegin = [&](int64_t) {
    for (int64_t i = 0; i < n; ++i)
      order[size_t(i)] = i;
    for (int64_t i = n - 1; i > 0; --i) // Fisher-Yates, the same on every library
      std::swap(order[size_t(i)], order[size_t(rng() % uint32_t(i + 1))]);
  };
  Tensor dy; ///< the loss's gradient at the logits
  steps.forward = [&](TrainingStep &s) -> LogicalResult {
    int64_t b0 = s.step * batch, b = std::min(batch, n - b0);
    rt::Shape shape = x.shape();
    shape[0] = b;
    Tensor xb(x.elem(), shape);
    for (int64_t i = 0; i < b; ++i)
      std::memcpy(static_cast<uint8_t *>(xb.raw()) + size_t(i) * rowBytes,
                  static_cast<const uint8_t *>(x.raw()) + size_t(order[size_t(b0 + i)]) * rowBytes,
                  rowBytes);
    // Forward with fake-quantized weights and activations.
    std::map<std::string, Tensor> feed{{input->name, xb}};
    std::vector<Tensor> outs;
    if (failed(fq->backprop().forward(feed, outs, diags, ro)))
      return failure();
    const Tensor &logits = outs.front();
    if (logits.rank() != 2 || logits.dim(0) != b)
      return diags.emitAt(where, diag::err_run_node,
                          fmt::format("fine-tuning needs logits [batch, classes] as the first "
                                      "output; it is {}",
                                      rt::shapeStr(logits.shape())));
    int64_t classes = logits.dim(1);
    if (labeled && s.t == 0) // every label, once the logits say how many classes
      for (int64_t i = 0; i < n; ++i) {
        int64_t label = int64_t(data.labels.at(i));
        if (label < 0 || label >= classes)
          return diags.emitAt(where, diag::err_run_node,
                              fmt::format("label {} of sample {} is not a class of the {} "
                                          "logits",
                                          label, i, classes));
      }
    // Loss and its gradient.
    dy = Tensor(ElemType::Float, logits.shape());
    double loss = 0;
    std::vector<Tensor> teacherOut;
    if (!labeled && failed(teacher.run(feed, teacherOut, diags)))
      return failure();
    for (int64_t r = 0; r < b; ++r) {
      std::vector<double> ls = logSoftmax(logits, r);
      std::vector<double> target(size_t(classes), 0.0);
      if (labeled) {
        int64_t label = int64_t(data.labels.at(order[size_t(b0 + r)]));
        target[size_t(label)] = 1;
        loss -= ls[size_t(label)];
      } else {
        std::vector<double> lt = logSoftmax(teacherOut.front(), r);
        for (int64_t k = 0; k < classes; ++k) {
          target[size_t(k)] = std::exp(lt[size_t(k)]);
          loss += target[size_t(k)] * (lt[size_t(k)] - ls[size_t(k)]);
        }
      }
      for (int64_t k = 0; k < classes; ++k)
        dy.data<float>()[r * classes + k] =
            float((std::exp(ls[size_t(k)]) - target[size_t(k)]) / double(b));
    }
    s.loss = loss / double(b);
    s.samples = b;
    return success();
  };
  steps.update = [&](TrainingStep &s) -> LogicalResult {
    // Backward: each quantizer's straight-through rule in the hook.
    fq->zeroGrad();
    auto hook = [&](const graph::Value &v, Tensor g) { return fq->gradient(v, std::move(g)); };
    std::vector<Tensor> grads;
    if (failed(fq->backprop().backward({dy}, grads, diags, hook)))
      return failure();
    // Adam, on a cosine schedule.
    double lr = loop.cosine(options.lr, s.t);
    for (size_t k = 0; k < weights.size(); ++k) {
      TrainingWeight &w = weights[k];
      grad.assign(grads[k].data<float>(), grads[k].data<float>() + grads[k].numel());
      // Decoupled weight decay on the kernels.
      weightAdam[k].step(w.w.data(), grad.data(), w.w.size(), lr,
                         w.quantizer ? options.weightDecay : 0, s.t + 1);
    }
    auto update = [&](TrainableQuantizer &q) {
      for (QuantizerParam &p : q.parameters())
        paramAdam[p.value].step(p.value->data(), p.grad->data(), p.value->size(), lr, 0, s.t + 1);
    };
    for (TrainingActivation &a : fq->activations)
      update(*a.quantizer);
    for (TrainingWeight &w : weights)
      if (w.quantizer)
        update(*w.quantizer);
    fq->refresh();
    return success();
  };
  steps.epochEnd = [&](int64_t epoch, double loss) -> LogicalResult {
    int64_t correct = -1;
    if (options.validateX.defined() && failed(validate(correct)))
      return failure();
    if (options.epochDone)
      options.epochDone(epoch, loss, correct);
    return success();
  };
  if (failed(loop.run(steps, where, progress, diags)))
    return failure();
  report.steps = loop.steps;
  report.samples = loop.samples;
  report.firstLoss = loop.firstLoss;
  report.lastLoss = loop.lastLoss;
  report.trainSeconds = loop.trainSeconds;
  fq->finish(&report.quantizers);
  report.seconds = since(t0);
  return success();
}

LogicalResult FinetuneStage::run(StageContext &ctx, std::unique_ptr<StageReport> &report,
                                 DiagnosticEngine &diags) const {
  auto r = std::make_unique<FinetuneReport>();
  if (failed(finetune(ctx.model, ctx.result, ctx.plan, ctx.floatModel, data, options, *r, diags,
                      ctx.training)))
    return failure();
  report = std::move(r);
  return success();
}

void FinetuneReport::print(llvm::raw_ostream &os) const {
  const FinetuneSettings &o = settings;
  os << fmt::format("finetune: {} epoch{} of {} samples ({} steps, batch {}, {} quantizers, {}), "
                    "{}: loss {:.4f} -> {:.4f}, {:.0f} samples/s\n",
                    o.epochs, o.epochs == 1 ? "" : "s", dataSamples, steps, o.batch,
                    trainedWeights + trainedActivations, toString(o.quantizer),
                    labeled ? "cross-entropy with the labels" : "distillation from the float model",
                    firstLoss, lastLoss, samplesPerSecond());
}

void FinetuneReport::writeJSON(llvm::json::OStream &j) const {
  const FinetuneSettings &options = settings;
  const FinetuneReport &report = *this;
  j.attributeObject("finetune", [&] {
    j.attribute("epochs", options.epochs);
    j.attribute("batch", options.batch);
    j.attribute("lr", options.lr);
    j.attribute("weight_decay", options.weightDecay);
    j.attribute("quantizer", toString(options.quantizer));
    j.attribute("seed", int64_t(options.seed));
    j.attribute("steps", report.steps);
    j.attribute("samples", report.samples);
    j.attribute("first_loss", report.firstLoss);
    j.attribute("last_loss", report.lastLoss);
    j.attribute("seconds", report.seconds);
    j.attribute("samples_per_second", report.samplesPerSecond());
    j.attributeArray("quantizers", [&] {
      for (const TrainedQuantizer &t : report.quantizers)
        j.object([&] {
          const TrainableQuantizerConfig &c = t.config;
          bool weights = c.target == QuantizerTarget::Weights;
          j.attribute("tensor", t.tensor);
          j.attribute("target", weights ? "weights" : "activation");
          j.attribute("method", ir::toString(c.method));
          j.attribute("bits", c.bits);
          j.attributeArray("candidate_bits", [&] {
            for (int b : c.candidateBits)
              j.value(b);
          });
          j.attribute("enabled", c.enabled);
          j.attribute("signed", c.isSigned);
          j.attribute("per_channel", c.perChannel());
          j.attribute("channel_axis", c.channelAxis);
          j.attribute("min_threshold", c.minThreshold);
          j.attribute("kind", toString(t.kind));
          j.attributeArray("trained", [&] {
            for (const std::string &p : t.parameters)
              j.value(p);
          });
          j.attributeArray("ranges", [&] { // as trained, one per channel
            for (const QuantGrid &g : c.grids)
              j.array([&] {
                j.value(g.lo);
                j.value(g.hi);
              });
          });
        });
    });
  });
}
