//===- ControlFlow.cpp - If, Loop and Scan: nodes that run subgraphs -------===//
//
// Each subgraph (If branch, Loop or Scan body) is loaded once as a model of
// its own (graph::loadSubgraph) and run by an executor of its own, kept in
// the node's state. Its inputs are its own (a body's iteration number,
// condition, loop-carried values, scan slices), then the outer values it
// reads, which the model IR makes trailing inputs of the node
// (Node::captures). Subgraphs run as float models: calibration hooks do not
// reach inside (the planner says subgraphs are not planned).
//
// Checked by ONNX's node tests (If, Loop, Scan-9, Range's Loop expansion)
// and against ONNX Runtime on the corpus (Silero VAD's If branches).
//
//===----------------------------------------------------------------------===//
#include "runtime/Executor.h"
#include "runtime/Kernel.h"
#include "runtime/KernelUtil.h"

#include "ir/graph/OnnxIO.h"
#include "support/SourceManager.h"

#include <cstring>
#include <map>

using namespace tpcc;
using namespace tpcc::rt;
using graph::ElemType;

namespace {

struct Body {
  graph::Subgraph sub;
  std::unique_ptr<Executor> exec;
};

struct ControlFlowState : NodeState {
  std::map<std::string, Body> bodies; ///< by attribute
};

/// Where diagnostics about the node's subgraphs are located: the node.
std::string nodeWhere(const KernelContext &ctx) {
  return graph::describeNode(ctx.model ? ctx.model->path : "<model>", ctx.node);
}

/// The first error of `diags`, located within the node (the executor adds
/// the node's own location): `then_branch: node 'n' (Op): message`.
std::string firstError(const KernelContext &ctx, const DiagnosticEngine &diags) {
  std::string node = nodeWhere(ctx);
  for (const Diagnostic &d : diags.getDiagnostics()) {
    if (d.severity != Severity::Error)
      continue;
    llvm::StringRef where = d.where;
    if (where.consume_front(node))
      where = where.ltrim(" :");
    return where.empty() ? d.message : where.str() + ": " + d.message;
  }
  return "failed";
}

/// The subgraph in attribute `attr`, loaded and prepared on first use; null
/// after ctx.fail.
Body *body(KernelContext &ctx, llvm::StringRef attr) {
  if (!ctx.state)
    ctx.state = std::make_unique<ControlFlowState>();
  auto &bodies = static_cast<ControlFlowState &>(*ctx.state).bodies;
  if (auto it = bodies.find(attr.str()); it != bodies.end())
    return &it->second;
  SourceManager sm;
  DiagnosticEngine diags(sm);
  std::vector<graph::OpsetImport> opsets{{"", ctx.opset}};
  int64_t ir = 8;
  if (ctx.model) {
    opsets = ctx.model->opsets;
    ir = ctx.model->irVersion;
  }
  std::optional<graph::Subgraph> sub =
      graph::loadSubgraph(ctx.node, attr, opsets, ir, nodeWhere(ctx), diags);
  Body b;
  if (sub) {
    b.sub = std::move(*sub);
    b.exec = Executor::create(*b.sub.model, diags);
  }
  if (!b.exec) {
    ctx.fail(firstError(ctx, diags));
    return nullptr;
  }
  return &bodies.emplace(attr.str(), std::move(b)).first->second;
}

/// Runs `b` on its own inputs `own` and the node's captured values; its
/// outputs in `outs`.
bool run(KernelContext &ctx, Body &b, std::vector<Tensor> own, std::vector<Tensor> &outs) {
  const graph::Graph &g = b.sub.model->graph;
  if (own.size() != b.sub.numOwnInputs)
    return ctx.fail(fmt::format("the subgraph takes {} inputs of its own, not {}",
                                b.sub.numOwnInputs, own.size()));
  std::vector<Tensor> values(g.values().size());
  for (size_t k = 0; k < own.size(); ++k)
    values[g.inputs()[k]->id] = std::move(own[k]);
  for (size_t k = 0; k < b.sub.captureInputs.size(); ++k) {
    const Tensor *t = ctx.input(b.sub.captureInputs[k]);
    if (!t)
      return ctx.fail(fmt::format("the outer value `{}` the subgraph reads has no value",
                                  g.inputs()[b.sub.numOwnInputs + k]->name));
    values[g.inputs()[b.sub.numOwnInputs + k]->id] = *t;
  }
  SourceManager sm;
  DiagnosticEngine diags(sm);
  if (failed(b.exec->runFrom(0, std::move(values), outs, diags)))
    return ctx.fail(firstError(ctx, diags));
  return true;
}

/// A one-element bool (or numeric) tensor's truth.
bool truth(KernelContext &ctx, const Tensor &t, llvm::StringRef what, bool &out) {
  if (t.numel() != 1 || t.elem() == ElemType::String)
    return ctx.fail(
        fmt::format("{} must hold one element, not shape {}", what.str(), shapeStr(t.shape())));
  out = t.at(0) != 0;
  return true;
}

bool ifKernel(KernelContext &ctx) {
  const Tensor *cond = ctx.input(0);
  bool c = false;
  if (!cond)
    return ctx.fail("the condition is missing");
  if (!truth(ctx, *cond, "the condition", c))
    return false;
  Body *b = body(ctx, c ? "then_branch" : "else_branch");
  if (!b)
    return false;
  std::vector<Tensor> outs;
  if (!run(ctx, *b, {}, outs))
    return false;
  if (outs.size() != ctx.node.outputs.size())
    return ctx.fail(fmt::format("the {} branch gives {} outputs for the node's {}",
                                c ? "then" : "else", outs.size(), ctx.node.outputs.size()));
  ctx.outputs = std::move(outs);
  return true;
}

/// A scalar (or, where the body declares rank 1, a one-element vector).
template <typename T> Tensor scalarFor(const graph::Value &input, ElemType elem, T value) {
  bool vector = input.type.shape && input.type.shape->size() == 1;
  Tensor t(elem, vector ? Shape{1} : Shape{});
  *t.data<T>() = value;
  return t;
}

/// Slice `i` of `t` along `axis` (the axis dropped).
Tensor sliceAlong(const Tensor &t, int64_t axis, int64_t i) {
  Shape s = t.shape();
  std::vector<int64_t> st = contiguousStrides(s);
  int64_t base = i * st[size_t(axis)];
  s.erase(s.begin() + axis);
  st.erase(st.begin() + axis);
  Tensor out(t.elem(), s);
  stridedCopy(t, out, base, st);
  return out;
}

/// `parts` (same type and shape) stacked along a new axis `axis`; the
/// order reversed when `reverse`. Empty `parts`: shape [0] of `elem`.
bool stack(KernelContext &ctx, const std::vector<Tensor> &parts, int64_t axis, bool reverse,
           ElemType elem, Tensor &out) {
  if (parts.empty()) {
    out = Tensor(elem, Shape{0});
    return true;
  }
  const Shape &part = parts[0].shape();
  for (const Tensor &p : parts)
    if (p.shape() != part || p.elem() != parts[0].elem())
      return ctx.fail(fmt::format("a scan output changes from {} to {} between iterations",
                                  shapeStr(part), shapeStr(p.shape())));
  std::optional<int64_t> ax = normalizeAxis(axis, int64_t(part.size()) + 1);
  if (!ax)
    return ctx.fail(fmt::format("scan output axis {} is out of range", axis));
  Shape s = part;
  s.insert(s.begin() + *ax, int64_t(parts.size()));
  out = Tensor(parts[0].elem(), s);
  int64_t outer = 1;
  for (int64_t k = 0; k < *ax; ++k)
    outer *= part[size_t(k)];
  size_t inner = parts[0].numel() && outer ? parts[0].bytes() / size_t(outer) : 0;
  int64_t n = int64_t(parts.size());
  uint8_t *dst = static_cast<uint8_t *>(out.raw());
  for (int64_t i = 0; i < n && inner; ++i) {
    const uint8_t *src = static_cast<const uint8_t *>(parts[size_t(reverse ? n - 1 - i : i)].raw());
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(dst + size_t(o * n + i) * inner, src + size_t(o) * inner, inner);
  }
  return true;
}

/// The declared element type of the body's output `k` (Float when unknown).
ElemType outputType(const Body &b, size_t k) {
  const graph::Value *v = b.sub.model->graph.outputs()[k];
  return v->type.elem == ElemType::Undefined ? ElemType::Float : v->type.elem;
}

bool loopKernel(KernelContext &ctx) {
  Body *b = body(ctx, "body");
  if (!b)
    return false;
  const graph::Graph &g = b->sub.model->graph;
  size_t carried = ctx.node.numOwnInputs() < 2 ? 0 : ctx.node.numOwnInputs() - 2;
  if (b->sub.numOwnInputs != carried + 2 || g.outputs().size() < carried + 1)
    return ctx.fail(fmt::format("the body takes {} inputs and gives {} outputs; with {} "
                                "loop-carried values it must take {} and give at least {}",
                                b->sub.numOwnInputs, g.outputs().size(), carried, carried + 2,
                                carried + 1));
  size_t scans = g.outputs().size() - 1 - carried;
  if (ctx.node.outputs.size() > carried + scans)
    return ctx.fail("the node has more outputs than the body gives");
  int64_t trips = INT64_MAX;
  if (const Tensor *m = ctx.input(0)) {
    if (m->numel() != 1 || m->elem() != ElemType::Int64)
      return ctx.fail("the trip count M must be one int64");
    trips = m->intAt(0);
  }
  bool cond = true;
  if (const Tensor *c = ctx.input(1); c && !truth(ctx, *c, "the condition", cond))
    return false;
  std::vector<Tensor> state;
  for (size_t k = 0; k < carried; ++k) {
    const Tensor *t = ctx.input(2 + k);
    if (!t)
      return ctx.fail(fmt::format("loop-carried value {} is missing", k));
    state.push_back(*t);
  }
  std::vector<std::vector<Tensor>> scanParts(scans);
  for (int64_t i = 0; i < trips && cond; ++i) {
    std::vector<Tensor> own{scalarFor<int64_t>(*g.inputs()[0], ElemType::Int64, i),
                            scalarFor<bool>(*g.inputs()[1], ElemType::Bool, cond)};
    own.insert(own.end(), state.begin(), state.end());
    std::vector<Tensor> outs;
    if (!run(ctx, *b, std::move(own), outs) || !truth(ctx, outs[0], "the body's condition", cond))
      return false;
    for (size_t k = 0; k < carried; ++k)
      state[k] = std::move(outs[1 + k]);
    for (size_t k = 0; k < scans; ++k)
      scanParts[k].push_back(std::move(outs[1 + carried + k]));
  }
  ctx.outputs.resize(ctx.node.outputs.size());
  for (size_t k = 0; k < ctx.node.outputs.size(); ++k) {
    if (k < carried)
      ctx.outputs[k] = state[k];
    else if (!stack(ctx, scanParts[k - carried], 0, false, outputType(*b, 1 + k), ctx.outputs[k]))
      return false;
  }
  return true;
}

/// What a Scan iterates: its states, its scanned inputs with their axis and
/// direction, and its scan outputs' axis and direction.
struct ScanSpec {
  std::vector<Tensor> states, scanned;
  std::vector<int64_t> inAxes, inDirs, outAxes, outDirs;
};

/// Runs the scan `s` (states updated in place); its scan outputs in `outs`.
bool scan(KernelContext &ctx, Body &b, ScanSpec &s, std::vector<Tensor> &outs) {
  size_t k = b.sub.model->graph.outputs().size() - s.states.size();
  int64_t len = -1;
  for (size_t j = 0; j < s.scanned.size(); ++j) {
    const Tensor &t = s.scanned[j];
    std::optional<int64_t> ax = normalizeAxis(s.inAxes[j], t.rank());
    if (!ax || t.elem() == ElemType::String)
      return ctx.fail(
          fmt::format("scan input {} is a string tensor or has no axis {}", j, s.inAxes[j]));
    if (len >= 0 && t.dim(*ax) != len)
      return ctx.fail(
          fmt::format("scan inputs disagree on the sequence length ({} and {})", len, t.dim(*ax)));
    len = t.dim(*ax);
    s.inAxes[j] = *ax;
  }
  std::vector<std::vector<Tensor>> parts(k);
  for (int64_t i = 0; i < len; ++i) {
    std::vector<Tensor> in = s.states;
    for (size_t j = 0; j < s.scanned.size(); ++j)
      in.push_back(sliceAlong(s.scanned[j], s.inAxes[j], s.inDirs[j] ? len - 1 - i : i));
    std::vector<Tensor> res;
    if (!run(ctx, b, std::move(in), res))
      return false;
    for (size_t st = 0; st < s.states.size(); ++st)
      s.states[st] = std::move(res[st]);
    for (size_t o = 0; o < k; ++o)
      parts[o].push_back(std::move(res[s.states.size() + o]));
  }
  outs.resize(k);
  for (size_t o = 0; o < k; ++o)
    if (!stack(ctx, parts[o], s.outAxes[o], s.outDirs[o] != 0, outputType(b, s.states.size() + o),
               outs[o]))
      return false;
  return true;
}

/// Scan-8: a leading batch axis on every input and output, the scan axis
/// after it, directions for the inputs only, and sequence_lens (which may
/// only repeat the full length here).
bool scan8(KernelContext &ctx, Body &b, size_t states, int64_t m) {
  size_t k = b.sub.model->graph.outputs().size() - states;
  const Tensor *lens = ctx.input(0);
  int64_t batch = -1;
  for (size_t i = 1; i < ctx.node.numOwnInputs(); ++i) {
    const Tensor *t = ctx.input(i);
    if (!t || t->rank() < 1 || (batch >= 0 && t->dim(0) != batch))
      return ctx.fail("every input of Scan-8 needs the same batch axis 0");
    batch = t->dim(0);
  }
  std::vector<std::vector<Tensor>> outs(states + k);
  for (int64_t n = 0; n < batch; ++n) {
    ScanSpec s;
    for (size_t i = 0; i < states + size_t(m); ++i)
      (i < states ? s.states : s.scanned).push_back(sliceAlong(*ctx.input(1 + i), 0, n));
    if (lens && (lens->numel() != batch || lens->intAt(n) != s.scanned[0].dim(0)))
      return ctx.fail("sequence_lens shorter than the scan inputs are not supported");
    s.inAxes.assign(size_t(m), 0);
    s.inDirs = ctx.attrInts("directions", std::vector<int64_t>(size_t(m), 0));
    s.outAxes.assign(k, 0);
    s.outDirs.assign(k, 0);
    if (s.inDirs.size() != size_t(m))
      return ctx.fail("directions must have one entry per scan input");
    std::vector<Tensor> scanned;
    if (!scan(ctx, b, s, scanned))
      return false;
    for (size_t i = 0; i < states; ++i)
      outs[i].push_back(std::move(s.states[i]));
    for (size_t i = 0; i < k; ++i)
      outs[states + i].push_back(std::move(scanned[i]));
  }
  ctx.outputs.resize(ctx.node.outputs.size());
  for (size_t o = 0; o < ctx.node.outputs.size(); ++o)
    if (!stack(ctx, outs[o], 0, false, outputType(b, o), ctx.outputs[o]))
      return false;
  return true;
}

bool scanKernel(KernelContext &ctx) {
  Body *b = body(ctx, "body");
  if (!b)
    return false;
  const graph::Graph &g = b->sub.model->graph;
  size_t own = ctx.node.numOwnInputs() - (ctx.opset < 9); // Scan-8: sequence_lens first
  int64_t m = ctx.attrInt("num_scan_inputs", 0);
  if (m < 1 || size_t(m) > own || b->sub.numOwnInputs != own)
    return ctx.fail(fmt::format("num_scan_inputs {} does not fit {} inputs (the body takes {})", m,
                                own, b->sub.numOwnInputs));
  size_t states = own - size_t(m);
  if (g.outputs().size() < states || ctx.node.outputs.size() > g.outputs().size())
    return ctx.fail("the body's outputs do not match the node's");
  if (ctx.opset < 9)
    return scan8(ctx, *b, states, m);
  size_t k = g.outputs().size() - states;
  ScanSpec s;
  s.inAxes = ctx.attrInts("scan_input_axes", std::vector<int64_t>(size_t(m), 0));
  s.inDirs = ctx.attrInts("scan_input_directions", std::vector<int64_t>(size_t(m), 0));
  s.outAxes = ctx.attrInts("scan_output_axes", std::vector<int64_t>(k, 0));
  s.outDirs = ctx.attrInts("scan_output_directions", std::vector<int64_t>(k, 0));
  if (s.inAxes.size() != size_t(m) || s.inDirs.size() != size_t(m) || s.outAxes.size() != k ||
      s.outDirs.size() != k)
    return ctx.fail("the scan axes and directions must have one entry per scan input or output");
  for (size_t i = 0; i < own; ++i) {
    const Tensor *t = ctx.input(i);
    if (!t)
      return ctx.fail(fmt::format("input {} is missing", i));
    (i < states ? s.states : s.scanned).push_back(*t);
  }
  std::vector<Tensor> scanned;
  if (!scan(ctx, *b, s, scanned))
    return false;
  ctx.outputs.resize(ctx.node.outputs.size());
  for (size_t o = 0; o < ctx.node.outputs.size(); ++o)
    ctx.outputs[o] = o < states ? s.states[o] : scanned[o - states];
  return true;
}

} // namespace

void rt::registerControlFlowKernels(KernelRegistry &r) {
  r.add("If", ifKernel);
  r.add("Loop", loopKernel);
  r.add("Scan", scanKernel);
}
