//===- FakeQuantModel.cpp - The QDQ model as it trains --------------------===//
#include "quant/learn/finetune/FakeQuantModel.h"

#include <fmt/format.h>

#include "ir/graph/OpTraits.h"
#include "quant/core/GraphHelpers.h"
#include "runtime/KernelUtil.h"

#include <cmath>
#include <cstring>

using namespace tpcc;
using namespace tpcc::quant;
using graph::ElemType;
using rt::Tensor;

namespace {

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

/// (1 - f) a + f b, elementwise.
Tensor mix(const Tensor &a, const Tensor &b, double f) {
  Tensor y(ElemType::Float, a.shape());
  const float *x = a.data<float>(), *q = b.data<float>();
  float *out = y.data<float>();
  float g = float(f), h = float(1 - f);
  rt::parallelFor(a.numel(), 4, [&](int64_t b0, int64_t e) {
    for (int64_t i = b0; i < e; ++i)
      out[i] = h * x[i] + g * q[i];
  });
  return y;
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

std::unique_ptr<FakeQuantModel> FakeQuantModel::create(graph::Model &model, QuantizeResult &result,
                                                       const plan::Plan &plan,
                                                       const FakeQuantOptions &options,
                                                       DiagnosticEngine &diags) {
  std::unique_ptr<FakeQuantModel> fq(new FakeQuantModel(model, result));
  FakeQuantModel &m = *fq;
  graph::Graph &g = model.graph;
  m.ex = rt::Executor::create(model, diags);
  if (!m.ex)
    return nullptr;
  size_t nv = g.values().size();
  m.slotOf.assign(nv, -1);
  m.actOf.assign(nv, -1);
  m.specOf.assign(nv, -1);

  // Kernels (their quantizers) and the biases of their nodes.
  auto addWeight = [&](const graph::Node &n, unsigned input) -> TrainingWeight * {
    const graph::Value *v = n.input(input);
    if (!v || !v->constant || v->constant->elem != ElemType::Float || m.slotOf[v->id] >= 0)
      return nullptr;
    TrainingWeight s;
    s.value = v;
    s.node = n.name;
    s.input = input;
    const Tensor &c = *m.ex->constant(*v);
    s.w.assign(c.data<float>(), c.data<float>() + c.numel());
    m.slotOf[v->id] = int(m.weights.size());
    m.weights.push_back(std::move(s));
    return &m.weights.back();
  };
  if (!result.spec.mxActivations.empty()) {
    diags.emitAt(model.path.empty() ? "<model>" : model.path, diag::err_quant_unsupported,
                 fmt::format("activation `{}` is quantized in MX blocks; gradient GPTQ and "
                             "fine-tuning do not run through MX activations yet (second-order "
                             "rounding does: --gptq second_order)",
                             result.spec.mxActivations.front().value));
    return nullptr;
  }
  for (size_t k = 0; k < result.spec.weights.size(); ++k) {
    const WeightQDQ &wq = result.spec.weights[k];
    const graph::Node *n = edits::nodeNamed(g, wq.node);
    if (!n || wq.grids.empty())
      continue;
    // Integer grids train per tensor, channel or block; floating-point
    // elements have no integer grid to train on, and a trained step would
    // break two-level scales' factors.
    bool trainsSteps =
        !(wq.operand && !options.trainOperands) && options.weights == QuantizerKind::Lsq;
    std::string where = model.path.empty() ? "<model>" : model.path;
    if (wq.grids.front().floating()) {
      diags.emitAt(where, diag::err_quant_unsupported,
                   fmt::format("weight `{}` of `{}` is quantized to floating-point elements; "
                               "gradient GPTQ and fine-tuning do not train such weights yet "
                               "(second-order rounding rounds them: --gptq second_order)",
                               n->input(wq.inputIndex)->name, n->displayName()));
      return nullptr;
    }
    if (wq.twoLevel && trainsSteps) {
      diags.emitAt(where, diag::err_quant_unsupported,
                   fmt::format("weight `{}` of `{}` has two-level scales: LSQ would train each "
                               "block's step apart from its factor; train it with the `ste` "
                               "quantizer, or round it with --gptq",
                               n->input(wq.inputIndex)->name, n->displayName()));
      return nullptr;
    }
    TrainingWeight *s = addWeight(*n, wq.inputIndex);
    if (!s)
      continue;
    s->spec = k;
    TrainableQuantizerConfig c;
    c.target = QuantizerTarget::Weights;
    c.method = wq.grids.front().method;
    c.bits = wq.grids.front().bits;
    c.isSigned = wq.grids.front().isSigned;
    c.channelAxis = wq.blocked() ? -1 : wq.axis;
    c.block = wq.blocked() ? wq.block : 0;
    c.blockAxis = wq.blockAxis;
    c.minThreshold = options.minThreshold;
    c.candidateBits = candidateBits(plan, wq.node, wq.inputIndex);
    c.grids = wq.grids;
    s->quantizer = wq.operand && !options.trainOperands
                       ? fixedQuantizer(c)
                       : trainableQuantizer(c.target, c.method, options.weights)(c);
    if (wq.inputIndex == 1 && graph::opTraits(*n).linear)
      if (TrainingWeight *b = addWeight(*n, 2))
        b->bias = true;
  }
  // Activations: not those that only carry their input's grid on (they stay
  // tied to it).
  for (size_t k = 0; k < result.spec.activations.size(); ++k)
    if (const graph::Value *v = g.findValue(result.spec.activations[k].value))
      m.specOf[v->id] = int(k);
  m.tied.assign(result.spec.activations.size(), false);
  for (size_t k = 0; k < result.spec.activations.size(); ++k) {
    const ActivationQDQ &a = result.spec.activations[k];
    const graph::Value *v = g.findValue(a.value);
    if (!v)
      continue;
    const graph::Node *p = v->producer;
    if (p && graph::opTraits(*p).movesValues && p->input(0) && m.specOf[p->input(0)->id] >= 0 &&
        sameGrid(result.spec.activations[size_t(m.specOf[p->input(0)->id])].grid, a.grid)) {
      m.tied[k] = true;
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
    std::unique_ptr<TrainableQuantizer> q;
    if (!options.trainActivations || a.grid.floating()) // FP8: its grid stays
      q = fixedQuantizer(c);
    else if (QuantizerFactory f = trainableQuantizer(c.target, c.method, options.activations))
      q = f(c);
    if (!q)
      continue;
    m.actOf[v->id] = int(m.activations.size());
    m.activations.push_back({v, k, std::move(q), Tensor()});
  }
  for (const BiasQDQ &b : result.spec.biases) {
    const graph::Node *n = edits::nodeNamed(g, b.node);
    const graph::Value *bias = n ? n->input(b.inputIndex) : nullptr;
    const graph::Value *in = g.findValue(b.inputActivation);
    if (!bias || m.slotOf[bias->id] < 0 || !in || m.specOf[in->id] < 0)
      continue;
    for (size_t k = 0; k < m.weights.size(); ++k) {
      const TrainingWeight &s = m.weights[k];
      if (s.quantizer && result.spec.weights[s.spec].node == b.weightNode &&
          result.spec.weights[s.spec].inputIndex == b.weightInput)
        m.biasLinks.push_back({size_t(m.slotOf[bias->id]), k, in});
    }
  }
  m.watched.assign(nv, false);
  for (size_t id = 0; id < nv; ++id)
    m.watched[id] = m.actOf[id] >= 0;
  std::vector<const graph::Value *> wrt;
  for (const TrainingWeight &s : m.weights)
    wrt.push_back(s.value);
  m.bp = rt::grad::Backprop::create(*m.ex, wrt, diags);
  if (!m.bp)
    return nullptr;
  m.substituteHook = [&m](const graph::Value &v) -> const Tensor * {
    return m.slotOf[v.id] >= 0 ? &m.weights[size_t(m.slotOf[v.id])].read : nullptr;
  };
  m.transformHook = [&m](const graph::Value &v, Tensor &tensor) {
    if (m.actOf[v.id] < 0)
      return;
    TrainingActivation &a = m.activations[size_t(m.actOf[v.id])];
    a.input = tensor;
    tensor = a.quantizer->forward(a.input);
    if (m.activationMix < 1)
      tensor = mix(a.input, tensor, m.activationMix);
  };
  m.refresh();
  return fq;
}

QuantGrid FakeQuantModel::gridNow(const graph::Value *v) const {
  if (actOf[v->id] >= 0)
    return activations[size_t(actOf[v->id])].quantizer->finalize().grids.front();
  size_t k = size_t(specOf[v->id]);
  if (tied[k])
    return gridNow(v->producer->input(0));
  return result.spec.activations[k].grid;
}

void FakeQuantModel::refresh() {
  for (TrainingWeight &s : weights) {
    s.current = toTensor(s.w, ex->constant(*s.value)->shape());
    s.read = s.quantizer ? s.quantizer->forward(s.current) : s.current;
    if (s.quantizer && hard)
      if (std::optional<std::vector<float>> w = s.quantizer->finalize(&s.current).weights)
        std::memcpy(s.read.raw(), w->data(), w->size() * sizeof(float));
  }
  for (const BiasLink &l : biasLinks) {
    TrainingWeight &b = weights[l.bias];
    float in = float(gridNow(l.input).scale);
    std::vector<QuantGrid> kernel = weights[l.kernel].quantizer->finalize().grids;
    b.read = Tensor(ElemType::Float, b.current.shape());
    for (int64_t i = 0; i < b.current.numel(); ++i) {
      // As the QDQ rewrite: the scale in float32, half to even, int32.
      // (A grouped ConvTranspose's groups share the kernel's per-channel grids.)
      float scale = in * float(kernel[size_t(i) % kernel.size()].scale);
      double q = int32Code(double(b.current.data<float>()[i]), double(scale));
      b.read.data<float>()[i] = float(q) * scale;
    }
  }
}

rt::RunOptions FakeQuantModel::runOptions() {
  rt::RunOptions ro;
  ro.substitute = substituteHook;
  ro.transform = transformHook;
  ro.watched = &watched;
  return ro;
}

Tensor FakeQuantModel::gradient(const graph::Value &v, Tensor grad) {
  if (actOf[v.id] >= 0) {
    TrainingActivation &a = activations[size_t(actOf[v.id])];
    Tensor dx = a.quantizer->backward(a.input, grad);
    return activationMix < 1 ? mix(grad, dx, activationMix) : dx;
  }
  if (slotOf[v.id] >= 0) {
    TrainingWeight &s = weights[size_t(slotOf[v.id])];
    return s.quantizer ? s.quantizer->backward(s.current, grad) : grad;
  }
  return grad;
}

void FakeQuantModel::zeroGrad() {
  for (TrainingWeight &s : weights)
    if (s.quantizer)
      s.quantizer->zeroGrad();
  for (TrainingActivation &a : activations)
    a.quantizer->zeroGrad();
}

void FakeQuantModel::finish(std::vector<TrainedQuantizer> *trained) {
  graph::Graph &g = model.graph;
  auto record = [&](const std::string &tensor, TrainableQuantizer &q,
                    const std::vector<QuantGrid> &grids) {
    if (!trained)
      return;
    TrainedQuantizer t{tensor, q.config(), q.kind(), {}};
    t.config.grids = grids;
    for (const QuantizerParam &p : q.parameters())
      t.parameters.push_back(p.name);
    trained->push_back(std::move(t));
  };
  // The learned grids and weights: the quantizer's (soft rounding's
  // hard-rounded kernel) or the master copy.
  for (TrainingWeight &s : weights) {
    std::vector<float> f(s.w.begin(), s.w.end());
    if (s.quantizer) {
      FinalizedQuantizer fin = s.quantizer->finalize(&s.current);
      result.spec.weights[s.spec].grids = fin.grids;
      record(s.value->name, *s.quantizer, fin.grids);
      if (fin.weights)
        f = std::move(*fin.weights);
    }
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
  for (TrainingActivation &a : activations) {
    ActivationQDQ &spec = result.spec.activations[a.spec];
    spec.grid = a.quantizer->finalize().grids.front();
    record(spec.value, *a.quantizer, {spec.grid});
  }
  for (const graph::Node *node : g.topologicalOrder()) // tied grids follow their input
    for (const graph::Value *out : node->outputs)
      if (out && specOf[out->id] >= 0 && tied[size_t(specOf[out->id])] && node->input(0) &&
          specOf[node->input(0)->id] >= 0)
        result.spec.activations[size_t(specOf[out->id])].grid =
            result.spec.activations[size_t(specOf[node->input(0)->id])].grid;
}
