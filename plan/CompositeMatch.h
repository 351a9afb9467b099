//===- CompositeMatch.h - Finding a framework's composites in a model -*- C++ -*-===//
//
// A composite (`composite SiLU(x) = Mul(x, Sigmoid(x))`, language.md 6.1) matches
// a chain of nodes whose last node (the root) computes the pattern's output:
//
//  - an op term matches the node producing the value (same ONNX operator of the
//    default domain, output 0, exactly as many inputs as the term has
//    arguments, and its `where` predicate holds on the node);
//  - a parameter matches any value, but each use of one parameter must be the
//    same value: `Mul(x, Sigmoid(x))` is a SiLU, `Mul(x, Sigmoid(y))` (a
//    squeeze-and-excitation gate) is not;
//  - a number matches a constant whose elements all equal it within float32
//    rounding;
//  - Add and Mul match their two arguments in either order;
//  - a node may be matched twice only by the same term written twice (the
//    x - mean(x) that a normalization's numerator and variance share);
//  - every value the chain computes except the root's output is used only
//    inside the chain and is not a graph output.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_PLAN_COMPOSITEMATCH_H
#define TPCC_PLAN_COMPOSITEMATCH_H

#include "ir/TpcIR.h"
#include "ir/graph/Graph.h"

#include <optional>
#include <string>
#include <vector>

namespace tpcc::plan {

struct CompositeMatch {
  const ir::Composite *composite = nullptr;
  const graph::Node *root = nullptr;
  /// Every node of the chain, in the pattern's order (the root first).
  std::vector<const graph::Node *> nodes;
  /// The value each parameter matched, by parameter index.
  std::vector<const graph::Value *> inputs;
};

/// The chain of `c` whose root is `root`, if there is one; if not, and `why`
/// is given, why the attempt that got furthest failed.
std::optional<CompositeMatch> matchComposite(const ir::Composite &c, const graph::Model &m,
                                             const graph::Node &root, std::string *why = nullptr);

/// The number of op terms (nodes) in pattern `t`.
size_t patternSize(const ir::PatternTerm &t);

} // namespace tpcc::plan

#endif
