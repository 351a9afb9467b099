//===- Finetune.cpp - Quantization-aware fine-tuning -----------------------===//
#include "backends/quantize/finetune/Finetune.h"

#include "backends/quantize/corrections/GraphHelpers.h"

#include "ir/graph/OpTraits.h"
#include "runtime/grad/Gradient.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <random>

using namespace tpcc;
using namespace tpcc::quant;
using graph::ElemType;
using rt::Tensor;

namespace {

/// Adam with decoupled weight decay over one parameter vector.
struct Adam {
  std::vector<double> m, v;
  void step(double *w, const double *g, size_t n, double lr, double decay, int64_t t) {
    if (m.size() != n) {
      m.assign(n, 0.0);
      v.assign(n, 0.0);
    }
    const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
    double c1 = 1 - std::pow(b1, double(t)), c2 = 1 - std::pow(b2, double(t));
    for (size_t i = 0; i < n; ++i) {
      m[i] = b1 * m[i] + (1 - b1) * g[i];
      v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
      w[i] -= lr * ((m[i] / c1) / (std::sqrt(v[i] / c2) + eps) + decay * w[i]);
    }
  }
};

/// A float initializer that trains: a kernel (with its quantizer) or a bias.
struct WeightSlot {
  const graph::Value *value = nullptr;
  std::string node;   ///< the node that reads it (the first)
  unsigned input = 0; ///< as its input
  bool bias = false;
  size_t spec = 0; ///< its WeightQDQ, when quantized
  std::unique_ptr<TrainableQuantizer> quantizer;
  std::vector<double> w; ///< the master copy
  Tensor current;        ///< w as float, what the fake quantization reads
  Tensor read;           ///< what the model reads this step (fake-quantized)
  std::vector<double> grad;
  Adam adam;
  bool decay = false;
};

/// A quantized activation that trains.
struct ActivationSlot {
  size_t spec = 0;
  std::unique_ptr<TrainableQuantizer> quantizer;
  Tensor input; ///< this step's unquantized value
};

bool sameGrid(const QuantGrid &a, const QuantGrid &b) {
  return a.method == b.method && a.bits == b.bits && a.scale == b.scale &&
         a.zeroPoint == b.zeroPoint && a.qmin == b.qmin && a.qmax == b.qmax;
}

Tensor toTensor(const std::vector<double> &w, const rt::Shape &shape) {
  Tensor t(ElemType::Float, shape);
  for (size_t i = 0; i < w.size(); ++i)
    t.data<float>()[i] = float(w[i]);
  return t;
}

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

/// The bits of every candidate config of the plan node named `node`, sorted
/// and unique: of its weight input `input` (>= 0), else of its activation.
/// Empty when the plan has no such node or no options.
std::vector<int> candidateBits(const plan::Plan &plan, llvm::StringRef node, int64_t input) {
  std::vector<int> bits;
  for (const plan::PlanNode &pn : plan.nodes) {
    if (!pn.node || pn.node->name != node || !pn.options.options)
      continue;
    const plan::PlanWeight *w = nullptr;
    for (const plan::PlanWeight &x : pn.weights)
      if (x.inputIndex == input)
        w = &x;
    if (input >= 0 && !w)
      return bits;
    for (const ir::OpConfig &c : pn.options.options->configs)
      bits.push_back(w ? c.weightConfig(w->slot).bits : c.activation.bits);
  }
  std::sort(bits.begin(), bits.end());
  bits.erase(std::unique(bits.begin(), bits.end()), bits.end());
  return bits;
}

} // namespace

LogicalResult quant::finetune(graph::Model &model, QuantizeResult &result, const plan::Plan &plan,
                              rt::Executor &teacher, const FinetuneData &data,
                              const FinetuneOptions &options, FinetuneReport &report,
                              DiagnosticEngine &diags) {
  auto t0 = std::chrono::steady_clock::now();
  auto secondsSince = [](std::chrono::steady_clock::time_point from) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - from).count();
  };
  std::string where = model.path.empty() ? std::string("<model>") : model.path;
  graph::Graph &g = model.graph;
  std::unique_ptr<rt::Executor> ex = rt::Executor::create(model, diags);
  if (!ex)
    return failure();
  if (ex->requiredInputs().size() != 1)
    return diags.emitAt(where, diag::err_run_node,
                        "fine-tuning feeds --data to a model with one input");
  const graph::Value *input = ex->requiredInputs().front();

  // Kernels (their quantizers) and the biases of their nodes.
  std::vector<WeightSlot> weights;
  std::vector<int> slotOf(g.values().size(), -1);
  auto addWeight = [&](const graph::Node &n, unsigned input) -> WeightSlot * {
    const graph::Value *v = n.input(input);
    if (!v || !v->constant || v->constant->elem != ElemType::Float || slotOf[v->id] >= 0)
      return nullptr;
    WeightSlot s;
    s.value = v;
    s.node = n.name;
    s.input = input;
    const Tensor &c = *ex->constant(*v);
    s.w.resize(size_t(c.numel()));
    for (int64_t i = 0; i < c.numel(); ++i)
      s.w[size_t(i)] = c.data<float>()[i];
    s.grad.assign(s.w.size(), 0.0);
    slotOf[v->id] = int(weights.size());
    weights.push_back(std::move(s));
    return &weights.back();
  };
  for (size_t k = 0; k < result.spec.weights.size(); ++k) {
    const WeightQDQ &wq = result.spec.weights[k];
    const graph::Node *n = edits::nodeNamed(g, wq.node);
    if (!n || wq.grids.empty())
      continue;
    WeightSlot *s = addWeight(*n, wq.inputIndex);
    if (!s)
      continue;
    s->spec = k;
    s->decay = true;
    TrainableQuantizerConfig c;
    c.target = QuantizerTarget::Weights;
    c.method = wq.grids.front().method;
    c.bits = wq.grids.front().bits;
    c.isSigned = wq.grids.front().isSigned;
    c.channelAxis = wq.axis;
    c.minThreshold = options.minThreshold;
    c.candidateBits = candidateBits(plan, wq.node, wq.inputIndex);
    c.grids = wq.grids;
    s->quantizer = trainableQuantizer(c.target, c.method, options.quantizer)(c);
    if (wq.inputIndex == 1)
      if (WeightSlot *b = addWeight(*n, 2))
        b->bias = true;
  }
  // Activations: not those that only carry their input's grid on (they stay
  // tied to it).
  std::vector<ActivationSlot> acts;
  std::vector<int> actOf(g.values().size(), -1);
  std::vector<int> specOf(g.values().size(), -1);
  for (size_t k = 0; k < result.spec.activations.size(); ++k)
    if (const graph::Value *v = g.findValue(result.spec.activations[k].value))
      specOf[v->id] = int(k);
  std::vector<bool> tied(result.spec.activations.size(), false);
  for (size_t k = 0; k < result.spec.activations.size(); ++k) {
    const ActivationQDQ &a = result.spec.activations[k];
    const graph::Value *v = g.findValue(a.value);
    if (!v)
      continue;
    const graph::Node *p = v->producer;
    if (p && graph::opTraits(*p).movesValues && p->input(0) && specOf[p->input(0)->id] >= 0 &&
        sameGrid(result.spec.activations[size_t(specOf[p->input(0)->id])].grid, a.grid)) {
      tied[k] = true;
      continue;
    }
    TrainableQuantizerConfig c;
    c.target = QuantizerTarget::Activation;
    c.method = a.grid.method;
    c.bits = a.grid.bits;
    c.isSigned = a.grid.isSigned;
    c.grids = {a.grid};
    c.minThreshold = options.minThreshold;
    if (p)
      c.candidateBits = candidateBits(plan, p->name, -1);
    QuantizerFactory f = trainableQuantizer(c.target, c.method, options.quantizer);
    if (!f)
      continue;
    actOf[v->id] = int(acts.size());
    acts.push_back({k, f(c), Tensor()});
  }
  // The grid an activation has now: its quantizer's, or (tied) its
  // input's, or the spec's.
  std::function<QuantGrid(const graph::Value *)> gridNow = [&](const graph::Value *v) {
    if (actOf[v->id] >= 0)
      return acts[size_t(actOf[v->id])].quantizer->finalize().grids.front();
    size_t k = size_t(specOf[v->id]);
    if (tied[k])
      return gridNow(v->producer->input(0));
    return result.spec.activations[k].grid;
  };
  // Biases the QDQ rewrite stores in int32 on the scale s_in * s_w[c]: the
  // forward rounds them to that grid as well (straight through), so the
  // model that trains is the model that is written.
  struct BiasLink {
    size_t slot, kernel; ///< WeightSlots: the bias, the kernel whose scales apply
    const graph::Value *input;
  };
  std::vector<BiasLink> biasLinks;
  for (const BiasQDQ &b : result.spec.biases) {
    const graph::Node *n = edits::nodeNamed(g, b.node);
    const graph::Value *bias = n ? n->input(b.inputIndex) : nullptr;
    const graph::Value *in = g.findValue(b.inputActivation);
    if (!bias || slotOf[bias->id] < 0 || !in || specOf[in->id] < 0)
      continue;
    for (size_t k = 0; k < weights.size(); ++k) {
      const WeightSlot &s = weights[k];
      if (s.quantizer && result.spec.weights[s.spec].node == b.weightNode &&
          result.spec.weights[s.spec].inputIndex == b.weightInput)
        biasLinks.push_back({size_t(slotOf[bias->id]), k, in});
    }
  }
  std::vector<bool> watched(g.values().size(), false);
  for (size_t id = 0; id < watched.size(); ++id)
    watched[id] = actOf[id] >= 0;
  std::vector<const graph::Value *> wrt;
  for (const WeightSlot &s : weights)
    wrt.push_back(s.value);
  std::unique_ptr<rt::grad::Backprop> bp = rt::grad::Backprop::create(*ex, wrt, diags);
  if (!bp)
    return failure();

  // Data.
  const Tensor &x = data.x;
  int64_t n = x.rank() >= 1 ? x.dim(0) : 0;
  if (n == 0)
    return diags.emitAt(where, diag::err_run_node, "the training data holds no samples");
  bool labeled = data.labels.defined();
  std::mt19937 rng(options.seed);
  std::vector<int64_t> order(static_cast<size_t>(n));
  int64_t batch = std::max<int64_t>(1, std::min(options.batch, n));
  int64_t perEpoch = (n + batch - 1) / batch, total = perEpoch * options.epochs, t = 0;
  report = FinetuneReport();
  report.trainedWeights = weights.size();
  report.trainedActivations = acts.size();
  double epochLoss = 0;
  std::vector<double> stepLoss;                          ///< every step's, for the report
  std::map<const std::vector<double> *, Adam> paramAdam; ///< the quantizers'
  size_t rowBytes = x.bytes() / size_t(n);
  // The forward hooks: fake-quantized weights and activations.
  auto refreshWeights = [&] {
    for (WeightSlot &s : weights) {
      s.current = toTensor(s.w, ex->constant(*s.value)->shape());
      s.read = s.quantizer ? s.quantizer->forward(s.current) : s.current;
    }
    for (const BiasLink &l : biasLinks) {
      WeightSlot &b = weights[l.slot];
      float in = float(gridNow(l.input).scale);
      std::vector<QuantGrid> kernel = weights[l.kernel].quantizer->finalize().grids;
      b.read = Tensor(ElemType::Float, b.current.shape());
      for (int64_t i = 0; i < b.current.numel(); ++i) {
        // As the QDQ rewrite: the scale in float32, half to even, int32.
        float scale = in * float(kernel[kernel.size() > 1 ? size_t(i) : 0].scale);
        double q = std::nearbyint(double(b.current.data<float>()[i]) / double(scale));
        q = std::clamp(q, -2147483648.0, 2147483647.0);
        b.read.data<float>()[i] = float(q) * scale;
      }
    }
  };
  auto substitute = [&](const graph::Value &v) -> const Tensor * {
    return slotOf[v.id] >= 0 ? &weights[size_t(slotOf[v.id])].read : nullptr;
  };
  auto transform = [&](const graph::Value &v, Tensor &tensor) {
    if (actOf[v.id] < 0)
      return;
    ActivationSlot &a = acts[size_t(actOf[v.id])];
    a.input = tensor;
    tensor = a.quantizer->forward(a.input);
  };
  rt::RunOptions ro;
  ro.substitute = substitute;
  ro.transform = transform;
  ro.watched = &watched;
  // The samples of the validation set the fake-quantized model classifies
  // right.
  auto validate = [&](int64_t &correct) -> LogicalResult {
    correct = 0;
    const Tensor &vx = options.validateX;
    int64_t vn = vx.dim(0);
    refreshWeights();
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
  for (int64_t epoch = 1; epoch <= options.epochs; ++epoch) {
    for (int64_t i = 0; i < n; ++i)
      order[size_t(i)] = i;
    for (int64_t i = n - 1; i > 0; --i) // Fisher-Yates, the same on every library
      std::swap(order[size_t(i)], order[size_t(rng() % uint32_t(i + 1))]);
    epochLoss = 0;
    auto epochStart = std::chrono::steady_clock::now();
    for (int64_t step = 0; step < perEpoch; ++step) {
      int64_t b0 = step * batch, b = std::min(batch, n - b0);
      rt::Shape shape = x.shape();
      shape[0] = b;
      Tensor xb(x.elem(), shape);
      for (int64_t i = 0; i < b; ++i)
        std::memcpy(static_cast<uint8_t *>(xb.raw()) + size_t(i) * rowBytes,
                    static_cast<const uint8_t *>(x.raw()) +
                        size_t(order[size_t(b0 + i)]) * rowBytes,
                    rowBytes);
      // Forward with fake-quantized weights and activations.
      refreshWeights();
      std::vector<Tensor> outs;
      std::map<std::string, Tensor> feed{{input->name, xb}};
      if (failed(bp->forward(feed, outs, diags, ro)))
        return failure();
      const Tensor &logits = outs.front();
      if (logits.rank() != 2 || logits.dim(0) != b)
        return diags.emitAt(where, diag::err_run_node,
                            fmt::format("fine-tuning needs logits [batch, classes] as the first "
                                        "output; it is {}",
                                        rt::shapeStr(logits.shape())));
      int64_t classes = logits.dim(1);
      if (labeled && t == 0) // every label, once the logits say how many classes
        for (int64_t i = 0; i < n; ++i) {
          int64_t label = int64_t(data.labels.at(i));
          if (label < 0 || label >= classes)
            return diags.emitAt(where, diag::err_run_node,
                                fmt::format("label {} of sample {} is not a class of the {} "
                                            "logits",
                                            label, i, classes));
        }
      // Loss and its gradient.
      Tensor dy(ElemType::Float, logits.shape());
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
      loss /= double(b);
      if (!std::isfinite(loss))
        return diags.emitAt(where, diag::err_run_node,
                            fmt::format("the loss is not finite at epoch {}, step {}: lower --lr",
                                        epoch, step + 1));
      // Backward: each quantizer's straight-through rule in the hook.
      for (WeightSlot &s : weights)
        if (s.quantizer)
          s.quantizer->zeroGrad();
      for (ActivationSlot &a : acts)
        a.quantizer->zeroGrad();
      auto hook = [&](const graph::Value &v, Tensor grad) {
        if (actOf[v.id] >= 0) {
          ActivationSlot &a = acts[size_t(actOf[v.id])];
          return a.quantizer->backward(a.input, grad);
        }
        if (slotOf[v.id] >= 0) {
          WeightSlot &s = weights[size_t(slotOf[v.id])];
          return s.quantizer ? s.quantizer->backward(s.current, grad) : grad;
        }
        return grad;
      };
      std::vector<Tensor> grads;
      if (failed(bp->backward({dy}, grads, diags, hook)))
        return failure();
      // Adam, on a cosine schedule.
      ++t;
      double lr = options.lr * 0.5 * (1 + std::cos(M_PI * double(t - 1) / double(total)));
      for (size_t k = 0; k < weights.size(); ++k) {
        WeightSlot &s = weights[k];
        for (size_t i = 0; i < s.grad.size(); ++i)
          s.grad[i] = grads[k].data<float>()[i];
        s.adam.step(s.w.data(), s.grad.data(), s.w.size(), lr, s.decay ? options.weightDecay : 0,
                    t);
      }
      auto update = [&](TrainableQuantizer &q) {
        for (QuantizerParam &p : q.parameters())
          paramAdam[p.value].step(p.value->data(), p.grad->data(), p.value->size(), lr, 0, t);
      };
      for (ActivationSlot &a : acts)
        update(*a.quantizer);
      for (WeightSlot &s : weights)
        if (s.quantizer)
          update(*s.quantizer);
      epochLoss += loss * double(b);
      stepLoss.push_back(loss);
      ++report.steps;
      report.samples += b;
      if (options.progress) {
        double s = report.trainSeconds + secondsSince(epochStart);
        options.progress(epoch, step + 1, perEpoch, loss, double(report.samples) / s);
      }
    }
    report.trainSeconds += secondsSince(epochStart);
    int64_t correct = -1;
    if (options.validateX.defined() && failed(validate(correct)))
      return failure();
    if (options.epochDone)
      options.epochDone(epoch, epochLoss / double(n), correct);
  }
  size_t tenth = std::max<size_t>(1, stepLoss.size() / 10);
  for (size_t k = 0; k < tenth; ++k) {
    report.firstLoss += stepLoss[k] / double(tenth);
    report.lastLoss += stepLoss[stepLoss.size() - tenth + k] / double(tenth);
  }

  // The learned grids and weights (and what the report says of them).
  auto record = [&](const std::string &tensor, TrainableQuantizer &q,
                    const std::vector<QuantGrid> &grids) {
    TrainedQuantizer t{tensor, q.config(), q.kind(), {}};
    t.config.grids = grids;
    for (const QuantizerParam &p : q.parameters())
      t.parameters.push_back(p.name);
    report.quantizers.push_back(std::move(t));
  };
  for (WeightSlot &s : weights)
    if (s.quantizer) {
      result.spec.weights[s.spec].grids = s.quantizer->finalize().grids;
      record(s.value->name, *s.quantizer, result.spec.weights[s.spec].grids);
    }
  for (ActivationSlot &a : acts) {
    ActivationQDQ &spec = result.spec.activations[a.spec];
    spec.grid = a.quantizer->finalize().grids.front();
    record(spec.value, *a.quantizer, {spec.grid});
  }
  // The trained weights replace the float ones, and the plan gets them:
  // kernels as trained values, biases as corrected ones (`tpcc apply`).
  for (WeightSlot &s : weights) {
    std::vector<float> f(s.w.begin(), s.w.end());
    edits::overwriteInitializer(g, *s.value, f);
    if (!s.bias) {
      result.trainedWeights.push_back({s.node, s.input, std::move(f)});
      continue;
    }
    auto it = std::find_if(result.biases.begin(), result.biases.end(),
                           [&](const auto &b) { return b.first == s.node; });
    if (it == result.biases.end())
      result.biases.emplace_back(s.node, std::move(f));
    else
      it->second = std::move(f);
  }
  for (const graph::Node *node : g.topologicalOrder()) // tied grids follow their input
    for (const graph::Value *out : node->outputs)
      if (out && specOf[out->id] >= 0 && tied[size_t(specOf[out->id])] && node->input(0) &&
          specOf[node->input(0)->id] >= 0)
        result.spec.activations[size_t(specOf[out->id])].grid =
            result.spec.activations[size_t(specOf[node->input(0)->id])].grid;
  report.seconds = secondsSince(t0);
  return success();
}

void quant::writeFinetuneJSON(const FinetuneReport &report, const FinetuneOptions &options,
                              llvm::json::OStream &j) {
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
