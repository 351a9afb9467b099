//===- PredicateEval.h - Filter predicates evaluated on a node ---*- C++ -*-===//
//
// language.md §7.2: an attribute takes its value on the node or, when absent,
// its schema default at the model's opset; `input[i]` is the value of a
// constant scalar input; `rank`/`shape` come from the value's type (file or
// shape inference) or a constant's dims. An operand is unknown when absent or
// not constant: `X == none` holds exactly then, every other comparison with
// an unknown operand is false.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_PLAN_PREDICATEEVAL_H
#define TPCC_PLAN_PREDICATEEVAL_H

#include "ir/TpcIR.h"
#include "ir/graph/Graph.h"
#include "ir/graph/NodeAttrs.h"

#include <string>
#include <vector>

namespace tpcc::plan {

/// Evaluates `p` on `n`. With `trace`, appends one line per comparison and
/// call, indented by `depth`, saying each operand's value and the result.
bool evaluate(const ir::Predicate &p, const graph::Model &m, const graph::Node &n,
              std::vector<std::string> *trace = nullptr, unsigned depth = 0);

} // namespace tpcc::plan

#endif
