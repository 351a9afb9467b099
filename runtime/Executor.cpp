//===- Executor.cpp - Runs a model IR graph on the CPU ----------------------===//
#include "runtime/Executor.h"

#include "ir/graph/OnnxIO.h"
#include "runtime/ops/Dnnl.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

using namespace tpcc;
using namespace tpcc::rt;

static int64_t opsetOf(const graph::Model &m, const graph::Node &n) {
  if (std::optional<int64_t> v = m.opsetVersion(n.domain))
    return *v;
  return 1; // no opset imports (IR versions 1 and 2): opset 1
}

static std::string typeStr(ElemType e, const Shape &s) {
  return fmt::format("{}{}", graph::toString(e), shapeStr(s));
}

std::vector<Executor::Missing> Executor::unsupportedOperators(const graph::Model &model) {
  const KernelRegistry &reg = KernelRegistry::get();
  std::vector<Missing> missing;
  std::map<std::string, size_t> index;
  auto need = [&](llvm::StringRef domain, llvm::StringRef op, const graph::Node &n, bool inside) {
    if (reg.find(domain, op))
      return;
    std::string name =
        domain.empty() || domain == "ai.onnx" ? op.str() : domain.str() + "." + op.str();
    auto [it, fresh] = index.emplace(name, missing.size());
    if (fresh)
      missing.push_back(Missing{name, &n, inside, 0});
    ++missing[it->second].nodes;
  };
  for (const auto &n : model.graph.nodes()) {
    need(n->domain, n->opType, *n, false);
    if (n->hasSubgraphs())
      for (const graph::SubgraphNode &s : graph::subgraphNodes(*n))
        need(s.domain, s.opType, *n, true);
  }
  return missing;
}

std::unique_ptr<Executor> Executor::create(const graph::Model &model, DiagnosticEngine &diags,
                                           const Executor *sibling) {
  std::unique_ptr<Executor> ex(new Executor(model));
  ex->where = model.path.empty() ? std::string("<model>") : model.path;
  const graph::Graph &g = model.graph;
  bool ok = true;

  // One error per missing operator, at its first node.
  for (const Missing &e : unsupportedOperators(model)) {
    std::string detail = e.inSubgraph ? " in a subgraph of this node" : "";
    if (e.nodes > 1)
      detail += fmt::format(" ({} nodes use it)", e.nodes);
    diags.emitAt(graph::describeNode(ex->where, *e.first), diag::err_run_unsupported_op, e.op,
                 detail);
    ok = false;
  }

  ex->constants.resize(g.values().size());
  if (sibling)
    ex->constants = sibling->constants; // shares the buffers, precomputed values too
  for (const auto &v : g.values()) {
    if (!v->constant || sibling)
      continue;
    const graph::Tensor &c = *v->constant;
    if (v->hasTypeInfo && v->type.elem != ElemType::Undefined && v->type.shape) {
      bool agree = v->type.elem == c.elem && v->type.shape->size() == c.dims.size();
      for (size_t i = 0; agree && i < c.dims.size(); ++i)
        agree = !(*v->type.shape)[i].known() || (*v->type.shape)[i].value == c.dims[i];
      if (!agree) {
        diags.emitAt(ex->where, diag::err_run_constant_type, v->name, typeStr(c.elem, c.dims),
                     v->type.str());
        ok = false;
        continue;
      }
    }
    ex->constants[v->id] = Tensor::fromGraph(c);
  }
  if (!ok)
    return nullptr;

  for (const graph::Value *v : g.inputs())
    if (!v->constant)
      ex->required.push_back(v);

  // Steps in topological order; each value is released after its last use.
  const std::vector<graph::Node *> &order = g.topologicalOrder();
  std::vector<int64_t> lastUse(g.values().size(), -1);
  for (size_t s = 0; s < order.size(); ++s)
    for (const graph::Value *in : order[s]->inputs)
      if (in)
        lastUse[in->id] = int64_t(s);
  for (size_t s = 0; s < order.size(); ++s) {
    const graph::Node *n = order[s];
    Step &step = ex->steps.emplace_back();
    step.node = n;
    step.kernel = KernelRegistry::get().find(n->domain, n->opType);
    step.opset = opsetOf(model, *n);
    // Outputs nobody reads are released right away.
    for (const graph::Value *out : n->outputs)
      if (out && lastUse[out->id] < 0)
        lastUse[out->id] = int64_t(s);
  }
  for (const auto &v : g.values())
    if (lastUse[v->id] >= 0 && !v->isGraphOutput && !v->constant)
      ex->steps[size_t(lastUse[v->id])].release.push_back(v->id);
  ex->states.resize(ex->steps.size());
  ex->stepIndex.assign(g.nodes().size(), 0);
  for (size_t s = 0; s < ex->steps.size(); ++s)
    ex->stepIndex[ex->steps[s].node->id] = s;
  if (sibling) {
    for (size_t s = 0; s < ex->steps.size(); ++s)
      ex->steps[s].precomputed = sibling->steps[s].precomputed;
  } else if (failed(ex->precompute(diags))) {
    return nullptr;
  }
  ex->findFusions();
  return ex;
}

/// Nodes whose inputs are all constants (DequantizeLinear of quantized
/// weights, shape arithmetic) run once here instead of on every batch.
/// Random operators and outputs over 64 MiB are left to run time.
LogicalResult Executor::precompute(DiagnosticEngine &diags) {
  constexpr size_t kMaxBytes = size_t(64) << 20;
  for (size_t s = 0; s < steps.size(); ++s) {
    Step &step = steps[s];
    const graph::Node &n = *step.node;
    if (!step.kernel || n.outputs.empty() || llvm::StringRef(n.opType).startswith("Random") ||
        n.opType == "Bernoulli" || n.hasSubgraphs())
      continue;
    bool constant = true;
    for (const graph::Value *in : n.inputs)
      constant &= !in || (constants[in->id].defined() && !in->isGraphInput); // inputs may be fed
    if (!constant)
      continue;
    KernelContext ctx(n, step.opset, states[s]);
    for (const graph::Value *in : n.inputs)
      ctx.inputs.push_back(in ? &constants[in->id] : nullptr);
    ctx.outputs.resize(n.outputs.size());
    if (!step.kernel(ctx)) {
      diags.emitAt(graph::describeNode(where, n), diag::err_run_node, ctx.error);
      return failure();
    }
    size_t bytes = 0;
    for (const Tensor &t : ctx.outputs)
      bytes += t.bytes();
    if (bytes > kMaxBytes)
      continue;
    for (size_t i = 0; i < n.outputs.size(); ++i)
      if (n.outputs[i])
        constants[n.outputs[i]->id] = std::move(ctx.outputs[i]);
    step.precomputed = true;
  }
  return success();
}

bool rt::readsBlocked(const graph::Node &n, size_t i) {
  if (i != 0 || !(n.domain.empty() || n.domain == "ai.onnx"))
    return false;
  const std::string &op = n.opType;
  return op == "Conv" || op == "ConvTranspose" || op == "AveragePool" ||
         op == "GlobalAveragePool" || op == "GlobalMaxPool" ||
         (op == "MaxPool" && (n.outputs.size() < 2 || !n.outputs[1]));
}

/// Whether the default kernel of `n` takes input `i` in oneDNN's layouts:
/// the readsBlocked nodes, Concat (it joins convolutions' outputs
/// channels-last) and Resize (it resizes them channels-last), which make
/// other layouts plain themselves, and Shape (it reads no data).
static bool takesBlocked(const graph::Node &n, size_t i) {
  return readsBlocked(n, i) ||
         (n.inDefaultDomain() &&
          (n.opType == "Concat" || n.opType == "Shape" || (n.opType == "Resize" && i == 0)));
}

void Executor::findFusions() {
  const std::vector<graph::Node *> &order = m.graph.topologicalOrder();
  auto opset = [&](const graph::Node &n) { return steps[stepIndex[n.id]].opset; };
  for (size_t s = 0; s < steps.size(); ++s)
    if (!steps[s].precomputed)
      steps[s].fusion = fusionAfter(order, s, stepIndex, opset, constants);
  // A value every reader of which takes it blocked (takesBlocked) or is a
  // fused Add may stay blocked.
  blockedReaders.assign(m.graph.values().size(), false);
  for (const auto &v : m.graph.values()) {
    if (v->isGraphOutput || v->constant || v->uses.empty())
      continue;
    bool all = true;
    for (const graph::Use &u : v->uses)
      all &= takesBlocked(*u.node, u.index) || u.node->opType == "Add";
    blockedReaders[v->id] = all;
  }
}

bool Executor::fusable(const Step &head, const RunOptions &options) const {
  const Fusion &f = *head.fusion;
  if (options.keep)
    return false;
  for (const graph::Value *v : f.skipped)
    if (watches(options, *v) || (options.substitute && options.substitute(*v)))
      return false;
  return true;
}

void Executor::keepUntil(size_t s, const graph::Value &v) {
  if (v.isGraphOutput || v.constant)
    return;
  for (size_t r = 0; r < s; ++r) { // released before the step: release at it
    auto &rel = steps[r].release;
    auto it = std::find(rel.begin(), rel.end(), v.id);
    if (it != rel.end()) {
      rel.erase(it);
      steps[s].release.push_back(v.id);
    }
  }
}

bool Executor::runAlone(const graph::Node &n, llvm::ArrayRef<const Tensor *> x, Tensor &y,
                        std::string *err, std::unique_ptr<NodeState> *state, bool blockedOutput) {
  const Step &st = steps[stepIndex[n.id]];
  std::unique_ptr<NodeState> fresh;
  KernelContext ctx(n, st.opset, state ? *state : fresh);
  ctx.inputs.assign(x.begin(), x.end());
  for (size_t i = x.size(); i < n.inputs.size(); ++i)
    ctx.inputs.push_back(n.inputs[i] ? &constants[n.inputs[i]->id] : nullptr);
  ctx.outputs.resize(n.outputs.size());
  ctx.blockedOutput = blockedOutput;
  if (!st.kernel(ctx) || ctx.outputs.empty()) {
    if (err)
      *err = ctx.error;
    return false;
  }
  y = std::move(ctx.outputs[0]);
  return y.defined() && (blockedOutput || !y.blocked());
}

LogicalResult Executor::checkInputs(const std::map<std::string, Tensor> &inputs,
                                    DiagnosticEngine &diags, const RunOptions &options) {
  bool ok = true;
  std::map<std::string, int64_t> symbols;
  for (const auto &[name, t] : inputs) {
    const graph::Value *v = m.graph.findValue(name);
    if (!v || !v->isGraphInput) {
      std::vector<std::string> names;
      for (const graph::Value *r : m.graph.inputs())
        names.push_back("`" + r->name + "`");
      diags.emitAt(where, diag::err_run_unknown_input, name,
                   fmt::format("{}", fmt::join(names, ", ")));
      ok = false;
    }
  }
  for (const graph::Value *v : m.graph.inputs()) {
    auto it = inputs.find(v->name);
    if (it == inputs.end()) {
      if (!v->constant) {
        diags.emitAt(where, diag::err_run_missing_input, v->name, v->type.str());
        ok = false;
      }
      continue;
    }
    const Tensor &t = it->second;
    if (v->type.elem != ElemType::Undefined && t.elem() != v->type.elem) {
      diags.emitAt(where, diag::err_run_input_type, v->name, typeStr(t.elem(), t.shape()),
                   v->type.str());
      ok = false;
      continue;
    }
    if (v->type.shape && options.checkShapes) {
      const std::vector<graph::Dim> &want = *v->type.shape;
      bool fits = want.size() == t.shape().size();
      for (size_t i = 0; fits && i < want.size(); ++i) {
        if (want[i].known())
          fits = want[i].value == t.dim(int64_t(i));
        else if (!want[i].param.empty()) {
          auto [s, fresh] = symbols.emplace(want[i].param, t.dim(int64_t(i)));
          fits = fresh || s->second == t.dim(int64_t(i));
        }
      }
      if (!fits) {
        diags.emitAt(where, diag::err_run_input_shape, v->name, shapeStr(t.shape()), v->type.str());
        ok = false;
        continue;
      }
    }
    if (!options.allowNonFinite && graph::isFloatingPoint(t.elem())) {
      int64_t bad = 0, first = -1;
      auto count = [&](auto finite) {
        for (int64_t i = 0; i < t.numel(); ++i)
          if (!finite(i) && bad++ == 0)
            first = i;
      };
      if (t.elem() == ElemType::Float) {
        const float *d = t.data<float>();
        const uint32_t *bits = t.data<uint32_t>();
        uint32_t any = 0; // an all-ones exponent: Inf or NaN (vectorizes)
        for (int64_t i = 0; i < t.numel(); ++i)
          any |= uint32_t((bits[i] & 0x7f800000u) == 0x7f800000u);
        if (any)
          count([&](int64_t i) { return std::isfinite(d[i]); });
      } else {
        count([&](int64_t i) { return std::isfinite(t.at(i)); });
      }
      if (bad) {
        diags.emitAt(where, diag::err_run_nonfinite, v->name, bad, first);
        ok = false;
      }
    }
  }
  return success(ok);
}

LogicalResult Executor::run(const std::map<std::string, Tensor> &inputs,
                            std::vector<Tensor> &outputs, DiagnosticEngine &diags,
                            const RunOptions &options) {
  if (failed(checkInputs(inputs, diags, options)))
    return failure();
  const graph::Graph &g = m.graph;
  std::vector<Tensor> values(g.values().size());
  for (const graph::Value *v : g.inputs()) {
    auto it = inputs.find(v->name);
    values[v->id] = it != inputs.end() ? it->second : constants[v->id];
    if (!watches(options, *v))
      continue;
    if (it != inputs.end() && options.transform)
      options.transform(*v, values[v->id]);
    if (options.observe)
      options.observe(*v, values[v->id]);
  }
  return runFrom(0, std::move(values), outputs, diags, options);
}

LogicalResult Executor::runFrom(size_t first, std::vector<Tensor> values,
                                std::vector<Tensor> &outputs, DiagnosticEngine &diags,
                                const RunOptions &options) {
  BufferPool::Scope scope(&pool);
  const graph::Graph &g = m.graph;
  values.resize(g.values().size());
  auto valueOf = [&](const graph::Value *v) -> const Tensor * {
    if (!v)
      return nullptr;
    if (options.substitute)
      if (const Tensor *t = options.substitute(*v))
        return t;
    return values[v->id].defined() ? &values[v->id] : &constants[v->id];
  };
  auto missing = [&](const graph::Node &n, const graph::Value &in) {
    diags.emitAt(graph::describeNode(where, n), diag::err_run_node,
                 fmt::format("input `{}` has no value", in.name));
    return failure();
  };
  auto observe = [&](const graph::Value &v, Tensor &t) {
    if (!watches(options, v))
      return;
    if (options.transform)
      options.transform(v, t);
    if (options.observe)
      options.observe(v, t);
  };
  // The run's mode: its plan of steps, its kernels, whether it fuses.
  StepPlan *plan = options.mode ? planFor(*options.mode) : nullptr;
  const KernelRegistry *registry = options.mode ? options.mode->kernels() : nullptr;
  const std::vector<KernelFn> *modeKernel = registry ? &kernelsIn(*registry) : nullptr;
  bool fuses = !options.mode || options.mode->fuses();
  // Blocked layouts only between oneDNN kernels, and never in what a caller
  // sees.
  bool mayBlock = !options.keep;
  std::vector<bool> &absorbed = absorbedSteps;
  absorbed.assign(steps.size(), false);
  llvm::SmallVector<Tensor, 2> plainCopies;
  StepRun::Copies copies; // a plan's 8-bit inputs made plain
  // A run that stops early keeps everything (no step is fused with the next
  // one when values are kept).
  size_t end = options.keep ? std::min(options.stopBefore, steps.size()) : steps.size();
  for (size_t s = first; s < end; ++s) {
    const Step &step = steps[s];
    const graph::Node &n = *step.node;
    if (absorbed[s]) { // computed by a fused step before
      for (unsigned id : step.release)
        values[id] = Tensor();
      continue;
    }
    if (step.precomputed) {
      if (options.observe)
        for (const graph::Value *out : n.outputs)
          if (out && watches(options, *out))
            options.observe(*out, constants[out->id]);
      continue;
    }
    StepRun run(*this, s, n, options, values, absorbed, copies, diags);
    if (plan) {
      StepPlan::Action a = plan->before(run);
      if (a == StepPlan::Action::Failed)
        return failure();
      if (a == StepPlan::Action::Done) {
        if (!options.keep)
          for (unsigned id : step.release)
            values[id] = Tensor();
        continue;
      }
    }
    // A step its plan reads after its kernel runs alone, plain, as the
    // default registry computes it.
    bool alone = plan && plan->alone(s);
    KernelFn kernel = modeKernel && !alone && (*modeKernel)[s] ? (*modeKernel)[s] : step.kernel;
    KernelContext ctx(n, step.opset, states[s]);
    ctx.model = &m;
    const Fusion *fused =
        step.fusion && fuses && !alone && fusable(step, options) ? &*step.fusion : nullptr;
    if (fused && fused->kernel && modeKernel) { // a mode's kernels stay the mode's
      bool own = (*modeKernel)[s];
      for (size_t a : fused->absorbed)
        own |= bool((*modeKernel)[a]);
      if (own)
        fused = nullptr;
    }
    if (fused) {
      if (fused->kernel)
        kernel = fused->kernel;
      ctx.fusedParams = fused->params;
      ctx.post = fused->post;
      for (const graph::Value *v : fused->operands) {
        const Tensor *t = valueOf(v);
        if (!t->defined())
          return missing(n, *v);
        ctx.operands.push_back(t);
      }
      for (size_t a : fused->absorbed)
        absorbed[a] = true;
    }
    const graph::Value *result = fused ? fused->result : n.outputs.empty() ? nullptr : n.outputs[0];
    ctx.blockedOutput =
        mayBlock && result && blockedReaders[result->id] && !watches(options, *result) && !alone;
    plainCopies.clear();
    plainCopies.reserve(n.inputs.size());
    ctx.inputs.reserve(n.inputs.size());
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const graph::Value *in = n.inputs[i];
      const Tensor *t = valueOf(in);
      if (in && !t->defined())
        return missing(n, *in);
      if (in && t == &constants[in->id] && i < 64)
        ctx.constantInputs |= uint64_t(1) << i;
      bool takes = readsBlocked(n, i) || (kernel == step.kernel && takesBlocked(n, i));
      if (t && t->blocked() && (t->elem() != graph::ElemType::Float || !takes)) {
        plainCopies.push_back(dnnl_util::toPlain(*t));
        t = &plainCopies.back();
      }
      ctx.inputs.push_back(t);
    }
    ctx.outputs.resize(n.outputs.size());
    if (!kernel(ctx) || (plan && !plan->after(run, ctx))) {
      diags.emitAt(graph::describeNode(where, n), diag::err_run_node, ctx.error);
      return failure();
    }
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      const graph::Value *out = i == 0 && fused ? fused->result : n.outputs[i];
      if (!out)
        continue;
      if (!ctx.outputs[i].defined()) {
        diags.emitAt(graph::describeNode(where, n), diag::err_run_node,
                     fmt::format("output {} `{}` was not computed", i, out->name));
        return failure();
      }
      values[out->id] = std::move(ctx.outputs[i]);
      observe(*out, values[out->id]);
    }
    if (!options.keep)
      for (unsigned id : step.release)
        values[id] = Tensor();
  }
  outputs.clear();
  if (end == steps.size())
    for (const graph::Value *v : g.outputs())
      outputs.push_back(*valueOf(v));
  if (options.keep)
    *options.keep = std::move(values);
  return success();
}

StepPlan *Executor::planFor(const ExecutionMode &mode) {
  const void *key = mode.planKey();
  for (auto &[k, p] : plans)
    if (k == key)
      return p.get();
  plans.emplace_back(key, nullptr);
  plans.back().second = mode.makePlan(*this);
  return plans.back().second.get();
}

const StepPlan *Executor::planOf(const void *key) const {
  for (const auto &[k, p] : plans)
    if (k == key)
      return p.get();
  return nullptr;
}

const std::vector<KernelFn> &Executor::kernelsIn(const KernelRegistry &reg) {
  if (modeRegistry != &reg) {
    modeRegistry = &reg;
    modeKernels.clear();
    for (const Step &step : steps)
      modeKernels.push_back(reg.find(step.node->domain, step.node->opType));
  }
  return modeKernels;
}

StepPlan::~StepPlan() = default;
ExecutionMode::~ExecutionMode() = default;

const ExecutionMode &StepRun::mode() const { return *opts.mode; }

int64_t StepRun::opset() const { return ex.steps[s].opset; }

const Tensor *StepRun::read(const graph::Value &v) const {
  if (opts.substitute)
    if (const Tensor *t = opts.substitute(v))
      return t;
  return values[v.id].defined() ? &values[v.id] : &ex.constants[v.id];
}

bool StepRun::watches(const graph::Value &v) const { return ex.watches(opts, v); }

void StepRun::computed(const graph::Value &v) {
  if (!watches(v))
    return;
  if (opts.transform)
    opts.transform(v, values[v.id]);
  if (opts.observe)
    opts.observe(v, values[v.id]);
}

bool StepRun::mayLeaveOut(const graph::Value &v) const {
  return !opts.keep && !watches(v) && !(opts.substitute && opts.substitute(v));
}

bool StepRun::plainOnly() const { return opts.keep != nullptr; }

const Tensor &StepRun::plain(const Tensor &t) {
  if (!t.blocked())
    return t;
  Tensor &c = copies.t[copies.next++ % 2];
  c = dnnl_util::toPlain(t);
  return c;
}

std::unique_ptr<NodeState> &StepRun::state() { return ex.states[s]; }

void StepRun::fail(llvm::StringRef msg) {
  diags.emitAt(graph::describeNode(ex.where, n), diag::err_run_node, msg.str());
}

void StepRun::missing(const graph::Value &in) {
  fail(fmt::format("input `{}` has no value", in.name));
}
