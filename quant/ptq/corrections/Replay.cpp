//===- Replay.cpp - The corrections as plan data ----------------------------===//
//
// recordCorrections writes what quantize made into the plan's records;
// readCorrections reads them back for `tpcc apply`, checking every name and
// size against the model first, so a hand-edited record is an error and
// never an edit out of bounds. See Replay.h.
//
//===----------------------------------------------------------------------===//
#include "quant/ptq/corrections/Replay.h"

#include "quant/core/GraphHelpers.h"

#include <fmt/format.h>

#include <cmath>

using namespace tpcc;
using namespace tpcc::quant;
using namespace tpcc::quant::edits;
namespace json = llvm::json;
using graph::Node;
using graph::Value;

namespace {

constexpr const char *kReluBound = "relu_unbound_correction";
constexpr const char *kEqualization = "activation_channel_equalization";
constexpr const char *kShift = "shift_negative";
constexpr const char *kScaling = "input_scaling";
constexpr const char *kSmoothing = "smooth_quant";
constexpr const char *kAwq = "awq"; // a smoothing record too

json::Value nameOrNull(const std::string &s) {
  return s.empty() ? json::Value(nullptr) : json::Value(s);
}

/// A grid with the keys of the plan's tensors.
json::Value gridRecord(const QuantGrid *g) {
  if (!g)
    return nullptr;
  return json::Object{{"method", std::string(ir::toString(g->method))},
                      {"bits", g->bits},
                      {"scale", g->scale},
                      {"zero_point", g->zeroPoint},
                      {"range", json::Array{g->lo, g->hi}}};
}

const QuantGrid *gridOf(const QuantizeResult &r, const std::string &tensor) {
  if (tensor.empty())
    return nullptr;
  for (const ActivationQDQ &a : r.spec.activations)
    if (a.value == tensor)
      return &a.grid;
  return nullptr;
}

json::Object editRecord(const GraphEdit &e, const QuantizeResult &r) {
  json::Object o{{"description", e.describe()},
                 {"node", e.node},
                 {"output", e.output},
                 {"output_grid", gridRecord(gridOf(r, e.output))}};
  if (e.kind == GraphEdit::InputScaling) {
    o["op"] = kScaling;
    o["input"] = e.value;
    o["factor"] = e.constant;
    for (const ConstantEdit &k : r.kernels)
      if (k.node == e.linear)
        o["kernel"] = json::Object{
            {"node", k.node}, {"input", int64_t(k.input)}, {"values", json::Array(k.values)}};
    return o;
  }
  o["op"] = kShift;
  o["value"] = e.value;
  o["shift"] = e.constant;
  o["pad_node"] = nameOrNull(e.padNode);
  o["conv_node"] = nameOrNull(e.convNode);
  o["pad_output"] = nameOrNull(e.padOutput);
  o["value_grid"] = gridRecord(gridOf(r, e.value));
  o["pad_output_grid"] = gridRecord(gridOf(r, e.padOutput));
  return o;
}

/// Reads the records one by one; every check names the record's index.
class Reader {
public:
  Reader(llvm::StringRef where, const graph::Model &m, RecordedCorrections &out,
         DiagnosticEngine &diags)
      : where(where.str()), m(m), g(m.graph), out(out), diags(diags) {}

  bool record(size_t index, const json::Value &v);

private:
  bool fail(const std::string &msg) {
    diags.emitAt(where, diag::err_apply_correction, index, msg);
    return false;
  }
  bool needs(const char *key, const char *what) {
    return fail(fmt::format("`{}` needs `{}`, {}", op, key, what));
  }

  // Parameters: false after a diagnostic.
  bool name(const json::Object &o, const char *key, std::string &s, bool optional = false);
  bool number(const json::Object &o, const char *key, double &d);
  bool integer(const json::Object &o, const char *key, int64_t &i);
  bool grid(const json::Object &o, const char *key, const std::string &tensor, bool optional);
  bool factors(const json::Object &o, std::vector<double> &out);

  // What the names must be in the model.
  const Node *nodeOf(const std::string &key, const std::string &name, const char *opType);
  const Node *linearOf(const std::string &key, const std::string &name, const char *opType);
  bool fresh(const std::string &key, const std::string &name, bool isNode);

  bool reluBound(const json::Object &o);
  bool equalization(const json::Object &o);
  bool smoothing(const json::Object &o);
  bool shiftNegative(const json::Object &o);
  bool inputScaling(const json::Object &o);

  std::string where;
  const graph::Model &m;
  const graph::Graph &g;
  RecordedCorrections &out;
  DiagnosticEngine &diags;
  size_t index = 0;
  std::string op;
  /// Names the edits read so far add to the model.
  std::set<std::string> addedNodes, addedValues;
};

bool Reader::name(const json::Object &o, const char *key, std::string &s, bool optional) {
  const json::Value *v = o.get(key);
  if (optional && (!v || v->getAsNull()))
    return true;
  llvm::Optional<llvm::StringRef> text = v ? v->getAsString() : llvm::None;
  if (!text || text->empty())
    return needs(key, optional ? "a name or null" : "a name");
  s = text->str();
  return true;
}

bool Reader::number(const json::Object &o, const char *key, double &d) {
  llvm::Optional<double> v = o.getNumber(key);
  if (!v || !std::isfinite(*v))
    return needs(key, "a finite number");
  d = *v;
  return true;
}

bool Reader::integer(const json::Object &o, const char *key, int64_t &i) {
  llvm::Optional<int64_t> v = o.getInteger(key);
  if (!v)
    return needs(key, "an integer");
  i = *v;
  return true;
}

/// `factors`: one positive finite number per channel.
bool Reader::factors(const json::Object &o, std::vector<double> &out) {
  const json::Array *a = o.getArray("factors");
  if (!a)
    return needs("factors", "one positive number per channel");
  for (const json::Value &f : *a) {
    llvm::Optional<double> x = f.getAsNumber();
    if (!x || !std::isfinite(*x) || !(*x > 0))
      return needs("factors", "one positive number per channel");
    out.push_back(*x);
  }
  return true;
}

/// The grid `key` of tensor `tensor` (none when `optional` and null, or
/// when there is no tensor).
bool Reader::grid(const json::Object &o, const char *key, const std::string &tensor,
                  bool optional) {
  const json::Value *v = o.get(key);
  bool none = !v || v->getAsNull();
  if (tensor.empty())
    return none || fail(fmt::format("`{}` is given, but no tensor to quantize with it", key));
  if (optional && none)
    return true;
  const json::Object *q = v ? v->getAsObject() : nullptr;
  const char *what = "a grid {method, bits, scale, zero_point, range}";
  if (!q)
    return needs(key, what);
  auto method = ir::parseQuantMethod(q->getString("method").getValueOr(""));
  llvm::Optional<int64_t> bits = q->getInteger("bits"), zp = q->getInteger("zero_point");
  llvm::Optional<double> scale = q->getNumber("scale");
  if (!method || !bits || !zp || !scale)
    return needs(key, what);
  if (*bits < 2 || *bits > 32)
    return fail(fmt::format("`{}`: {} bits is not a width", key, *bits));
  double lo = 0;
  if (const json::Array *range = q->getArray("range"); range && !range->empty())
    lo = (*range)[0].getAsNumber().getValueOr(0);
  out.grids.push_back({tensor, gridFromPlan(*method, int(*bits), *scale, *zp, lo)});
  return true;
}

const Node *Reader::nodeOf(const std::string &key, const std::string &name, const char *opType) {
  const Node *n = nodeNamed(g, name);
  if (!n || (opType && !isOp(n, opType))) {
    fail(fmt::format("`{}`: the model has no {}node `{}`", key,
                     opType ? std::string(opType) + " " : "", name));
    return nullptr;
  }
  return n;
}

/// A Conv or Gemm (of op `opType` when given) with a constant kernel and
/// bias, the linear ops the corrections edit (isLinearWithConstants).
const Node *Reader::linearOf(const std::string &key, const std::string &name, const char *opType) {
  const Node *n = nodeOf(key, name, opType);
  if (!n)
    return nullptr;
  if (!isLinearWithConstants(m, n)) {
    fail(
        fmt::format("`{}`: `{}` is not a Conv or Gemm with a constant kernel and bias", key, name));
    return nullptr;
  }
  return n;
}

bool Reader::fresh(const std::string &key, const std::string &name, bool isNode) {
  if (isNode ? nodeNamed(g, name) != nullptr : g.findValue(name) != nullptr)
    return fail(fmt::format("`{}`: the edit adds `{}`, which the model already has", key, name));
  if ((isNode ? addedNodes : addedValues).count(name))
    return fail(
        fmt::format("`{}`: the edit adds `{}`, which an earlier correction adds", key, name));
  (isNode ? addedNodes : addedValues).insert(name);
  return true;
}

/// The number of elements of the 1-D bias of `n` (input 2), or `channels`
/// when it has none.
int64_t biasSize(const Node &n, int64_t channels) {
  return n.input(2) ? n.input(2)->constant->numElements() : channels;
}

bool Reader::reluBound(const json::Object &o) {
  ReluBound b;
  if (!name(o, "clip", b.clip) || !name(o, "first", b.first) || !name(o, "second", b.second) ||
      !number(o, "bound", b.bound) || !number(o, "ratio", b.ratio) ||
      !integer(o, "first_out_axis", b.firstOutAxis))
    return false;
  if (!(b.bound > 0) || !(b.ratio > 0))
    return fail(fmt::format("`{}`: `bound` and `ratio` must be positive", op));
  const Node *clip = nodeOf("clip", b.clip, "Clip");
  double lo, hi;
  if (!clip)
    return false;
  if (!clipBounds(graph::attrsOf(m, *clip), *clip, lo, hi))
    return fail(fmt::format("`clip`: the bounds of `{}` are not constants", b.clip));
  const Node *first = linearOf("first", b.first, nullptr);
  if (!first || !linearOf("second", b.second, nullptr))
    return false;
  const std::vector<int64_t> &dims = first->input(1)->constant->dims;
  // The kernel layouts scaleLinear knows: a Conv's output channels on axis
  // 0, a Gemm's on either axis.
  int64_t last = first->opType == "Conv" ? 0 : 1;
  if (b.firstOutAxis < 0 || b.firstOutAxis > last)
    return fail(fmt::format("`first_out_axis`: {} is not the output-channel axis of `{}`'s "
                            "kernel",
                            b.firstOutAxis, b.first));
  if (biasSize(*first, dims[size_t(b.firstOutAxis)]) != dims[size_t(b.firstOutAxis)])
    return fail(fmt::format("`first`: the bias of `{}` does not have one value per output channel",
                            b.first));
  out.pre.reluBounds.push_back(std::move(b));
  return true;
}

bool Reader::equalization(const json::Object &o) {
  ChannelEqualization e;
  if (!name(o, "first", e.first) || !name(o, "relu", e.relu, /*optional=*/true) ||
      !name(o, "second", e.second))
    return false;
  if (!factors(o, e.factors))
    return false;
  const Node *first = linearOf("first", e.first, "Conv");
  const Node *second = first ? linearOf("second", e.second, "Conv") : nullptr;
  if (!second || (!e.relu.empty() && !nodeOf("relu", e.relu, "Relu")))
    return false;
  // Output channel c of `first` and input channel c of `second`, grouped.
  int64_t channels = int64_t(e.factors.size());
  const std::vector<int64_t> &d1 = first->input(1)->constant->dims,
                             &d2 = second->input(1)->constant->dims;
  int64_t groups = graph::attrsOf(m, *second).getInt("group", 1);
  if (d1[0] != channels || biasSize(*first, channels) != channels || groups < 1 ||
      d2[0] % groups != 0 || d2[1] * groups != channels)
    return fail(fmt::format("`factors`: {} factors, but `{}` has {} output channels and `{}` {} "
                            "input channels",
                            channels, e.first, d1[0], e.second, d2[1] * groups));
  out.pre.equalizations.push_back(std::move(e));
  return true;
}

/// Every name and size checked here; applySmoothing then edits in bounds.
bool Reader::smoothing(const json::Object &o) {
  Smoothing s;
  s.awq = op == kAwq;
  if (!name(o, "tensor", s.tensor) || !number(o, "alpha", s.alpha))
    return false;
  const json::Array *divided = o.getArray("divided");
  const json::Array *linears = o.getArray("linears");
  if (!factors(o, s.factors))
    return false;
  if (s.factors.empty())
    return needs("factors", "one positive number per channel");
  int64_t channels = int64_t(s.factors.size());
  if (!divided || divided->empty())
    return needs("divided", "a list of {node, input}");
  for (const json::Value &v : *divided) {
    const json::Object *d = v.getAsObject();
    Smoothing::Scaled sc;
    int64_t input = 0;
    if (!d || !name(*d, "node", sc.node) || !integer(*d, "input", input))
      return needs("divided", "a list of {node, input}");
    const Node *n = nodeOf("divided", sc.node, nullptr);
    if (!n)
      return false;
    const Value *c =
        input >= 0 && size_t(input) < n->inputs.size() ? n->input(size_t(input)) : nullptr;
    if (!isFloatConstant(c) || c->constant->numElements() != channels)
      return fail(fmt::format("`divided`: input {} of `{}` is not a constant of {} values", input,
                              sc.node, channels));
    sc.input = unsigned(input);
    s.divided.push_back(sc);
  }
  if (!linears || linears->empty())
    return needs("linears", "a list of {node, axis}");
  for (const json::Value &v : *linears) {
    const json::Object *l = v.getAsObject();
    std::string node;
    int64_t axis = 0;
    if (!l || !name(*l, "node", node) || !integer(*l, "axis", axis))
      return needs("linears", "a list of {node, axis}");
    const Node *n = nodeOf("linears", node, nullptr);
    if (!n)
      return false;
    const Value *w = n->input(1);
    if (!(isOp(n, "MatMul") || isOp(n, "Gemm")) || !isFloatConstant(w) ||
        w->constant->dims.size() != 2 || (axis != 0 && axis != 1) ||
        w->constant->dims[size_t(axis)] != channels)
      return fail(fmt::format("`linears`: `{}` is not a MatMul or Gemm whose 2-D kernel has {} "
                              "input channels along axis {}",
                              node, channels, axis));
    s.linears.push_back(node);
    s.axes.push_back(axis);
  }
  out.pre.smoothings.push_back(std::move(s));
  return true;
}

bool Reader::shiftNegative(const json::Object &o) {
  GraphEdit e;
  e.kind = GraphEdit::ShiftNegative;
  if (!name(o, "value", e.value) || !name(o, "node", e.node) || !name(o, "output", e.output) ||
      !number(o, "shift", e.constant) || !name(o, "pad_node", e.padNode, true) ||
      !name(o, "conv_node", e.convNode, true) || !name(o, "pad_output", e.padOutput, true))
    return false;
  const Value *v = g.findValue(e.value);
  if (!v || v->constant)
    return fail(fmt::format("`value`: the model computes no value `{}`", e.value));
  if (!fresh("node", e.node, true) || !fresh("output", e.output, false))
    return false;
  if (!e.convNode.empty()) { // the Conv's own padding becomes a new Pad node
    if (e.padNode.empty() || e.padOutput.empty())
      return fail("`conv_node` comes with `pad_node` and `pad_output`, the Pad it becomes");
    const Node *conv = nodeOf("conv_node", e.convNode, "Conv");
    if (!conv || !conv->input(0) || !fresh("pad_node", e.padNode, true) ||
        !fresh("pad_output", e.padOutput, false))
      return false;
  } else if (!e.padOutput.empty()) {
    return fail("`pad_output` is given without `conv_node`");
  } else if (!e.padNode.empty() && !nodeOf("pad_node", e.padNode, "Pad")) {
    return false;
  }
  // The activation's wider grid, its shifted output's, and the new Pad's
  // output's (when the tensor before it is quantized).
  if (!grid(o, "value_grid", e.value, false) || !grid(o, "output_grid", e.output, false) ||
      !grid(o, "pad_output_grid", e.padOutput, true))
    return false;
  out.edits.push_back(std::move(e));
  return true;
}

bool Reader::inputScaling(const json::Object &o) {
  GraphEdit e;
  e.kind = GraphEdit::InputScaling;
  if (!name(o, "input", e.value) || !name(o, "node", e.node) || !name(o, "output", e.output) ||
      !number(o, "factor", e.constant))
    return false;
  const Value *x = g.findValue(e.value);
  if (!x || !x->isGraphInput || x->constant)
    return fail(fmt::format("`input`: the model has no graph input `{}`", e.value));
  if (!fresh("node", e.node, true) || !fresh("output", e.output, false) ||
      !grid(o, "output_grid", e.output, false))
    return false;
  // The kernel it scales: {node, input, values}.
  const json::Object *k = o.getObject("kernel");
  const json::Array *values = k ? k->getArray("values") : nullptr;
  llvm::Optional<llvm::StringRef> node = k ? k->getString("node") : llvm::None;
  llvm::Optional<int64_t> input = k ? k->getInteger("input") : llvm::None;
  if (!values || !node || !input)
    return needs("kernel", "the kernel it replaces, {node, input, values}");
  ConstantEdit c;
  c.node = node->str();
  for (const json::Value &x : *values) {
    llvm::Optional<double> f = x.getAsNumber();
    if (!f)
      return needs("kernel", "the kernel it replaces, {node, input, values}");
    c.values.push_back(float(*f));
  }
  const Node *n = nodeOf("kernel", c.node, nullptr);
  if (!n)
    return false;
  const Value *w = *input >= 0 ? n->input(size_t(*input)) : nullptr;
  if (!w || !w->constant || w->constant->elem != graph::ElemType::Float ||
      w->constant->numElements() != int64_t(c.values.size()))
    return fail(fmt::format("`kernel`: {} values do not fit input {} of `{}`", c.values.size(),
                            *input, c.node));
  c.input = unsigned(*input);
  e.linear = c.node;
  out.kernels.push_back(std::move(c));
  out.moved.insert(e.value);
  out.edits.push_back(std::move(e));
  return true;
}

bool Reader::record(size_t i, const json::Value &v) {
  index = i;
  op.clear();
  const json::Object *o = v.getAsObject();
  llvm::Optional<llvm::StringRef> name = o ? o->getString("op") : llvm::None;
  if (!name)
    return fail("not a correction record (an object with its `op`); a plan of an earlier tpcc "
                "describes its corrections only: quantize the model again");
  op = name->str();
  if (op == kReluBound)
    return reluBound(*o);
  if (op == kEqualization)
    return equalization(*o);
  if (op == kSmoothing || op == kAwq)
    return smoothing(*o);
  if (op == kShift)
    return shiftNegative(*o);
  if (op == kScaling)
    return inputScaling(*o);
  diags.emitAt(where, diag::err_apply_correction_op, i, op,
               fmt::format("{}, {}, {}, {}, {} and {}", kReluBound, kEqualization, kSmoothing, kAwq,
                           kShift, kScaling));
  return false;
}

} // namespace

std::vector<json::Object> quant::recordCorrections(const PreCorrections &pre,
                                                   const QuantizeResult &result) {
  std::vector<json::Object> out;
  for (const ReluBound &b : pre.reluBounds)
    out.push_back(json::Object{{"op", kReluBound},
                               {"description", b.describe()},
                               {"clip", b.clip},
                               {"first", b.first},
                               {"second", b.second},
                               {"bound", b.bound},
                               {"ratio", b.ratio},
                               {"first_out_axis", b.firstOutAxis}});
  for (const ChannelEqualization &e : pre.equalizations)
    out.push_back(json::Object{{"op", kEqualization},
                               {"description", e.describe()},
                               {"first", e.first},
                               {"relu", nameOrNull(e.relu)},
                               {"second", e.second},
                               {"factors", json::Array(e.factors)}});
  for (const Smoothing &s : pre.smoothings) {
    json::Array divided, linears;
    for (const Smoothing::Scaled &d : s.divided)
      divided.push_back(json::Object{{"node", d.node}, {"input", int64_t(d.input)}});
    for (size_t i = 0; i < s.linears.size(); ++i)
      linears.push_back(json::Object{{"node", s.linears[i]}, {"axis", s.axes[i]}});
    out.push_back(json::Object{{"op", s.awq ? kAwq : kSmoothing},
                               {"description", s.describe()},
                               {"tensor", s.tensor},
                               {"alpha", s.alpha},
                               {"divided", std::move(divided)},
                               {"linears", std::move(linears)},
                               {"factors", json::Array(s.factors)}});
  }
  for (const GraphEdit &e : result.edits)
    out.push_back(editRecord(e, result));
  return out;
}

LogicalResult quant::readCorrections(const json::Array &records, llvm::StringRef where,
                                     const graph::Model &m, RecordedCorrections &out,
                                     DiagnosticEngine &diags) {
  Reader reader(where, m, out, diags);
  for (size_t i = 0; i < records.size(); ++i)
    if (!reader.record(i, records[i]))
      return failure();
  return success();
}

QuantGrid quant::gridFromPlan(ir::QuantMethod method, int bits, double scale, int64_t zeroPoint,
                              double lo) {
  QuantGrid g;
  g.method = method;
  g.bits = bits;
  g.scale = scale;
  g.zeroPoint = zeroPoint;
  g.isSigned = method != ir::QuantMethod::Uniform && (lo < 0 || zeroPoint < 0);
  g.qmin = g.isSigned ? -(int64_t(1) << (bits - 1)) : 0;
  g.qmax = g.isSigned ? (int64_t(1) << (bits - 1)) - 1 : (int64_t(1) << bits) - 1;
  g.lo = g.scale * double(g.qmin - g.zeroPoint);
  g.hi = g.scale * double(g.qmax - g.zeroPoint);
  g.threshold = std::max(-g.lo, g.hi);
  return g;
}
