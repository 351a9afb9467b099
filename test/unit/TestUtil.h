//===- TestUtil.h - Shared helpers of the unit tests -------------*- C++ -*-===//
#ifndef TPCC_TEST_UNIT_TESTUTIL_H
#define TPCC_TEST_UNIT_TESTUTIL_H

#include "frontend/Frontend.h"

#include <iostream>
#include <string>
#include <vector>

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

/// Every diagnostic of `c` as "LINE:COL: severity: message", notes indented
/// by two spaces after their diagnostic: compact expectations for tests.
inline std::vector<std::string> renderDiagnostics(const Compilation &c) {
  std::vector<std::string> out;
  auto one = [&](const Diagnostic &d, const char *indent) {
    LineCol lc = c.sources.getLineCol(d.range.begin);
    const char *sev = d.severity == Severity::Error     ? "error"
                      : d.severity == Severity::Warning ? "warning"
                                                        : "note";
    out.push_back(indent + std::to_string(lc.line) + ":" + std::to_string(lc.col) + ": " + sev +
                  ": " + d.message);
  };
  for (const Diagnostic &d : c.diags.getDiagnostics()) {
    one(d, "");
    for (const Diagnostic &n : d.notes)
      one(n, "  ");
  }
  return out;
}

} // namespace tpcc::test_util

#endif
