//===- PredicateChecker.h - Checking ops and filter predicates --*- C++ -*-===//
//
// Rule 12 for everything that names an ONNX operator: the op name, the input
// indices and the filter predicates (`where ...`) of framework weight slots
// and capabilities bindings, checked against the ONNX operator schemas
// (ir/OnnxSchema.h). Every diagnostic points at the offending token: the op
// name, the index, the attribute name or the literal.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_PASSES_PREDICATECHECKER_H
#define TPCC_PASSES_PREDICATECHECKER_H

#include "frontend/Frontend.h"
#include "ir/OnnxSchema.h"
#include "ir/TpcIR.h"

namespace tpcc::passes {

/// The ONNX operator `name` names, or null after reporting that no schema
/// has that name (with a "did you mean").
const ir::OnnxOp *lookupOnnxOp(Compilation &c, const ast::Ident &name);

/// Checks that input `index` (written at `range`) can exist on nodes of `op`.
/// With a null `op` (an unknown op, already reported) only the sign is checked.
LogicalResult checkInputIndex(Compilation &c, const ir::OnnxOp *op, int64_t index,
                              SourceRange range);

/// Checks a filter predicate on nodes of `op` and returns its IR: attribute
/// names, input indices, literal types against attribute types, `none` only
/// with `==` / `!=`. With a null `op` (an unknown op, already reported) the
/// checks that need its schema are skipped. The IR is built even when errors
/// are reported.
ir::Predicate checkPredicate(Compilation &c, const ast::Pred &pred, const ir::OnnxOp *op);

} // namespace tpcc::passes

#endif
