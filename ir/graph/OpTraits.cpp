//===- OpTraits.cpp - The operator traits table -----------------------------===//
#include "ir/graph/OpTraits.h"

#include "llvm/ADT/StringMap.h"

using namespace tpcc;
using namespace tpcc::graph;

namespace {

struct Row {
  const char *op;
  OpTraits traits;
};

// Fields: movesValues, linear, int32Bias, shiftNegative, shiftTransparent, gate,
// arithmetic, commutative, point (mixed precision's interest points).
constexpr Row kTable[] = {
    // Linear ops.
    {"Conv", {false, true, true, false, false, false, false, false, PointDistance::Mse}},
    {"Gemm", {false, true, true, false, false, false, false, false, PointDistance::Cosine}},
    {"ConvTranspose", {false, false, true, false, false, false, false, false, PointDistance::Mse}},
    {"MatMul", {false, false, false, false, false, false, false, false, PointDistance::Cosine}},
    // Ops that move values.
    {"MaxPool", {true, false, false, false, false}},
    {"Reshape", {true, false, false, false, true}},
    {"Flatten", {true, false, false, false, true}},
    {"Transpose", {true, false, false, false, false}},
    {"Squeeze", {true, false, false, false, false}},
    {"Unsqueeze", {true, false, false, false, false}},
    {"Identity", {true, false, false, false, true}},
    {"Dropout", {true, false, false, false, true}},
    {"Slice", {true, false, false, false, false}},
    {"Gather", {true, false, false, false, false}},
    {"Split", {true, false, false, false, false}},
    {"Expand", {true, false, false, false, false}},
    {"Tile", {true, false, false, false, false}},
    {"SpaceToDepth", {true, false, false, false, false}},
    {"DepthToSpace", {true, false, false, false, false}},
    // Averages commute with adding a constant (without padding).
    {"AveragePool", {false, false, false, false, true}},
    {"GlobalAveragePool", {false, false, false, false, true}},
    // Activations shift_negative moves.
    {"PRelu", {false, false, false, true, false}},
    {"Elu", {false, false, false, true, false}},
    {"HardSwish", {false, false, false, true, false}},
    {"LeakyRelu", {false, false, false, true, false}},
    {"Gelu", {false, false, false, true, false}},
    // Gates of activations spelled out as products.
    {"Sigmoid", {false, false, false, false, false, true, false, false, PointDistance::Cosine}},
    {"HardSigmoid", {false, false, false, false, false, true}},
    {"Tanh", {false, false, false, false, false, true}},
    {"Erf", {false, false, false, false, false, true}},
    {"Softplus", {false, false, false, false, false, true}},
    {"Clip", {false, false, false, false, false, true}},
    {"Relu", {false, false, false, false, false, true}},
    // Element-wise arithmetic.
    {"Add", {false, false, false, false, false, false, true, true, PointDistance::Mse}},
    {"Sub", {false, false, false, false, false, false, true}},
    {"Mul", {false, false, false, false, false, false, true, true}},
    {"Div", {false, false, false, false, false, false, true}},
    // Other interest points of mixed precision.
    {"Softmax", {false, false, false, false, false, false, false, false, PointDistance::KL}},
    {"Concat", {false, false, false, false, false, false, false, false, PointDistance::Mse}},
};

} // namespace

const OpTraits &graph::opTraits(llvm::StringRef domain, llvm::StringRef opType) {
  static const OpTraits none;
  static const llvm::StringMap<OpTraits> table = [] {
    llvm::StringMap<OpTraits> m;
    for (const Row &r : kTable)
      m[r.op] = r.traits;
    return m;
  }();
  if (!domain.empty())
    return none;
  auto it = table.find(opType);
  return it == table.end() ? none : it->second;
}

const OpTraits &graph::opTraits(const Node &n) {
  static const OpTraits moves{true, false, false, false, false};
  if (n.opType != "Pad" || !n.inDefaultDomain())
    return opTraits(n.domain, n.opType);
  const Attribute *mode = n.attr("mode");
  if (mode && mode->s != "constant")
    return moves;
  const Attribute *value = n.attr("value"); // before opset 11
  const Value *input = n.input(2);          // since
  bool zero =
      value ? value->f == 0 : !input || (input->constant && input->constant->scalar() == 0.0);
  return zero ? moves : opTraits(n.domain, n.opType);
}
