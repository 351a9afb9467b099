//===- CmpOp.h - Comparison operators of filter predicates -------*- C++ -*-===//
//
// Shared by the AST and the IR: a predicate's comparison means the same in
// both.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_SUPPORT_CMPOP_H
#define TPCC_SUPPORT_CMPOP_H

namespace tpcc {

enum class CmpOp { Eq, Ne, Lt, Le, Gt, Ge };

/// The operator as written: `==`, `!=`, `<`, `<=`, `>`, `>=`.
inline const char *toString(CmpOp op) {
  switch (op) {
  case CmpOp::Eq:
    return "==";
  case CmpOp::Ne:
    return "!=";
  case CmpOp::Lt:
    return "<";
  case CmpOp::Le:
    return "<=";
  case CmpOp::Gt:
    return ">";
  case CmpOp::Ge:
    return ">=";
  }
  return "<invalid operator>";
}

} // namespace tpcc

#endif
