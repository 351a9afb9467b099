//===- Cleanup.cpp - Model clean-up before calibration ----------------------===//
#include "transforms/Cleanup.h"

#include "ir/graph/NodeAttrs.h"
#include "ir/graph/OnnxIO.h"
#include "runtime/Kernel.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

using namespace tpcc;
using namespace tpcc::rt;
using namespace tpcc::transforms;
using graph::Node;
using graph::Value;

/// Relinks after an edit, drops what nothing uses and re-verifies (the
/// transforms keep the graph acyclic, so verification only reorders).
static void finish(graph::Model &m, const std::vector<bool> &dead) {
  graph::Graph &g = m.graph;
  g.eraseNodes(dead);
  g.relink();
  m.eraseUnusedInitializers();
  SourceManager sm;
  DiagnosticEngine diags(sm);
  (void)graph::verifyGraph(g, m.path, diags);
}

const graph::Tensor *transforms::constantOf(const graph::Model &m, const Value *v) {
  return v && v->constant && (!v->isGraphInput || m.irVersion < 4) ? v->constant : nullptr;
}

std::string transforms::freshName(const graph::Graph &g, const std::string &base) {
  std::string name = base;
  for (unsigned k = 1; g.findValue(name); ++k)
    name = fmt::format("{}_{}", base, k);
  return name;
}

static int64_t opsetOf(const graph::Model &m, const Node &n) {
  return m.opsetVersion(n.domain).value_or(1);
}

//===----------------------------------------------------------------------===//
// Identity and Dropout
//===----------------------------------------------------------------------===//

static bool isInferenceIdentity(const graph::Model &m, const Node &n) {
  if (!n.domain.empty() || n.inputs.empty() || !n.inputs[0] || n.outputs.empty() || !n.outputs[0])
    return false;
  if (n.opType == "Identity")
    return n.outputs[0]->opaqueType.empty(); // sequences and optionals stay
  if (n.opType != "Dropout")
    return false;
  // The mask must be unused; training mode must be off.
  for (size_t k = 1; k < n.outputs.size(); ++k)
    if (n.outputs[k] && (!n.outputs[k]->uses.empty() || n.outputs[k]->isGraphOutput))
      return false;
  if (const Value *mode = n.input(2)) {
    const graph::Tensor *t = constantOf(m, mode);
    if (!t || t->numElements() != 1 || t->at(0) != 0)
      return false;
  }
  (void)m;
  return true;
}

unsigned transforms::removeIdentities(graph::Model &m) {
  graph::Graph &g = m.graph;
  std::vector<bool> dead(g.nodes().size(), false);
  unsigned removed = 0;
  for (Node *n : g.topologicalOrder()) {
    if (!isInferenceIdentity(m, *n))
      continue;
    Value *in = n->inputs[0], *out = n->outputs[0];
    if (out->isGraphOutput)
      continue; // the output's name is part of the model's interface
    for (const graph::Use &u : out->uses)
      u.node->inputs[u.index] = in;
    dead[n->id] = true;
    ++removed;
  }
  if (removed)
    finish(m, dead);
  return removed;
}

//===----------------------------------------------------------------------===//
// BatchNormalization folding
//===----------------------------------------------------------------------===//

namespace {
/// What folding one BatchNormalization into its producer needs.
struct Fold {
  Node *producer, *bn;
  std::vector<double> scale, shift; ///< y = x * scale[c] + shift[c]
};
} // namespace

static std::vector<double> values(const graph::Tensor &t) {
  std::vector<double> v(size_t(t.numElements()));
  for (int64_t i = 0; i < t.numElements(); ++i)
    v[size_t(i)] = t.at(i);
  return v;
}

/// The per-channel affine map of an inference BatchNormalization, or none.
static std::optional<Fold> batchNormAffine(const graph::Model &m, Node &bn) {
  if (bn.opType != "BatchNormalization" || !bn.domain.empty() || bn.inputs.size() < 5 ||
      bn.outputs.empty() || !bn.outputs[0])
    return std::nullopt;
  for (size_t k = 1; k < bn.outputs.size(); ++k) // running statistics: training
    if (bn.outputs[k])
      return std::nullopt;
  if (const graph::Attribute *a = bn.attr("training_mode"); a && a->i)
    return std::nullopt;
  if (const graph::Attribute *a = bn.attr("spatial"); a && a->i == 0)
    return std::nullopt; // per-activation statistics (opsets < 9)
  const graph::Tensor *s = constantOf(m, bn.input(1)), *b = constantOf(m, bn.input(2)),
                      *mean = constantOf(m, bn.input(3)), *var = constantOf(m, bn.input(4));
  if (!s || !b || !mean || !var)
    return std::nullopt;
  int64_t c = s->numElements();
  for (const graph::Tensor *t : {s, b, mean, var})
    if (t->dims.size() != 1 || t->numElements() != c || !graph::isFloatingPoint(t->elem))
      return std::nullopt;
  const graph::Attribute *epsA = bn.attr("epsilon");
  double eps = epsA ? epsA->f : 1e-5;
  Fold f{nullptr, &bn, {}, {}};
  std::vector<double> sv = values(*s), bv = values(*b), mv = values(*mean), vv = values(*var);
  for (int64_t k = 0; k < c; ++k) {
    double scale = sv[size_t(k)] / std::sqrt(vv[size_t(k)] + eps);
    f.scale.push_back(scale);
    f.shift.push_back(bv[size_t(k)] - mv[size_t(k)] * scale);
  }
  (void)m;
  return f;
}

/// Scales `w` (float) along `axis` (channel c of that axis by scale[c], with
/// `channelOf` mapping the axis index to the BN channel).
template <typename ChannelOf>
static std::unique_ptr<graph::Tensor>
scaled(const graph::Tensor &w, size_t axis, const std::vector<double> &scale, ChannelOf channelOf) {
  auto out = std::make_unique<graph::Tensor>(w);
  int64_t inner = 1;
  for (size_t d = axis + 1; d < w.dims.size(); ++d)
    inner *= w.dims[d];
  int64_t extent = w.dims[axis];
  float *p = reinterpret_cast<float *>(out->raw.data());
  for (int64_t i = 0; i < w.numElements(); ++i)
    p[i] = float(double(p[i]) * scale[size_t(channelOf((i / inner) % extent))]);
  return out;
}

static bool foldInto(graph::Model &m, Fold &f) {
  graph::Graph &g = m.graph;
  Node &p = *f.producer;
  const graph::Tensor *w = constantOf(m, p.input(1));
  const graph::Tensor *bias = p.input(2) ? constantOf(m, p.input(2)) : nullptr;
  if (!w || w->elem != graph::ElemType::Float || (p.input(2) && !bias) ||
      (bias && bias->elem != graph::ElemType::Float))
    return false;
  int64_t channels = int64_t(f.scale.size());
  // An Add or Sub changes the bias only: the kernel stays as it is.
  bool unit = std::all_of(f.scale.begin(), f.scale.end(), [](double s) { return s == 1.0; });
  std::unique_ptr<graph::Tensor> newW; // the scaled kernel, unless `unit`
  std::vector<double> newBias(size_t(channels), 0.0);
  if (p.opType == "Conv" || p.opType == "ConvTranspose") {
    if (w->dims.size() < 3)
      return false;
    if (bias && bias->numElements() != channels)
      return false;
    if (p.opType == "Conv") {
      if (w->dims[0] != channels)
        return false;
      if (!unit)
        newW = scaled(*w, 0, f.scale, [](int64_t c) { return c; });
    } else {
      const graph::Attribute *ga = p.attr("group");
      int64_t group = ga ? ga->i : 1, perGroupIn = w->dims[0] / std::max<int64_t>(group, 1);
      int64_t perGroupOut = w->dims[1];
      if (group < 1 || perGroupOut * group != channels || perGroupIn * group != w->dims[0])
        return false;
      // W is (C_in, C_out/group, k...): input channel c feeds group c / perGroupIn.
      if (!unit) {
        newW = std::make_unique<graph::Tensor>(*w);
        int64_t inner = 1;
        for (size_t d = 2; d < w->dims.size(); ++d)
          inner *= w->dims[d];
        float *q = reinterpret_cast<float *>(newW->raw.data());
        for (int64_t i = 0; i < w->numElements(); ++i) {
          int64_t c = i / (perGroupOut * inner), j = (i / inner) % perGroupOut;
          q[i] = float(double(q[i]) * f.scale[size_t((c / perGroupIn) * perGroupOut + j)]);
        }
      }
    }
    for (int64_t c = 0; c < channels; ++c)
      newBias[size_t(c)] = (bias ? bias->at(c) : 0.0) * f.scale[size_t(c)] + f.shift[size_t(c)];
  } else { // Gemm: BN over the columns of a 2-D output
    const graph::Attribute *tb = p.attr("transB"), *al = p.attr("alpha"), *be = p.attr("beta");
    bool transB = tb && tb->i;
    double beta = be ? be->f : 1.0;
    (void)al;
    if (w->dims.size() != 2 || w->dims[transB ? 0 : 1] != channels)
      return false;
    if (!unit)
      newW = scaled(*w, transB ? 0 : 1, f.scale, [](int64_t c) { return c; });
    if (bias) {
      int64_t n = bias->numElements();
      bool perColumn = n == channels &&
                       (bias->dims.size() == 1 || (bias->dims.size() == 2 && bias->dims[0] == 1));
      if (n != 1 && !perColumn)
        return false; // C varies along the rows: cannot become a bias vector
      for (int64_t c = 0; c < channels; ++c)
        newBias[size_t(c)] =
            beta * bias->at(perColumn ? c : 0) * f.scale[size_t(c)] + f.shift[size_t(c)];
    } else {
      for (int64_t c = 0; c < channels; ++c)
        newBias[size_t(c)] = f.shift[size_t(c)];
    }
    // The new C already holds beta.
    bool set = false;
    for (graph::Attribute &a : p.attributes)
      if (a.name == "beta") {
        a.f = 1.0;
        set = true;
      }
    if (!set && beta != 1.0)
      return false;
  }
  Value *wv = p.inputs[1];
  if (newW) {
    newW->name = freshName(g, w->name + "_folded");
    wv = g.addConstant(std::move(newW));
  }
  auto b = std::make_unique<graph::Tensor>();
  b->name = freshName(g, (bias ? bias->name : p.outputs[0]->name + "_bias") + "_folded");
  b->elem = graph::ElemType::Float;
  b->dims = {channels};
  b->raw.resize(size_t(channels) * 4);
  for (int64_t c = 0; c < channels; ++c) {
    float x = float(newBias[size_t(c)]);
    std::memcpy(b->raw.data() + c * 4, &x, 4);
  }
  Value *bv = g.addConstant(std::move(b));
  p.inputs[1] = wv;
  if (p.inputs.size() < 3)
    p.inputs.resize(3, nullptr);
  p.inputs[2] = bv;
  p.outputs[0] = f.bn->outputs[0]; // the producer now computes what BN did
  return true;
}

/// The output channels of a foldable producer (Conv, ConvTranspose, Gemm with a
/// constant float weight), with the rank of its output; none for other nodes.
static std::optional<std::pair<int64_t, size_t>> outputChannels(const graph::Model &m,
                                                                const Node &p) {
  if (!p.domain.empty() || p.outputs.empty())
    return std::nullopt;
  const graph::Tensor *w = constantOf(m, p.input(1));
  if (!w || w->dims.empty())
    return std::nullopt;
  if (p.opType == "Conv" && w->dims.size() >= 3)
    return std::make_pair(w->dims[0], w->dims.size());
  if (p.opType == "ConvTranspose" && w->dims.size() >= 3) {
    const graph::Attribute *ga = p.attr("group");
    return std::make_pair(w->dims[1] * (ga ? ga->i : 1), w->dims.size());
  }
  if (p.opType == "Gemm" && w->dims.size() == 2) {
    const graph::Attribute *tb = p.attr("transB");
    return std::make_pair(w->dims[tb && tb->i ? 0 : 1], size_t(2));
  }
  return std::nullopt;
}

/// The per-channel affine map of a Mul, Add, Sub or Div of `x` (its operand
/// `xIndex`) and a float constant that varies at most along the channel axis
/// (axis 1) of x's `rank`-dimensional value with `channels` channels: how
/// exporters spell a BatchNormalization (Paddle: Mul then Add), or a bias.
static std::optional<Fold> constantAffine(const graph::Model &m, Node &n, unsigned xIndex,
                                          int64_t channels, size_t rank) {
  bool mul = n.opType == "Mul", add = n.opType == "Add", sub = n.opType == "Sub",
       div = n.opType == "Div";
  if (!n.domain.empty() || !(mul || add || sub || div) || n.inputs.size() != 2 ||
      n.outputs.size() != 1 || ((sub || div) && xIndex != 0))
    return std::nullopt;
  const graph::Tensor *k = constantOf(m, n.input(1 - xIndex));
  if (!k || k->elem != graph::ElemType::Float || k->dims.size() > rank || k->numElements() < 1)
    return std::nullopt;
  // Right-aligned broadcasting: K's axis for the channel is rank-1 from the end.
  int64_t kc = 1;
  for (size_t d = 0; d < k->dims.size(); ++d) {
    size_t axis = rank - k->dims.size() + d;
    if (axis == 1)
      kc = k->dims[d];
    else if (k->dims[d] != 1)
      return std::nullopt;
  }
  if (kc != 1 && kc != channels)
    return std::nullopt;
  Fold f{nullptr, &n, std::vector<double>(size_t(channels), 1.0),
         std::vector<double>(size_t(channels), 0.0)};
  for (int64_t c = 0; c < channels; ++c) {
    double v = k->at(kc == 1 ? 0 : c);
    if (mul)
      f.scale[size_t(c)] = v;
    else if (div) {
      if (v == 0)
        return std::nullopt;
      f.scale[size_t(c)] = 1 / v;
    } else
      f.shift[size_t(c)] = sub ? -v : v;
  }
  return f;
}

unsigned transforms::foldBatchNorms(graph::Model &m, unsigned *arithmetic) {
  graph::Graph &g = m.graph;
  std::vector<bool> dead(g.nodes().size(), false);
  unsigned folded = 0, other = 0;
  for (Node *n : g.topologicalOrder()) {
    // The value the producer computes: BatchNormalization's input 0, or the
    // operand of an arithmetic node that is not constant.
    unsigned xIndex = 0;
    bool bn = n->opType == "BatchNormalization";
    if (!bn && n->inputs.size() == 2 && constantOf(m, n->input(0)))
      xIndex = 1;
    Value *x = xIndex < n->inputs.size() ? n->inputs[xIndex] : nullptr;
    Node *p = x ? x->producer : nullptr;
    if (!p || x->isGraphOutput || x->uses.size() != 1 || p->outputs[0] != x)
      continue;
    std::optional<std::pair<int64_t, size_t>> out = outputChannels(m, *p);
    if (!out)
      continue;
    std::optional<Fold> f =
        bn ? batchNormAffine(m, *n) : constantAffine(m, *n, xIndex, out->first, out->second);
    if (!f || int64_t(f->scale.size()) != out->first)
      continue;
    f->producer = p;
    if (foldInto(m, *f)) {
      dead[n->id] = true;
      ++(bn ? folded : other);
      // The producer computes the node's output now: a Mul then an Add fold in turn.
      p->outputs[0]->producer = p;
      p->outputs[0]->producerIndex = 0;
    }
  }
  if (folded || other)
    finish(m, dead);
  if (arithmetic)
    *arithmetic = other;
  return folded;
}

//===----------------------------------------------------------------------===//
// Constant folding and dead nodes
//===----------------------------------------------------------------------===//

/// Folded constants larger than this (and larger than their inputs) are
/// left to run time: Expand or Tile of a small constant would bloat the file.
constexpr size_t kMaxFoldBytes = size_t(16) << 20;

/// The dimensions a `Shape` node returns (its `start` and `end` applied) as
/// far as its input's type knows them; none when the rank is unknown.
static std::optional<std::vector<graph::Dim>> shapeDims(const graph::Model &m, const Node &shape) {
  const Value *x = shape.input(0);
  if (!x || !x->type.shape)
    return std::nullopt;
  std::vector<graph::Dim> dims = *x->type.shape;
  int64_t r = int64_t(dims.size()), start = 0, end = r;
  if (opsetOf(m, shape) >= 15) {
    graph::NodeAttrs attrs(shape, nullptr);
    start = attrs.getInt("start", 0);
    end = attrs.getInt("end", r);
    start = std::clamp<int64_t>(start < 0 ? start + r : start, 0, r);
    end = std::clamp<int64_t>(end < 0 ? end + r : end, start, r);
  }
  return std::vector<graph::Dim>(dims.begin() + start, dims.begin() + end);
}

/// The value of the `Shape` node producing `v` as its input's type knows it:
/// the known dimensions, and `kUnknownDim` for each of the others; none when
/// `v` is not a Shape's output or the rank is unknown.
constexpr int64_t kUnknownDim = std::numeric_limits<int64_t>::min();
static std::optional<Tensor> partialShape(const graph::Model &m, const Value *v) {
  const Node *shape = v ? v->producer : nullptr;
  if (!shape || shape->opType != "Shape" || !shape->inDefaultDomain())
    return std::nullopt;
  std::optional<std::vector<graph::Dim>> dims = shapeDims(m, *shape);
  if (!dims)
    return std::nullopt;
  Tensor t(graph::ElemType::Int64, Shape{int64_t(dims->size())});
  for (size_t k = 0; k < dims->size(); ++k)
    t.data<int64_t>()[k] = (*dims)[k].known() ? (*dims)[k].value : kUnknownDim;
  return t;
}

LogicalResult transforms::foldConstants(graph::Model &m, DiagnosticEngine &diags,
                                        CleanupReport &report) {
  graph::Graph &g = m.graph;
  const KernelRegistry &reg = KernelRegistry::get();
  std::vector<bool> dead(g.nodes().size(), false);
  bool changed = false;
  for (Node *n : g.topologicalOrder()) {
    KernelFn kernel = reg.find(n->domain, n->opType);
    if (!kernel || n->opType == "Constant" || n->hasSubgraphs() || n->outputs.empty())
      continue;
    bool allConstant = true;
    size_t inputBytes = 0;
    std::vector<Tensor> held;
    held.reserve(n->inputs.size());
    for (const Value *in : n->inputs) {
      const graph::Tensor *t = in ? constantOf(m, in) : nullptr;
      if (in && !t) {
        allConstant = false;
        break;
      }
      held.push_back(t ? Tensor::fromGraph(*t) : Tensor());
      inputBytes += t ? t->raw.size() : 0;
    }
    // Shape or Size of a value whose shape is known.
    bool staticShape = false;
    if (!allConstant && (n->opType == "Shape" || n->opType == "Size") && n->inDefaultDomain() &&
        n->input(0) && n->input(0)->type.shape) {
      staticShape = true;
      for (const graph::Dim &d : *n->input(0)->type.shape)
        staticShape &= d.known();
      if (staticShape) {
        Shape dims;
        for (const graph::Dim &d : *n->input(0)->type.shape)
          dims.push_back(d.value);
        held.assign(1, Tensor(n->input(0)->type.elem == graph::ElemType::Undefined
                                  ? graph::ElemType::Float
                                  : n->input(0)->type.elem,
                              dims));
      }
    }
    // Gather of a Shape whose gathered dimensions are known (the others need
    // not be): the batch-independent dimension an exporter's `If` tests.
    bool gatheredDims = false;
    if (!allConstant && !staticShape && n->opType == "Gather" && n->inDefaultDomain() &&
        constantOf(m, n->input(1)))
      if (std::optional<Tensor> dims = partialShape(m, n->input(0))) {
        gatheredDims = true;
        held.assign({*dims, Tensor::fromGraph(*constantOf(m, n->input(1)))});
      }
    if (!allConstant && !staticShape && !gatheredDims)
      continue;
    std::unique_ptr<NodeState> state;
    KernelContext ctx(*n, opsetOf(m, *n), state);
    for (Tensor &t : held)
      ctx.inputs.push_back(t.defined() ? &t : nullptr);
    ctx.outputs.resize(n->outputs.size());
    if (!kernel(ctx)) {
      diags.emitAt(graph::describeNode(m.path, *n), diag::err_run_node, ctx.error);
      return failure();
    }
    if (gatheredDims) {
      const Tensor &t = ctx.outputs[0];
      const int64_t *d = t.data<int64_t>();
      if (std::find(d, d + t.numel(), kUnknownDim) != d + t.numel())
        continue; // it gathers a dimension the type does not know
    }
    size_t outBytes = 0;
    for (const Tensor &t : ctx.outputs)
      outBytes += t.bytes();
    if (outBytes > kMaxFoldBytes && outBytes > inputBytes)
      continue;
    for (size_t k = 0; k < n->outputs.size(); ++k) {
      Value *out = n->outputs[k];
      if (!out || !ctx.outputs[k].defined())
        continue;
      out->producer = nullptr; // what relink() will find; read by later nodes now
      g.addConstant(std::make_unique<graph::Tensor>(ctx.outputs[k].toGraph(out->name)));
    }
    dead[n->id] = true;
    ++report.folded;
    changed = true;
  }
  // Nodes nothing uses, from the outputs backwards.
  const std::vector<Node *> &order = g.topologicalOrder();
  std::vector<unsigned> liveUses(g.values().size(), 0);
  for (Node *n : order)
    if (!dead[n->id])
      for (const Value *in : n->inputs)
        if (in)
          ++liveUses[in->id];
  for (size_t k = order.size(); k-- > 0;) {
    Node *n = order[k];
    if (dead[n->id])
      continue;
    bool used = false;
    for (const Value *out : n->outputs)
      used |= out && (liveUses[out->id] || out->isGraphOutput);
    if (used)
      continue;
    dead[n->id] = true;
    ++report.dead;
    changed = true;
    for (const Value *in : n->inputs)
      if (in)
        --liveUses[in->id];
  }
  if (changed)
    finish(m, dead);
  return success();
}

std::string CleanupReport::describe() const {
  std::string s;
  auto add = [&](unsigned n, const char *what) {
    if (n)
      s += (s.empty() ? "" : ", ") + std::to_string(n) + " " + what;
  };
  for (const auto &[name, value] : dims)
    s += fmt::format("{}dimension `{}` set to {}", s.empty() ? "" : ", ", name, value);
  for (const auto &[name, value] : fixed)
    s += fmt::format("{}input `{}` fixed to {}", s.empty() ? "" : ", ", name, value);
  add(batchNorms, batchNorms == 1 ? "BatchNormalization folded" : "BatchNormalizations folded");
  add(identities, "Identity/Dropout removed");
  add(folded, folded == 1 ? "node computed into a constant" : "nodes computed into constants");
  add(arithmetic, arithmetic == 1
                      ? "Mul/Add of a per-channel constant folded into the layer before it"
                      : "Mul/Add of per-channel constants folded into the layers before them");
  add(dead, dead == 1 ? "unused node removed" : "unused nodes removed");
  add(branches, branches == 1 ? "If replaced by the branch its constant condition takes"
                              : "Ifs replaced by the branches their constant conditions take");
  return s;
}

LogicalResult transforms::cleanupModel(graph::Model &m, DiagnosticEngine &diags,
                                       CleanupReport &report) {
  // A branch inlined may fold further (and hold an If of its own).
  for (unsigned before = ~0u; before != report.branches;) {
    before = report.branches;
    if (failed(foldConstants(m, diags, report)) || failed(inlineConstantIfs(m, diags, report)))
      return failure();
  }
  report.identities += removeIdentities(m);
  unsigned arithmetic = 0;
  report.batchNorms += foldBatchNorms(m, &arithmetic);
  report.arithmetic += arithmetic;
  return success();
}
