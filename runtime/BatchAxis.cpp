//===- BatchAxis.cpp - Whether a model computes each sample on its own ----===//
#include "runtime/BatchAxis.h"

#include "ir/graph/NodeAttrs.h"

#include "llvm/ADT/StringSet.h"

#include <fmt/format.h>

#include <optional>
#include <vector>

using namespace tpcc;
using graph::Node;
using graph::Value;

namespace {
/// The rank the model declares for `v`, or -1.
int64_t rankOf(const Value *v) { return v && v->type.shape ? int64_t(v->type.shape->size()) : -1; }

/// The integers of a constant value, or none.
std::optional<std::vector<int64_t>> constInts(const Value *v) {
  if (!v || !v->constant)
    return std::nullopt;
  std::vector<int64_t> r;
  for (int64_t i = 0; i < v->constant->numElements(); ++i)
    r.push_back(int64_t(v->constant->at(i)));
  return r;
}

/// Whether the declared dimension 0 of `v` is a known 1 (broadcasts over any
/// batch).
bool leadingOne(const Value *v) {
  return v && v->type.shape && !v->type.shape->empty() && (*v->type.shape)[0].value == 1;
}

class Check {
public:
  explicit Check(const graph::Model &m) : m(m), batched(m.graph.values().size(), false) {}

  bool run(std::string &why) {
    const graph::Graph &g = m.graph;
    for (const Value *v : g.inputs())
      if (!v->isInitializer) {
        if (rankOf(v) == 0) {
          why = fmt::format("input `{}` is a scalar", v->name);
          return false;
        }
        if (v->type.shape && !v->type.shape->empty() && (*v->type.shape)[0].known()) {
          why = fmt::format("input `{}` fixes its batch dimension", v->name);
          return false;
        }
        batched[v->id] = true;
      }
    for (const Node *n : g.topologicalOrder()) {
      bool any = false;
      for (const Value *v : n->inputs)
        any |= v && batched[v->id];
      if (!any)
        continue;
      if (!keepsSamples(*n)) {
        why = fmt::format("node `{}` ({}) does not keep the samples of axis 0 apart",
                          n->displayName(), n->opType);
        return false;
      }
      for (const Value *v : n->outputs)
        if (v)
          batched[v->id] = true;
    }
    for (const Value *v : g.outputs())
      if (!batched[v->id]) {
        why = fmt::format("output `{}` does not depend on the batch", v->name);
        return false;
      }
    return true;
  }

private:
  bool isBatched(const Value *v) const { return v && batched[v->id]; }
  /// Only input 0 batched.
  bool onlyFirst(const Node &n) const {
    for (size_t i = 1; i < n.inputs.size(); ++i)
      if (isBatched(n.inputs[i]))
        return false;
    return true;
  }
  /// `axis` of a value of `rank` is not 0 (negative axes counted from the
  /// end; unknown rank: only positive axes pass).
  static bool notBatchAxis(int64_t axis, int64_t rank) {
    if (axis < 0)
      return rank >= 0 && axis + rank > 0;
    return axis > 0;
  }
  /// The node's integer list attribute `name`, or its constant input `index`.
  std::optional<std::vector<int64_t>> listOf(const Node &n, llvm::StringRef name,
                                             size_t index) const {
    if (const graph::Attribute *a = n.attr(name))
      return a->ints;
    if (n.input(index))
      return constInts(n.input(index));
    return std::nullopt;
  }
  bool noBatchAxis(const std::optional<std::vector<int64_t>> &axes, int64_t rank) const {
    if (!axes || axes->empty())
      return false;
    for (int64_t a : *axes)
      if (!notBatchAxis(a, rank))
        return false;
    return true;
  }

  /// Multidirectional broadcasting: a batched operand must have the output's
  /// rank; an unbatched one a lower rank or a leading 1.
  bool broadcasts(const Node &n) const {
    int64_t r = rankOf(n.outputs.empty() ? nullptr : n.outputs[0]);
    if (r < 1)
      return false;
    for (const Value *v : n.inputs) {
      if (!v)
        continue;
      int64_t vr = rankOf(v);
      if (isBatched(v) ? vr != r : !(vr >= 0 && (vr < r || leadingOne(v))))
        return false;
    }
    return true;
  }

  bool keepsSamples(const Node &n) const;

  const graph::Model &m;
  std::vector<bool> batched;
};

bool Check::keepsSamples(const Node &n) const {
  // ONNX Runtime's contrib QuantizeLinear/DequantizeLinear (16-bit grids
  // before opset 21) compute what ONNX's do; its MatMulNBits multiplies each
  // row of A by constant weights.
  bool contribQdq =
      n.domain == "com.microsoft" &&
      (n.opType == "QuantizeLinear" || n.opType == "DequantizeLinear" || n.opType == "MatMulNBits");
  if ((!n.inDefaultDomain() && !contribQdq) || n.hasSubgraphs())
    return false;
  // Only input 0 batched, and nothing in the op relates samples.
  static const llvm::StringSet<> perSample = {"Relu",
                                              "LeakyRelu",
                                              "Clip",
                                              "Sigmoid",
                                              "HardSigmoid",
                                              "HardSwish",
                                              "Tanh",
                                              "Exp",
                                              "Log",
                                              "Sqrt",
                                              "Abs",
                                              "Neg",
                                              "Erf",
                                              "Gelu",
                                              "Softplus",
                                              "Softsign",
                                              "Selu",
                                              "Elu",
                                              "Celu",
                                              "Mish",
                                              "Identity",
                                              "Cast",
                                              "Floor",
                                              "Ceil",
                                              "Round",
                                              "Sign",
                                              "Reciprocal",
                                              "Not",
                                              "IsNaN",
                                              "IsInf",
                                              "Sin",
                                              "Cos",
                                              "ThresholdedRelu",
                                              "Shrink",
                                              "Conv",
                                              "ConvTranspose",
                                              "ConvInteger",
                                              "QLinearConv",
                                              "MaxPool",
                                              "AveragePool",
                                              "LpPool",
                                              "GlobalAveragePool",
                                              "GlobalMaxPool",
                                              "GlobalLpPool",
                                              "DepthToSpace",
                                              "SpaceToDepth",
                                              "InstanceNormalization",
                                              "LRN",
                                              "QuantizeLinear",
                                              "DequantizeLinear",
                                              "BatchNormalization",
                                              "Dropout"};
  static const llvm::StringSet<> elementwise = {
      "Add",  "Sub", "Mul",   "Div",   "Pow",     "Max",         "Min",
      "Mean", "Sum", "Equal", "Less",  "Greater", "LessOrEqual", "GreaterOrEqual",
      "And",  "Or",  "Xor",   "Where", "Mod",     "PRelu",       "BitShift"};
  static const llvm::StringSet<> reductions = {
      "ReduceMean", "ReduceSum", "ReduceMax",    "ReduceMin",       "ReduceProd",
      "ReduceL1",   "ReduceL2",  "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};
  const llvm::StringRef op = n.opType;
  graph::NodeAttrs attrs = graph::attrsOf(m, n);
  int64_t rank = rankOf(n.input(0));
  if (elementwise.count(op))
    return broadcasts(n);
  if (!isBatched(n.input(0)) && !(op == "MatMul" || op == "Gather"))
    return false;
  if (op == "MatMulNBits") // A's last axis is K: a batch axis before it
    return onlyFirst(n) && rank >= 2;
  if (perSample.count(op)) {
    if (!onlyFirst(n))
      return false;
    if (op == "QuantizeLinear" || op == "DequantizeLinear") {
      // A per-channel scale along axis 0 would give each sample its own.
      const Value *scale = n.input(1);
      bool perChannel = !scale || rankOf(scale) != 0;
      return !perChannel || notBatchAxis(attrs.getInt("axis", 1), rank);
    }
    if (op == "BatchNormalization")
      return n.outputs.size() == 1 && !attrs.getInt("training_mode", 0);
    return true;
  }
  if (op == "Softmax" || op == "LogSoftmax" || op == "Hardmax" || op == "Flatten" ||
      op == "LayerNormalization")
    return onlyFirst(n) &&
           notBatchAxis(attrs.getInt("axis", op == "LayerNormalization" ? -1 : 1), rank);
  if (op == "ArgMax" || op == "ArgMin" || op == "TopK")
    return onlyFirst(n) && notBatchAxis(attrs.getInt("axis", op == "TopK" ? -1 : 0), rank);
  if (reductions.count(op))
    return onlyFirst(n) && noBatchAxis(listOf(n, "axes", 1), rank);
  if (op == "Squeeze")
    return onlyFirst(n) && noBatchAxis(listOf(n, "axes", 1), rank);
  if (op == "Unsqueeze")
    return onlyFirst(n) && noBatchAxis(listOf(n, "axes", 1), rankOf(n.outputs[0]));
  if (op == "Transpose") {
    std::vector<int64_t> perm = attrs.getInts("perm");
    return !perm.empty() && perm[0] == 0;
  }
  if (op == "Concat" || op == "Split") {
    for (const Value *v : n.inputs)
      if (op == "Concat" && v && !isBatched(v))
        return false;
    return (op == "Concat" || onlyFirst(n)) && notBatchAxis(attrs.getInt("axis", 0), rank);
  }
  if (op == "Slice") {
    if (!onlyFirst(n) || n.inputs.size() < 4)
      return false;
    return noBatchAxis(constInts(n.input(3)), rank);
  }
  if (op == "Pad") {
    std::optional<std::vector<int64_t>> pads =
        n.attr("pads") ? std::optional(attrs.getInts("pads")) : constInts(n.input(1));
    if (!onlyFirst(n) || !pads || rank < 1 || int64_t(pads->size()) != 2 * rank ||
        (n.inputs.size() > 3 && n.input(3)))
      return false;
    return (*pads)[0] == 0 && (*pads)[size_t(rank)] == 0;
  }
  if (op == "Resize" || op == "Upsample") {
    // Scales with 1 on axis 0; never target sizes (they fix the batch).
    const Value *scales = op == "Resize" ? n.input(2) : n.input(1);
    std::optional<std::vector<int64_t>> sizes =
        op == "Resize" ? constInts(n.input(3)) : std::nullopt;
    if (!onlyFirst(n) || (sizes && !sizes->empty()) || !scales || !scales->constant ||
        scales->constant->numElements() < 1)
      return false;
    return scales->constant->at(0) == 1.0;
  }
  if (op == "Reshape") {
    std::optional<std::vector<int64_t>> shape = constInts(n.input(1));
    if (!onlyFirst(n) || !shape || shape->empty() || attrs.getInt("allowzero", 0))
      return false;
    if ((*shape)[0] == 0)
      return true;
    // [-1, d1, ...]: -1 is the batch when the other dims hold one sample.
    const Value *x = n.input(0);
    if ((*shape)[0] != -1 || !x->type.shape)
      return false;
    int64_t sample = 1, target = 1;
    for (size_t i = 1; i < x->type.shape->size(); ++i) {
      if (!(*x->type.shape)[i].known())
        return false;
      sample *= (*x->type.shape)[i].value;
    }
    for (size_t i = 1; i < shape->size(); ++i) {
      if ((*shape)[i] <= 0)
        return false;
      target *= (*shape)[i];
    }
    return sample == target;
  }
  if (op == "Gemm")
    return onlyFirst(n) && !attrs.getInt("transA", 0) &&
           (n.inputs.size() < 3 || !n.input(2) || rankOf(n.input(2)) == 1 ||
            leadingOne(n.input(2)));
  if (op == "MatMul") {
    // Rows of A are samples (B shared, of rank 2 or less), or both batched
    // stacks of matrices.
    const Value *a = n.input(0), *b = n.input(1);
    if (isBatched(a) && !isBatched(b))
      return rankOf(b) >= 1 && rankOf(b) <= 2 && rankOf(a) >= 2;
    return isBatched(a) && isBatched(b) && rankOf(a) >= 3 && rankOf(a) == rankOf(b);
  }
  if (op == "Gather") {
    int64_t axis = attrs.getInt("axis", 0);
    if (isBatched(n.input(0)))
      return onlyFirst(n) && notBatchAxis(axis, rank);
    // An embedding: rows of the indices are samples.
    return axis == 0 && rankOf(n.input(1)) >= 1;
  }
  return false;
}
} // namespace

bool rt::sampleSeparable(const graph::Model &m, std::string *why) {
  std::string reason;
  bool ok = Check(m).run(reason);
  if (why)
    *why = reason;
  return ok;
}
