//===- QDQ.cpp - Rewriting a model into QDQ form ----------------------------===//
//
// Two phases: check the whole spec (every problem reported, the model left
// untouched on an error); then rewire node inputs, append the new
// initializers and Q/DQ nodes, relink, drop what nothing reads any more and
// re-verify (the verifier's topological order, which the writer follows,
// puts each new node before its readers).
//
//===----------------------------------------------------------------------===//
#include "quant/ptq/qdq/QDQ.h"
#include "quant/ptq/qdq/MatMulNBits.h"
#include "quant/ptq/qdq/Mx.h"

#include "ir/graph/NodeAttrs.h"
#include "ir/graph/OnnxIO.h"
#include "quant/core/format/TwoLevel.h"
#include "support/MiniFloat.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <utility>

using namespace tpcc;
using namespace tpcc::quant;
using graph::ElemType;
using graph::Node;
using graph::Tensor;
using graph::Value;

namespace {

/// The integer type holding the grids' integers (NumberFormat::storageOf).
ElemType containerOf(const std::vector<QuantGrid> &grids) { return NumberFormat::storageOf(grids); }
int64_t containerMin(ElemType t) {
  return t == ElemType::Int8 ? -128 : t == ElemType::Int16 ? -32768 : t == ElemType::Int4 ? -8 : 0;
}
int64_t containerMax(ElemType t) {
  bool wide = t == ElemType::Int16 || t == ElemType::UInt16;
  return containerMin(t) + (wide ? 65535 : graph::isFourBit(t) ? 15 : 255);
}

/// 16-bit integers need ONNX Runtime's com.microsoft QuantizeLinear /
/// DequantizeLinear: ai.onnx has them from opset 21, which libonnx 1.12 (and
/// so the checker every output passes) does not know.
const char *qdqDomain(ElemType t) {
  return t == ElemType::Int16 || t == ElemType::UInt16 ? "com.microsoft" : "";
}

/// The FP8 code that stores `x` on floating-point grid `g` in type `t`
/// (an FP4 value is stored as the E4M3 code of the same value).
uint8_t storedCode(ElemType t, const QuantGrid &g, double x) {
  float e = float(g.quantize(x) / g.scale); // a value of g's element
  return floatToMiniFloat(t == ElemType::Float8E5M2 ? MiniFloat::E5M2 : MiniFloat::E4M3FN, e);
}

/// An INT attribute, or a FLOAT one when `f` is given.
graph::Attribute attribute(const char *name, int64_t i, float f = NAN) {
  graph::Attribute a;
  a.name = name;
  a.type = std::isnan(f) ? ir::OnnxAttrType::Int : ir::OnnxAttrType::Float;
  a.i = i;
  a.f = std::isnan(f) ? 0 : f;
  return a;
}

std::unique_ptr<Tensor> newTensor(ElemType e, std::vector<int64_t> dims) {
  auto t = std::make_unique<Tensor>();
  t->elem = e;
  t->dims = std::move(dims);
  t->raw.resize(size_t(t->numElements()) * graph::elemSize(e));
  return t;
}

/// Stores `x` as element `i` of `t` (an integer container, int32 or float).
void put(Tensor &t, int64_t i, double x) {
  auto as = [&](auto v) { std::memcpy(t.raw.data() + size_t(i) * sizeof v, &v, sizeof v); };
  switch (t.elem) {
  case ElemType::Int8:
  case ElemType::Int4: // a byte each in memory
    return as(int8_t(x));
  case ElemType::UInt8:
  case ElemType::UInt4:
  case ElemType::Float8E4M3FN: // FP8: `x` is the code
  case ElemType::Float8E5M2:
    return as(uint8_t(x));
  case ElemType::Int16:
    return as(int16_t(x));
  case ElemType::UInt16:
    return as(uint16_t(x));
  case ElemType::Int32:
    return as(int32_t(x));
  default:
    return as(float(x));
  }
}

/// Blocked DequantizeLinear and the 4-bit types.
constexpr int64_t kBlockedOpset = 21;

class Rewriter {
public:
  Rewriter(graph::Model &m, const QDQSpec &spec, DiagnosticEngine &diags)
      : m(m), g(m.graph), spec(spec), diags(diags), where(m.path.empty() ? "<model>" : m.path) {}
  bool check();
  bool apply();

private:
  template <typename... Args> bool fail(const std::string &at, diag::Kind k, const Args &...a) {
    diags.emitAt(at, k, a...);
    return false;
  }
  Node *nodeNamed(const std::string &n) const {
    return nodesByName.count(n) ? nodesByName.at(n) : nullptr;
  }
  const WeightQDQ *weightOf(const std::string &node, unsigned input) const {
    auto it = weightIndex.find({node, input});
    return it == weightIndex.end() ? nullptr : &spec.weights[it->second];
  }
  bool checkInput(const std::string &node, unsigned index, const char *role);
  bool checkGrid(const std::string &name, const QuantGrid &q, const char *what, ElemType t);
  bool checkWeight(const WeightQDQ &w);
  bool checkChannels(const WeightQDQ &w, const Tensor &t, const std::string &at);
  bool checkBlocked(const WeightQDQ &w, const Tensor &t, const std::string &at);
  bool checkTwoLevel(const WeightQDQ &w, const Tensor &t, const std::string &at);
  bool checkRaise(const std::string &what);
  bool checkBias(const BiasQDQ &b);
  bool checkActivation(const ActivationQDQ &a);
  bool checkMxActivation(const MxActivationQDQ &a);

  std::string freshValue(const std::string &base) const;
  std::string freshNode(const std::string &base);
  Value *constant(std::unique_ptr<Tensor> t, const std::string &base);
  Value *typed(const std::string &base, ElemType e, const Value &like);
  Node *addNode(const char *op, const std::string &name, std::vector<Value *> ins, Value *out,
                const char *domain = "");
  void storeQuantized(Node *n, unsigned index, std::unique_ptr<Tensor> q,
                      const std::vector<double> &scales, const std::vector<int64_t> &zps,
                      int64_t axis, int64_t block = 0, std::vector<int64_t> scaleDims = {},
                      const TwoLevelScales *two = nullptr);
  Value *twoLevelScale(const std::string &base, const TwoLevelScales &two,
                       const std::vector<int64_t> &dims);
  void rewriteWeight(const WeightQDQ &w);
  void rewriteBias(const BiasQDQ &b);
  Value *floatSource(Value *v);
  void rewriteActivation(const ActivationQDQ &a);
  void rewriteMxActivation(const MxActivationQDQ &a);
  bool finish();

  graph::Model &m;
  graph::Graph &g;
  const QDQSpec &spec;
  DiagnosticEngine &diags;
  std::string where;
  std::map<std::string, Node *> nodesByName;
  std::map<std::pair<std::string, unsigned>, size_t> weightIndex; ///< (node, input) -> weights[]
  std::map<std::string, const QuantGrid *> activationGrid;
  std::set<std::string> mxNames; ///< the MX activations
  bool saidPerAxis = false;
  bool raiseChecked = false; ///< blocked weights: the model is raised to kBlockedOpset
  /// A constant stored quantized: the same source stored alike (same
  /// integers, scales, zero points, axis) shares its DequantizeLinear.
  struct Stored {
    const Value *source;
    int64_t axis, block;
    ElemType elem;
    std::string q, s, zp; ///< raw data
    Node *dq;
  };
  std::vector<Stored> stored;
  std::set<const Node *> sourceConstants; ///< Constant nodes whose outputs were replaced
};

} // namespace

// ---- Checking ------------------------------------------------------------

bool Rewriter::checkInput(const std::string &node, unsigned index, const char *role) {
  Node *n = nodeNamed(node);
  if (!n)
    return fail(where, diag::err_qdq_unknown, "node", node);
  std::string at = graph::describeNode(where, *n);
  Value *v = n->input(index);
  if (!v || !v->constant)
    return v ? fail(at, diag::err_qdq_spec,
                    fmt::format("input {} `{}` of node `{}` is not a constant; only constants "
                                "are stored quantized",
                                index, v->name, node))
             : fail(at, diag::err_qdq_spec,
                    fmt::format("node `{}` has no input {} to quantize", node, index));
  if (v->constant->elem != ElemType::Float)
    return fail(at, diag::err_qdq_spec,
                fmt::format("{} `{}` is {}; only float tensors are quantized", role, v->name,
                            graph::toString(v->constant->elem)));
  return true;
}

bool Rewriter::checkGrid(const std::string &name, const QuantGrid &q, const char *what,
                         ElemType t) {
  if (q.floating()) {
    if (!(q.scale > 0) || !std::isfinite(float(q.scale)) || !(float(q.scale) > 0))
      return fail(where, diag::err_qdq_grid, name,
                  fmt::format("the scale {} is not a positive finite float32", q.scale));
    if (raiseChecked || m.opsetVersion("").value_or(1) >= kBlockedOpset)
      return true; // (before formatting the message: a weight may have a grid per block)
    return checkRaise(fmt::format("{} `{}` ({} elements)", what, name, graph::toString(t)));
  }
  if (integerBits(q) > 16)
    return fail(where, diag::err_qdq_wide_grid, name, integerBits(q), what);
  float s = float(q.scale);
  if (!(q.scale > 0) || !std::isfinite(s) || !(s > 0))
    return fail(where, diag::err_qdq_grid, name,
                fmt::format("the scale {} is not a positive finite float32", q.scale));
  if (q.qmin > q.qmax || q.qmin < containerMin(t) || q.qmax > containerMax(t) ||
      q.zeroPoint < containerMin(t) || q.zeroPoint > containerMax(t))
    return fail(where, diag::err_qdq_grid, name,
                fmt::format("the integers [{}, {}] and zero point {} do not fit {}", q.qmin, q.qmax,
                            q.zeroPoint, graph::toString(t)));
  return true;
}

bool Rewriter::checkWeight(const WeightQDQ &w) {
  if (!checkInput(w.node, w.inputIndex, "weight"))
    return false;
  Node *n = nodeNamed(w.node);
  const Tensor &t = *n->inputs[w.inputIndex]->constant;
  std::string at = graph::describeNode(where, *n);
  size_t c = w.grids.size();
  if (c == 0)
    return fail(at, diag::err_qdq_weight_grids, t.name, w.node, "no grid is given");
  if (w.block > 0 ? !checkBlocked(w, t, at) : !checkChannels(w, t, at))
    return false;
  ElemType storage = w.storage(); // once: it reads every grid
  for (const QuantGrid &q : w.grids)
    if (!checkGrid(t.name, q, "weights", storage))
      return false;
  if (w.block > 0)
    return checkRaise(fmt::format("blocked weights (`{}` of `{}`)", t.name, w.node));
  if (c > 1 && m.opsetVersion("").value_or(1) < 13 && !std::exchange(saidPerAxis, true))
    return fail(where, diag::err_qdq_spec,
                fmt::format("per-axis DequantizeLinear (weight `{}` of `{}`) needs ai.onnx opset "
                            "13, but the model imports opset {}; convert the model first",
                            t.name, w.node, m.opsetVersion("").value_or(1)));
  return true;
}

/// One grid, or one per channel along the weight's axis.
bool Rewriter::checkChannels(const WeightQDQ &w, const Tensor &t, const std::string &at) {
  size_t c = w.grids.size();
  if (c > 1 && (w.axis < 0 || w.axis >= int64_t(t.dims.size())))
    return fail(at, diag::err_qdq_weight_grids, t.name, w.node,
                fmt::format("{} grids need a channel axis, but the axis is {} and the weight "
                            "has rank {}",
                            c, w.axis, t.dims.size()));
  if (c > 1 && t.dims[size_t(w.axis)] != int64_t(c))
    return fail(at, diag::err_qdq_weight_grids, t.name, w.node,
                fmt::format("{} grids are given for the {} channels along axis {}", c,
                            t.dims[size_t(w.axis)], w.axis));
  return true;
}

/// One grid per block, in the order of ONNX opset 21's blocked scale (the
/// model is raised to opset 21 when it imports less).
bool Rewriter::checkBlocked(const WeightQDQ &w, const Tensor &t, const std::string &at) {
  if (w.blockAxis < 0 || w.blockAxis >= int64_t(t.dims.size()))
    return fail(at, diag::err_qdq_weight_grids, t.name, w.node,
                fmt::format("blocks run along axis {}, but the weight has rank {}", w.blockAxis,
                            t.dims.size()));
  int64_t want = 1;
  for (int64_t d : w.blockShape(t.dims))
    want *= d;
  if (int64_t(w.grids.size()) != want)
    return fail(at, diag::err_qdq_weight_grids, t.name, w.node,
                fmt::format("{} grids are given for the {} blocks of {} along axis {}",
                            w.grids.size(), want, w.block, w.blockAxis));
  return !w.twoLevel || checkTwoLevel(w, t, at);
}

/// Two-level scales: a factor of the format per block, a group scale per
/// index along the groups' axis (or one), and grids on their products.
bool Rewriter::checkTwoLevel(const WeightQDQ &w, const Tensor &t, const std::string &at) {
  const TwoLevelScales &two = *w.twoLevel;
  std::vector<int64_t> shape = w.blockShape(t.dims);
  auto bad = [&](std::string why) {
    return fail(at, diag::err_qdq_weight_grids, t.name, w.node, "two-level scales: " + why);
  };
  if (!isFactorFormat(two.factor))
    return bad(fmt::format("`{}` factors are not stored", ir::toString(two.factor)));
  if (two.factors.size() != w.grids.size())
    return bad(fmt::format("{} factors for {} blocks", two.factors.size(), w.grids.size()));
  if (two.axis >= int64_t(shape.size()) ||
      two.groupScales.size() != size_t(two.axis >= 0 ? shape[size_t(two.axis)] : 1))
    return bad(fmt::format("{} group scales along axis {}", two.groupScales.size(), two.axis));
  for (size_t b = 0; b < two.factors.size(); ++b) {
    double f = two.factors[b];
    double group = two.groupScales[two.groupOf(b, shape)];
    bool fp8 = two.factor == ir::ScaleFormat::Fp8E4M3;
    bool representable = fp8 ? double(roundToMiniFloat(MiniFloat::E4M3FN, float(f))) == f && f > 0
                             : f == std::nearbyint(f) && f >= 0 && f <= factorMax(two.factor);
    if (!representable)
      return bad(
          fmt::format("factor {} of block {} is not a {} value", f, b, ir::toString(two.factor)));
    if (w.grids[b].scale != factorScale(f, group))
      return bad(fmt::format("block {} has scale {}, not its factor {} times its group's scale {}",
                             b, w.grids[b].scale, f, group));
  }
  return true;
}

/// Blocks, 4-bit and FP8 types need opset 21 (FP8 from 19; one version for
/// all): the model will be raised to it when it imports less.
bool Rewriter::checkRaise(const std::string &what) {
  if (m.opsetVersion("").value_or(1) >= kBlockedOpset || raiseChecked)
    return true;
  raiseChecked = true;
  std::string why;
  if (!graph::canRaiseOpset(m, kBlockedOpset, why))
    return fail(where, diag::err_qdq_spec,
                fmt::format("{} need ai.onnx opset {}, and the model cannot be raised to it: {}",
                            what, kBlockedOpset, why));
  return true;
}

bool Rewriter::checkBias(const BiasQDQ &b) {
  if (!checkInput(b.node, b.inputIndex, "bias"))
    return false;
  Node *n = nodeNamed(b.node);
  const Tensor &t = *n->inputs[b.inputIndex]->constant;
  auto bad = [&](std::string why) {
    return fail(graph::describeNode(where, *n), diag::err_qdq_spec,
                fmt::format("bias input {} of node `{}`: {}", b.inputIndex, b.node, why));
  };
  if (!activationGrid.count(b.inputActivation))
    return bad(
        fmt::format("its input scale comes from `{}`, which is not quantized", b.inputActivation));
  const WeightQDQ *w = weightOf(b.weightNode, b.weightInput);
  if (!w)
    return bad(fmt::format("its weight scales come from input {} of `{}`, which is not "
                           "quantized",
                           b.weightInput, b.weightNode));
  if (w->block > 0)
    return bad("its weight is stored in blocks, with no scale per channel");
  if (w->grids.front().floating() || activationGrid[b.inputActivation]->floating())
    return bad("its input or weight holds floating-point elements, with no integer accumulator");
  if (w->grids.size() > 1) {
    // One scale per channel: the bias must have exactly one axis of C, or
    // of C times the groups of a grouped ConvTranspose (whose groups share
    // the per-channel grids of the kernel's axis 1).
    int64_t c = int64_t(w->grids.size()), k = t.numElements(), found = 0;
    for (int64_t d : t.dims)
      found += d == k ? 1 : d == 1 ? 0 : 2;
    const Node *wn = nodeNamed(b.weightNode);
    bool grouped = wn && wn->opType == "ConvTranspose" && w->axis == 1 && k % c == 0 &&
                   graph::attrsOf(m, *wn).getInt("group", 1) == k / c;
    if ((k != c && !grouped) || found != 1)
      return bad(fmt::format("`{}` has shape [{}], but the weight has {} channels", t.name,
                             fmt::join(t.dims, ", "), c));
  }
  float in = float(activationGrid[b.inputActivation]->scale);
  for (const QuantGrid &q : w->grids)
    if (!(in * float(q.scale) > 0))
      return bad("the product of the input and weight scales underflows float32");
  return true;
}

bool Rewriter::checkActivation(const ActivationQDQ &a) {
  Value *v = g.findValue(a.value);
  if (!v || !(v->producer || v->isGraphInput || v->constant))
    return fail(where, diag::err_qdq_unknown, "tensor", a.value);
  if (!activationGrid.emplace(a.value, &a.grid).second)
    return fail(where, diag::err_qdq_duplicate, fmt::format("`{}`", a.value));
  if (v->hasTypeInfo && v->type.elem != ElemType::Float)
    return fail(
        where, diag::err_qdq_spec,
        fmt::format("activation `{}` is {}; only float tensors are quantized", a.value,
                    v->opaqueType.empty() ? graph::toString(v->type.elem) : "not a tensor"));
  if (!a.grid.lut.empty())
    return fail(where, diag::err_qdq_grid, a.value,
                "QuantizeLinear cannot restrict an activation to a LUT table");
  return checkGrid(a.value, a.grid, "activations", containerOf({a.grid}));
}

bool Rewriter::checkMxActivation(const MxActivationQDQ &a) {
  Value *v = g.findValue(a.value);
  if (!v || !(v->producer || v->isGraphInput))
    return fail(where, diag::err_qdq_unknown, "tensor", a.value);
  if (activationGrid.count(a.value) || !mxNames.insert(a.value).second)
    return fail(where, diag::err_qdq_duplicate, fmt::format("`{}`", a.value));
  if (v->hasTypeInfo && v->type.elem != ElemType::Float)
    return fail(where, diag::err_qdq_spec,
                fmt::format("MX activation `{}` is {}; only float tensors are quantized", a.value,
                            graph::toString(v->type.elem)));
  if (std::string why = checkMx(a.format); !why.empty())
    return fail(where, diag::err_qdq_spec, fmt::format("activation `{}`: {}", a.value, why));
  return checkRaise("MX activations (Cast to FP8 with `saturate`, ReduceMax's axes input)");
}

bool Rewriter::check() {
  for (const auto &n : g.nodes())
    nodesByName.emplace(n->displayName(), n.get());
  int64_t opset = m.opsetVersion("").value_or(1);
  if (opset < 10)
    return fail(where, diag::err_qdq_spec,
                fmt::format("QuantizeLinear/DequantizeLinear needs ai.onnx opset 10, but the model "
                            "imports opset {}; convert the model first",
                            opset));
  bool ok = true;
  for (size_t k = 0; k < spec.weights.size(); ++k) {
    const WeightQDQ &w = spec.weights[k];
    if (!weightIndex.emplace(std::make_pair(w.node, w.inputIndex), k).second)
      ok = fail(where, diag::err_qdq_duplicate,
                fmt::format("input {} of node `{}`", w.inputIndex, w.node));
    else
      ok &= checkWeight(w);
  }
  for (const ActivationQDQ &a : spec.activations)
    ok &= checkActivation(a);
  for (const MxActivationQDQ &a : spec.mxActivations)
    ok &= checkMxActivation(a);
  std::set<std::pair<std::string, unsigned>> biases;
  for (const BiasQDQ &b : spec.biases) {
    // Twice as a bias, or as a bias and as a weight.
    if (!biases.insert({b.node, b.inputIndex}).second || weightIndex.count({b.node, b.inputIndex}))
      ok = fail(where, diag::err_qdq_duplicate,
                fmt::format("input {} of node `{}`", b.inputIndex, b.node));
    else
      ok &= checkBias(b);
  }
  return ok;
}

// ---- Rewriting -----------------------------------------------------------

std::string Rewriter::freshValue(const std::string &base) const {
  std::string name = base;
  for (unsigned k = 1; g.findValue(name); ++k)
    name = fmt::format("{}_{}", base, k);
  return name;
}

std::string Rewriter::freshNode(const std::string &base) {
  std::string name = base;
  for (unsigned k = 1; nodesByName.count(name); ++k)
    name = fmt::format("{}_{}", base, k);
  nodesByName.emplace(name, nullptr); // taken
  return name;
}

Value *Rewriter::constant(std::unique_ptr<Tensor> t, const std::string &base) {
  t->name = freshValue(base);
  Value *v = g.addConstant(std::move(t));
  if (m.irVersion < 4) // initializers are graph inputs before IR version 4
    g.addInput(v);
  return v;
}

/// A new value of type `e` with the shape of `like` (when known).
Value *Rewriter::typed(const std::string &base, ElemType e, const Value &like) {
  Value *v = g.getOrCreateValue(freshValue(base));
  v->type.elem = e;
  if (like.hasTypeInfo)
    v->type.shape = like.type.shape;
  v->hasTypeInfo = true;
  return v;
}

Node *Rewriter::addNode(const char *op, const std::string &name, std::vector<Value *> ins,
                        Value *out, const char *domain) {
  auto n = std::make_unique<Node>();
  n->name = name;
  n->opType = op;
  n->domain = domain;
  if (*domain && !m.opsetVersion(domain))
    m.opsets.push_back({domain, 1});
  n->inputs = std::move(ins);
  n->outputs = {out};
  return g.addNode(std::move(n));
}

/// Input `index` of `n` becomes DequantizeLinear(q, scales, zps[, axis]) of new
/// initializers named after the original; shared when it was stored alike before.
void Rewriter::storeQuantized(Node *n, unsigned index, std::unique_ptr<Tensor> q,
                              const std::vector<double> &scales, const std::vector<int64_t> &zps,
                              int64_t axis, int64_t block, std::vector<int64_t> scaleDims,
                              const TwoLevelScales *two) {
  auto dims = block > 0   ? std::move(scaleDims)
              : axis >= 0 ? std::vector<int64_t>{int64_t(scales.size())}
                          : std::vector<int64_t>{};
  auto s = newTensor(ElemType::Float, dims), zp = newTensor(q->elem, dims);
  for (size_t c = 0; c < scales.size(); ++c) {
    put(*s, int64_t(c), scales[c]);
    put(*zp, int64_t(c), double(zps[c]));
  }
  Value *src = n->inputs[index];
  for (Stored &d : stored)
    if (d.source == src && d.axis == axis && d.block == block && d.elem == q->elem &&
        d.q == q->raw && d.s == s->raw && d.zp == zp->raw) {
      n->inputs[index] = d.dq->outputs[0];
      return;
    }
  if (src->producer)
    sourceConstants.insert(src->producer);
  const std::string &base = src->constant->name;
  Stored d{src, axis, block, q->elem, q->raw, s->raw, zp->raw, nullptr};
  Value *qv = constant(std::move(q), base + "_quantized");
  Value *out = typed(base + "_DequantizeLinear_Output", ElemType::Float, *qv);
  ElemType elem = qv->constant->elem;
  Value *scale = two ? twoLevelScale(base, *two, dims) : constant(std::move(s), base + "_scale");
  d.dq = addNode("DequantizeLinear", freshNode(base + "_DequantizeLinear"),
                 {qv, scale, constant(std::move(zp), base + "_zero_point")}, out, qdqDomain(elem));
  if (axis >= 0)
    d.dq->attributes.push_back(attribute("axis", axis));
  if (block > 0)
    d.dq->attributes.push_back(attribute("block_size", block));
  stored.push_back(std::move(d));
  n->inputs[index] = out;
}

/// A blocked weight's scale of shape `dims` from two-level scales: a
/// DequantizeLinear of the factors (stored as uint8, the type ONNX Runtime's
/// QNN provider reads as LPBQ, or as FP8 E4M3) by the group scales, per axis
/// or per tensor; it computes float32(factor x group scale), the grids'
/// scales.
Value *Rewriter::twoLevelScale(const std::string &base, const TwoLevelScales &two,
                               const std::vector<int64_t> &dims) {
  bool fp8 = two.factor == ir::ScaleFormat::Fp8E4M3;
  ElemType elem = fp8 ? ElemType::Float8E4M3FN : ElemType::UInt8;
  auto f = newTensor(elem, dims);
  for (size_t b = 0; b < two.factors.size(); ++b)
    put(*f, int64_t(b),
        fp8 ? double(floatToMiniFloat(MiniFloat::E4M3FN, float(two.factors[b]))) : two.factors[b]);
  std::vector<int64_t> groupDims;
  if (two.axis >= 0)
    groupDims = {int64_t(two.groupScales.size())};
  auto s = newTensor(ElemType::Float, groupDims), zp = newTensor(elem, groupDims);
  for (size_t c = 0; c < two.groupScales.size(); ++c)
    put(*s, int64_t(c), two.groupScales[c]);
  Value *fv = constant(std::move(f), base + "_scale_factors");
  Value *out = typed(base + "_scale", ElemType::Float, *fv);
  Node *dq = addNode("DequantizeLinear", freshNode(base + "_scale_DequantizeLinear"),
                     {fv, constant(std::move(s), base + "_group_scale"),
                      constant(std::move(zp), base + "_scale_zero_point")},
                     out, qdqDomain(elem));
  if (two.axis >= 0)
    dq->attributes.push_back(attribute("axis", two.axis));
  return out;
}

void Rewriter::rewriteWeight(const WeightQDQ &w) {
  Node *n = nodeNamed(w.node);
  const Tensor &t = *n->inputs[w.inputIndex]->constant;
  int64_t axis = w.blocked() ? w.blockAxis : w.grids.size() > 1 ? w.axis : -1;
  GroupLayout groups = w.layout(t.dims);
  auto q = newTensor(w.storage(), t.dims);
  for (int64_t i = 0; i < t.numElements(); ++i) {
    const QuantGrid &g = w.grids[groups.groupOf(i)];
    put(*q, i, g.floating() ? double(storedCode(q->elem, g, t.at(i))) : double(g.toInt(t.at(i))));
  }
  std::vector<double> scales;
  std::vector<int64_t> zps;
  for (const QuantGrid &g : w.grids) {
    scales.push_back(g.scale);
    zps.push_back(g.zeroPoint);
  }
  storeQuantized(n, w.inputIndex, std::move(q), scales, zps, axis, w.blocked() ? w.block : 0,
                 w.blockShape(t.dims), w.twoLevel ? &*w.twoLevel : nullptr);
}

void Rewriter::rewriteBias(const BiasQDQ &b) {
  Node *n = nodeNamed(b.node);
  const Tensor &t = *n->inputs[b.inputIndex]->constant;
  const WeightQDQ &w = *weightOf(b.weightNode, b.weightInput);
  float sIn = float(activationGrid[b.inputActivation]->scale);
  // In float32, as ONNX Runtime computes it; one per bias channel (a
  // grouped ConvTranspose's groups repeat the kernel's grids).
  std::vector<double> scales;
  size_t channels0 = w.grids.size() > 1 ? size_t(t.numElements()) : 1;
  for (size_t i = 0; i < channels0; ++i)
    scales.push_back(sIn * float(w.grids[i % w.grids.size()].scale));
  int64_t axis = -1, channels = int64_t(scales.size());
  for (size_t d = 0; channels > 1 && d < t.dims.size(); ++d)
    if (t.dims[d] == channels)
      axis = int64_t(d);
  auto q = newTensor(ElemType::Int32, t.dims);
  for (int64_t i = 0; i < t.numElements(); ++i)
    put(*q, i, int32Code(t.at(i), scales[size_t(axis < 0 ? 0 : i)]));
  storeQuantized(n, b.inputIndex, std::move(q), scales, std::vector<int64_t>(scales.size(), 0),
                 axis);
}

/// The value `v`'s producer writes for a quantizer to read: `v` itself, or
/// for a graph output (which keeps its name, written by the quantizer's
/// last node) a new `v_float`.
Value *Rewriter::floatSource(Value *v) {
  if (!v->isGraphOutput || !v->producer)
    return v;
  Value *in = typed(v->name + "_float", ElemType::Float, *v);
  v->producer->outputs[v->producerIndex] = in;
  return in;
}

void Rewriter::rewriteActivation(const ActivationQDQ &a) {
  Value *v = g.findValue(a.value);
  const QuantGrid &q = a.grid;
  ElemType ct = containerOf({q});
  std::vector<graph::Use> uses = v->uses;
  auto scalar = [&](ElemType e, double x, const char *suffix) {
    auto t = newTensor(e, {});
    put(*t, 0, x);
    return constant(std::move(t), v->name + suffix);
  };
  Value *s = scalar(ElemType::Float, q.scale, "_scale");
  Value *zp = scalar(ct, double(q.zeroPoint), "_zero_point");
  // The DequantizeLinear writes `v` for the graph and the readers alike
  // when `v` is a graph output.
  Value *in = floatSource(v), *out = v;
  bool renamed = in != v;
  if (!renamed)
    out = typed(v->name + "_DequantizeLinear_Output", ElemType::Float, *v);
  if (spec.clipNarrowActivations && !q.floating() &&
      (q.qmin > containerMin(ct) || q.qmax < containerMax(ct))) {
    float s32 = float(q.scale);
    float lo = s32 * float(q.qmin - q.zeroPoint), hi = s32 * float(q.qmax - q.zeroPoint);
    Value *clipped = typed(v->name + "_Clip_Output", ElemType::Float, *v);
    Node *clip = addNode("Clip", freshNode(v->name + "_Clip"), {in}, clipped);
    if (m.opsetVersion("").value_or(1) >= 11) {
      clip->inputs.push_back(scalar(ElemType::Float, lo, "_clip_min"));
      clip->inputs.push_back(scalar(ElemType::Float, hi, "_clip_max"));
    } else { // Clip-6: bounds are attributes
      clip->attributes = {attribute("min", 0, lo), attribute("max", 0, hi)};
    }
    in = clipped;
  }
  Value *qv = typed(v->name + "_QuantizeLinear_Output", ct, *v);
  addNode("QuantizeLinear", freshNode(v->name + "_QuantizeLinear"), {in, s, zp}, qv, qdqDomain(ct));
  addNode("DequantizeLinear", freshNode(v->name + "_DequantizeLinear"), {qv, s, zp}, out,
          qdqDomain(ct));
  if (!renamed)
    for (const graph::Use &u : uses)
      u.node->inputs[u.index] = out;
}

/// The MX subgraph after `a`'s tensor (Mx.h); its readers read its output. A
/// graph output keeps its name, as for QuantizeLinear/DequantizeLinear.
void Rewriter::rewriteMxActivation(const MxActivationQDQ &a) {
  Value *v = g.findValue(a.value);
  std::vector<graph::Use> uses = v->uses;
  Value *in = floatSource(v);
  GraphSink sink;
  sink.constant = [&](std::unique_ptr<Tensor> t, const std::string &base) {
    return constant(std::move(t), base);
  };
  sink.value = [&](const std::string &base, ElemType e) {
    Value *x = g.getOrCreateValue(freshValue(base));
    x->type.elem = e;
    x->hasTypeInfo = true;
    return x;
  };
  Node *last = nullptr;
  sink.node = [&](const char *op, const std::string &base, std::vector<Value *> ins, Value *out,
                  std::vector<graph::Attribute> attrs) {
    last = addNode(op, freshNode(base), std::move(ins), out);
    last->attributes = std::move(attrs);
    return last;
  };
  Value *out = writeMx(sink, in, a.format, v->name + "_mx");
  out->type = v->type; // x's shape and type
  if (in != v) {
    last->outputs[0] = v; // the last node writes the graph output itself
    return;
  }
  for (const graph::Use &u : uses)
    u.node->inputs[u.index] = out;
}

/// Drops the Constant nodes and initializers nothing reads any more; the
/// verifier sorts the appended nodes in.
bool Rewriter::finish() {
  g.relink();
  std::vector<bool> dead(g.nodes().size(), false);
  for (const Node *n : sourceConstants)
    dead[n->id] = std::all_of(n->outputs.begin(), n->outputs.end(), [](const Value *out) {
      return !out || (out->uses.empty() && !out->isGraphOutput);
    });
  g.eraseNodes(dead);
  g.relink();
  m.eraseUnusedInitializers();
  g.relink(); // the removed initializers' values drop out of value_info
  return succeeded(graph::verifyGraph(g, where, diags));
}

bool Rewriter::apply() {
  std::string why; // checkBlocked has made sure it can
  if (raiseChecked && !graph::raiseOpset(m, kBlockedOpset, why))
    return fail(where, diag::err_qdq_spec, why);
  for (const BiasQDQ &b : spec.biases)
    rewriteBias(b);
  for (const WeightQDQ &w : spec.weights)
    rewriteWeight(w);
  g.relink();
  for (const ActivationQDQ &a : spec.activations)
    rewriteActivation(a);
  for (const MxActivationQDQ &a : spec.mxActivations)
    rewriteMxActivation(a);
  return finish();
}

LogicalResult quant::rewriteToQDQ(graph::Model &m, const QDQSpec &spec, DiagnosticEngine &diags) {
  Rewriter r(m, spec, diags);
  bool none = spec.activations.empty() && spec.weights.empty() && spec.biases.empty();
  if (!none && !(r.check() && r.apply()))
    return failure();
  if (spec.matmulNBits && writeMatMulNBits(m))
    return graph::verifyGraph(m.graph, m.path.empty() ? "<model>" : m.path, diags);
  return success();
}
