//===- Executor.cpp - Runs a model IR graph on the CPU ----------------------===//
#include "runtime/Executor.h"

#include "ir/graph/OnnxIO.h"
#include "runtime/OrtBinary.h"
#include "runtime/OrtSoftmax.h"
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

/// Whether node `n` reads input `i` in oneDNN's blocked layout.
static bool readsBlocked(const graph::Node &n, size_t i) {
  if (i != 0 || !(n.domain.empty() || n.domain == "ai.onnx"))
    return false;
  const std::string &op = n.opType;
  return op == "Conv" || op == "ConvTranspose" || op == "AveragePool" ||
         op == "GlobalAveragePool" || op == "GlobalMaxPool" ||
         (op == "MaxPool" && (n.outputs.size() < 2 || !n.outputs[1]));
}

void Executor::findFusions() {
  const std::vector<graph::Node *> &order = m.graph.topologicalOrder();
  auto opset = [&](const graph::Node &n) { return steps[stepIndex[n.id]].opset; };
  for (size_t s = 0; s < steps.size(); ++s)
    if (!steps[s].precomputed)
      steps[s].fusion = fusionAfter(order, s, stepIndex, opset, constants);
  // A value every reader of which is a convolution's input or a fused Add's
  // operand may stay blocked.
  blockedReaders.assign(m.graph.values().size(), false);
  for (const auto &v : m.graph.values()) {
    if (v->isGraphOutput || v->constant || v->uses.empty())
      continue;
    bool all = true;
    for (const graph::Use &u : v->uses)
      all &= readsBlocked(*u.node, u.index) || u.node->opType == "Add";
    blockedReaders[v->id] = all;
  }
}

/// Whether a run sums float Convs as ORT's MLAS does (RunOptions::ortFloat).
static bool sumsAsOrt(const RunOptions &options) {
  return options.ortFloat && options.arithmetic != IntegerArithmetic::Float;
}

bool Executor::fusable(const Step &head, const RunOptions &options) const {
  const Fusion &f = *head.fusion;
  // A QDQ group's node computes its output as the group's grid says.
  // Runs that compute as ORT does sum a float Conv in MLAS's order, alone
  // (the fused activations ORT applies after it give the same values).
  if (options.keep || (options.arithmetic != IntegerArithmetic::Float && head.integer) ||
      sumsAsOrt(options))
    return false;
  for (const graph::Value *v : f.skipped)
    if (watches(options, *v) || (options.substitute && options.substitute(*v)))
      return false;
  return true;
}

/// The QuantizeLinear the kernel of the group at step `s` can write directly:
/// the only reader of the node's output, or of the only Relu/Clip reading it.
void Executor::findQuantizedOutput(size_t s) {
  Step &step = steps[s];
  const graph::Value *v = step.node->outputs.empty() ? nullptr : step.node->outputs[0];
  std::vector<size_t> chain;
  std::vector<const graph::Value *> skipped;
  while (v && !v->isGraphOutput && v->uses.size() == 1 && v->uses[0].index == 0) {
    const graph::Node &r = *v->uses[0].node;
    if (!r.inDefaultDomain() || r.outputs.empty() || !r.outputs[0])
      return;
    chain.push_back(stepIndex[r.id]);
    skipped.push_back(v);
    if (r.opType == "QuantizeLinear") {
      step.integerAbsorbed = std::move(chain);
      step.integerSkipped = std::move(skipped);
      step.quantizedOutput = r.outputs[0];
      return;
    }
    if ((r.opType != "Relu" && r.opType != "Clip") || chain.size() > 1)
      return;
    v = r.outputs[0];
  }
}

/// Finds the DequantizeLinear steps whose output only group kernels and
/// tables read.
void Executor::findKernelOnlyInputs() {
  for (Step &step : steps) {
    const graph::Node &n = *step.node;
    const graph::Value *out = n.outputs.empty() ? nullptr : n.outputs[0];
    if (n.opType != "DequantizeLinear" || !n.inDefaultDomain() || !out || out->isGraphOutput ||
        out->uses.empty() || step.precomputed)
      continue;
    std::vector<size_t> readers;
    for (const graph::Use &u : out->uses) {
      const Step &reader = steps[stepIndex[u.node->id]];
      bool reads = (u.index == 0 && reader.quantizedInput == n.input(0)) ||
                   (u.index == 1 && reader.quantizedInputB == n.input(0));
      if (!(reader.integerKernel || reader.lookup) || !reads)
        break;
      readers.push_back(stepIndex[u.node->id]);
    }
    if (readers.size() == out->uses.size())
      step.kernelReaders = std::move(readers);
  }
}

/// The convolution kernels whose quantized output every reader takes
/// channels-last: through DequantizeLinear steps only convolution kernels,
/// tables and max poolings on the codes (readsBlocked) read.
void Executor::findChannelsLastOutputs() {
  for (Step &step : steps) {
    const graph::Value *v = step.quantizedOutput;
    if (!v || !step.integerKernel || step.node->opType != "Conv" || v->isGraphOutput ||
        v->uses.empty())
      continue;
    bool all = true;
    for (const graph::Use &u : v->uses) {
      const Step &dq = steps[stepIndex[u.node->id]];
      all &= !dq.kernelReaders.empty();
      for (size_t r : dq.kernelReaders)
        all &=
            (steps[r].lookup && (!steps[r].lookup->onCodes || readsBlocked(*steps[r].node, 0))) ||
            (steps[r].integerKernel && steps[r].node->opType == "Conv");
    }
    step.channelsLastOut = all;
  }
}

/// The integer groups and their kernels, found by the first run that
/// computes them. A group's kernel reads the tensor its DequantizeLinear
/// reads: that value lives until the group's step.
void Executor::findIntegerGroups() {
  integerGroupsFound = true;
  auto constant = [&](const graph::Value &v) -> const Tensor * {
    return constants[v.id].defined() && !v.isGraphInput ? &constants[v.id] : nullptr;
  };
  for (size_t s = 0; s < steps.size(); ++s) {
    Step &step = steps[s];
    if (step.precomputed)
      continue;
    step.integer = integerGroupOf(*step.node);
    if (step.integer && !ortFuses(*step.integer))
      step.integer.reset(); // ORT runs it in float
    if (!step.integer) {
      step.lookup = lookupChainOf(*step.node, constant);
      if (step.lookup && !buildTable(step))
        step.lookup.reset();
      if (!step.lookup)
        step.lookup = codeChainOf(*step.node, constant);
      if (!step.lookup)
        step.lookup = softmaxChainOf(*step.node, constant);
      if (step.lookup) {
        step.integerAbsorbed = {stepIndex[step.lookup->q->id]};
        step.integerSkipped = {step.node->outputs[0]};
        if (const graph::Node *act = step.lookup->dropped) { // ORT drops it
          step.integerAbsorbed.insert(step.integerAbsorbed.begin(), stepIndex[act->id]);
          step.integerSkipped.push_back(act->outputs[0]);
        }
        step.quantizedOutput = step.lookup->output;
        step.quantizedInput = step.lookup->input[0];
        step.quantizedInputB = step.lookup->input[1]; // null for one input
        keepUntil(s, step.quantizedInput);
        if (step.quantizedInputB)
          keepUntil(s, step.quantizedInputB);
      }
      continue;
    }
    const graph::Value *dq = step.node->input(0);
    const graph::Value *xq = dq && dq->producer ? dq->producer->input(0) : nullptr;
    std::string error;
    if (!xq || !(step.integerKernel = IntegerKernel::create(*step.integer, error)))
      continue;
    step.quantizedInput = xq;
    findQuantizedOutput(s);
    keepUntil(s, xq);
  }
  findKernelOnlyInputs();
  findChannelsLastOutputs();
}

/// Step `s` reads `xq` itself (the tensor its DequantizeLinear reads): `xq`
/// lives until it.
void Executor::keepUntil(size_t s, const graph::Value *xq) {
  if (xq->isGraphOutput || xq->constant)
    return;
  for (size_t r = 0; r < s; ++r) { // released before the step: release at it
    auto &rel = steps[r].release;
    auto it = std::find(rel.begin(), rel.end(), xq->id);
    if (it != rel.end()) {
      rel.erase(it);
      steps[s].release.push_back(xq->id);
    }
  }
}

/// Runs the kernel of `n` on `x` (its first inputs; the others are
/// constants): building tables, computing a skipped DequantizeLinear's
/// output after all (a fresh state), and an on-code chain's node on the
/// codes (`state`: its step's; `blockedOutput`: the output may stay
/// channels-last). False with `err` when the kernel fails.
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

/// The pair table of an Add or Mul that ONNX Runtime fuses into QLinearAdd
/// or QLinearMul (its inputs and output of one code type in ORT's terms),
/// computed as ORT's kernels do (OrtBinary.h); false when ORT runs it in
/// float.
bool Executor::ortBinaryTable(Step &step) {
  const LookupChain &c = *step.lookup;
  if (c.arity != 2 || (c.op->opType != "Add" && c.op->opType != "Mul"))
    return false;
  const graph::Node *nodes[3] = {c.dq[0], c.dq[1], c.q};
  const graph::Value *codes[3] = {c.input[0], c.input[1], c.output};
  OrtGrid grid[3];
  bool native[3];
  for (int k = 0; k < 3; ++k) {
    const Tensor &scale = constants[nodes[k]->input(1)->id];
    const graph::Value *zv = nodes[k]->input(2);
    const Tensor *zero = zv && constants[zv->id].defined() ? &constants[zv->id] : nullptr;
    graph::ElemType elem = zero ? zero->elem() : codes[k]->type.elem;
    if (scale.elem() != graph::ElemType::Float || scale.numel() != 1)
      return false;
    native[k] = elem == graph::ElemType::Int8;
    grid[k].scale = scale.data<float>()[0];
    grid[k].isSigned = native[k] && !ortUnsignedCodes(*codes[k]);
    grid[k].zero = int32_t(zero ? zero->intAt(0) : 0) + (native[k] && !grid[k].isSigned ? 128 : 0);
  }
  if (grid[0].isSigned != grid[1].isSigned || grid[1].isSigned != grid[2].isSigned)
    return false;
  step.table = rt::ortBinaryTable(c.op->opType, grid[0], grid[1], grid[2], native);
  step.table.resize(step.table.size() + kPairTablePadding, 0);
  step.tableType = native[2] ? graph::ElemType::Int8 : graph::ElemType::UInt8;
  return true;
}

/// The table of a lookup chain: ORT's arithmetic for the Add and Mul it
/// fuses, else its kernels run on every code (pair).
bool Executor::buildTable(Step &step) {
  if (ortBinaryTable(step))
    return true;
  const LookupChain &c = *step.lookup;
  const int64_t n = c.arity == 2 ? 65536 : 256;
  BufferPool::Scope system(nullptr);
  Tensor codes[2], f[2], g, y;
  for (int i = 0; i < c.arity; ++i) {
    codes[i] = Tensor(c.input[i]->type.elem, {n});
    uint8_t *p = static_cast<uint8_t *>(codes[i].raw());
    for (int64_t k = 0; k < n; ++k)
      p[k] = uint8_t(i == 0 ? k & 255 : k >> 8);
    if (!runAlone(*c.dq[i], {&codes[i]}, f[i]))
      return false;
  }
  if (!runAlone(*c.op,
                c.arity == 2 ? std::vector<const Tensor *>{&f[0], &f[1]}
                             : std::vector<const Tensor *>{&f[0]},
                g) ||
      !runAlone(*c.q, {&g}, y) || y.numel() != n ||
      (y.elem() != graph::ElemType::UInt8 && y.elem() != graph::ElemType::Int8))
    return false;
  const uint8_t *p = static_cast<const uint8_t *>(y.raw());
  step.table.assign(p, p + n);
  if (c.arity == 2)
    step.table.resize(size_t(n) + kPairTablePadding, 0);
  step.tableType = y.elem();
  return true;
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
  if (options.arithmetic != IntegerArithmetic::Float && !integerGroupsFound)
    findIntegerGroups();
  // Blocked layouts only between oneDNN kernels, and never in what a caller
  // sees or a QDQ group's arithmetic reads.
  bool mayBlock = !options.keep;
  std::vector<bool> &absorbed = absorbedSteps;
  absorbed.assign(steps.size(), false);
  llvm::SmallVector<Tensor, 2> plainCopies;
  // A step's 8-bit inputs made plain (at most two at a time).
  Tensor converted[2];
  unsigned conversions = 0;
  auto plainCopy = [&](const Tensor &t) -> const Tensor & {
    if (!t.blocked())
      return t;
    Tensor &c = converted[conversions++ % 2];
    c = dnnl_util::toPlain(t);
    return c;
  };
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
    bool integer = options.arithmetic != IntegerArithmetic::Float && step.integer;
    bool kernel = integer && options.arithmetic == IntegerArithmetic::Exact && step.integerKernel;
    if (options.arithmetic == IntegerArithmetic::Exact && !step.kernelReaders.empty() &&
        skippable(options, *n.outputs[0]) &&
        std::all_of(step.kernelReaders.begin(), step.kernelReaders.end(), [&](size_t r) {
          return steps[r].integerKernel || direct(steps[r], options);
        })) {
      // Every reader reads its input instead.
      for (unsigned id : step.release)
        values[id] = Tensor();
      continue;
    }
    // The 8-bit tensors a group kernel or a table reads (integer runs only).
    bool integerRun = options.arithmetic != IntegerArithmetic::Float;
    const Tensor *xq = integerRun && step.quantizedInput ? valueOf(step.quantizedInput) : nullptr,
                 *xq2 =
                     integerRun && step.quantizedInputB ? valueOf(step.quantizedInputB) : nullptr;
    if (xq && !xq->defined())
      return missing(n, *step.quantizedInput);
    if (xq2 && !xq2->defined())
      return missing(n, *step.quantizedInputB);
    bool tableRun = integerRun && step.lookup && (!xq2 || xq2->shape() == xq->shape());
    if (integerRun && step.lookup && !tableRun) // a Dequantize skipped for it: computed now
      for (int i = 0; i < step.lookup->arity; ++i)
        if (const graph::Value *d = n.inputs[size_t(i)];
            !values[d->id].defined() &&
            !runAlone(*step.lookup->dq[i], {&plainCopy(i == 0 ? *xq : *xq2)}, values[d->id])) {
          diags.emitAt(graph::describeNode(where, n), diag::err_run_node,
                       "its DequantizeLinear input cannot be computed");
          return failure();
        }
    if ((kernel || tableRun) && direct(step, options)) {
      // From quantized input to quantized output, as ORT's QLinearConv,
      // QGemm and QLinear element-wise ops: the QuantizeLinear (and a
      // Relu/Clip before it) never runs.
      Tensor &yq = values[step.quantizedOutput->id];
      // 8-bit tensors pass channels-last between kernels and tables, never
      // to a caller or a hook.
      bool plainOut = !mayBlock || watches(options, *step.quantizedOutput) ||
                      step.quantizedOutput->isGraphOutput;
      std::string error;
      if (step.lookup && step.lookup->onCodes) {
        // The node's own kernel on the codes: a max pooling reads
        // channels-last codes where they are (oneDNN) and writes them so
        // unless a plain output is needed; the others read them plain.
        bool pool = readsBlocked(n, 0) && dnnl_util::isChannelsLast(*xq);
        if (!runAlone(n, {pool ? xq : &plainCopy(*xq)}, yq, &error, &states[s],
                      pool && !plainOut)) {
          diags.emitAt(graph::describeNode(where, n), diag::err_run_node,
                       error.empty() ? "it did not run on its input's 8-bit codes" : error);
          return failure();
        }
      } else if (step.lookup && step.lookup->softmax) {
        const LookupChain &c = *step.lookup;
        const Tensor *zero = c.q->input(2) ? &constants[c.q->input(2)->id] : nullptr;
        const graph::Attribute *axis = n.attr("axis");
        // ORT runs the chain on uint8 codes (softmaxChainOf asks for codes
        // ORT sees so): int8 output codes are 128 up there, saturating at 255.
        bool s8 = zero && zero->defined() && zero->elem() == graph::ElemType::Int8;
        Tensor yu;
        if (!ortSoftmax(plainCopy(*xq), constants[c.dq[0]->input(1)->id].data<float>()[0],
                        constants[c.q->input(1)->id].data<float>()[0], graph::ElemType::UInt8,
                        (zero && zero->defined() ? int(zero->intAt(0)) : 0) + (s8 ? 128 : 0),
                        axis              ? axis->i
                        : step.opset < 13 ? 1
                                          : -1,
                        step.opset, s8 ? yu : yq)) {
          diags.emitAt(graph::describeNode(where, n), diag::err_run_node, "axis out of range");
          return failure();
        }
        if (s8) {
          yq = Tensor(graph::ElemType::Int8, yu.shape());
          for (int64_t i = 0; i < yu.numel(); ++i)
            yq.data<int8_t>()[i] = int8_t(int(yu.data<uint8_t>()[i]) - 128);
        }
      } else if (step.lookup) {
        // Element-wise: the output in the inputs' layout, made plain unless
        // both are channels-last (and the output may be).
        bool last = !plainOut && dnnl_util::isChannelsLast(*xq) &&
                    (!xq2 || dnnl_util::isChannelsLast(*xq2));
        if (!last) {
          xq = &plainCopy(*xq);
          xq2 = xq2 ? &plainCopy(*xq2) : nullptr;
        }
        applyTable(*xq, xq2, step.table, step.tableType, yq);
      } else if (!step.integerKernel->run(*xq, yq, error, step.channelsLastOut && !plainOut)) {
        diags.emitAt(graph::describeNode(where, n), diag::err_run_node, error);
        return failure();
      }
      observe(*step.quantizedOutput, yq);
      for (size_t a : step.integerAbsorbed)
        absorbed[a] = true;
      if (!options.keep)
        for (unsigned id : step.release)
          values[id] = Tensor();
      continue;
    }
    KernelContext ctx(n, step.opset, states[s]);
    ctx.model = &m;
    const Fusion *fused = step.fusion && fusable(step, options) ? &*step.fusion : nullptr;
    if (fused) {
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
    ctx.ortFloat = sumsAsOrt(options) && !step.integer;
    ctx.blockedOutput = mayBlock && result && blockedReaders[result->id] &&
                        !watches(options, *result) &&
                        !(options.arithmetic != IntegerArithmetic::Float && step.integer);
    plainCopies.clear();
    plainCopies.reserve(n.inputs.size());
    ctx.inputs.reserve(n.inputs.size());
    for (size_t i = 0; i < n.inputs.size() && !kernel; ++i) {
      const graph::Value *in = n.inputs[i];
      const Tensor *t = valueOf(in);
      if (in && !t->defined())
        return missing(n, *in);
      if (in && t == &constants[in->id] && i < 64)
        ctx.constantInputs |= uint64_t(1) << i;
      if (t && t->blocked() && (t->elem() != graph::ElemType::Float || !readsBlocked(n, i))) {
        plainCopies.push_back(dnnl_util::toPlain(*t));
        t = &plainCopies.back();
      }
      ctx.inputs.push_back(t);
    }
    ctx.outputs.resize(n.outputs.size());
    if (kernel) {
      // The group on integers, from the tensor its DequantizeLinear reads.
      if (!step.integerKernel->runDequantized(*xq, ctx.outputs[0], ctx.error)) {
        diags.emitAt(graph::describeNode(where, n), diag::err_run_node, ctx.error);
        return failure();
      }
    } else if (!step.kernel(ctx) ||
               (integer && !computeIntegerGroup(*step.integer, options.arithmetic, ctx))) {
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
