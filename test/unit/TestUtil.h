//===- TestUtil.h - Shared helpers of the unit tests -------------*- C++ -*-===//
#ifndef TPCC_TEST_UNIT_TESTUTIL_H
#define TPCC_TEST_UNIT_TESTUTIL_H

#include "frontend/Frontend.h"

#include <iostream>

namespace tpcc::test_util {

/// Prints every diagnostic of `c` with its source line and caret: called by
/// fixtures when a test failed, so the failure shows what the compiler said.
inline void printDiagnostics(const Compilation &c) {
  std::string text;
  llvm::raw_string_ostream os(text);
  for (const Diagnostic &d : c.diags.getDiagnostics())
    c.diags.printOne(os, d, /*color=*/false);
  std::cerr << os.str();
}

} // namespace tpcc::test_util

#endif
