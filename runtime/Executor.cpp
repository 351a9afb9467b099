//===- Executor.cpp - Runs a model IR graph on the CPU ----------------------===//
#include "runtime/Executor.h"

#include "ir/graph/OnnxIO.h"

#include <fmt/format.h>

#include <cmath>
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

std::vector<std::pair<std::string, const graph::Node *>>
Executor::unsupportedOperators(const graph::Model &model) {
  const KernelRegistry &reg = KernelRegistry::get();
  std::vector<std::pair<std::string, const graph::Node *>> missing;
  std::set<std::string> seen;
  for (const auto &n : model.graph.nodes()) {
    if (reg.find(n->domain, n->opType))
      continue;
    std::string op = n->domain.empty() ? n->opType : n->domain + "." + n->opType;
    if (seen.insert(op).second)
      missing.emplace_back(op, n.get());
  }
  return missing;
}

std::unique_ptr<Executor> Executor::create(const graph::Model &model, DiagnosticEngine &diags) {
  std::unique_ptr<Executor> ex(new Executor(model));
  ex->where = model.path.empty() ? std::string("<model>") : model.path;
  const graph::Graph &g = model.graph;
  bool ok = true;

  // One error per missing operator, at its first node.
  for (const auto &[op, first] : unsupportedOperators(model)) {
    unsigned uses = 0;
    for (const auto &n : g.nodes())
      uses += (n->domain.empty() ? n->opType : n->domain + "." + n->opType) == op;
    diags.emitAt(graph::describeNode(ex->where, *first), diag::err_run_unsupported_op, op,
                 uses == 1 ? std::string() : fmt::format(" ({} nodes use it)", uses));
    ok = false;
  }

  ex->constants.resize(g.values().size());
  for (const auto &v : g.values()) {
    if (!v->constant)
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
    ex->steps.push_back({n,
                         KernelRegistry::get().find(n->domain, n->opType),
                         opsetOf(model, *n),
                         {},
                         {},
                         false,
                         0,
                         false,
                         {}});
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
  if (failed(ex->precompute(diags)))
    return nullptr;
  ex->foldActivations();
  return ex;
}

/// The bounds of a Relu or a Clip with constant bounds, when it can run as a
/// convolution's post-op.
static std::optional<PostOp> activationBounds(const graph::Node &n, int64_t opset,
                                              const std::vector<Tensor> &constants) {
  if (!n.domain.empty() || n.outputs.size() != 1 || !n.outputs[0])
    return std::nullopt;
  constexpr float inf = std::numeric_limits<float>::infinity();
  if (n.opType == "Relu")
    return PostOp{0.f, inf};
  if (n.opType != "Clip")
    return std::nullopt;
  PostOp p{-inf, inf};
  if (opset < 11) {
    std::unique_ptr<NodeState> none;
    KernelContext ctx(n, opset, none);
    p.lo = ctx.attrFloat("min", -std::numeric_limits<float>::max());
    p.hi = ctx.attrFloat("max", std::numeric_limits<float>::max());
  } else {
    for (size_t i = 1; i < 3; ++i) {
      const graph::Value *b = n.input(i);
      if (!b)
        continue;
      if (!b->constant || constants[b->id].elem() != ElemType::Float ||
          constants[b->id].numel() != 1)
        return std::nullopt;
      (i == 1 ? p.lo : p.hi) = constants[b->id].data<float>()[0];
    }
  }
  if (!(p.lo <= p.hi) || std::isnan(p.lo) || std::isnan(p.hi))
    return std::nullopt;
  return p;
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

void Executor::foldActivations() {
  std::vector<int> stepOf(m.graph.nodes().size(), -1);
  for (size_t s = 0; s < steps.size(); ++s)
    stepOf[steps[s].node->id] = int(s);
  for (Step &conv : steps) {
    const graph::Node &n = *conv.node;
    if (!n.domain.empty() || (n.opType != "Conv" && n.opType != "ConvTranspose") ||
        n.outputs.size() != 1 || !n.outputs[0])
      continue;
    const graph::Value *out = n.outputs[0];
    if (out->isGraphOutput || out->uses.size() != 1 || out->uses[0].index != 0)
      continue;
    const graph::Node &act = *out->uses[0].node;
    int s = stepOf[act.id];
    if (s < 0 || !act.outputs[0] || act.outputs[0]->isGraphOutput)
      continue;
    std::optional<PostOp> p = activationBounds(act, steps[size_t(s)].opset, constants);
    if (!p)
      continue;
    conv.post = p;
    steps[size_t(s)].folded = true;
    steps[size_t(s)].foldedFrom = out->id;
  }
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
      for (int64_t i = 0; i < t.numel(); ++i)
        if (!std::isfinite(t.at(i)) && bad++ == 0)
          first = i;
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

  // Activations fold into the convolution before them unless every value
  // must be seen as the model defines it (or the run starts between the two).
  bool fold = first == 0 && !options.observe && !options.transform && !options.substitute &&
              !options.keep && options.arithmetic == IntegerArithmetic::Float;
  // The integer groups, found by the first run that computes them.
  if (options.arithmetic != IntegerArithmetic::Float && !integerGroupsFound) {
    for (Step &step : steps)
      step.integer = integerGroupOf(*step.node);
    integerGroupsFound = true;
  }
  for (size_t s = first; s < steps.size(); ++s) {
    const Step &step = steps[s];
    const graph::Node &n = *step.node;
    if (step.precomputed) {
      if (options.observe)
        for (const graph::Value *out : n.outputs)
          if (out)
            options.observe(*out, constants[out->id]);
      continue;
    }
    if (fold && step.folded) { // computed by the convolution already
      values[n.outputs[0]->id] = values[step.foldedFrom];
      for (unsigned id : step.release)
        values[id] = Tensor();
      continue;
    }
    KernelContext ctx(n, step.opset, states[s]);
    if (fold && step.post)
      ctx.post = &*step.post;
    ctx.inputs.reserve(n.inputs.size());
    for (const graph::Value *in : n.inputs) {
      const Tensor *t = valueOf(in);
      if (in && !t->defined()) {
        diags.emitAt(graph::describeNode(where, n), diag::err_run_node,
                     fmt::format("input `{}` has no value", in->name));
        return failure();
      }
      ctx.inputs.push_back(t);
    }
    ctx.outputs.resize(n.outputs.size());
    if (!step.kernel(ctx)) {
      diags.emitAt(graph::describeNode(where, n), diag::err_run_node, ctx.error);
      return failure();
    }
    if (options.arithmetic != IntegerArithmetic::Float && step.integer &&
        !computeIntegerGroup(*step.integer, options.arithmetic, ctx)) {
      diags.emitAt(graph::describeNode(where, n), diag::err_run_node, ctx.error);
      return failure();
    }
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      const graph::Value *out = n.outputs[i];
      if (!out)
        continue;
      if (!ctx.outputs[i].defined()) {
        diags.emitAt(graph::describeNode(where, n), diag::err_run_node,
                     fmt::format("output {} `{}` was not computed", i, out->name));
        return failure();
      }
      values[out->id] = std::move(ctx.outputs[i]);
      if (options.transform)
        options.transform(*out, values[out->id]);
      if (options.observe)
        options.observe(*out, values[out->id]);
    }
    if (!options.keep)
      for (unsigned id : step.release)
        values[id] = Tensor();
  }
  outputs.clear();
  for (const graph::Value *v : g.outputs())
    outputs.push_back(*valueOf(v));
  if (options.keep)
    *options.keep = std::move(values);
  return success();
}
